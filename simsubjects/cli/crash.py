"""What the command line does with an exception nobody expected: one line, a log, a distinct exit code.

Bad input is a `UserError` (exit 2). Anything else is a bug of simsubjects or of a library under
it: the user gets one line with the path of a log file that holds the traceback, and exit code
`INTERNAL_ERROR` (70, EX_SOFTWARE of BSD's sysexits.h), so scripts can tell "fix your input" (2)
from "report this" (70). The log never holds a secret: API keys from the environment, URL
passwords and credential-like query parameters are masked (simsubjects.redact) before anything is written.
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
import traceback
from datetime import datetime, timezone
from pathlib import Path

# one redaction module: registered values, URL credentials, bearer tokens, secret environment values
from simsubjects.redact import redact_text as redact

INTERNAL_ERROR = 70


def log_dir() -> Path:
    """$SIMSUBJECTS_LOG_DIR, else logs/ in simsubjects' user cache ($SIMSUBJECTS_CACHE or ~/.cache/simsubjects)."""
    if os.environ.get("SIMSUBJECTS_LOG_DIR"):
        return Path(os.environ["SIMSUBJECTS_LOG_DIR"])
    cache = os.environ.get("SIMSUBJECTS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "simsubjects")
    return Path(cache) / "logs"


def write_log(exc: BaseException, argv: list[str] | None) -> Path | None:
    """The redacted traceback in a new file (mode 0600); None if no folder would take it."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    body = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    text = redact(f"simsubjects {' '.join(argv or [])}\n{stamp}\n\n{body}")
    for folder in (log_dir(), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, path = tempfile.mkstemp(dir=folder, prefix=f"simsubjects-crash-{stamp}-", suffix=".log")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            return Path(path)
        except OSError:
            continue
    return None


def one_line(exc: BaseException, log: Path | None) -> str:
    msg = redact(single_line(" ".join(str(exc).split())))[:300]
    where = f"the traceback is in {log}" if log else "no log could be written"
    return (f"internal error ({type(exc).__name__}{': ' + msg if msg else ''}); this is a bug in simsubjects, "
            f"not in your input: please report it; {where}")


# --- file system refusals --------------------------------------------------------------------------

_STAGING = re.compile(r"/\.(?P<name>[^/]+)\.(?:staging|previous)-[^/]*")
_TMP = re.compile(r"/\.(?P<name>[^/]+?)\.[^/.]*\.tmp$")


def user_path(filename: str) -> str:
    """The path a user gave, for an internal temporary path (…/.analysis.staging-x/t.csv -> …/analysis)."""
    m = _STAGING.search(filename)
    if m:
        return filename[: m.start()] + "/" + m["name"]
    m = _TMP.search(filename)
    if m:
        return filename[: m.start()] + "/" + m["name"]
    return filename


def os_error_line(e: OSError) -> str:
    """One line for a refusal of the file system (disk full, read-only, permissions) naming the user's path."""
    reason = {errno.ENOSPC: "no space left on the device", errno.EROFS: "read-only file system",
              errno.EACCES: "permission denied", errno.EPERM: "permission denied",
              errno.EDQUOT: "disk quota exceeded"}.get(e.errno, e.strerror or str(e))
    name = user_path(os.fsdecode(e.filename)) if e.filename else None
    return redact(f"{name}: {reason}" if name else reason)


_BREAKS = {"\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"}


def single_line(text: str) -> str:
    """A message on one line whatever a file held: line breaks (all that str.splitlines knows) and other
    control characters from the user's data are shown escaped, as repr() would."""
    return "".join(repr(c)[1:-1] if c in _BREAKS or (ord(c) < 32 and c != "\t") or ord(c) == 127 else c
                   for c in text.strip())
