"""Exports read back equal to the parquet table (pyreadr, pandas.read_stata, pyreadstat)."""

import numpy as np
import pandas as pd
import pyreadr
import pyreadstat
import pytest

from simsubjects.collect.store import RunStore, load_run
from simsubjects.publish.export import export_run, stata_name
from tests.test_ultimatum import fixture_responses


@pytest.fixture
def run_dir(tmp_path):
    store = RunStore.open(tmp_path / "run", {"x": 1})
    df = fixture_responses()
    df["a_rather_long_design_column.name_over_32_characters"] = "x" * 3000  # long string, bad Stata name
    items = pd.DataFrame({"item": ["offer-01", "offer-02", "offer-05"], "offer": [1, 2, 5],
                          "options": [("a", "b"), ("a",), ("c",)]})
    store.finish(df, items, {"study": "ultimatum"})
    return tmp_path / "run"


def same(a: pd.DataFrame, b: pd.DataFrame):
    assert list(a.columns) == list(b.columns)
    for c in a.columns:
        if pd.api.types.is_numeric_dtype(a[c]):
            np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=1e-12)
        else:
            assert a[c].astype(str).tolist() == b[c].astype(str).tolist(), c


def test_rds_dta_sav_csv_round_trip(run_dir):
    export_run(run_dir, ["csv", "parquet", "rds", "dta", "sav"])
    _, want, items = load_run(run_dir)
    out = run_dir / "export"
    rds = pyreadr.read_r(str(out / "responses.rds"))[None]
    assert isinstance(rds["response"].dtype, pd.CategoricalDtype)  # an R factor
    same(rds, want)
    dta = pd.read_stata(out / "responses.dta")
    renamed = {c: stata_name(c, set()) for c in want.columns}
    assert all(len(c) <= 32 and "." not in c for c in dta.columns)
    same(dta, want.rename(columns=renamed))
    with pd.io.stata.StataReader(out / "responses.dta") as r:
        assert r.value_labels()  # categorical columns carry value labels
        assert r.variable_labels()["weight"].startswith("Probability")
    sav, meta = pyreadstat.read_sav(str(out / "responses.sav"), apply_value_formats=True)
    same(sav, want.rename(columns=renamed))
    assert meta.column_names_to_labels["validity"].startswith("Validity")
    same(pd.read_csv(out / "responses.csv"), want)
    same(pd.read_parquet(out / "responses.parquet"), want)
    assert pd.read_csv(out / "items.csv")["options"].tolist() == ['["a", "b"]', '["a"]', '["c"]']
    book = pd.read_csv(out / "codebook_responses.csv")
    assert set(book["column"]) == set(want.columns)
    assert (out / "codebook_responses.md").read_text().startswith("# Codebook")


def test_unknown_format_writes_nothing(run_dir):
    from simsubjects.errors import UserError

    with pytest.raises(UserError, match="xlsx"):
        export_run(run_dir, ["csv", "xlsx"])
    assert not (run_dir / "export").exists()


@pytest.mark.r
def test_r_reads_the_exports(run_dir):
    """readRDS and haven::read_dta in R give the same values as the parquet table, and variable labels."""
    import shutil
    import subprocess

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed")
    export_run(run_dir, ["csv", "rds", "dta"])
    out = run_dir / "export"
    script = f"""
    x <- readRDS("{out / 'responses.rds'}")
    y <- haven::read_dta("{out / 'responses.dta'}")
    z <- read.csv("{out / 'responses.csv'}", stringsAsFactors = FALSE)
    stopifnot(nrow(x) == nrow(z), nrow(y) == nrow(z), is.factor(x$response))
    stopifnot(isTRUE(all.equal(as.numeric(x$weight), z$weight, tolerance = 1e-12)))  # less its label
    stopifnot(grepl("^Validity rate", attr(x$validity, "label")))
    stopifnot(identical(as.character(x$response), z$response), identical(as.character(x$pairing), z$pairing))
    stopifnot(isTRUE(all.equal(as.numeric(y$weight), z$weight, tolerance = 1e-12)))
    stopifnot(identical(as.character(haven::as_factor(y$response)), z$response))
    stopifnot(grepl("^Validity rate", attr(y$validity, "label")))
    cat("ok\\n")
    """
    r = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]
