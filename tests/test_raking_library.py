"""Issue 37, item 6: the raking library. `collect/personas.rake` keeps `ipfn` (docs/conventions.md says
why): weightipy restarts from weights of 1 and so cannot rake a survey's base weights, and samplics is
superseded by its authors' `svy` and pulls in polars. These tests hold the weights `rake` gives (the
respondent's share of the panel, unit: a share of the weighted sample summing to 1) to R's
survey::rake on the same base weights and margins, the reference the issue names."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from simsubjects.collect import personas as P
from simsubjects.datasets.registry import data_path

RESPONDENTS = data_path("opinion_survey/respondents.csv")  # 60 respondents with survey base weights

MARGINS = {"POLPARTY": {"Democrat": 0.33, "Republican": 0.29, "Independent": 0.38},
           "SEX": {"Male": 0.48, "Female": 0.52},
           "AGE": {"18-29": 0.21, "30-49": 0.33, "50-64": 0.25, "65+": 0.21}}


def _r_rake(tmp_path, data: pd.DataFrame, weight: str | None) -> np.ndarray:
    """survey::rake on svydesign(ids = ~1, weights = base), to convergence; weights summing to 1."""
    data = data.assign(base=data[weight] if weight else 1.0)
    data[["base", *MARGINS]].to_csv(tmp_path / "d.csv", index=False)
    pops = "list(" + ", ".join(
        f"data.frame({a} = c({', '.join(repr(k) for k in s)}), Freq = c({', '.join(repr(v) for v in s.values())}) "
        f"* sum(d$base))" for a, s in MARGINS.items()) + ")"
    script = f"""
    suppressMessages(library(survey))
    d <- read.csv("{tmp_path / 'd.csv'}", stringsAsFactors = FALSE)
    des <- svydesign(ids = ~1, weights = ~base, data = d)
    r <- rake(des, list({', '.join('~' + a for a in MARGINS)}), {pops},
              control = list(maxit = 1000, epsilon = 1e-13, verbose = FALSE))
    write.csv(data.frame(w = weights(r)), "{tmp_path / 'w.csv'}", row.names = FALSE)
    """
    subprocess.run(["Rscript", "-e", script], check=True, capture_output=True)
    w = pd.read_csv(tmp_path / "w.csv")["w"].to_numpy(float)
    return w / w.sum()


def _need_r_survey():
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not found")
    ok = subprocess.run(["Rscript", "-e", "quit(status = !requireNamespace('survey', quietly = TRUE))"],
                        capture_output=True)
    if ok.returncode:
        pytest.skip("R package survey not installed")


@pytest.mark.r
@pytest.mark.parametrize("base_weights", [True, False], ids=["survey-base-weights", "equal-base-weights"])
def test_rake_equals_r_survey_rake(tmp_path, base_weights):
    """The package's raked weights (ipfn, from the table's base weights) equal survey::rake's to 1e-9 of a
    share, with and without base weights; the margins are met to 1e-9."""
    _need_r_survey()
    r = P.read_respondents(RESPONDENTS)
    if not base_weights:
        r.data = r.data.assign(**{r.weight: 1.0})
    ours = P.rake(r, MARGINS)
    theirs = _r_rake(tmp_path, r.data, r.weight)
    assert P.max_margin_error(r.data, theirs, MARGINS) < 1e-9
    assert np.abs(ours - theirs).max() < 1e-9
    if base_weights:  # the base weights matter here: raking from 1 would give other weights
        flat = P.rake(type(r)(**{**vars(r), "data": r.data.assign(**{r.weight: 1.0})}), MARGINS)
        assert np.abs(flat - ours).max() > 1e-3
