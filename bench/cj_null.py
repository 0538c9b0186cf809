"""The model-vs-people conjoint omnibus test under a true null: how often it rejects at 5%.

Both groups are drawn from one population of respondents, each with their own attribute preferences
(random slopes: the reason a respondent's choices are correlated), answering `--tasks` forced-choice
tasks of two profiles. The report's test (`cj_anova`: CR2 clustered by respondent, F(q, G - p)) is run
beside cregg's unclustered F test (`cj_anova_cregg`, profiles as independent) on the same data; the
reference is the nominal 5%.

    python bench/cj_null.py --reps 1000

Prints, per test, the rejections, the rate and its Wilson 95% interval (statsmodels).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from simsubjects.analyze.methods import conjoint as cj  # noqa: E402

LEVELS = {"A": ["a1", "a2", "a3"], "B": ["b1", "b2"], "C": ["c1", "c2", "c3"], "D": ["d1", "d2"]}
MEAN = {"a2": 0.3, "a3": 0.6, "b2": -0.4, "c2": 0.2, "c3": -0.2, "d2": 0.5}


def simulate(rng, respondents: int, tasks: int, slope_sd: float) -> pd.DataFrame:
    cols, coded = {}, {}
    n = 2 * respondents * tasks * 2  # groups x respondents x tasks x profiles, profiles fastest
    rid = np.repeat(np.arange(2 * respondents), tasks * 2)
    tastes = {k: v + rng.normal(0, slope_sd, 2 * respondents) for k, v in MEAN.items()}  # each respondent's
    util = rng.logistic(size=n)
    for f, lv in LEVELS.items():
        coded[f] = rng.integers(0, len(lv), n)
        cols[f] = np.asarray(lv)[coded[f]]
        for k, name in enumerate(lv):
            if name in tastes:
                util += np.where(coded[f] == k, tastes[name][rid], 0.0)
    u = util.reshape(-1, 2)
    chosen = np.column_stack([u[:, 0] > u[:, 1], u[:, 1] > u[:, 0]]).ravel().astype(float)
    group = np.where(rid < respondents, "people", "model")
    return pd.DataFrame({"group": group, "id": rid.astype(str), **cols, "chosen": chosen})


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--respondents", type=int, default=60, help="per group")
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--slope-sd", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    feats = list(LEVELS)
    p_clustered, p_cregg = [], []
    for _ in range(a.reps):
        d = simulate(rng, a.respondents, a.tasks, a.slope_sd)
        p_clustered.append(cj.cj_anova(d, "chosen", feats, "group", id="id")["p.value"].iat[0])
        p_cregg.append(cj.cj_anova_cregg(d, "chosen", feats, "group")["p.value"].iat[0])
    rows = []
    for name, p in (("cj_anova (CR2 clustered by respondent, F(q, G - p); the report's test)", p_clustered),
                    ("cj_anova_cregg (cregg; profiles independent)", p_cregg)):
        k = int((np.asarray(p) < 0.05).sum())
        lo, hi = proportion_confint(k, a.reps, alpha=0.05, method="wilson")
        rows.append({"test": name, "rejections": k, "replications": a.reps, "rate": k / a.reps,
                     "wilson.low": lo, "wilson.high": hi, "nominal": 0.05})
    print(f"null: {a.respondents} respondents per group x {a.tasks} tasks x 2 profiles, slope sd {a.slope_sd}, "
          f"seed {a.seed}")
    print(pd.DataFrame(rows).to_string(index=False, float_format="{:.3f}".format))


if __name__ == "__main__":
    main()
