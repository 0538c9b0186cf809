"""The analyses a study file names, on the tidy table (model and human rows alike).

Every test is run per source x model (x `by` columns, default item), so a model's answers sit
beside the human sample's. Test tables use broom's names: estimate, std.error, statistic, df,
p.value, conf.low, conf.high, n, plus effect_size and effect_size_type.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from ..analyze.tidy import shares, trial_key
from ..errors import UserError
from .spec import Study

SYSTEM = ["source", "model"]
BROOM = ["estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high", "n",
         "effect_size", "effect_size_type"]


def trial_scores(study: Study, responses: pd.DataFrame) -> pd.DataFrame:
    """One row per trial: design columns, validity, trial weight `tw` (survey weight for people) and
    `score`: the expected ordinal position over the non-refusal options (P(Yes) for yes/no), or the
    estimate. Unordered k-choice answers have no score."""
    df = shares(responses)
    pos, refusal = {}, {}
    for it in study.items:
        r = it.response.judge if it.response.kind == "free_text" else it.response
        for o in (r.options if r else []):
            pos[(it.id, o.label)] = o.position
            refusal[(it.id, o.label)] = o.refusal
    keys = list(zip(df["item"], df["response"].astype(str)))
    df = df.assign(_pos=[pos.get(k) for k in keys], _ok=[not refusal.get(k, False) for k in keys])
    df["_pos"] = pd.to_numeric(df["_pos"], errors="coerce")
    ordinal = df[df["_ok"] & df["_pos"].notna()]
    key = trial_key(df)  # (source, model, run, trial): `run` only when runs are stacked
    num = (ordinal["share"] * ordinal["_pos"]).groupby([ordinal[k] for k in key], sort=False).sum()
    den = ordinal["share"].groupby([ordinal[k] for k in key], sort=False).sum()
    first = df.drop_duplicates(key).set_index(key)
    first["score"] = (num / den.where(den > 0)).reindex(first.index)
    if "estimate" in first.columns:
        est = pd.to_numeric(first["estimate"], errors="coerce")
        first["score"] = first["score"].where(first["score"].notna(), est)
    first["tw"] = np.where(first.index.get_level_values("source") == "human", first["weight"], 1.0)
    return first.reset_index().drop(columns=["_pos", "_ok", "share", "response"], errors="ignore")


def distribution(study: Study, responses: pd.DataFrame, trials: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Response shares by item x condition (trial-weighted means of the per-trial shares) with validity;
    for estimates, their mean, median and spread over valid answers."""
    df = shares(responses)
    key = trial_key(df)
    tw = trials.set_index(key)["tw"]
    df = df.join(tw, on=key)
    keys = [*SYSTEM, "item", "condition"]
    choice = df[df.get("response_type", pd.Series("choice", index=df.index)) != "estimate"]
    out = {}
    if len(choice):
        num = (choice["share"] * choice["tw"]).groupby([choice[k] for k in [*keys, "response"]], sort=False).sum()
        den = trials.groupby(keys, sort=False)["tw"].sum()
        d = num.reset_index(name="w").join(den.rename("den"), on=keys)
        d["share"] = d["w"] / d["den"]
        cell = trials.groupby(keys, sort=False).agg(validity=("validity", "mean"), n=("trial", "size"))
        out["distribution"] = d.drop(columns=["w", "den"]).join(cell, on=keys)
    est = trials[trials.get("response_type", pd.Series("", index=trials.index)) == "estimate"]
    if len(est):
        g = est.groupby(keys, sort=False)
        out["estimates"] = g.agg(mean=("score", "mean"), median=("score", "median"), sd=("score", "std"),
                                 q25=("score", lambda x: x.quantile(0.25)), q75=("score", lambda x: x.quantile(0.75)),
                                 validity=("validity", "mean"), n=("trial", "size"), n_valid=("score", "count")).reset_index()
    return out


def _groups(trials: pd.DataFrame, by: list[str]):
    for k, g in trials.dropna(subset=["score"]).groupby([*SYSTEM, *by], sort=False):
        yield dict(zip([*SYSTEM, *by], k if isinstance(k, tuple) else (k,))), g


def _broom(res, est: float, n: int, es: float, es_type: str) -> dict:
    ci = res.confidence_interval()
    t = float(res.statistic)
    return {"estimate": est, "std.error": est / t if t else math.nan, "statistic": t, "df": float(res.df),
            "p.value": float(res.pvalue), "conf.low": float(ci.low), "conf.high": float(ci.high), "n": n,
            "effect_size": es, "effect_size_type": es_type}


def welch(trials: pd.DataFrame, factor: str, levels: list[str], by: list[str]) -> pd.DataFrame:
    """Welch two-sample t-test of the mean score at levels[0] minus levels[1] (R's t.test(x, y)), with
    Cohen's d from the average of the two variances (d_av; Lakens 2013) - scipy has no effect sizes."""
    rows = []
    for key, g in _groups(trials, by):
        if factor not in g.columns:
            continue
        x = g.loc[g[factor].astype(str) == levels[0], "score"].to_numpy(float)
        y = g.loc[g[factor].astype(str) == levels[1], "score"].to_numpy(float)
        if len(x) < 2 or len(y) < 2:
            continue
        res = stats.ttest_ind(x, y, equal_var=False)
        sd = math.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2)
        rows.append({**key, "test": "Welch two-sample t-test", "contrast": f"{factor}: {levels[0]} - {levels[1]}",
                     **_broom(res, x.mean() - y.mean(), len(x) + len(y),
                              (x.mean() - y.mean()) / sd if sd > 0 else math.nan, "cohen_d_av")})
    return pd.DataFrame(rows)


