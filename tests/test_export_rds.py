""".rds exports carry variable labels, written without R, and R's read_run() attaches the codebook's labels.

Issue 15: persona attributes are labelled columns of every export; issue 27: the labels are
written in Python (simsubjects.publish.export_rds, the rdata package), so an export made on a machine
without R carries them too. Each test reads the files in real R."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import pandas as pd
import pyreadr
import pytest

from simsubjects.publish import export_rds
from simsubjects.collect.store import RunStore
from simsubjects.publish.export import export_run
from tests.test_ultimatum import fixture_responses

pytestmark = pytest.mark.r
R_DIR = Path(__file__).resolve().parents[1] / "R"
PARTY = "Persona attribute POLPARTY (from respondents.csv)"
REGION = "Région de résidence « métropole »"  # a .sav file's label in French: UTF-8 through R


@pytest.fixture
def run_dir(tmp_path):
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed")
    df = fixture_responses()
    df["POLPARTY"] = ["Democrat", "Républicain"] * (len(df) // 2) + ["Democrat"] * (len(df) % 2)
    df["REGION"] = "Nord"
    store = RunStore.open(tmp_path / "run", {"x": 1})
    store.finish(df, pd.DataFrame({"item": ["offer-01"], "offer": [1]}),
                 {"study": "ultimatum", "column_labels": {"POLPARTY": PARTY, "REGION": REGION}})
    return tmp_path / "run"


def r_labels(run: Path, how: str) -> dict[str, str]:
    """{column: attr(column, "label")} as R sees them: readRDS of the export, or read_run()."""
    read = (f'readRDS("{run}/export/responses.rds")' if how == "readRDS" else
            f'{{for (f in list.files("{R_DIR}", full.names = TRUE)) source(f); read_run("{run}")$responses}}')
    script = f"""
    x <- {read}
    stopifnot("R\\u00e9publicain" %in% as.character(x$POLPARTY))
    {"stopifnot(is.factor(x$POLPARTY))" if how == "readRDS" else ""}
    # useBytes: the UTF-8 bytes as stored, whatever the locale (C would print <U+00E9>)
    for (c in names(x)) {{ l <- attr(x[[c]], "label"); if (!is.null(l)) writeLines(paste0(c, "\\t", enc2utf8(l)), useBytes = TRUE) }}
    """
    r = subprocess.run(["Rscript", "--vanilla", "-e", script], capture_output=True, text=True, encoding="utf-8")
    assert r.returncode == 0, r.stderr[-2000:]
    return dict(line.split("\t", 1) for line in r.stdout.splitlines() if "\t" in line)


def test_rds_labels_equal_the_codebook(run_dir):
    export_run(run_dir, ["rds"])
    book = pd.read_csv(run_dir / "export" / "codebook_responses.csv", keep_default_na=False).set_index("column")
    labels = r_labels(run_dir, "readRDS")
    assert labels["POLPARTY"] == book.loc["POLPARTY", "label"] == PARTY
    want = {c: lab for c, lab in book["label"].items() if lab}
    assert labels == want and labels["validity"].startswith("Validity rate") and labels["REGION"] == REGION
    # the values are those of the run's table (librdata, pyreadr's reader, reads the file as well)
    rds = pyreadr.read_r(str(run_dir / "export" / "responses.rds"))[None]
    assert rds["POLPARTY"].astype(str).tolist() == pd.read_parquet(run_dir / "responses.parquet")["POLPARTY"].tolist()
    assert not [p.name for p in (run_dir / "export").iterdir() if p.name.startswith(".")]


def test_an_export_without_r_on_path_is_labelled(run_dir):
    """`simsubjects export` where no Rscript can be found: the .rds files carry the labels, no note."""
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + "/nonexistent",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    r = subprocess.run([sys.executable, "-c", "import shutil; assert shutil.which('Rscript') is None; "
                        "from simsubjects.cli import main; raise SystemExit(main(['export', "
                        f"{str(run_dir)!r}, '--to', 'rds,csv']))"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "Rscript" not in r.stderr and "note" not in r.stderr
    assert r_labels(run_dir, "readRDS")["POLPARTY"] == PARTY
    assert r_labels(run_dir, "read_run")["POLPARTY"] == PARTY
    (run_dir / "export" / "responses.rds").unlink()
    assert r_labels(run_dir, "read_run")["POLPARTY"] == PARTY  # the .csv file: from codebook_responses.csv


def test_r_reads_every_column_type_with_its_label(tmp_path):
    """Numbers (NA, not NaN), integers as doubles, logicals, text with NA and UTF-8, factors with
    NA, datetimes; labels on some columns only."""
    df = pd.DataFrame({"n": [1.5, np.nan, 2.0], "i": [1, 2, 3], "b": [True, False, True],
                       "s": ["x", None, "Républicain"], "f": pd.Categorical(["u", None, "v"], categories=["v", "u"]),
                       "d": pd.to_datetime(["2020-01-01", None, "2021-05-05 10:00:00"], utc=True, format="mixed")})
    export_rds.write_labelled(df, tmp_path / "x.rds", {"n": "Number « é »", "f": "A factor", "s": ""})
    script = f"""
    x <- readRDS("{tmp_path / 'x.rds'}")
    stopifnot(is.na(x$n[2]), !is.nan(x$n[2]), x$n[3] == 2, is.double(x$i), identical(x$b, c(TRUE, FALSE, TRUE)))
    stopifnot(identical(x$s[c(1, 3)], c("x", "R\u00e9publicain")), is.na(x$s[2]))
    stopifnot(is.factor(x$f), identical(levels(x$f), c("v", "u")), identical(as.character(x$f), c("u", NA, "v")))
    stopifnot(inherits(x$d, "POSIXct"), format(x$d[3], tz = "UTC") == "2021-05-05 10:00:00", is.na(x$d[2]))
    stopifnot(attr(x$n, "label") == "Number \u00ab \u00e9 \u00bb", attr(x$f, "label") == "A factor")
    stopifnot(is.null(attr(x$s, "label")), is.null(attr(x$i, "label")), nrow(x) == 3)
    """
    r = subprocess.run(["Rscript", "--vanilla", "-e", script], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_failed_write_leaves_no_file(tmp_path, monkeypatch):
    real = export_rds.gzip.open

    def full(path, mode, **kw):  # the disk fills after the first bytes
        with real(path, mode, **kw) as f:
            f.write(b"X\n")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export_rds.gzip, "open", full)
    with pytest.raises(OSError):
        export_rds.write_labelled(pd.DataFrame({"a": [1]}), tmp_path / "x.rds", {"a": "A"})
    assert list(tmp_path.iterdir()) == []
