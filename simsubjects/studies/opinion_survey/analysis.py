"""Analysis of the opinion survey (OpinionQA, Santurkar et al. 2023) beside the human groups.

From one tidy table holding the model's rows (per subject x question x ordering) and the human
rows (per attribute x group x question, weights = counts or survey weights):

* ``model_distributions`` - D_M per question for each prompt: ``default`` (no persona), ``personas``
  (the silicon sample: mean of its subjects' distributions, weighted by persona_weight) and
  ``<ATTRIBUTE>=<group>`` (the personas of one group). A subject's distribution is the mean of its
  per-trial shares over the orderings shown, so ``--order cyclic/all`` averages orderings out.
* ``representativeness`` - Rep = 1 - mean over questions of W1(D_M, D_H)/span of the ordinal
  positions, refusals dropped and the rest renormalized (analyze.representativeness, OpinionQA's
  convention), for every prompt against every human group and Overall: the heatmap of OpinionQA's
  Figures 2-3 (``representativeness_heatmap.png``).
* ``steerability`` - per group g: Rep to g of the personas of g minus Rep to g of the default
  prompt; paired over questions, one-sample t-test of the per-question distance differences
  (OpinionQA §4.2 compares steered against default the same way).
* ``refusals`` - refusal rate per question: people (share of weight on refusal answers, OpinionQA
  R_H) and the model (probability on refusal options, R_M); ``refusal_summary`` means over questions.
* ``human_baseline`` - Rep of each human group's distribution to the overall one (how far groups
  are from the population: the yardstick for the model's numbers).
* ``order_effects`` / ``order_effects_average`` - analyze.order_effects on the trials that record
  their option order.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from simsubjects.errors import UserError
from simsubjects.analyze.methods import representativeness as rep
from simsubjects.analyze.methods.tests import one_sample_t
from simsubjects.analyze.order_effects import broom_fields, order_effects
from simsubjects.analyze.tidy import n_trials, trial_total
from simsubjects.analyze.check_r import _tag, compare, compare_fields

OVERALL = "Overall"
BROOM = {"se": "std.error", "ci_low": "conf.low", "ci_high": "conf.high"}


def _split(responses: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    if "source" not in responses.columns or "key" not in responses.columns:
        raise UserError("opinion survey: responses lack source/key columns; "
                        "collect with `simsubjects collect opinion-survey`")
    human = responses[responses["source"] == "human"]
    model = responses[responses["source"] != "human"]
    if model.empty or human.empty:
        raise UserError("opinion survey: the table needs model rows and human rows (the human data is added at collection)")
    return model, human


def persona_attributes(model: pd.DataFrame, human: pd.DataFrame) -> list[str]:
    """Human attributes that are also persona columns of the model rows."""
    attrs = [a for a in pd.unique(human["attribute"].dropna()) if a != OVERALL]
    return [a for a in attrs if a in model.columns]


def subject_distributions(model: pd.DataFrame) -> pd.DataFrame:
    """One row per model x subject x key x response: mean share over the subject's trials (orderings)."""
    m = model.copy()
    m["weight"] = m["weight"].astype(float)
    m["share"] = m["weight"] / trial_total(m)  # trials keyed by (source, model, run, trial): analyze/tidy.py
    m["subject"] = m["subject"].fillna("")
    ntr = n_trials(m, ["model", "subject", "key"])
    m["share"] = m["share"] / ntr
    keys = ["model", "subject", "key", "response"]
    first = m.drop_duplicates(keys).set_index(keys)[["position", "refusal"]]
    return m.groupby(keys, sort=False)["share"].sum().to_frame().join(first).reset_index()


