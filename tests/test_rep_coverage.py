"""Issue 40, item 4: the representativeness interval covers. A coverage simulation (slow: 100 simulated
studies): the model's subjects and the people's respondents are drawn from known populations whose Rep
(1 - mean over questions of W1 / span, unit: a share of the span) is computed exactly; the basic
bootstrap interval of `resampled_interval`, its level calibrated by a double bootstrap, must cover it in
90-99% of the studies at 95%. The percentile interval it replaced covers far less (Rep is biased low),
and the plain basic interval falls short too (measured 0.88 in 250 studies of this design; 0.86 with 10
subjects and 40 respondents), which is why the level is calibrated."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simsubjects.analyze.methods.representativeness import representativeness, resampled_interval

K = 5  # options per question, positions 1..5
P_MODEL = {"Q1": [0.05, 0.15, 0.40, 0.30, 0.10], "Q2": [0.30, 0.30, 0.20, 0.15, 0.05], "Q3": [0.10, 0.20, 0.20, 0.25, 0.25]}
P_PEOPLE = {"Q1": [0.10, 0.20, 0.30, 0.25, 0.15], "Q2": [0.20, 0.35, 0.25, 0.10, 0.10], "Q3": [0.05, 0.15, 0.30, 0.30, 0.20]}
CONCENTRATION = 20.0  # a subject's answer distribution: Dirichlet around the model's population shares


def _long(dist: dict, unit: str) -> list[dict]:
    return [{"unit": unit, "key": q, "position": float(j + 1), "weight": float(w)}
            for q, p in dist.items() for j, w in enumerate(p)]


def _true_rep() -> float:
    return float(representativeness(pd.DataFrame(_long(P_MODEL, "m")), pd.DataFrame(_long(P_PEOPLE, "h")))
                 ["estimate"].iat[0])


def _study(rng, n_subjects: int, n_respondents: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    model = []
    for s in range(n_subjects):
        model += _long({q: rng.dirichlet(CONCENTRATION * np.asarray(p)) for q, p in P_MODEL.items()}, f"s{s}")
    human = [{"unit": f"h{r}", "key": q, "position": float(rng.choice(K, p=p) + 1), "weight": 1.0}
             for r in range(n_respondents) for q, p in P_PEOPLE.items()]
    return pd.DataFrame(model), pd.DataFrame(human)


@pytest.mark.slow
def test_basic_bootstrap_interval_covers_the_true_rep():
    truth = _true_rep()
    assert 0.8 < truth < 0.97  # a model near, not at, the people: the boundary Rep = 1 is not the truth
    rng = np.random.default_rng(2026)
    sims, basic, percentile = 100, 0, 0
    for i in range(sims):
        m, h = _study(rng, n_subjects=20, n_respondents=100)
        got = resampled_interval(m, h, replicates=300, seed=i, calibrate=50)
        assert "double-bootstrap calibrated" in got["boot.method"]
        basic += got["boot.low"] <= truth <= got["boot.high"]
        percentile += got["boot.percentile.low"] <= truth <= got["boot.percentile.high"]
    print(f"coverage at 95%: calibrated basic {basic / sims:.3f}, percentile {percentile / sims:.3f} ({sims} studies)")
    assert 0.90 <= basic / sims <= 0.99, (basic / sims, percentile / sims)
    assert percentile < basic  # the percentile interval sits below the truth more often
