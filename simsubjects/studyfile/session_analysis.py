"""Analysis of a session run with the subject as the unit (docs/studies.md, "Paths and rows").

A subject's decisions are not independent observations: round after round they share the
subject's persona and its own earlier answers. So every test and interval here is computed on
subject-level values (each subject's mean over its paths and rounds, weighted by the paths'
probabilities when they were enumerated), never on decisions; by-round tables are descriptive
(the share of each option, and its mean over subjects with a t interval over subjects).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from .session import SessionStudy

SYSTEM = ["source", "model"]


def analyze_session(study: SessionStudy, responses: pd.DataFrame, items: pd.DataFrame) -> dict[str, pd.DataFrame]:
    out = {}
    dec = responses[responses["condition"] == "decision"].copy()
    rounds = responses[responses["condition"] == "round"].copy()
    paths = responses[responses["condition"] == "path"].copy()
    if len(dec):
        out["choice_by_round"] = choice_by_round(dec)
        out["subject_tests"] = subject_tests(dec)
    if len(rounds):
        out["rounds"] = round_table(study, rounds)
        out["rounds_by_round"] = rounds_by_round(study, rounds)
    if len(paths) and study.session.enumerate:
        out["paths"] = path_table(paths)
    return out


def _key(df: pd.DataFrame) -> list[str]:
    return [c for c in SYSTEM if c in df.columns]


def choice_by_round(dec: pd.DataFrame) -> pd.DataFrame:
    """The probability of each option by item and round: the mean over subjects of each subject's
    reach-weighted mean probability (a subject with several paths counts once), and its t interval
    over subjects (unit: subject)."""
    dec = dec.assign(_w=dec["reach"].astype(float), _p=dec["weight"].astype(float))
    dec["_wp"] = dec["_w"] * dec["_p"]
    g = dec.groupby([*_key(dec), "item", "round", "response", "subject"], sort=False)
    per = (g["_wp"].sum() / g["_w"].sum()).rename("p").reset_index()
    rows = []
    for keys, d in per.groupby([*_key(dec), "item", "round", "response"], sort=False):
        rows.append({**dict(zip([*_key(dec), "item", "round", "response"], keys)), **_mean_ci(d["p"])})
    return pd.DataFrame(rows).sort_values([*_key(dec), "item", "response", "round"], kind="stable")


def _mean_ci(x: pd.Series, level: float = 0.95) -> dict:
    x = pd.to_numeric(x, errors="coerce").dropna()
    n = len(x)
    est = float(x.mean()) if n else float("nan")
    if n < 2:
        return {"estimate": est, "std.error": float("nan"), "conf.low": float("nan"), "conf.high": float("nan"),
                "n": n, "unit": "subject"}
    se = float(x.std(ddof=1) / np.sqrt(n))
    q = stats.t.ppf(0.5 + level / 2, n - 1)
    return {"estimate": est, "std.error": se, "conf.low": est - q * se, "conf.high": est + q * se, "n": n,
            "unit": "subject"}


def subject_tests(dec: pd.DataFrame) -> pd.DataFrame:
    """Does a choice's probability change from the first round to the last? A paired t-test over
    subjects (scipy.stats.ttest_rel) of each subject's mean probability in the last vs the first
    round (unit: subject); items with a single round are left out."""
    rows = []
    dec = dec.assign(_w=dec["reach"].astype(float))
    dec["_wp"] = dec["_w"] * dec["weight"].astype(float)
    for keys, d in dec.groupby([*_key(dec), "item", "response"], sort=False):
        first, last = d["round"].min(), d["round"].max()
        if first == last:
            continue
        g = d.groupby(["subject", "round"])
        per = (g["_wp"].sum() / g["_w"].sum()).unstack("round")
        pair = per[[first, last]].dropna()
        if len(pair) < 2:
            continue
        diff = pair[last] - pair[first]
        if diff.std(ddof=1) == 0:
            t = stats.ttest_rel(pair[last], pair[first]) if False else None
            stat, p = float("nan"), float("nan")
        else:
            t = stats.ttest_rel(pair[last], pair[first])
            stat, p = float(t.statistic), float(t.pvalue)
        ci = _mean_ci(diff)
        rows.append({**dict(zip([*_key(dec), "item", "response"], keys)), "test": f"round {last} - round {first}",
                     "estimate": ci["estimate"], "std.error": ci["std.error"], "statistic": stat,
                     "df": len(pair) - 1, "p.value": p, "conf.low": ci["conf.low"], "conf.high": ci["conf.high"],
                     "n": len(pair), "unit": "subject"})
    return pd.DataFrame(rows)


def round_table(study: SessionStudy, rounds: pd.DataFrame) -> pd.DataFrame:
    """One row per subject x path x round (enumerated: per tree node at a round's end, with its
    probability in `weight`): answers, moves, payoffs and variables."""
    sess = study.session
    cols = ["subject", "path", "block", "round", "weight", "reach", "continued"]
    extra = [it.id for b in sess.blocks for it in b.items] + list(sess.players)
    extra += [n for b in sess.blocks for n in b.payoff_names()] + list(sess.variables)
    extra = [c for c in dict.fromkeys(extra) if c in rounds.columns]
    return rounds[[*_key(rounds), *cols, *extra]].reset_index(drop=True)


def rounds_by_round(study: SessionStudy, rounds: pd.DataFrame) -> pd.DataFrame:
    """By block and round: each answer's share and each payoff's mean, as means over subjects of
    each subject's (probability-weighted) value, with t intervals over subjects (unit: subject)."""
    sess = study.session
    rows = []
    rounds = rounds.assign(_w=rounds["weight"].astype(float))
    for b in sess.blocks:
        d = rounds[rounds["block"] == b.id]
        if not len(d):
            continue
        measures = {}
        for it in b.items:
            for lab in it.labels:
                measures[f"share {it.id}={lab}"] = (d[it.id] == lab).astype(float)
        for name in list(b.players):
            if name in d:
                for lab in sorted(d[name].dropna().unique()):
                    measures[f"share {name}={lab}"] = (d[name] == lab).astype(float)
        for n in b.payoff_names():
            if n in d:
                measures[f"mean {n}"] = pd.to_numeric(d[n], errors="coerce")
        for name, x in measures.items():
            frame = d.assign(_x=x, _wx=x * d["_w"])
            for (*keys, r), g in frame.groupby([*_key(d), "round"], sort=True):
                per = g.groupby("subject")["_wx"].sum() / g.groupby("subject")["_w"].sum()
                rows.append({**dict(zip(_key(d), keys)), "block": b.id, "round": r, "measure": name,
                             **_mean_ci(per), "reach": float(g.groupby("subject")["_w"].sum().mean())})
    return pd.DataFrame(rows)


def path_table(paths: pd.DataFrame) -> pd.DataFrame:
    """Enumerated trees: each leaf (path) with its answers and probability; `total` per subject is 1."""
    out = paths[[*_key(paths), "subject", "path", "response", "weight", "round", "step"]].rename(
        columns={"response": "answers", "weight": "probability", "round": "last_round", "step": "decisions"})
    out["total"] = out.groupby([*_key(paths), "subject"])["probability"].transform("sum")
    return out.reset_index(drop=True)
