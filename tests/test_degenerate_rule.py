"""Issue 37, item 2: every Welch, paired, one-sample t-test and Pearson chi-square is defined once
(analyze/methods/tests.py), and every caller answers a degenerate sample by its one rule, `no_test`
(docs/conventions.md, "Degenerate samples"): fewer than 2 values -> the estimate and NaN; no spread
(a standard error of 0 or float rounding) -> the exact estimate, standard error 0, the point interval,
no statistic and no p-value, df n - 1 where its formula needs no variance. Values are scores or
probabilities (unit: subject, sentence or item, as each caller says)."""
from __future__ import annotations

import ast
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.analyze.methods import tests as T

PACKAGE = Path(__file__).resolve().parents[1] / "simsubjects"
FLAT = [0.1] * 5  # spread of float rounding only
SCIPY_TESTS = {"ttest_ind", "ttest_rel", "ttest_1samp", "chi2_contingency"}
# paired_t is one_sample_t of the differences (scipy's ttest_rel is ttest_1samp(x - y)): ttest_rel is called nowhere
CALLED = SCIPY_TESTS - {"ttest_rel"}


def _no_spread(row: dict, est: float, df: float) -> None:
    assert row["estimate"] == pytest.approx(est, abs=1e-15)
    assert row["std.error"] == 0.0 and math.isnan(row["statistic"]) and math.isnan(row["p.value"])
    assert row["conf.low"] == row["conf.high"] == row["estimate"]
    assert (math.isnan(df) and math.isnan(row["df"])) or row["df"] == df


def _too_few(row: dict) -> None:
    assert all(math.isnan(row[k]) for k in ("std.error", "statistic", "df", "p.value", "conf.low", "conf.high"))


def test_each_test_is_computed_in_one_place():
    """scipy's t-tests and chi-square are called in analyze/methods/tests.py only, each once (read with ast)."""
    found = []
    for f in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            name = getattr(getattr(node, "func", None), "attr", None) or getattr(getattr(node, "func", None), "id", None)
            if isinstance(node, ast.Call) and name in SCIPY_TESTS:
                found.append((f.relative_to(PACKAGE).as_posix(), name))
    assert sorted(found) == sorted((("analyze/methods/tests.py", n) for n in CALLED)), found


def test_the_rule_in_the_tests_module():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no scipy precision warning on the way
        _no_spread(T.one_sample_t(FLAT), 0.1, 4.0)
        _no_spread(T.paired_t([0.3, 0.4, 0.5], [0.2, 0.3, 0.4]), 0.1, 2.0)
        _no_spread(T.welch_t(FLAT, [0.0] * 3), 0.1, math.nan)
    _too_few(T.one_sample_t([0.3]))
    _too_few(T.paired_t([0.3], [0.1]))
    _too_few(T.welch_t([0.3], [0.1, 0.2]))
    assert T.pearson_chi2([[3.0, 0.0], [2.0, 0.0]]) is None  # all one answer
    ok = T.pearson_chi2([[3.0, 1.0], [1.0, 3.0]])
    assert ok["df"] == 1.0 and 0 < ok["p.value"] < 1 and 0 < ok["effect_size"] < 1


def test_methods_paired_follows_the_rule():
    from simsubjects.analyze.methods.paired import paired_test

    row = paired_test([0.3, 0.4, 0.5], [0.2, 0.3, 0.4]).iloc[0].to_dict()
    _no_spread(row, 0.1, 2.0)


def _trials(x, y) -> pd.DataFrame:
    """trial_scores' layout, one subject per trial at level a (x) or b (y); trial weight 1 (model rows)."""
    return pd.DataFrame({"source": "model", "model": "m", "item": "q1", "frame": ["a"] * len(x) + ["b"] * len(y),
                         "subject": [f"s{i}" for i in range(len(x) + len(y))], "tw": 1.0, "score": x + y})


