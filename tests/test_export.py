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


def test_one_type_per_schema_column_and_json_stays_text(run_dir):
    """trial/item/subject are text whatever their count, JSON cells are text, not factors (issue 29)."""
    export_run(run_dir, ["rds", "dta"])
    out = run_dir / "export"
    rds = pyreadr.read_r(str(out / "responses.rds"))[None]
    for c in ("trial", "item"):
        assert not isinstance(rds[c].dtype, pd.CategoricalDtype), c
    assert isinstance(rds["response"].dtype, pd.CategoricalDtype)
    items = pyreadr.read_r(str(out / "items.rds"))[None]
    assert not isinstance(items["options"].dtype, pd.CategoricalDtype)  # JSON text
    with pd.io.stata.StataReader(out / "items.dta") as r:
        assert "options" not in r.value_labels()


def test_stata_labels_cut_at_a_word_boundary_full_text_in_the_codebook(run_dir, monkeypatch):
    from simsubjects.publish.export import short_label

    long = ("Persona attribute POLIDEOLOGY (from respondents.csv): the respondent's self-described political "
            "ideology on a five-point scale")
    assert short_label(long) == "Persona attribute POLIDEOLOGY (from respondents.csv): the respondent's..."
    assert len(short_label(long)) <= 80 and short_label("short label") == "short label"
    assert short_label("x" * 100) == "x" * 77 + "..."  # one long word: cut inside it
    import json

    man = json.loads((run_dir / "manifest.json").read_text())
    man["column_labels"] = {"a_rather_long_design_column.name_over_32_characters": long}
    (run_dir / "manifest.json").write_text(json.dumps(man))
    export_run(run_dir, ["dta", "sav"])
    out = run_dir / "export"
    with pd.io.stata.StataReader(out / "responses.dta") as r:
        assert r.variable_labels()[stata_name("a_rather_long_design_column.name_over_32_characters", set())] == \
            short_label(long)
    book = pd.read_csv(out / "codebook_responses.csv")
    assert long in book["label"].tolist()


def test_an_item_table_s_own_columns_do_not_get_the_responses_labels(tmp_path):
    """survey_bias items carry `source` (where a question comes from): not labelled "model or human"."""
    store = RunStore.open(tmp_path / "run", {"x": 1})
    items = pd.DataFrame({"item": ["offer-01", "offer-02", "offer-05"], "source": ["pew", "pew", "gss"]})
    store.finish(fixture_responses(), items, {"study": "ultimatum"})
    export_run(tmp_path / "run", ["csv"])
    book = pd.read_csv(tmp_path / "run" / "export" / "codebook_items.csv", keep_default_na=False).set_index("column")
    assert book.loc["item", "label"].startswith("Stimulus identifier")
    assert book.loc["source", "label"] == ""
    resp = pd.read_csv(tmp_path / "run" / "export" / "codebook_responses.csv").set_index("column")
    assert resp.loc["source", "label"] == "model or human"


@pytest.fixture
def blank_run(tmp_path):
    """Model rows with "" for "no persona" (as the runs write them) beside rows with a missing persona
    (as the people's rows come) and rows with a persona."""
    store = RunStore.open(tmp_path / "blank", {"x": 1})
    df = fixture_responses()
    df["persona"] = [("", None, "Alice")[i % 3] for i in range(len(df))]
    df["note"] = [("", None, "x" * 300)[i % 3] for i in range(len(df))]  # long text: stays text, not a factor
    items = pd.DataFrame({"item": ["offer-01", "offer-02", "offer-05"], "offer": [1, 2, 5]})
    store.finish(df, items, {"study": "ultimatum"})
    return tmp_path / "blank"


def test_missing_is_missing_in_every_export(blank_run):
    """Issue 29: a model row's "no value" ("") and a missing value are the same missing value in
    .rds (NA, no "" factor level), .dta/.sav (missing code; Stata's empty string for text), .parquet,
    .csv and the codebook's count."""
    run = blank_run
    export_run(run, ["csv", "parquet", "rds", "dta", "sav"])
    _, want, _ = load_run(run)
    absent = int((want["persona"].isna() | (want["persona"] == "")).sum())
    assert 0 < absent < len(want) and (want["persona"] == "").any()
    out = run / "export"
    rds = pyreadr.read_r(str(out / "responses.rds"))[None]
    assert isinstance(rds["persona"].dtype, pd.CategoricalDtype)
    assert list(rds["persona"].cat.categories) == ["Alice"]
    assert int(rds["persona"].isna().sum()) == absent
    assert int(rds["note"].isna().sum()) == absent
    assert int(pd.read_parquet(out / "responses.parquet")["persona"].isna().sum()) == absent
    with pd.io.stata.StataReader(out / "responses.dta") as r:
        assert list(r.value_labels()[stata_name("persona", set())].values()) == ["Alice"]
    assert int(pd.read_stata(out / "responses.dta")["persona"].isna().sum()) == absent
    sav, meta = pyreadstat.read_sav(str(out / "responses.sav"))
    assert int(sav["persona"].isna().sum()) == absent
    assert list(meta.variable_value_labels["persona"].values()) == ["Alice"]
    book = pd.read_csv(out / "codebook_responses.csv").set_index("column")
    assert book.loc["persona", "missing"] == absent and book.loc["persona", "distinct"] == 1