def paired(trials: pd.DataFrame, factor: str, levels: list[str], by: list[str]) -> pd.DataFrame:
    """Paired t-test over subjects (each subject's mean score at the two levels), with d_z."""
    rows = []
    for key, g in _groups(trials, by):
        if factor not in g.columns:
            continue
        m = g.groupby(["subject", g[factor].astype(str)])["score"].mean().unstack()
        if not set(levels) <= set(m.columns):
            continue
        m = m[levels].dropna()
        if len(m) < 2:
            continue
        diff = (m[levels[0]] - m[levels[1]]).to_numpy(float)
        res = stats.ttest_rel(m[levels[0]].to_numpy(float), m[levels[1]].to_numpy(float))
        sd = diff.std(ddof=1)
        rows.append({**key, "test": "Paired t-test", "contrast": f"{factor}: {levels[0]} - {levels[1]}",
                     **_broom(res, diff.mean(), len(diff), diff.mean() / sd if sd > 0 else math.nan, "cohen_d_z")})
    return pd.DataFrame(rows)


def one_sample(trials: pd.DataFrame, mu, by: list[str]) -> pd.DataFrame:
    """One-sample t-test of the mean score against mu (a number, or an item attribute such as the truth:
    then the test is on score - truth, per trial), with d = mean difference / sd."""
    rows = []
    for key, g in _groups(trials, by):
        ref = pd.to_numeric(g[mu], errors="coerce").to_numpy(float) if isinstance(mu, str) else float(mu)
        x = g["score"].to_numpy(float) - ref
        x = x[~np.isnan(x)]
        if len(x) < 2:
            continue
        res = stats.ttest_1samp(x, 0.0)
        sd = x.std(ddof=1)
        rows.append({**key, "test": "One-sample t-test", "contrast": f"score - {mu}",
                     **_broom(res, x.mean(), len(x), x.mean() / sd if sd > 0 else math.nan, "cohen_d")})
    return pd.DataFrame(rows)


def chi_square(responses: pd.DataFrame, trials: pd.DataFrame, factor: str, by: list[str]) -> pd.DataFrame:
    """Pearson chi-square of factor level x response on expected counts (per-trial shares summed),
    with Cramér's V by its formula: scipy's `association` takes integer counts only."""
    df = shares(responses)
    rows = []
    for key, g in df.groupby([*SYSTEM, *by], sort=False):
        key = dict(zip([*SYSTEM, *by], key if isinstance(key, tuple) else (key,)))
        if factor not in g.columns:
            continue
        table = g.pivot_table(index=g[factor].astype(str), columns="response", values="share", aggfunc="sum", fill_value=0)
        table = table.loc[table.sum(axis=1) > 0, table.sum(axis=0) > 0]
        if min(table.shape) < 2:
            continue
        chi2, p, dof, _ = stats.chi2_contingency(table.to_numpy(float), correction=False)
        n = float(table.to_numpy().sum())
        v = math.sqrt(chi2 / (n * (min(table.shape) - 1)))
        rows.append({**key, "test": "Pearson chi-square", "contrast": f"{factor} x response", "estimate": chi2,
                     "std.error": math.nan, "statistic": chi2, "df": float(dof), "p.value": p, "conf.low": math.nan,
                     "conf.high": math.nan, "n": n, "effect_size": v, "effect_size_type": "cramers_v"})
    return pd.DataFrame(rows)