def test_study_file_tests_follow_the_rule():
    from simsubjects.analyze.methods import subjects as S

    row = S.welch(_trials([1.0] * 3, [0.0] * 3), "frame", ["a", "b"], ["item"]).iloc[0].to_dict()
    _no_spread(row, 1.0, math.nan)
    assert row["warning"] == T.DEGENERATE and math.isnan(row["effect_size"]) and row["n"] == 6
    one = S.one_sample(_trials([0.4] * 4, []), 0, ["item"]).iloc[0].to_dict()
    _no_spread(one, 0.4, 3.0)
    assert one["warning"] == T.DEGENERATE
    within = pd.DataFrame({"source": "model", "model": "m", "item": "q1", "frame": ["a", "b"] * 3,
                           "subject": ["s1", "s1", "s2", "s2", "s3", "s3"], "tw": 1.0,
                           "score": [0.5, 0.3, 0.6, 0.4, 0.7, 0.5]})
    pair = S.paired(within, "frame", ["a", "b"], ["item"]).iloc[0].to_dict()
    _no_spread(pair, 0.2, 2.0)
    # fewer than 2 subjects at a level: no row
    assert S.welch(_trials([1.0], [0.0, 0.5]), "frame", ["a", "b"], ["item"]).empty


def test_garden_path_follows_the_rule():
    from simsubjects.studies.garden_path.analysis import paired_tests

    sent = pd.DataFrame({"model": "m", "set": "s", "type": "t", "garden_path": [0.3, 0.4, 0.5],
                         "control": [0.2, 0.3, 0.4]})
    sent["difference"] = sent["garden_path"] - sent["control"]
    t = paired_tests(sent)
    t = t[t["test"] == "Paired t-test"].iloc[0]
    ref = T.paired_t(sent["garden_path"], sent["control"])
    assert math.isnan(t["p.value"]) and math.isnan(t["statistic"]) and t["df"] == ref["df"] == 2


def test_sessions_follow_the_rule():
    """subject_tests (round 2 - round 1 over subjects) with differences of float rounding, and
    beside_people where neither side varies: the exact value, no p-value."""
    from simsubjects.studyfile.session import load_session
    from simsubjects.studyfile.session_analysis import _weighted, beside_people, subject_tests

    rows = []
    for s, (p1, p2) in {"s1": (0.3, 0.4), "s2": (0.5, 0.6), "s3": (0.2, 0.3)}.items():
        for rnd, p in ((1, p1), (2, p2)):
            rows += [{"subject": s, "trial": f"{s}-{rnd}", "item": "choice", "response": r, "weight": w,
                      "reach": 1.0, "round": rnd, "path": 1, "condition": "decision"}
                     for r, w in (("J", p), ("C", 1 - p))]
    tests = subject_tests(_weighted(pd.DataFrame(rows), enumerate_=False))
    got = tests[tests["response"] == "J"].iloc[0]
    assert math.isnan(got["p.value"]) and math.isnan(got["statistic"])
    assert got["estimate"] == pytest.approx(0.1) and got["std.error"] == pytest.approx(0.0, abs=1e-15)

    study = load_session(Path(__file__).resolve().parents[1] / "examples" / "pd_tft" / "study.yaml")
    dec = pd.DataFrame([{"subject": s, "trial": f"{s}-1", "item": "choice", "response": r, "weight": 0.5,
                         "reach": 1.0, "round": 1, "path": 1, "condition": "decision"}
                        for s in ("s1", "s2", "s3") for r in ("J", "C")])
    study.people = pd.DataFrame({"respondent": ["a", "b", "c"], "measure": "share choice=J", "value": 0.2,
                                 "round": 1})
    study.people_by = ["round"]
    _, tests = beside_people(study, dec, dec.iloc[:0])
    row = tests.iloc[0]
    assert row["estimate"] == pytest.approx(0.3) and math.isnan(row["p.value"]) and math.isnan(row["statistic"])
    assert row["conf.low"] == row["conf.high"] == row["estimate"]
    assert np.isnan(row["df"])