def model_distributions(model: pd.DataFrame, attrs: list[str]) -> pd.DataFrame:
    """D_M per model x prompt x question.

    Columns: model, prompt, attribute, group, key, response, position, refusal, weight.
    """
    subj = subject_distributions(model)
    info = model.drop_duplicates(["model", "subject"]).assign(subject=lambda d: d["subject"].fillna(""))
    info = info.set_index(["model", "subject"])[[a for a in attrs if a in info.columns]
                                                + (["persona_weight"] if "persona_weight" in info.columns else [])]
    subj = subj.drop(columns=[c for c in ("persona_weight",) if c in subj.columns]).join(info, on=["model", "subject"])
    if "persona_weight" not in subj.columns:
        subj["persona_weight"] = 1.0
    subj["persona_weight"] = subj["persona_weight"].fillna(1.0).astype(float)
    parts = []

    def pool(df, prompt, attribute, group):
        w = df["share"] * df["persona_weight"]
        tot = df.drop_duplicates(["model", "subject", "key"]).groupby(["model", "key"])["persona_weight"].sum()
        g = df.assign(w=w).groupby(["model", "key", "response"], sort=False).agg(
            weight=("w", "sum"), position=("position", "first"), refusal=("refusal", "first")).reset_index()
        g["weight"] = g["weight"] / g.set_index(["model", "key"]).index.map(tot).to_numpy(float)
        parts.append(g.assign(prompt=prompt, attribute=attribute, group=group))

    default = subj[subj["subject"] == ""]
    personas = subj[subj["subject"] != ""]
    if not default.empty:
        pool(default, "default", "", "")
    if not personas.empty:
        pool(personas, "personas", "", "")
        for a in attrs:
            for g, df in personas.groupby(a, sort=False):
                if str(g) != "":
                    pool(df, f"{a}={g}", a, str(g))
    out = pd.concat(parts, ignore_index=True)
    return out[["model", "prompt", "attribute", "group", "key", "response", "position", "refusal", "weight"]]


def _human_dist(human: pd.DataFrame) -> pd.DataFrame:
    cols = ["key", "attribute", "group", "response", "position", "refusal", "weight"]
    return human[cols + (["n_respondents"] if "n_respondents" in human.columns else [])].assign(
        attribute=lambda d: d["attribute"].astype(str), group=lambda d: d["group"].astype(str))


def _broom(df: pd.DataFrame) -> pd.DataFrame:
    return df.rename(columns=BROOM).drop(columns=["test"], errors="ignore")


def prompt_units(model: pd.DataFrame, attrs: list[str]) -> pd.DataFrame:
    """The units the model's side of `representativeness` resamples: one row per model x prompt x subject x
    key x substantive position, `weight` = the subject's share times its persona weight (the pooled D_M of
    `model_distributions` is their sum per key, renormalized). The default prompt is one subject."""
    subj = subject_distributions(model)
    pw = (model.drop_duplicates(["model", "subject"]).assign(subject=lambda d: d["subject"].fillna(""))
          .set_index(["model", "subject"])["persona_weight"] if "persona_weight" in model.columns else None)
    w = subj.join(pw, on=["model", "subject"])["persona_weight"].fillna(1.0) if pw is not None else 1.0
    u = subj.assign(weight=subj["share"] * w, unit=subj["subject"],
                    prompt=np.where(subj["subject"] == "", "default", "personas"))
    u = u[~u["refusal"].fillna(True).astype(bool) & u["position"].notna()]
    return u[["model", "prompt", "unit", "key", "position", "weight"]]


BOOT_UNIT = ("respondent (people: each question's distribution redrawn as a multinomial of its n_respondents) "
             "and subject (model personas), resampled independently")


def _interval_sides(units: pd.DataFrame | None, hd: pd.DataFrame, row: dict):
    """(the model's units, the people's distribution) one row's interval resamples, or None where the
    people carry no count."""
    if units is None or "n_respondents" not in hd.columns:
        return None
    h = hd[(hd["attribute"] == row["attribute"]) & (hd["group"] == row["group"])]
    h = h[~h["refusal"].fillna(True).astype(bool) & h["position"].notna()]
    m = units[(units["model"] == row["model"]) & (units["prompt"] == row["prompt"])]
    if h.empty or m.empty or h["n_respondents"].isna().any():
        return None
    return m, h


def _interval(units: pd.DataFrame | None, hd: pd.DataFrame, row: dict) -> dict:
    """The resampled interval of one row of the table, or no interval where the people carry no count."""
    none = {"estimate.corrected": math.nan, "boot.low": math.nan, "boot.high": math.nan, "boot.bias": math.nan,
            "boot_unit": "", "n_respondents": math.nan, "n_subjects": math.nan}
    sides = _interval_sides(units, hd, row)
    if sides is None:
        return none
    r = rep.multinomial_interval(*sides)
    return {k: r[k] for k in ("estimate.corrected", "boot.low", "boot.high", "boot.bias")} | {
        "boot_unit": BOOT_UNIT, "n_respondents": r["n_respondents"], "n_subjects": r["n_subjects"]}


