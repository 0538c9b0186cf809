"""Samples whose spread is float rounding (issue 27: scipy's "Precision loss occurred in moment
calculation" in `make demo`): the t-tests treat them as R's t.test does ("data are essentially
constant"), print no warning, and a Welch test beside one such sample still agrees with R."""

import shutil
import subprocess
import warnings

import numpy as np
import pytest

from simsubjects.studies.garden_path.analysis import paired_tests
from simsubjects.analyze.methods.tests import essentially_constant, one_sample_t, welch_t
from simsubjects.analyze.methods.paired import paired_test as paired_t

FLAT = [0.1] * 5  # mean(FLAT) is 0.1 + 1.4e-17: the spread scipy sees is rounding only
SPREAD = [0.2, 0.35, 0.4]


def r_value(expr: str) -> str:
    r = subprocess.run(["Rscript", "--vanilla", "-e", expr], capture_output=True, text=True)
    return (r.stdout + r.stderr).strip()


def test_rounding_spread_is_no_spread_and_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = one_sample_t(FLAT, 0.05)
        both = welch_t(FLAT, [0.1] * 3)
        pair = paired_t([0.1, 0.2, 0.3], [0.0, 0.1, 0.2])  # every difference 0.1, up to rounding
    assert one["std.error"] == 0 and np.isnan(one["p.value"]) and one["conf.low"] == one["conf.high"] == 0.1
    assert both["std.error"] == 0 and np.isnan(both["p.value"])
    assert np.isnan(pair["p.value"].iloc[0]) and pair["estimate"].iloc[0] == pytest.approx(0.1)
    assert essentially_constant(1e-18, 0.1) and not essentially_constant(1e-12, 0.1) and essentially_constant(0.0, 0.0)


def test_garden_path_paired_test_on_rounding_differences_is_quiet():
    import pandas as pd

    sent = pd.DataFrame({"model": "m", "set": "s", "type": "t", "garden_path": [0.3, 0.4, 0.5],
                         "control": [0.2, 0.3, 0.4]})
    sent["difference"] = sent["garden_path"] - sent["control"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = paired_tests(sent)
    t = out[out["test"] == "Paired t-test"].iloc[0]
    assert np.isnan(t["p.value"]) and t["df"] == 2


@pytest.mark.r
def test_r_agrees_on_both_cases():
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed")
    # R refuses the flat sample, with the criterion essentially_constant() copies
    assert "essentially constant" in r_value("t.test(rep(0.1, 5), mu = 0.05)")
    # one flat group beside one with spread: a sound Welch test, the same p-value as R's, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        row = welch_t(FLAT, SPREAD)
    p = float(r_value("cat(sprintf('%.15g', t.test(rep(0.1, 5), c(0.2, 0.35, 0.4))$p.value))"))
    assert row["p.value"] == pytest.approx(p, rel=1e-9) and row["std.error"] > 0
