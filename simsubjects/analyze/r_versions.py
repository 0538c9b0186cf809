"""Which rpy2 fits which R: a one-line diagnosis when rpy2 cannot start the installed R.

rpy2 3.6 calls R API symbols (e.g. R_getVar) that exist only from R 4.5 on, so with Debian 12's
R 4.2 it fails with "undefined symbol: R_getVar"; rpy2 3.5.17 starts R 4.2. pip cannot see the R
version, hence this check after the fact.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version

# (rpy2 series, the oldest R it starts); newest series first
RPY2_NEEDS_R = [((3, 6), (4, 5)), ((3, 5), (4, 0))]


def _major_minor(version: str | None) -> tuple[int, int] | None:
    m = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def installed_r_version() -> str | None:
    """The version of the R on PATH (R --version), or None without R."""
    exe = shutil.which("R")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"R version (\d+\.\d+\.\d+)", out)
    return m.group(1) if m else None


def installed_rpy2_version() -> str | None:
    try:
        return version("rpy2")
    except PackageNotFoundError:
        return None


def fit_advice(rpy2_version: str | None, r_version: str | None) -> str | None:
    """A sentence naming the versions that fit when these two do not; None when they fit or are unknown."""
    py, r = _major_minor(rpy2_version), _major_minor(r_version)
    if py is None or r is None:
        return None
    for series, oldest_r in RPY2_NEEDS_R:
        if py >= series:
            if r >= oldest_r:
                return None
            fits = next((s for s, need in RPY2_NEEDS_R if r >= need), None)
            want = "pip install 'rpy2==3.5.17'" if fits == (3, 5) else "a newer R"
            return (f"rpy2 {rpy2_version} needs R >= {oldest_r[0]}.{oldest_r[1]} but R {r_version} is installed; "
                    f"rpy2 3.5.x fits R 4.0-4.4 and rpy2 3.6.x fits R >= 4.5: {want}")
    return None
