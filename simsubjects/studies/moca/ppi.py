"""MoCa as a mixed-subjects design: a few stories with human votes, the model's P(Yes) on all.

The demonstration the mixed-subjects issue asks for (Broska, Howes & van Loon 2024 on MoCa-like
data): pretend people judged only a random subsample of 20, 50 or 100 of the run's stories (the
206 of MoCa's two tasks in a full run), estimate each factor's *human* AMCE from that subsample
alone (human-only) and with the model's P(Yes) on every story (prediction-powered, PPI++ OLS of
P(Yes) on 1{A}, lambda tuned for the contrast), and compare both with the value all stories' votes
give (the full-data AMCE, the difference in mean human P(Yes) between A and B stories). Each size
is drawn `reps` times from seeded generators, so widths and coverage are averages.

Tables (added to `analyze` of a MoCa run with human and model rows):

* ``ppi_stories`` — one row per story and model: item, task, factors, y (share of Yes votes),
  yhat (model P(Yes), mean over its trials). This is the pilot format of `simsubjects plan`.
* ``ppi_demo`` — per model, size, task, factor and method: replications used, mean estimate,
  mean and median interval width, coverage of the full-data value, mean lambda, mean effective
  human sample size (in stories).
* ``ppi_demo_example`` — the first replication of each size: both intervals beside the full value.

A factor x replication is skipped when the subsample has fewer than 2 stories with either
attribute, or the other stories fewer than 1 with either (the estimators need both groups).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from simsubjects.datasets.moca_humans import CONTRASTS
from simsubjects.analyze.methods.ppi import ols_fit
from simsubjects.analyze.methods.paired import paired_comparisons
from simsubjects.analyze.methods.multiplicity import add_adjusted

SIZES = (20, 50, 100)
REPS = 100


def story_table(data: pd.DataFrame) -> pd.DataFrame:
    """Per model and story: human share of Yes (y) and the model's mean P(Yes) (yhat), with factors."""
    facs = [f for task in CONTRASTS.values() for f in task if f in data]
    human = data[data["source"] == "human"].groupby("item")["y"].mean().rename("y")
    model = data[data["source"] != "human"]
    meta = data.drop_duplicates("item").set_index("item")[["task", *facs]]
    rows = []
    for name, g in model.groupby("model", sort=True):
        s = g.groupby("item")["y"].mean().rename("yhat").to_frame().join(human, how="left").join(meta)
        rows.append(s.reset_index().assign(model=name))
    if not rows:
        return pd.DataFrame(columns=["model", "item", "task", *facs, "y", "yhat"])
    out = pd.concat(rows, ignore_index=True)
    return out[["model", "item", "task", *facs, "y", "yhat"]]


def _fits(y, yhat, d, lab, unl):
    X = np.column_stack([np.ones(d.size), d])
    args = (X[lab], y[lab], yhat[lab], X[unl], yhat[unl])
    est_h, se_h, _ = ols_fit(*args, lam=0.0)
    est_p, se_p, lam = ols_fit(*args, lam=None, coord=1)
    return (est_h[1], se_h[1], 0.0), (est_p[1], se_p[1], lam)


