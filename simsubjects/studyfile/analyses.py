"""The analyses a study file names, on the tidy table (model and human rows alike).

Every test is run per source x model (x `by` columns, default item), so a model's answers sit
beside the human sample's. The tests (welch, paired, one_sample, chi_square) are computed in
analyze/methods/subjects.py, found through the one registry (analyze/methods/registry.py); this
module scores the trials, runs the file's list and makes the other tables. Test tables use broom's
names: estimate, std.error, statistic, df, p.value, conf.low, conf.high, n, plus effect_size and
effect_size_type.
"""

from __future__ import annotations

import math
from typing import Sequence
import importlib

import numpy as np
import pandas as pd
from scipy import stats

from ..analyze.methods import survey
from ..analyze.methods.registry import TESTS
from ..analyze.methods.subjects import SYSTEM, UNIT, groups, weighted
from ..analyze.tidy import shares, trial_key
from ..errors import UserError
from .spec import Study
from ..collect.untrusted import ALLOW_CODE, no_local_imports
from simsubjects.analyze.methods.representativeness import representativeness
from simsubjects.analyze.methods.representativeness import resampled_interval, resamples, small_sample_note
from ..analyze.methods.multiplicity import add_adjusted
from .people_fit import fit_tables

BROOM = ["estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high", "n", "unit", "weights",
         "effect_size", "effect_size_type", "warning"]


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
        d = d.drop(columns=["w", "den"]).join(cell, on=keys)
        # rows in the scale's order (the item's options as declared), items as listed; not first-seen order
        rank = {(it.id, o.label): j for k, it in enumerate(study.items)
                for j, o in enumerate(((it.response.judge if it.response.kind == "free_text" else it.response)
                                       or it.response).options)}
        item_rank = {it.id: k for k, it in enumerate(study.items)}
        who = d[SYSTEM].astype(str).agg("\r".join, axis=1)
        order = pd.DataFrame({"_s": who.map({w: k for k, w in enumerate(dict.fromkeys(who))}),
                              "_c": d["condition"].map({c: k for k, c in enumerate(dict.fromkeys(d["condition"]))}),
                              "_i": d["item"].map(item_rank), "_o": [rank.get((i, str(r)), len(rank))
                                                                     for i, r in zip(d["item"], d["response"])]})
        d = d.assign(**order).sort_values(["_s", "_i", "_c", "_o"], kind="stable")
        out["distribution"] = d.drop(columns=["_s", "_c", "_i", "_o"]).reset_index(drop=True)
    est = trials[trials.get("response_type", pd.Series("", index=trials.index)) == "estimate"]
    if len(est):
        g = est.groupby(keys, sort=False)
        out["estimates"] = g.agg(mean=("score", "mean"), median=("score", "median"), sd=("score", "std"),
                                 q25=("score", lambda x: x.quantile(0.25)), q75=("score", lambda x: x.quantile(0.75)),
                                 validity=("validity", "mean"), n=("trial", "size"), n_valid=("score", "count")).reset_index()
    return out


