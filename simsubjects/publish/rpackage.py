"""The R package's source inside a replication folder, and the commit the folder was written from.

A replication folder must run `Rscript analysis.R` with no checkout and no Python (issue 29): the R
package (DESCRIPTION, NAMESPACE, R/, man/, LICENSE, tests/testthat/) is copied into
`r-package/simsubjects/`, so `R CMD INSTALL r-package/simsubjects` installs it and analysis.R, when the
package is not installed, sources `r-package/simsubjects/R/*.R` itself. The R package lives at the
root of the repository beside the Python package; an installed wheel without it gets no copy, and the
README says so.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

R_PACKAGE_DIR = "r-package/simsubjects"
_PARTS = ("DESCRIPTION", "NAMESPACE", "LICENSE", ".Rbuildignore", "R", "man", "man-roxygen", "inst", "vignettes",
          "tests/testthat")


def package_root() -> Path | None:
    """The repository root holding the R package (DESCRIPTION naming simsubjects), or None."""
    root = Path(__file__).resolve().parents[2]
    desc = root / "DESCRIPTION"
    if desc.is_file() and (root / "R").is_dir() and "Package: simsubjects" in desc.read_text(encoding="utf-8"):
        return root
    return None


def r_package_version(root: Path | None = None) -> str | None:
    root = root or package_root()
    if root is None:
        return None
    for line in (root / "DESCRIPTION").read_text(encoding="utf-8").splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None


def source_commit(root: Path | None = None) -> str | None:
    """The git commit of the checkout the code runs from ("<sha>-dirty" with uncommitted changes), or None."""
    root = root or package_root() or Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=20)
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return sha.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def copy_r_package(out: Path) -> str | None:
    """Copy the R package's source into `out/r-package/simsubjects` (replacing an older copy whole);
    returns the folder relative to `out`, or None when this install carries no R package."""
    root = package_root()
    if root is None:
        return None
    target = Path(out) / R_PACKAGE_DIR
    stage = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    for part in _PARTS:
        src = root / part
        if src.is_dir():
            shutil.copytree(src, stage / part, ignore=shutil.ignore_patterns("*.o", "*.so", ".*"))
        elif src.is_file():
            shutil.copy2(src, stage / part)
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        target.rename(old)
    stage.rename(target)
    shutil.rmtree(old, ignore_errors=True)
    return R_PACKAGE_DIR