def amce(trials: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    """AMCE of each factor level against the first level: OLS of the score on the factors' dummies,
    standard errors clustered by subject (CR2, as estimatr::lm_robust; the package's peer-checked OLS)."""
    from ..analyze.amce import ols_cluster

    rows = []
    for key, g in _groups(trials, []):
        g = g.dropna(subset=[f for f in factors if f in g.columns])
        if any(f not in g.columns for f in factors) or len(g) < 3:
            continue
        X = pd.get_dummies(g[factors].astype(str), drop_first=True, dtype=float)
        if X.shape[1] == 0:
            continue
        design = np.column_stack([np.ones(len(g)), X.to_numpy()])
        res = ols_cluster(g["score"].to_numpy(float), design, g["subject"].astype(str).to_numpy())
        base = {f: str(sorted(g[f].astype(str).unique())[0]) for f in factors}
        for j, term in enumerate(X.columns, start=1):
            f, _, level = term.partition("_")
            r = res.iloc[j]
            rows.append({**key, "test": "AMCE (OLS, CR2 clustered by subject)", "term": term,
                         "contrast": f"{f}: {level} - {base[f]}", "estimate": r["estimate"], "std.error": r["std.error"],
                         "statistic": r["statistic"], "df": r["df"], "p.value": r["p.value"], "conf.low": r["conf.low"],
                         "conf.high": r["conf.high"], "n": len(g)})
    return pd.DataFrame(rows)


def _ordinal_rows(study: Study, responses: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    df = shares(responses)
    pos = {(it.id, o.label): (o.position, o.refusal) for it in study.items
           for o in ((it.response.judge or it.response).options)}
    df["position"] = [pos.get((i, str(r)), (None, True))[0] for i, r in zip(df["item"], df["response"])]
    df["refusal"] = [pos.get((i, str(r)), (None, True))[1] for i, r in zip(df["item"], df["response"])]
    ntr = df.groupby([*SYSTEM, "item", *by], sort=False)["trial"].transform("nunique")
    tw = np.where(df["source"] == "human", df["weight"], 1.0)
    df["w"] = df["share"] * tw / np.where(df["source"] == "human", 1.0, ntr)
    return df.rename(columns={"item": "key"})


def representativeness_table(study: Study, responses: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """OpinionQA's representativeness, 1 - mean over items of W1(model, people)/span (Santurkar et al.
    2023), overall and by the human table's group columns (a persona column of the same name is matched)."""
    from simsubjects.analyze.methods.representativeness import representativeness

    d = _ordinal_rows(study, responses, by)
    human = d[d["source"] == "human"]
    model = d[d["source"] != "human"]
    if human.empty or model.empty:
        raise UserError(f"{study.file}: analyses: representativeness needs both model and human rows")
    missing = [b for b in by if b not in human.columns]
    if missing:
        raise UserError(f"{study.file}: analyses: representativeness by {missing[0]!r}: not a human group column")
    h = human.groupby(["key", *by, "position", "refusal"], as_index=False, dropna=False)["w"].sum().rename(columns={"w": "weight"})
    mcols = [b for b in by if b in model.columns]
    m = model.groupby(["model", *mcols, "key", "position", "refusal"], as_index=False, dropna=False)["w"].sum()
    out = representativeness(m.rename(columns={"w": "weight"}), h, by=by or None)
    return out.rename(columns={"se": "std.error", "ci_low": "conf.low", "ci_high": "conf.high"})


def agreement_table(trials: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Model against people per item (x group): mean scores side by side, and their correlation over items."""
    people = trials[trials["source"] == "human"]
    model = trials[trials["source"] != "human"]
    missing = [b for b in by if b not in people.columns or b not in model.columns or model[b].isna().all()]
    if missing:
        raise UserError(f"analyses: agreement by {missing[0]!r} needs the column in the human rows and in the "
                        "model's (a persona column of that name)")
    h = people.groupby(["item", *by]).apply(lambda g: np.average(g["score"].dropna(), weights=g.loc[g["score"].notna(), "tw"])
                                            if g["score"].notna().any() else np.nan, include_groups=False)
    rows = []
    for name, g in model.groupby("model"):
        mcols = [b for b in by if b in g.columns]
        m = g.groupby(["item", *mcols])["score"].mean()
        joined = pd.concat([m.rename("model_mean"), h.rename("human_mean")], axis=1, join="inner").dropna()
        if len(joined) >= 3:
            r, p = stats.pearsonr(joined["model_mean"], joined["human_mean"])
        else:
            r, p = math.nan, math.nan
        rows.append({"model": name, "test": "Pearson r of item means (model vs people)", "estimate": r,
                     "p.value": p, "n": len(joined),
                     "mean_abs_difference": float((joined["model_mean"] - joined["human_mean"]).abs().mean())})
    return pd.DataFrame(rows)


def analyze_study(study: Study, responses: pd.DataFrame, items: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every analysis the file lists (the response distribution always)."""
    from ..collect.studies.registry import resolve

    trials = trial_scores(study, responses)
    tables = distribution(study, responses, trials)
    tests = []
    for i, a in enumerate(study.analyses):
        kind, by = a["type"], list(a.get("by", ["item"]))
        name = a.get("name") or f"{kind}_{i + 1}"
        if kind == "welch":
            tests.append(welch(trials, a["factor"], a["levels"], by))
        elif kind == "paired":
            tests.append(paired(trials, a["factor"], a["levels"], by))
        elif kind == "one_sample":
            tests.append(one_sample(trials, a.get("mu", 0), by))
        elif kind == "chi_square":
            tests.append(chi_square(responses, trials, a["factor"], by))
        elif kind == "amce":
            tables[name] = amce(trials, list(a["factors"]))
        elif kind == "representativeness":
            tables[name] = representativeness_table(study, responses, list(a.get("by", [])))
        elif kind == "agreement":
            tables[name] = agreement_table(trials, list(a.get("by", [])))
        elif kind == "function":
            got = resolve(a["function"])(responses, items, **(a.get("args") or {}))
            tables.update(got if isinstance(got, dict) else {name: got})
    if tests:
        tables["tests"] = pd.concat([t for t in tests if len(t)] or [pd.DataFrame(columns=[*SYSTEM, *BROOM])],
                                    ignore_index=True)
    tables["trials"] = trials
    return tables