def people_beside_model(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every item x condition (a randomizer's arm) x answer: the people's share beside each model's, and the
    difference; an estimate's mean likewise (answer "mean"). The report shows all of it (issue 41, item 12:
    the distribution table lists the model's rows first, so its first page held no people)."""
    parts = []
    if "distribution" in tables:
        d = tables["distribution"]
        parts.append(d.assign(value=d["share"], measure="share")[[*SYSTEM, "item", "condition", "response",
                                                                  "measure", "value", "n"]])
    if "estimates" in tables:
        e = tables["estimates"]
        parts.append(e.assign(response="mean", value=e["mean"], measure="mean")[[*SYSTEM, "item", "condition",
                                                                                 "response", "measure", "value", "n"]])
    if not parts:
        return pd.DataFrame()
    d = pd.concat(parts, ignore_index=True)
    if not (d["source"] == "human").any() or not (d["source"] != "human").any():
        return pd.DataFrame()
    keys = ["item", "condition", "response", "measure"]
    d = d.assign(condition=d["condition"].fillna(""))
    people = d[d["source"] == "human"].groupby(keys, sort=False)[["value", "n"]].first()
    out = people.rename(columns={"value": "people", "n": "n_people"})
    for name, g in d[d["source"] != "human"].groupby("model", sort=False):
        m = g.groupby(keys, sort=False)[["value", "n"]].first()
        out = out.join(m.rename(columns={"value": f"model: {name}", "n": f"n: {name}"}), how="outer")
        out = _answered_zero(out, g, f"model: {name}", f"n: {name}")
    out = _answered_zero(out, d[d["source"] == "human"])
    for name in d.loc[d["source"] != "human", "model"].unique():
        out[f"{name} - people"] = out[f"model: {name}"] - out["people"]
    # rows in the distribution's order (items as listed, arms, the scale's answers)
    order = {k: i for i, k in enumerate(dict.fromkeys(d[keys].itertuples(index=False, name=None)))}
    out = out.reset_index()
    out["_o"] = [order[k] for k in out[keys].itertuples(index=False, name=None)]
    return out.sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True)


def _answered_zero(out: pd.DataFrame, side: pd.DataFrame, value: str = "people", n: str = "n_people") -> pd.DataFrame:
    """An answer no one on this side chose, in a cell (item x condition) this side answered, has share 0
    (the distribution lists chosen answers only), not a missing value."""
    cells = side[side["measure"] == "share"].groupby(["item", "condition"], sort=False)["n"].first()
    out = out.copy()
    for k in out.index[out[value].isna()] if value in out.columns else []:
        if k[3] == "share" and (k[0], k[1]) in cells.index:
            out.loc[[k], [value, n]] = [0.0, cells[(k[0], k[1])]]
    return out


def baseline_order(values: pd.Series, declared: Sequence[str] = ()) -> list[str]:
    """A factor's levels in `values`, the baseline first: the declared levels in the study file's order, then
    any other value in code-point order (R: the same, R/studyfile.R's sf_amce). Sorting alone made the
    alphabetically first level the baseline, not the declared first (issue 40)."""
    seen = set(values.astype(str).unique())
    order = [str(x) for x in declared if str(x) in seen]
    return order + sorted(seen - set(order))


def _amce_design(g: pd.DataFrame, factors: list[str], levels: dict) -> tuple[np.ndarray, list[tuple[str, str]], dict]:
    """Intercept and treatment dummies (each factor's baseline left out); the (factor, level) of each dummy."""
    cols, terms, base = [np.ones(len(g))], [], {}
    for f in factors:
        order = baseline_order(g[f], levels.get(f, ()))
        base[f] = order[0]
        for lv in order[1:]:
            cols.append((g[f].astype(str) == lv).to_numpy(float))
            terms.append((f, lv))
    return np.column_stack(cols), terms, base


def amce(trials: pd.DataFrame, factors: list[str], levels: dict | None = None) -> pd.DataFrame:
    """AMCE of each factor level against its baseline, the first level the study file declares (`levels`:
    factor -> declared levels; conjoint convention, docs/conventions.md): OLS of the score on the factors'
    dummies, standard errors clustered by subject (CR2, as estimatr::lm_robust; the package's peer-checked
    OLS); people with survey weights: weighted OLS, linearization clustered by subject (survey::svyglm)."""
    from ..studies.moca.analysis import ols_cluster  # lazy: imports click, statsmodels

    rows = []
    for key, g in groups(trials, []):
        g = g.dropna(subset=[f for f in factors if f in g.columns])
        if any(f not in g.columns for f in factors) or len(g) < 3:
            continue
        design, terms, base = _amce_design(g, factors, levels or {})
        if not terms:
            continue
        is_weighted = weighted(g)
        if is_weighted:  # people with survey weights: design-based, as survey::svyglm(ids = ~subject, weights)
            res = survey.svy_ols(g["score"].to_numpy(float), design, g["tw"].to_numpy(float),
                                 g["subject"].astype(str).to_numpy())
        else:
            res = ols_cluster(g["score"].to_numpy(float), design, g["subject"].astype(str).to_numpy())
        for j, (f, level) in enumerate(terms, start=1):
            term = f"{f}_{level}"
            r = res.iloc[j]
            rows.append({**key, "test": "AMCE (survey-weighted OLS, linearization clustered by subject)" if is_weighted
                         else "AMCE (OLS, CR2 clustered by subject)", "term": term,
                         "contrast": f"{f}: {level} - {base[f]}", "estimate": r["estimate"], "std.error": r["std.error"],
                         "statistic": r["statistic"], "df": r["df"], "p.value": r["p.value"], "conf.low": r["conf.low"],
                         "conf.high": r["conf.high"], "n": int(g["subject"].nunique()), "n_trials": len(g), "unit": UNIT,
                         "weights": "survey" if is_weighted else "none"})
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
    declared = options_table(study).rename(columns={"item": "key"})  # the span: each item's whole option list
    out = representativeness(m.rename(columns={"w": "weight"}), h, by=by or None, options=declared)
    out = out.rename(columns={"se": "std.error", "ci_low": "conf.low", "ci_high": "conf.high"})
    return _resampled(study, d, out, by, mcols)


def _boot_seed(study: Study) -> int:
    return study.seed if isinstance(study.seed, int) else 0


def _boot_units(d: pd.DataFrame, row: dict, by: list[str], mcols: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The model's subjects' and the people's respondents' unit rows (`unit`, `key`, `position`, `weight`,
    refusals dropped) of one representativeness row (model x group): what its bootstrap resamples."""
    d = d[~d["refusal"].fillna(True).astype(bool) & d["position"].notna()]
    d = d[["source", "model", "subject", "key", "position", "w", *by]].rename(columns={"subject": "unit", "w": "weight"})
    h = d[d["source"] == "human"]
    m = d[(d["source"] != "human") & (d["model"] == row["model"])]
    for b in by:
        h = h[h[b] == row[b]]
        m = m[m[b] == row[b]] if b in mcols else m
    return m, h


def representativeness_resamples(study: Study, responses: pd.DataFrame, by: list[str], table: pd.DataFrame) -> list:
    """(row, resamples) for each row of a representativeness `table`: the unit labels, the index matrices
    and the level its bootstrap columns came from (methods.representativeness.resamples), for --check-r's
    R twin to recompute them on the same resamples."""
    d = _ordinal_rows(study, responses, by)
    mcols = [b for b in by if b in d[d["source"] != "human"].columns]
    return [(row, resamples(*_boot_units(d, row, by, mcols), seed=_boot_seed(study)))
            for row in table.to_dict("records")]


def _resampled(study: Study, d: pd.DataFrame, out: pd.DataFrame, by: list[str], mcols: list[str]) -> pd.DataFrame:
    """Beside the items' t interval, the interval from resampling the units whose sampling it leaves out:
    the people's respondents and the model's subjects, each with replacement (seeded by the study's seed),
    with the bootstrap's estimate of the bias, the bias-corrected Rep (`estimate.corrected` = estimate -
    boot.bias) and a note for small groups (issue 25, audit finding 7)."""
    extra = []
    for row in out.to_dict("records"):
        m, h = _boot_units(d, row, by, mcols)
        r = resampled_interval(m, h, seed=_boot_seed(study))
        extra.append({"estimate.corrected": r["estimate.corrected"], "boot.low": r["boot.low"],
                      "boot.high": r["boot.high"], "boot.bias": r["boot.bias"],
                      "boot_unit": "respondent (people) and subject (model), resampled independently",
                      "boot_method": r["boot.method"], "replicates": r["replicates"], "n_respondents": r["n_respondents"],
                      "n_subjects": r["n_subjects"],
                      "note": "; ".join(filter(None, (small_sample_note(r["n_respondents"], r["boot.bias"]),
                                                      r["boot.note"])))})
    return pd.concat([out.reset_index(drop=True), pd.DataFrame(extra, index=range(len(out)))], axis=1)


def item_scales(study: Study) -> dict[str, str]:
    """Each item's score scale: "positions LO to HI" (its non-refusal options' positions), "number LO to HI"
    (an estimate's bounds), "yes/no share"; a nominal item has none. Agreement says when it pools scales."""
    out = {}
    for it in study.items:
        r = it.response.judge if it.response.kind == "free_text" else it.response
        if r is None:
            continue
        if r.kind == "estimate":
            out[it.id] = "number" + (f" {r.min:g} to {r.max:g}" if r.min is not None and r.max is not None else "")
            continue
        pos = sorted(float(o.position) for o in r.options if o.position is not None and not o.refusal)
        if [o.label for o in r.options] == ["Yes", "No"] and pos == [0.0, 1.0]:
            out[it.id] = "yes/no share"
        elif len(pos) >= 2:
            out[it.id] = f"positions {pos[0]:g} to {pos[-1]:g}"
    return out


def _pooled_scales(items, scales: dict[str, str] | None) -> str:
    """A note where one correlation pools items on different scales (issue 41, item 9): a 0-100 slider
    beside 1-5 positions makes r reflect the scales' ranges, not agreement."""
    got = sorted({scales.get(i, "no scale") for i in items}) if scales else []
    if len(got) < 2:
        return ""
    return (f"pools items on {len(got)} different scales ({'; '.join(got)}): r and the mean difference mix units; "
            "compare within a scale (agreement by: [a column naming each item's scale])")


def agreement_table(trials: pd.DataFrame, by: list[str], scales: dict[str, str] | None = None) -> pd.DataFrame:
    """Model against people: item means side by side, their Pearson r over items and mean absolute
    difference; the unit is the item. With `by` (a human group column that the personas also carry),
    one row per model x group, each over the items within that group, as `representativeness` gives a
    row per group (issue 25, smaller item: `by` meant one pooled correlation here)."""
    people = trials[trials["source"] == "human"]
    model = trials[trials["source"] != "human"]
    missing = [b for b in by if b not in people.columns or b not in model.columns or model[b].isna().all()]
    if missing:
        raise UserError(f"analyses: agreement by {missing[0]!r} needs the column in the human rows and in the "
                        "model's (a persona column of that name)")
    people = people.assign(**{b: people[b].astype(str) for b in by})
    model = model.assign(**{b: model[b].astype(str) for b in by})
    h = people.groupby([*by, "item"]).apply(lambda g: np.average(g["score"].dropna(), weights=g.loc[g["score"].notna(), "tw"])
                                            if g["score"].notna().any() else np.nan, include_groups=False)
    rows = []
    for name, g in model.groupby("model"):
        m = g.groupby([*by, "item"])["score"].mean()
        joined = pd.concat([m.rename("model_mean"), h.rename("human_mean")], axis=1, join="inner").dropna()
        cells = joined.groupby(level=list(range(len(by))), sort=True) if by else [((), joined)]
        for key, j in cells:
            key = key if isinstance(key, tuple) else (key,)
            if len(j) >= 3:
                r, p = stats.pearsonr(j["model_mean"], j["human_mean"])
            else:
                r, p = math.nan, math.nan
            rows.append({"model": name, **dict(zip(by, key)), "test": "Pearson r of item means (model vs people)",
                         "estimate": r, "p.value": p, "n": len(j), "unit": "item",
                         "mean_abs_difference": float((j["model_mean"] - j["human_mean"]).abs().mean()),
                         "note": _pooled_scales(j.index.get_level_values("item"), scales)})
    return pd.DataFrame(rows)


def study_order_effects(study: Study, responses: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Order effects among the substantive options: a refusal ("Don't know") is always shown last, so
    "shown last" is the last substantive option (n_ordered), not the refusal - else every item's last
    place is the refusal and the table is empty (issue 25, finding 2)."""
    from ..analyze.order_effects import order_effects  # lazy: imports statsmodels, packaging

    k = {it.id: sum(not o.refusal for o in ((it.response.judge if it.response.kind == "free_text" else it.response)
                                              or it.response).options) for it in study.items}
    got = order_effects(responses.assign(n_ordered=responses["item"].map(k)))
    return dict(zip(("order_effects", "order_effects_average"), got))


def user_function(study: Study, i: int, ref: str):
    """The callable of a `type: function` analysis: only from a study file the user runs with --allow-code
    (never from a run folder's copy), imported from installed modules only, never from the working
    folder or the study's and run's folders (docs/robustness.md)."""

    where = ("analyses", i, "function")
    if not study.allow_code:
        raise study.source.error(where, f"type: function runs Python code ({ref}); code runs only from the study "
                                        f"file you run yourself, never from a run folder's copy: pass "
                                        f"{ALLOW_CODE} YOUR_STUDY.yaml to analyze (or {ALLOW_CODE} to replicate)")
    module, _, name = ref.partition(":")
    with no_local_imports(study.file.parent):
        try:
            fn = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as e:
            raise study.source.error(where, f"cannot import {ref} from the installed modules ({e})") from None
    if not callable(fn):
        raise study.source.error(where, f"{ref} is not a function")
    return fn


def declared_levels(study: Study, factors) -> dict[str, list[str]]:
    """Each factor's levels in the study file's order (its first the AMCE baseline)."""
    return {str(f): [str(x) for x in study.factor(str(f)).levels] for f in factors if study.factor(str(f))}


def full_prompt(responses: pd.DataFrame) -> pd.DataFrame:
    """The rows of the full prompt: an --ablate twin's rows (`ablation` set) are another prompt's."""
    if "ablation" not in responses.columns:
        return responses
    return responses[responses["ablation"].fillna("").astype(str) == ""].drop(columns="ablation")


TESTS_FAMILY = "study-file tests of a source x model"


def with_family(tests: pd.DataFrame) -> pd.DataFrame:
    """Holm and BH over every test the file names (welch, paired, one_sample, chi_square; a Qualtrics import's
    per-item arm tests among them), one family per source x model: the rows test the file's hypotheses on
    one set of subjects, so a reader who scans the table for p < 0.05 is protected (Holm 1979) whatever the
    number of items and analyses (issue 40, item 6). `family` names it; p.value.holm, p.value.bh beside
    p.value (analyze/methods/multiplicity.add_adjusted, as order effects have)."""
    return add_adjusted(tests, by=SYSTEM, family=TESTS_FAMILY) if len(tests) else tests


def options_table(study: Study) -> pd.DataFrame:
    """item, response, position, refusal of every option the file declares (a judge's for free text)."""
    rows = []
    for it in study.items:
        r = it.response.judge if it.response.kind == "free_text" else it.response
        for o in (r.options if r else []):
            rows.append({"item": it.id, "response": o.label,
                         "position": math.nan if o.position is None else float(o.position), "refusal": bool(o.refusal)})
    return pd.DataFrame(rows, columns=["item", "response", "position", "refusal"])


def analyze_study(study: Study, responses: pd.DataFrame, items: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every analysis the file lists (the response distribution always), on the full prompt's rows; the
    --ablate twins' rows (issue 39) enter the fit tables only."""
    scored, responses = responses, full_prompt(responses)
    trials = trial_scores(study, responses)
    tables = distribution(study, responses, trials)
    if study.human is not None:
        side = people_beside_model(tables)
        if len(side):
            tables = {"people_beside_model": side, **tables}
    tests = []
    for i, a in enumerate(study.analyses):
        kind, by = a["type"], list(a.get("by", ["item"]))
        name = a.get("name") or f"{kind}_{i + 1}"
        test = TESTS[kind].run(trials, responses, a, by) if kind in TESTS else None
        if test is not None:
            test = test.assign(analysis=name) if len(test) else test
            tests.append(test)
            if a.get("name"):  # a named test is also its own table (NAME.csv), as named analyses are
                tables[a["name"]] = test
        elif kind == "amce":
            tables[name] = amce(trials, list(a["factors"]), declared_levels(study, a["factors"]))
        elif kind == "representativeness":
            tables[name] = representativeness_table(study, responses, list(a.get("by", [])))
        elif kind == "agreement":
            tables[name] = agreement_table(trials, list(a.get("by", [])), item_scales(study))
        elif kind == "summaries":  # check-all shares and numeric means (studyfile/summaries.py)
            from .summaries import summaries  # lazy: imports studyfile.summaries

            tables.update(summaries(responses, items))
        elif kind == "function":
            got = user_function(study, i, a["function"])(responses, items, **(a.get("args") or {}))
            tables.update(got if isinstance(got, dict) else {name: got})
    if "shown_position" in responses.columns:
        tables.update(study_order_effects(study, responses))
    if study.people:  # design.subjects: people: every person's answers scored (issue 39)
        tables.update(fit_tables(study, scored))
    if tests:
        # the family's adjusted p-values live in tests.csv only: a named test's own table is part of a family,
        # and a reader (or --check-r's p.adjust) adjusting within that table alone would get other numbers
        tables["tests"] = with_family(pd.concat([t for t in tests if len(t)] or
                                                [pd.DataFrame(columns=[*SYSTEM, *BROOM])], ignore_index=True))
    tables["trials"] = trials
    return tables