def demo(stories: pd.DataFrame, sizes=SIZES, reps: int = REPS, seed: int = 0, level: float = 0.95):
    """(summary, example) tables of the subsample experiment; see the module doc."""
    z = stats.norm.ppf(1 - (1 - level) / 2)
    recs = []
    for model, s in stories.dropna(subset=["y"]).groupby("model", sort=True):
        s = s.reset_index(drop=True)
        y, yhat = s["y"].to_numpy(float), s["yhat"].to_numpy(float)
        factors = [(t, f, a, b, ((s["task"] == t) & s[f].isin([a, b])).to_numpy(), (s[f] == a).to_numpy(float))
                   for t, fs in CONTRASTS.items() for f, (a, b) in fs.items() if f in s]
        for size in sizes:
            if size >= len(s) - 1:
                continue
            for r in range(reps):
                pick = np.zeros(len(s), bool)
                pick[np.random.default_rng([seed, size, r]).choice(len(s), size, replace=False)] = True
                for task, f, a, b, ann, d in factors:
                    lab, unl = ann & pick, ann & ~pick
                    if min(d[lab].sum(), (1 - d[lab]).sum()) < 2 or min(d[unl].sum(), (1 - d[unl]).sum()) < 1:
                        continue
                    full = y[ann & (d == 1)].mean() - y[ann & (d == 0)].mean()
                    fits = _fits(y, yhat, d, lab, unl)
                    if not all(np.isfinite(se) and se > 0 for _, se, _ in fits):
                        continue  # degenerate subsample (e.g. constant votes in a group)
                    for method, (est, se, lam) in zip(("human-only", "prediction-powered"), fits):
                        recs.append({"model": model, "size": size, "rep": r, "task": task, "factor": f,
                                     "term": f"{a} - {b}", "method": method, "estimate": est, "std.error": se,
                                     "conf.low": est - z * se, "conf.high": est + z * se, "full_value": full,
                                     "n": int(lab.sum()), "n_model": int(unl.sum()), "lambda": lam})
    long = pd.DataFrame(recs)
    if long.empty:
        cols = ["model", "size", "task", "factor", "term", "method", "reps", "estimate", "width", "median_width",
                "coverage", "lambda", "n", "n_effective", "full_value"]
        return pd.DataFrame(columns=cols), pd.DataFrame(columns=["model", "size", "task", "factor", "term", "method",
                                                                  "estimate", "conf.low", "conf.high", "full_value"])
    long["width"] = long["conf.high"] - long["conf.low"]
    long["covered"] = (long["conf.low"] <= long["full_value"]) & (long["full_value"] <= long["conf.high"])
    key = ["model", "size", "rep", "task", "factor"]
    se_h = long[long["method"] == "human-only"].set_index(key)["std.error"]
    long["n_effective"] = long["n"] * (long.set_index(key).index.map(se_h).to_numpy() / long["std.error"]) ** 2
    summary = (long.groupby(["model", "size", "task", "factor", "term", "method"], sort=False)
               .agg(reps=("rep", "size"), estimate=("estimate", "mean"), width=("width", "mean"),
                    median_width=("width", "median"), coverage=("covered", "mean"), **{"lambda": ("lambda", "mean")},
                    n=("n", "mean"), n_effective=("n_effective", "mean"), full_value=("full_value", "first"))
               .reset_index())
    first = long[long["rep"] == long.groupby(["model", "size"])["rep"].transform("min")]
    example = first[["model", "size", "task", "factor", "term", "method", "estimate", "conf.low", "conf.high",
                     "full_value", "n", "lambda"]].reset_index(drop=True)
    return summary, example


def tables(data: pd.DataFrame, reps: int = REPS, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The three tables for `analyze` (empty demo tables when the run lacks humans or a model)."""
    stories = story_table(data)
    summary, example = demo(stories, reps=reps, seed=seed)
    return {"ppi_stories": stories, "ppi_demo": summary, "ppi_demo_example": example}


def widths(summary: pd.DataFrame) -> pd.DataFrame:
    """Mean interval width over factors per model, size and method, with coverage: the closing note's numbers."""
    if summary.empty:
        return summary
    g = summary.groupby(["model", "size", "method"], sort=False)
    return g.agg(factors=("factor", "size"), mean_width=("width", "mean"), coverage=("coverage", "mean"),
                 mean_lambda=("lambda", "mean"), n=("n", "mean"), n_effective=("n_effective", "mean")).reset_index()


def paired_stories(story: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """People and each model (persona) compared story by story within a task: paired t, Wilcoxon and
    bootstrap on P(Yes), McNemar on the Yes/No choice (P(Yes) > 0.5; for people, the majority vote),
    with Holm/BH across the pairs of systems (analyze.paired)."""

    s = story.assign(system=np.where(story["source"] == "human", "people",
                                     np.where(story["persona"].astype(str) == "", story["model"].astype(str),
                                              story["model"].astype(str) + " / " + story["persona"].astype(str))))
    s["owner"] = np.where(s["source"] == "human", "", s["model"].astype(str))
    s = s.groupby(["task", "owner", "system", "item"], sort=False)["p_yes"].mean().reset_index()
    if s["system"].nunique() < 2:
        return pd.DataFrame()
    s["choice"] = (s["p_yes"] > 0.5).astype(float)
    # One family per model (people and that model's systems): a run analyzed beside another run
    # gets the same rows and adjusted p-values as alone; model-vs-model pairs form their own family.
    parts = []
    for model in dict.fromkeys(s.loc[s["owner"] != "", "owner"]):
        t = paired_comparisons(s[s["owner"].isin(["", model])], unit="item", system="system", value="p_yes",
                               binary="choice", by=["task"], seed=seed)
        parts.append(t.assign(model=model, family=model + " | " + t["family"]) if len(t) else t)
    if s.loc[s["owner"] != "", "owner"].nunique() > 1:
        t = paired_comparisons(s[s["owner"] != ""], unit="item", system="system", value="p_yes", binary="choice",
                               by=["task"], seed=seed)
        owner = dict(zip(s["system"], s["owner"]))
        t = t[[owner[a] != owner[b] for a, b in zip(t["system_a"], t["system_b"])]]
        if len(t):

            t = t.drop(columns=["p.value.holm", "p.value.bh"], errors="ignore")
            t = add_adjusted(t.reset_index(drop=True), by=["task", "test"])
            parts.append(t.assign(model="between models", family="between models | " + t["family"]))
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
