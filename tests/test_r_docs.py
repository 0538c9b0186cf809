"""The R documentation is generated: man/ and NAMESPACE are what roxygen2 writes from R/ and man-roxygen/."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_man_pages_are_roxygen_output(tmp_path):
    ok = shutil.which("Rscript") and subprocess.run(
        ["Rscript", "-e", "quit(status = !requireNamespace('roxygen2', quietly = TRUE))"]).returncode == 0
    if not ok:
        if os.environ.get("SIMSUBJECTS_REQUIRE_R") == "1":
            pytest.fail("SIMSUBJECTS_REQUIRE_R=1 but roxygen2 is missing (apt-get install r-cran-roxygen2)")
        pytest.skip("roxygen2 not installed")
    for name in ("DESCRIPTION", "R", "man-roxygen"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    res = subprocess.run(["Rscript", "-e", "roxygen2::roxygenise()"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    made = sorted(p.name for p in (tmp_path / "man").glob("*.Rd"))
    assert made == sorted(p.name for p in (ROOT / "man").glob("*.Rd")), "run `make rdoc` and commit man/"
    for name in made:
        assert (tmp_path / "man" / name).read_text() == (ROOT / "man" / name).read_text(), f"man/{name}: run `make rdoc`"
    assert (tmp_path / "NAMESPACE").read_text() == (ROOT / "NAMESPACE").read_text(), "NAMESPACE: run `make rdoc`"
    # shared parameter docs come from the templates
    assert "Confidence level of the interval" in (ROOT / "man" / "t_tests.Rd").read_text()
    assert "run folder of a replication" in (ROOT / "man" / "replicate_moca.Rd").read_text()