def option_lists(dist: pd.DataFrame) -> pd.DataFrame:
    """Each question's options (key, position, refusal) as a distribution lists them: the model's exact
    distributions (model_distribution) and the bundled people's (every option, zero-weight ones included)
    list every option of the question, so their positions span the whole scale (W1's span)."""
    return dist[["key", "position", "refusal"]].drop_duplicates()


def representativeness_table(md: pd.DataFrame, hd: pd.DataFrame, units: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rep of every model x prompt (default, personas) to every human group and Overall; with `units`
    (prompt_units) and people who carry their counts (`n_respondents`), the interval from resampling
    both sides (rep.multinomial_interval, issue 25) and the bias-corrected estimate."""
    m = md[md["prompt"].isin(["default", "personas"])]
    rows = []
    for (model, prompt), g in m.groupby(["model", "prompt"], sort=False):
        r = rep.representativeness(g[["key", "position", "refusal", "weight"]].assign(model=model), hd,
                                   by=["attribute", "group"], options=option_lists(md))
        rows.append(r.assign(prompt=prompt))
    out = _broom(pd.concat(rows, ignore_index=True))
    out = out[["model", "prompt", "attribute", "group", "estimate", "std.error", "conf.low", "conf.high",
               "mean_distance", "n"]]
    extra = pd.DataFrame([_interval(units, hd, row) for row in out.to_dict("records")], index=out.index)
    return pd.concat([out, extra], axis=1)


def distances(md: pd.DataFrame, hd: pd.DataFrame, prompt: str, attribute: str, group: str) -> pd.DataFrame:
    """Normalized W1 per question between the prompt's D_M and the human group's D_H."""
    m = md[md["prompt"] == prompt][["model", "key", "position", "refusal", "weight"]]
    h = hd[(hd["attribute"] == attribute) & (hd["group"] == group)]
    if m.empty or h.empty:
        return pd.DataFrame(columns=["model", "key", "distance"])
    return rep.wasserstein_by_question(m, h, by=["attribute", "group"], options=option_lists(md))[
        ["model", "key", "distance"]]


def steerability(md: pd.DataFrame, hd: pd.DataFrame) -> pd.DataFrame:
    """Per steered group: Rep to the group with its personas vs with the default prompt (paired over questions)."""
    rows = []
    steered = md[md["attribute"] != ""][["prompt", "attribute", "group"]].drop_duplicates()
    for s in steered.itertuples(index=False):
        if s.prompt.startswith("personas") or hd[(hd["attribute"] == s.attribute) & (hd["group"] == s.group)].empty:
            continue
        d_s = distances(md, hd, s.prompt, s.attribute, s.group)
        d_0 = distances(md, hd, "default", s.attribute, s.group)
        both = d_s.merge(d_0, on=["model", "key"], suffixes=("_steered", "_default")).dropna()
        for model, g in both.groupby("model", sort=False):
            diff = (g["distance_default"] - g["distance_steered"]).to_numpy(float)
            rows.append({"model": model, "attribute": s.attribute, "group": s.group,
                         "rep_default": 1 - float(g["distance_default"].mean()),
                         "rep_steered": 1 - float(g["distance_steered"].mean()), **broom_fields(one_sample_t(diff))})
    return pd.DataFrame(rows, columns=["model", "attribute", "group", "rep_default", "rep_steered", "estimate",
                                       "std.error", "statistic", "df", "p.value", "conf.low", "conf.high", "n"])


def refusals(md: pd.DataFrame, hd: pd.DataFrame) -> pd.DataFrame:
    """Refusal rate per question: people per group (R_H) and the model per prompt (R_M)."""
    h = hd.assign(ref=hd["refusal"].fillna(False).astype(bool))
    hr = h.groupby(["attribute", "group", "key"], sort=False).apply(
        lambda g: g.loc[g["ref"], "weight"].sum() / g["weight"].sum() if g["weight"].sum() > 0 else math.nan,
        include_groups=False).rename("refusal_rate").reset_index()
    hr = hr.assign(source="human", model="people", prompt="", who=hr["attribute"] + "=" + hr["group"])
    m = md.assign(ref=md["refusal"].fillna(True).astype(bool))  # an answer outside the options is no opinion
    mr = m.groupby(["model", "prompt", "key"], sort=False).apply(
        lambda g: g.loc[g["ref"], "weight"].sum() / g["weight"].sum(), include_groups=False).rename(
        "refusal_rate").reset_index()
    mr = mr.assign(source="model", attribute="", group="", who=mr["prompt"])
    cols = ["source", "model", "who", "key", "refusal_rate"]
    return pd.concat([hr[cols], mr[cols]], ignore_index=True)


def refusal_summary(table: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (src, model, who), g in table.groupby(["source", "model", "who"], sort=False):
        x = g["refusal_rate"].dropna().to_numpy(float)
        rows.append({"source": src, "model": model, "who": who, "estimate": float(x.mean()) if len(x) else math.nan,
                     "std.error": float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan, "n": len(x)})
    return pd.DataFrame(rows, columns=["source", "model", "who", "estimate", "std.error", "n"])


def human_baseline(hd: pd.DataFrame) -> pd.DataFrame:
    """Rep of each human group to the overall distribution (OpinionQA's human reference points)."""
    overall = hd[hd["attribute"] == OVERALL]
    groups = hd[hd["attribute"] != OVERALL]
    if overall.empty or groups.empty:
        return pd.DataFrame(columns=["attribute", "group", "estimate", "std.error", "conf.low", "conf.high", "n"])
    m = groups.assign(model=groups["attribute"] + "=" + groups["group"])[["model", "key", "position", "refusal", "weight"]]
    r = _broom(rep.representativeness(m, overall, options=option_lists(hd)))
    r[["attribute", "group"]] = r["model"].str.split("=", n=1, expand=True)
    return r[["attribute", "group", "estimate", "std.error", "conf.low", "conf.high", "n"]]


def analyze_opinion_survey(responses: pd.DataFrame, items: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    model, human = _split(responses)
    attrs = persona_attributes(model, human)
    md = model_distributions(model, attrs)
    hd = _human_dist(human)
    refusal = refusals(md, hd)
    per_item, average = order_effects(model, item="key")
    return {
        "representativeness": representativeness_table(md, hd, prompt_units(model, attrs)),
        "steerability": steerability(md, hd),
        "refusals": refusal,
        "refusal_summary": refusal_summary(refusal),
        "human_baseline": human_baseline(hd),
        "order_effects": per_item,
        "order_effects_average": average,
        "model_distributions": md,
    }


def summary(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    out = {}
    r = tables["representativeness"]
    if len(r):
        wide = r.assign(row=r["model"] + " | " + r["prompt"], col=r["attribute"] + "=" + r["group"])
        out["representativeness (rows: model | prompt; columns: human group)"] = wide.pivot_table(
            index="row", columns="col", values="estimate", sort=False).reset_index()
    for name in ("steerability", "refusal_summary", "human_baseline", "order_effects_average"):
        if len(tables.get(name, [])):
            out[name] = tables[name]
    oe = tables.get("order_effects")
    if oe is not None and len(oe):
        out["order_effects (largest |P(first) - P(last)|)"] = oe.reindex(
            oe["estimate"].abs().sort_values(ascending=False).index).head(15)
    return out


def plot_opinion_survey(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir) -> list[Path]:
    """The model x group representativeness heatmap (OpinionQA Figures 2-3), people's baseline as the last row."""
    import matplotlib  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    r = tables["representativeness"]
    if r.empty:
        return []
    cols = list(dict.fromkeys(r["attribute"] + "=" + r["group"]))
    cols = [c for c in cols if c.startswith(OVERALL)] + [c for c in cols if not c.startswith(OVERALL)]
    grid = r.assign(row=r["model"] + " | " + r["prompt"], col=r["attribute"] + "=" + r["group"]).pivot_table(
        index="row", columns="col", values="estimate", sort=False).reindex(columns=cols)
    hb = tables.get("human_baseline")
    if hb is not None and len(hb):
        base = pd.Series(hb["estimate"].to_numpy(), index=hb["attribute"] + "=" + hb["group"])
        base[f"{OVERALL}={OVERALL}"] = 1.0
        grid.loc["people: group vs overall"] = base.reindex(cols).to_numpy()
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(cols), 1.0 + 0.5 * len(grid)))
    im = ax.imshow(grid.to_numpy(float), cmap="viridis", vmin=max(0.0, np.nanmin(grid.to_numpy(float)) - 0.02),
                   vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(cols)), [c.split("=", 1)[1] if not c.startswith(OVERALL) else OVERALL for c in cols],
                  rotation=30, ha="right")
    ax.set_yticks(range(len(grid)), grid.index)
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            v = grid.iat[i, j]
            if np.isfinite(v):
                ax.text(j, i, f"{v:.3f}", ha="center", va="center", color="w" if v < 0.9 else "k", fontsize=8)
    ax.set_title("Representativeness (1 - mean W1/span) by group", fontsize=10)
    fig.colorbar(im, ax=ax, fraction=0.03)
    fig.tight_layout()
    path = Path(outdir) / "representativeness_heatmap.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


# ---------------------------------------------------------------- R cross-check (analyze --check-r)

def check_r_opinion_survey(r, responses, items, tables, tol, tol_p) -> list[dict]:
    """Per-question W1/span and Rep of each prompt to each human group, Python vs R's representativeness()."""

    model, human = _split(responses)
    md = model_distributions(model, persona_attributes(model, human))
    hd = _human_dist(human)
    out = []
    cols = ["model", "key", "position", "weight", "refusal"]
    for (mname, prompt), g in md[md["prompt"].isin(["default", "personas"])].groupby(["model", "prompt"], sort=False):
        m = g.assign(model=f"{mname} | {prompt}")[cols]
        by = {"by": ["attribute", "group"]}
        pq = rep.wasserstein_by_question(m, hd, options=option_lists(m), **by)
        rq = r("wasserstein_by_question", m, hd, **by)
        keys = ["model", "attribute", "group", "key"]
        for row in pq.merge(rq, on=keys, how="outer", suffixes=("", "_r")).to_dict("records"):
            out.append(compare(_tag("opinion_survey W1/span", *[row[k] for k in keys]), row["distance"],
                               row["distance_r"], tol))
        prep = rep.representativeness(m, hd, options=option_lists(m), **by)
        rrep = r("representativeness", m, hd, **by)
        for row in prep.merge(rrep, on=["model", "attribute", "group"], how="outer", suffixes=("", "_r")).to_dict("records"):
            tag = _tag("opinion_survey representativeness", row["model"], row["attribute"], row["group"])
            out += compare_fields(tag, {k: row.get(k) for k in ("estimate", "std.error", "conf.low", "conf.high")},
                                  {k: row.get(f"{k}_r") for k in ("estimate", "std.error", "conf.low", "conf.high")},
                                  tol, tol)
    table = (tables or {}).get("representativeness")
    units = prompt_units(model, persona_attributes(model, human))
    table = representativeness_table(md, hd, units) if table is None else table
    return out + _check_bootstrap(r, table, units, hd, tol)


def _check_bootstrap(r, table: pd.DataFrame, units: pd.DataFrame, hd: pd.DataFrame, tol) -> list[dict]:
    """The table's boot.* columns and estimate.corrected against R's .rep_boot_multinomial
    (R/representativeness.R) on the resamples Python drew (rep.multinomial_resamples: the subjects' index
    matrix and the people's redrawn counts handed to R), at multinomial_interval's level; to 1e-9."""
    out = []
    for row in table.to_dict("records"):
        sides = _interval_sides(units, hd, row)
        if sides is None or not np.isfinite(float(row["boot.bias"])):
            continue
        d = rep.multinomial_resamples(*sides)
        half_alpha = rep.multinomial_interval(*sides)["boot.half_alpha"]
        mat = {k: r.ro.r["matrix"](r.vector(d[k].ravel(order="F")), nrow=d[k].shape[0])
               for k in ("idx_model", "human_pooled")}
        cols = ["unit", "key", "position", "weight"]
        got = r(".rep_boot_multinomial", sides[0][cols].assign(unit=sides[0]["unit"].astype(str)),
                sides[1][["key", "position", "weight"]], d["units_model"], mat["idx_model"], d["key"], d["position"],
                mat["human_pooled"], half_alpha)
        tag = _tag("opinion_survey representativeness bootstrap", row["model"], row["prompt"], row["attribute"],
                   row["group"])
        out += [compare(f"{tag} {k}", row[k], got[k].iat[0], min(tol, 1e-9))
                for k in ("boot.low", "boot.high", "boot.bias", "estimate.corrected")]
    return out