@pytest.mark.r
def test_read_run_gives_na_for_every_absent_value(blank_run):
    """read_run() from .rds, .csv, .dta and .sav: persona is NA (no "" level) in each absent row."""
    import shutil
    import subprocess

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed")
    run = blank_run
    export_run(run, ["csv", "rds", "dta", "sav"])
    _, want, _ = load_run(run)
    absent = int((want["persona"].isna() | (want["persona"] == "")).sum())
    csv_only = run.parent / "csv_only"
    shutil.copytree(run, csv_only)
    for f in (csv_only / "export").glob("*.rds"):
        f.unlink()
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    script = f"""
    for (f in list.files("{root / 'R'}", full.names = TRUE)) source(f)
    for (how in list(list("{run}", "auto"), list("{csv_only}", "auto"), list("{run}", "dta"), list("{run}", "sav"))) {{
      r <- read_run(how[[1]], format = how[[2]])$responses
      p <- r$persona
      stopifnot(sum(is.na(p)) == {absent}, !any(as.character(p) %in% ""), sum(is.na(r$note)) == {absent})
      if (is.factor(p)) stopifnot(identical(levels(p), "Alice"))
    }}
    cat("ok\\n")
    """
    r = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:] + r.stdout[-500:]


def test_likert_scale_and_factor_levels_in_the_study_file_s_order(tmp_path):
    """Issue 29: a study file's Likert scale is exported in scale order (Strongly oppose ... Strongly
    support, not alphabetically) and its factors in declared order, in .rds factors, .dta/.sav value
    labels and the codebook; the order comes from the run's own copy of the study file."""
    from pathlib import Path

    from simsubjects.studyfile.adapter import KEY
    from simsubjects.studyfile.runcopy import COPY, copy_files
    from simsubjects.studyfile.spec import load_study

    study = load_study(Path(__file__).resolve().parents[1] / "examples/vignette_2x2/study.yaml")
    scale = ["Strongly oppose", "Oppose", "Somewhat oppose", "Undecided", "Somewhat support", "Support",
             "Strongly support"]
    run = tmp_path / "likert"
    store = RunStore.open(run, {"x": 1})
    copy_files(study, run)
    # answers that sort differently alphabetically; "Oppose" never drawn, the levels keep it
    answers = ["Support", "Strongly oppose", "Undecided", "Somewhat support", "Strongly support", "Somewhat oppose"]
    df = pd.DataFrame({"study": study.name, "trial": [f"t{i}" for i in range(12)], "item": "support",
                       "condition": "", "subject": [f"s{i}" for i in range(12)], "source": "model", "model": "m",
                       "method": "sampled", "response": answers * 2, "weight": 1.0, "validity": 1.0,
                       "frame": ["loss", "gain"] * 6, "messenger": ["official", "official", "doctor"] * 4})
    rel = next(iter(study.files))
    store.finish(df, pd.DataFrame({"item": ["support"]}),
                 {"study": study.name, "parameters": {KEY: {"file": f"{COPY}/{rel}", "sha256": study.sha256}}})
    export_run(run, ["rds", "dta", "sav", "csv"])
    out = run / "export"
    rds = pyreadr.read_r(str(out / "responses.rds"))[None]
    assert list(rds["response"].cat.categories) == scale
    assert list(rds["frame"].cat.categories) == ["gain", "loss"]
    assert list(rds["messenger"].cat.categories) == ["doctor", "official"]
    with pd.io.stata.StataReader(out / "responses.dta") as r:
        labels = r.value_labels()
    assert [labels["response"][k] for k in sorted(labels["response"])] == scale
    _, meta = pyreadstat.read_sav(str(out / "responses.sav"), metadataonly=True)
    sav = meta.variable_value_labels["response"]
    assert [sav[k] for k in sorted(sav)] == scale
    book = pd.read_csv(out / "codebook_responses.csv").set_index("column")
    assert book.loc["response", "values"] == "; ".join(scale)


def test_scale_levels_follow_each_item_s_positions():
    """An undeclared ordinal scale (a `position` column) orders `response` item by item, refusals last."""
    from simsubjects.publish.export import scale_levels

    r = pd.DataFrame({"item": ["q1"] * 5 + ["q2"] * 3,
                      "response": ["Poor", "Excellent", "Good", "Refused", "Only fair", "Yes", "No", "Refused"],
                      "position": [4, 1, 2, np.nan, 3, 1, 2, np.nan]})
    assert scale_levels(r) == ["Excellent", "Good", "Only fair", "Poor", "Yes", "No", "Refused"]
    assert scale_levels(r.drop(columns="position")) == []
    assert scale_levels(r.assign(position=r["position"].astype(str))) == []
