"""Run folders made before the house-by-stage refactor (tests/data/old_runs, made by commit 26b54a9)
still resume and analyze to the same tables. The unit of each comparison is the table row.
Issue 25 changed three expected tables on purpose (regenerated): order_effects.csv of both runs (test,
unit, Holm/BH columns; paired within subject where each subject saw both orders, same estimates) and
studyfile_averaged's distribution.csv (rows in scale order); later, studyfile_averaged's agreement.csv
(a `unit` column) and representativeness*.csv (the interval from resampling respondents and subjects:
boot.*, counts and note), their earlier columns equal to 1e-9; the same three tables of
studyfile_randomized (made by commit 31822bf) were regenerated likewise, earlier columns equal to 1e-9.
Issue 40 (item 4) regenerated every representativeness*.csv once more: boot.low and boot.high are the
basic bootstrap interval (double-bootstrap calibrated for study files, which add a `boot_method`
column); every other column equal to 1e-9.
Issue 40 (item 3) regenerated order_effects.csv of all four: a two-option item's second row is the mirror of its
first (one contrast), out of the Holm/BH family (`family`, `p.value.holm`); every other column equal.
Issue 41 (items 9, 12) added to both study-file runs people_beside_model.csv (people beside each model, per
arm) and agreement.csv's `note` column (it pools a 1-5 scale with a yes/no share, and says so); every other
column of agreement.csv equal.
Issue 40 (items 1, 2) added to every test table (a table with a p.value column) of all four the columns `sample`
(what the subjects are a sample of: analyze/estimand.py) and `low_validity` (the model's valid mass under 0.5),
and to order_effects_average.csv `unit` (item); opinion_survey_cyclic (copies of the default prompt) also gets
`note`, and its order_effects_average, a test over items, keeps its p-value. Every other column equal to 1e-9."""
from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from simsubjects.cli.commands import main

OLD = Path(__file__).parent / "data" / "old_runs"
RUNS = {
    "opinion_survey_cyclic": ["collect", "opinion-survey", "--first", "2", "--order", "cyclic"],
    "studyfile_averaged": ["collect", "{run}/study/study.yaml"],
    # made by commit 31822bf, the last before one option-order module (seeded random orders, per subject)
    "opinion_survey_random": ["collect", "opinion-survey", "--first", "2", "--order", "random",
                              "--personas", "bundled", "--sample", "1"],
    "studyfile_randomized": ["collect", "{run}/study/study.yaml"],
}


# columns a resume re-derives on purpose since the run was made (see test_old_run_resumes_from_its_cache)
RECOMPUTED = {"opinion_survey_random": ["persona_weight"]}


def _copy(tmp_path, name):
    run = tmp_path / name
    shutil.copytree(OLD / name, run)
    return run


@pytest.mark.parametrize("name", sorted(RUNS))
def test_old_run_analyzes_to_the_same_tables(tmp_path, name):
    run = _copy(tmp_path, name)
    assert main(["analyze", str(run), "--out", str(tmp_path / "a"), "--no-plots"]) == 0
    expected = sorted(p.name for p in (OLD / f"{name}.analysis").glob("*.csv"))
    assert sorted(p.name for p in (tmp_path / "a").glob("*.csv")) == expected
    for table in expected:
        want = pd.read_csv(OLD / f"{name}.analysis" / table)
        got = pd.read_csv(tmp_path / "a" / table)
        pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-9, atol=1e-12, obj=table)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_old_run_resumes_from_its_cache(tmp_path, monkeypatch, smollm2, name):
    """The responses table is removed: resuming rebuilds it from the folder's cache, asking nothing new."""
    run = _copy(tmp_path, name)
    before = pd.read_parquet(run / "responses.parquet")
    (run / "responses.parquet").unlink()
    asked = []

    def load(spec, **kw):
        asked.append(spec)
        return smollm2

    monkeypatch.setattr("simsubjects.collect.pipeline.load_model", load)
    args = [a.format(run=run) for a in RUNS[name]]
    assert main([*args, "--model", "smollm2", "--out", str(run), "-q"]) == 0
    after = pd.read_parquet(run / "responses.parquet")
    # issue 25 (audit finding 5): personas drawn with --sample now carry their party's share of the
    # people's weight, so a resume re-derives persona_weight; every answer and other column is the run's own
    again = [c for c in RECOMPUTED.get(name, ()) if not after[c].equals(before[c])]
    pd.testing.assert_frame_equal(after.drop(columns=again).reset_index(drop=True),
                                  before.drop(columns=again).reset_index(drop=True))
    import json
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    # issue 25: the finished run keeps its own record; the resume is an event, every answer from the old cache
    assert manifest["events"][-1]["usage"]["requests"] == 0, manifest["events"][-1]["usage"]
