""".rds exports carry variable labels (set through R), and R's read_run() attaches the codebook's labels.

Issue 15: persona attributes are labelled columns of every export; pyreadr cannot write attributes,
so simsubjects.publish.export_rds has R set attr(x, "label"). Each test reads the files in real R."""

import shutil
import subprocess
from pathlib import Path

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
    # the values are those pyreadr wrote (the labelling step changes nothing else)
    rds = pyreadr.read_r(str(run_dir / "export" / "responses.rds"))[None]
    assert rds["POLPARTY"].astype(str).tolist() == pd.read_parquet(run_dir / "responses.parquet")["POLPARTY"].tolist()
    assert not [p.name for p in (run_dir / "export").iterdir() if p.name.startswith(".")]


def test_without_r_the_rds_is_whole_and_read_run_attaches_the_labels(run_dir, monkeypatch, capsys):
    monkeypatch.setattr(export_rds, "rscript", lambda: None)
    monkeypatch.setattr("simsubjects.publish.export.rscript", lambda: None)
    export_run(run_dir, ["rds", "csv"])
    assert capsys.readouterr().err.count("no variable labels") == 1  # one note for the whole export
    assert "POLPARTY" not in r_labels(run_dir, "readRDS")
    assert r_labels(run_dir, "read_run")["POLPARTY"] == PARTY  # from codebook_responses.csv
    (run_dir / "export" / "responses.rds").unlink()
    assert r_labels(run_dir, "read_run")["POLPARTY"] == PARTY  # the .csv file likewise


def test_a_failing_r_keeps_the_data_and_says_so(run_dir, monkeypatch, capsys):
    monkeypatch.setattr(export_rds, "_LABEL_SCRIPT", 'stop("no space left on device")')
    export_run(run_dir, ["rds"])
    assert "without variable labels: Rscript failed" in capsys.readouterr().err
    assert len(pyreadr.read_r(str(run_dir / "export" / "responses.rds"))[None]) == len(fixture_responses())
    assert not [p.name for p in (run_dir / "export").iterdir() if p.name.startswith(".")]
