"""What the command line does with an exception nobody expected: one line, a log, a distinct exit code.

Bad input is a `UserError` (exit 2). Anything else is a bug of simsubjects or of a library under
it: the user gets one line with the path of a log file that holds the traceback, and exit code
`INTERNAL_ERROR` (70, EX_SOFTWARE of BSD's sysexits.h), so scripts can tell "fix your input" (2)
from "report this" (70). The log never holds a secret: API keys from the environment, URL
passwords and credential-like query parameters are replaced by "***" before anything is written.
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
import traceback
from datetime import datetime, timezone
from pathlib import Path

INTERNAL_ERROR = 70
REDACTED = "***"
# Environment variables whose values are secrets wherever they appear (OPENAI_API_KEY, HF_TOKEN, ...).
# Whole words of the name only: TOKENIZERS_PARALLELISM=false is not a secret.
SECRET_ENV = re.compile(r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)($|_)", re.I)
# Query parameters that carry credentials in URLs (signed URLs, proxies, Azure, ...).
SECRET_PARAMS = ("key", "api-key", "api_key", "apikey", "token", "access_token", "auth", "sig", "signature",
                 "password", "secret", "client_secret", "x-api-key")
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s?#]+)@")
# user:password@host without a scheme (a URL typed without http://); not the spec form openai:MODEL@URL
_BARE_USERINFO = re.compile(r"(?<![\w.~%+-])(?!openai:|hf:)(?P<user>[\w.~%+-]+):(?P<pw>[^\s'\",/@]+)@")
_PARAM = re.compile(r"(?P<name>[?&;](?:%s)=)(?P<value>[^&#\s'\"]*)" % "|".join(re.escape(p) for p in SECRET_PARAMS),
                    re.I)
_BEARER = re.compile(r"(?P<name>Bearer\s+)(?P<value>[A-Za-z0-9._~+/=-]+)", re.I)


def redact(text: str, extra: tuple[str, ...] = ()) -> str:
    """`text` without URL userinfo, credential query values, bearer tokens, or secret env values."""
    from .redact import redact as redact_registered  # the keys and URL passwords this run was given

    text = redact_registered(text)
    text = _USERINFO.sub(lambda m: m["scheme"] + REDACTED + "@", text)
    text = _BARE_USERINFO.sub(lambda m: m["user"] + ":" + REDACTED + "@", text)
    text = _PARAM.sub(lambda m: m["name"] + REDACTED, text)
    text = _BEARER.sub(lambda m: m["name"] + REDACTED, text)
    secrets = [v for k, v in os.environ.items() if SECRET_ENV.search(k) and _secret_like(v)] + [s for s in extra if s]
    for s in sorted(set(secrets), key=len, reverse=True):  # longest first: one secret may contain another
        text = text.replace(s, REDACTED)
    return text


def _secret_like(value: str) -> bool:
    """A value worth hiding: not a flag, a number or a word that would blank out ordinary text."""
    v = value.strip()
    return len(v) >= 6 and v.lower() not in ("true", "false", "none", "null") and not v.isdigit()


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
