"""`analyze DIR1 DIR2`: analyzing two runs together gives, for each run, exactly what it gives alone.

Per-trial reshaping must group by (source, model, run, trial): trial ids repeat across runs, and
a reshaping that groups by trial alone pools the two runs' trials (Milgram's P(stop) of 0.9 in
each run came out as 0.45 together). The first run of each study is the tiny replication's
(tests/test_replicate.py runs `two_runs_agree` on each of its run folders: no second collection on
the model); a copy of it under another model name, with each trial's weights reversed (other
numbers, the same trial ids), is the second run; both are analyzed alone and together.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from simsubjects.publish.analysis import analyze_runs
from simsubjects.analyze.tidy import shares, stack_runs


def _second_run(a, b):
    """b: run a as another model's, each model trial's weights in reverse order."""
    shutil.copytree(a, b)
    r = pd.read_parquet(b / "responses.parquet")
    model = r["source"] == "model"
    rev = r[model].groupby("trial", sort=False)["weight"].transform(lambda w: w.to_numpy()[::-1])
    r.loc[model, "weight"] = rev.to_numpy()
    r.loc[model, "model"] = "smollm2-b"
    r.to_parquet(b / "responses.parquet")


def _rows_of(table: pd.DataFrame, models: set) -> pd.DataFrame:
    t = table.drop(columns=["run"], errors="ignore")
    if "model" in t.columns:
        t = t[t["model"].isin(models)]
    return t.reset_index(drop=True)


def _same(joint: pd.DataFrame, alone: pd.DataFrame, where: str) -> None:
    models = set(alone["model"]) if "model" in alone.columns else set()
    got = _rows_of(joint, models)
    exp = alone.reset_index(drop=True)
    cols = list(exp.columns)
    assert list(got.columns) == cols, where
    key = [c for c in cols if got[c].dtype == object]
    got = got.sort_values(key, kind="stable").reset_index(drop=True) if key else got
    exp = exp.sort_values(key, kind="stable").reset_index(drop=True) if key else exp
    pd.testing.assert_frame_equal(got, exp, check_dtype=False, obj=where)


def two_runs_agree(run: Path, tmp_path: Path) -> None:
    """`run` and its reversed copy, each analyzed alone and both together: every table of each alone is
    its rows of the joint table."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(run, a, ignore=shutil.ignore_patterns("analysis", "export"))
    _second_run(a, b)
    alone_a = analyze_runs([a], tmp_path / "out_a", plots=False)
    alone_b = analyze_runs([b], tmp_path / "out_b", plots=False)
    joint = analyze_runs([a, b], tmp_path / "out_ab", plots=False)
    assert set(joint.responses["run"]) == {"a", "b"}
    for alone in (alone_a, alone_b):
        assert set(alone.tables) == set(joint.tables)
        for t, df in alone.tables.items():
            _same(joint.tables[t], df, f"{run.name} table {t}")


def test_same_trial_ids_in_two_runs_stay_two_trials():
    """Hand-computed: two runs with the same trial id and model, P(stop) 0.9 each: 0.9, not 0.45."""
    one = pd.DataFrame({"source": "model", "model": "m", "trial": "t1", "response": ["stop", "not stop"],
                        "weight": [0.9, 0.1]})
    both = stack_runs([one, one.copy()], ["r1", "r2"])
    s = shares(both)
    assert np.allclose(s.loc[s["response"] == "stop", "share"], [0.9, 0.9])
