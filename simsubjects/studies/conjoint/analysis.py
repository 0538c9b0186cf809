"""Analysis of the immigration conjoint: the model's AMCEs and MMs beside HHY's respondents.

Profile-level outcome: people's `ChosenImmigrant` (0/1) and the model's exact P(profile chosen)
(mean over the orders asked) or expected rating. AMCEs come from one regression with the design's
two restriction interactions (cregg's `cj(immigration, ChosenImmigrant ~ Gender + Education * Job
+ LanguageSkills + CountryOfOrigin * ReasonForApplication + JobExperience + JobPlans + PriorEntry,
id = ~CaseID)`), errors clustered by respondent; MMs test 0.5 (no preference between two profiles).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simsubjects.studies.conjoint.profiles import choice_by_profile, first_position_share, rating_by_profile
from simsubjects.errors import UserError
from simsubjects.collect.sample_kinds import PEOPLE
from simsubjects.analyze.methods import conjoint as cj
from simsubjects.analyze.methods.multiplicity import add_adjusted
from simsubjects.studies.conjoint.design import immigration_design
from simsubjects.studies.conjoint.design import load_human
from simsubjects.analyze.check_r import compare

HUMAN = "HHY 2014 respondents"


def _design():
    return immigration_design()


def features() -> list[str]:
    return [a.name for a in _design().attributes]


def constraints() -> list[tuple[str, str]]:
    """The design's restricted pairs, in the (a, b) order of cregg's documented formula."""
    return [(r.b, r.a) if r.a == "Job" else (r.a, r.b) for r in _design().restrictions]


def _formula_order() -> list[str]:
    # R's column order of the cregg call above: the main effects in the formula's order
    return ["Gender", "Education", "Job", "LanguageSkills", "CountryOfOrigin", "ReasonForApplication",
            "JobExperience", "JobPlans", "PriorEntry"]


def profile_table(responses: pd.DataFrame, items: pd.DataFrame) -> pd.DataFrame:
    """One row per source x respondent x task x profile: the levels and the outcome `chosen`."""

    feats = features()
    model = responses[responses["source"] == "model"]
    parts = []
    if len(model):
        rating = (model["condition"] == "rating").any()
        y = rating_by_profile(model) if rating else choice_by_profile(model)
        prof = items[["respondent", "task", "profile", *feats]].copy()
        prof["task"] = prof["task"].astype(int)
        prof["profile"] = prof["profile"].astype(int)
        m = y.merge(prof, on=["respondent", "task", "profile"], how="left")
        if m[feats].isna().any().any():
            raise UserError("conjoint: some answered tasks have no profiles in the items table; runs analyzed "
                            "together must share --seed, --respondents and --tasks (the same profiles)")
        parts.append(pd.DataFrame({"source": m["model"], "id": m["model"] + ":" + m["respondent"].astype(str),
                                   "outcome_kind": "rating" if rating else "choice", "chosen": m["p"],
                                   **{f: m[f].astype(str) for f in feats}}))
    h = load_human()
    parts.append(pd.DataFrame({"source": HUMAN, "id": "human:" + h["CaseID"].astype(str), "outcome_kind": "choice",
                               "chosen": h["ChosenImmigrant"], **{f: h[f].astype(str) for f in feats}}))
    out = pd.concat(parts, ignore_index=True)
    design = _design()
    for a in design.attributes:
        out[a.name] = pd.Categorical(out[a.name], categories=list(a.levels))
    return out


def design_levels(responses: pd.DataFrame, items: pd.DataFrame) -> dict[str, list[str]]:
    """The export's level order: each attribute's design levels, the baseline (cregg's reference) first."""
    return {a.name: list(a.levels) for a in _design().attributes}


def export_tables(responses: pd.DataFrame, items: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The profile-level table the analysis uses (one row per profile shown, the model's and HHY's
    respondents', with `chosen`), so that R and Stata start where Python's AMCEs start (issue 29)."""
    prof = profile_table(responses, items)
    for f in features():
        prof[f] = prof[f].astype(object)
    return {"profiles": prof}


def _by_source(fn, table: pd.DataFrame, **kw) -> pd.DataFrame:
    parts = []
    for src, g in table.groupby("source", sort=False):
        parts.append(fn(g, "chosen", _formula_order(), id="id", **kw).assign(source=src, model=src))
    out = pd.concat(parts, ignore_index=True)
    return out[["source", *[c for c in out.columns if c != "source"]]]


def analyze_immigration(responses: pd.DataFrame, items: pd.DataFrame) -> dict[str, pd.DataFrame]:
    table = profile_table(responses, items)
    choice = table[table["outcome_kind"] == "choice"]
    out = {
        # Holm/BH over a source's attribute levels: one family per source (issue 25: "conjoint levels
        # have no multiplicity control"); baseline levels carry no test and stay out of the family
        "amce": add_adjusted(_by_source(cj.amce, table, constraints=constraints()), by=["source"],
                             family="AMCE levels of a source"),
        "mm": pd.concat([_by_source(cj.mm, choice, h0=0.5)] +
                        ([_by_source(cj.mm, table[table["outcome_kind"] == "rating"], h0=4.0)]
                         if (table["outcome_kind"] == "rating").any() else []), ignore_index=True),
    }
    models = [s for s in choice["source"].unique() if s != HUMAN]
    diffs, tests = [], []
    for m in models:  # each model against the people: MM differences and the omnibus test (cj_anova)
        pair = choice[choice["source"].isin([HUMAN, m])].assign(
            group=lambda d: pd.Categorical(np.where(d["source"] == HUMAN, "people", "model"), ["people", "model"]))
        diffs.append(cj.mm_diffs(pair, "chosen", _formula_order(), "group", id="id").assign(model=m))
        # respondents answer several tasks: the omnibus test is cluster-robust (cregg's F takes the
        # profiles as independent and over-rejects; issue 25, bench/cj_null.py)
        tests.append(cj.cj_anova(pair, "chosen", _formula_order(), "group", id="id",
                                 constraints=constraints()).assign(model=m))
    if diffs:
        out["mm_diff_model_minus_people"] = pd.concat(diffs, ignore_index=True)
        out["anova_model_vs_people"] = pd.concat(tests, ignore_index=True)
    model_rows = table[table["source"] != HUMAN]
    if len(model_rows):  # per model: runs analyzed together each keep their own design check
        out["design_freqs"] = pd.concat([cj.freqs(g, features()).assign(model=m)
                                         for m, g in model_rows.groupby("source", sort=False)], ignore_index=True)
        out["design_restrictions"] = pd.concat([restriction_check(g).assign(model=m)
                                                for m, g in model_rows.groupby("source", sort=False)],
                                               ignore_index=True)
    if (responses["source"] == "model").any() and not (responses["condition"] == "rating").any():
        out["position"] = first_position_share(responses)
    for name in ("amce", "mm"):  # the bundled people are not rows of the run: say which rows are theirs (issue 40)
        out[name]["sample"] = np.where(out[name]["source"] == HUMAN, PEOPLE, None)
    return out


def restriction_check(profiles: pd.DataFrame) -> pd.DataFrame:
    """Per restriction: forbidden combinations and how many shown profiles have one (must be 0)."""
    rows = []
    for r in _design().restrictions:
        props = cj.props(profiles, [r.a, r.b])
        forbidden = props[props[r.a].astype(str).isin(r.a_levels) & props[r.b].astype(str).isin(r.b_levels)]
        shown = profiles[r.a].astype(str).isin(r.a_levels) & profiles[r.b].astype(str).isin(r.b_levels)
        rows.append({"restriction": f"{r.a} in {sorted(r.a_levels)} -> {r.b} not in {sorted(r.b_levels)}",
                     "forbidden_cells": len(forbidden), "profiles_breaking_it": int(shown.sum()),
                     "max_forbidden_proportion": float(forbidden["Proportion"].max() if len(forbidden) else 0.0)})
    return pd.DataFrame(rows)


def plot_immigration(tables: dict, responses: pd.DataFrame, outdir: Path) -> list[Path]:
    outdir = Path(outdir)
    paths = [cj.plot_estimates(tables["amce"], outdir / "conjoint_amce.png",
                               "AMCEs: people (HHY 2014) and the model", "change in P(chosen)", ref=0.0)]
    mm = tables["mm"]
    paths.append(cj.plot_estimates(mm[mm["estimate"].between(0, 1)], outdir / "conjoint_mm.png",
                                   "Marginal means: people and the model", "P(chosen)", ref=0.5))
    return paths


def side_by_side(table: pd.DataFrame) -> pd.DataFrame:
    """feature, level, then 'estimate [conf.low, conf.high]' per source."""
    t = table.assign(cell=[f"{e:.3f}" + ("" if pd.isna(lo) else f" [{lo:.3f}, {hi:.3f}]")
                           for e, lo, hi in zip(table["estimate"], table["conf.low"], table["conf.high"])])
    wide = t.pivot_table(index=["feature", "level"], columns="source", values="cell", aggfunc="first", sort=False)
    return wide.reset_index()


def summary(tables: dict) -> dict[str, pd.DataFrame]:
    out = {"AMCE (95% CI): people beside the model": side_by_side(tables["amce"])}
    if "anova_model_vs_people" in tables:
        out["no difference from people (Wald F, clustered by respondent)"] = tables["anova_model_vs_people"]
    if "position" in tables:
        out["P(first-shown profile chosen)"] = tables["position"]
    if "design_restrictions" in tables:
        out["design restrictions"] = tables["design_restrictions"]
    return out


def check_conjoint(r, responses, items, tables, tol, tol_p) -> list[dict]:
    """--check-r: AMCEs and MMs of every source from the R twins (conjoint_amce, conjoint_mm)."""

    if items is None:
        raise UserError("--check-r: the run has no items table (profiles)")
    prof = profile_table(responses, items)
    ro = r.ro
    factorize = ro.r("function(d, f, lv) { d[[f]] <- factor(d[[f]], levels = lv); d }")
    rows = []
    for src, g in prof.groupby("source", sort=False):
        kind = g["outcome_kind"].iloc[0]
        rd = r.to_r(g[["id", "chosen", *features()]].assign(**{f: g[f].astype(str) for f in features()}))
        for a in _design().attributes:
            rd = factorize(rd, a.name, ro.StrVector(list(a.levels)))
        cons = ro.StrVector([f"{a}:{b}" for a, b in constraints()])
        pairs = [("amce", cj.amce(g, "chosen", _formula_order(), id="id", constraints=constraints()),
                  r.to_py(r.env.find("conjoint_amce")(rd, "chosen", ro.StrVector(_formula_order()), id="id",
                                                      constraints=cons))),
                 ("mm", cj.mm(g, "chosen", _formula_order(), id="id", h0=0.5 if kind == "choice" else 4.0),
                  r.to_py(r.env.find("conjoint_mm")(rd, "chosen", ro.StrVector(_formula_order()), id="id",
                                                    h0=0.5 if kind == "choice" else 4.0)))]
        for what, py, rr in pairs:
            both = py.merge(rr, on=["feature", "level"], suffixes=("", "_r"))
            if len(both) != len(py):
                rows.append(compare(f"{what} | {src} rows", len(py), len(both), 0))
            for _, row in both.iterrows():
                # z only where the error is not ~0: a saturated tiny run has errors of rounding size,
                # whose ratio is noise in both languages
                solid = np.isfinite(row["std.error"]) and row["std.error"] > 1e-6
                for col in ("estimate", "std.error", "statistic") if solid else ("estimate", "std.error"):
                    rows.append(compare(f"{what} | {src} | {row['feature']}={row['level']} {col}",
                                        row[col], row[f"{col}_r"], tol))
    return rows + _check_by(r, prof, tables, tol, tol_p)


def _check_by(r, prof: pd.DataFrame, tables, tol, tol_p) -> list[dict]:
    """--check-r of the by= tables, each model against the people (group people/model): the run's
    mm_diff_model_minus_people and anova_model_vs_people, and AMCEs/MMs by group and AMCE differences,
    from R's conjoint_mm_diffs, conjoint_wald, conjoint_amce/conjoint_mm(by =) and conjoint_amce_diffs."""

    ro = r.ro
    fn = {k: r.env.find(k) for k in ("conjoint_amce", "conjoint_mm", "conjoint_amce_diffs", "conjoint_mm_diffs",
                                     "conjoint_wald")}
    factorize = ro.r("function(d, f, lv) { d[[f]] <- factor(d[[f]], levels = lv); d }")
    feats, cons = ro.StrVector(_formula_order()), ro.StrVector([f"{a}:{b}" for a, b in constraints()])
    choice = prof[prof["outcome_kind"] == "choice"]
    rows = []
    for m in [s for s in choice["source"].unique() if s != HUMAN]:
        pair = choice[choice["source"].isin([HUMAN, m])].assign(
            group=lambda d: pd.Categorical(np.where(d["source"] == HUMAN, "people", "model"), ["people", "model"]))
        rd = r.to_r(pair[["id", "chosen", *features()]].assign(
            group=pair["group"].astype(str), **{f: pair[f].astype(str) for f in features()}))
        for a in _design().attributes:
            rd = factorize(rd, a.name, ro.StrVector(list(a.levels)))
        rd = factorize(rd, "group", ro.StrVector(["people", "model"]))
        py_mmd = tables.get("mm_diff_model_minus_people")
        py_mmd = (py_mmd[py_mmd["model"] == m].drop(columns="model") if py_mmd is not None
                  else cj.mm_diffs(pair, "chosen", _formula_order(), "group", id="id"))
        pairs = [
            ("amce by group", cj.amce(pair, "chosen", _formula_order(), id="id", constraints=constraints(),
                                      by="group"),
             fn["conjoint_amce"](rd, "chosen", feats, id="id", constraints=cons, by="group")),
            ("mm by group", cj.mm(pair, "chosen", _formula_order(), id="id", h0=0.5, by="group"),
             fn["conjoint_mm"](rd, "chosen", feats, id="id", h0=0.5, by="group")),
            ("amce_diffs", cj.amce_diffs(pair, "chosen", _formula_order(), "group", id="id"),
             fn["conjoint_amce_diffs"](rd, "chosen", feats, by="group", id="id")),
            ("mm_diff_model_minus_people", py_mmd, fn["conjoint_mm_diffs"](rd, "chosen", feats, by="group", id="id")),
        ]
        for what, py, rr in pairs:
            rr = r.to_py(rr)
            both = py.merge(rr, on=["BY", "feature", "level"], suffixes=("", "_r"))
            if len(both) != len(py) or len(rr) != len(py):
                rows.append(compare(f"{what} | {m} rows", len(py), len(both), 0))
            for _, row in both.iterrows():
                for col in ("estimate", "std.error"):
                    rows.append(compare(f"{what} | {m} | {row['BY']} | {row['feature']}={row['level']} {col}",
                                        row[col], row[f"{col}_r"], tol))
        py_w = tables.get("anova_model_vs_people")
        py_w = (py_w[py_w["model"] == m].iloc[0] if py_w is not None
                else cj.cj_anova(pair, "chosen", _formula_order(), "group", id="id", constraints=constraints()).iloc[0])
        rw = r.to_py(fn["conjoint_wald"](rd, "chosen", feats, by="group", id="id", constraints=cons)).iloc[0]
        for col, t in (("statistic", tol), ("df", 0), ("df.residual", 0), ("p.value", tol_p)):
            rows.append(compare(f"anova_model_vs_people | {m} {col}", py_w[col], rw[col], t))
    return rows
