"""Milgram obedience analyses (Aher et al. 2023, Figures 7, 21, 24, 29) beside Milgram (1963).

* Break-off distribution (Figure 21/29): subjects by maximum level administered (0 = none,
  30 = completed), model(s) and Milgram's 40 humans side by side, with the paper's LM-5 counts.
* Survival curve (Figure 7/24): share still obeying at each level, Kaplan-Meier so that runs
  cut by --max-stages count as right-censored (with no censoring it is the plain share of
  subjects whose break-off level is >= the level). "Event" = the first level a subject did not
  administer (break-off + 1); completed subjects are censored at 30.
* Tests, model vs humans: the log-rank (Mantel-Cox) test of the two survival curves, a
  Mann-Whitney U test of break-off levels (censored runs left out), and Fisher's exact test of
  the share obedient (completed), each named in the `test` column.
* Per-level judgments: mean normalized P(stop) and P(shock/punish) and their validity Z.

Human rows come from the responses table when present, otherwise from the bundled Milgram (1963)
reference (collect/human/milgram1963.py); the novel scenario is compared with the same humans,
as the paper does (Figure 24), though the settings differ.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from simsubjects.datasets.milgram1963 import LEVELS, MODEL_NAME, load_milgram1963, paper_lm5
from simsubjects.studies.milgram.design import CAUSES, SCENARIOS, scenario
from simsubjects.analyze.methods.survival import kaplan_meier as km
from simsubjects.analyze.methods.survival import SMALL_GROUP, logrank_permutation, logrank_test as logrank
from simsubjects.analyze.tidy import n_trials, shares

HUMAN = MODEL_NAME


def _scenario_of(responses: pd.DataFrame, scen: dict | None = None) -> dict:
    if scen is not None:  # a study file's run: its own scenario (studyfile/obedience.py)
        return scen
    studies = [s for s in responses["study"].unique() if s in SCENARIOS]
    return scenario(studies[0] if studies else "milgram")


def breakoffs(responses: pd.DataFrame) -> pd.DataFrame:
    """One row per subject (model and human): model, source, subject, breakoff_level, censored, cause."""
    b = responses[responses["condition"] == "breakoff"]
    if not (b["source"] == "human").any():
        study = b["study"].iat[0] if len(b) else "milgram"
        b = pd.concat([b, load_milgram1963(study)], ignore_index=True)
    # Several runs analyzed together each carry the same human rows: keep one copy.
    human = b["source"] == "human"
    b = pd.concat([b[~human], b[human].drop_duplicates(["model", "trial"])], ignore_index=True)
    out = b[["model", "source", "subject", "breakoff_level", "censored", "cause"]].copy()
    out["breakoff_level"] = out["breakoff_level"].astype(int)
    out["censored"] = out["censored"].astype(bool)
    return out


def _order(models) -> list[str]:
    models = list(dict.fromkeys(models))
    return [m for m in models if m != HUMAN] + ([HUMAN] if HUMAN in models else [])


def breakoff_table(b: pd.DataFrame, scen: dict) -> pd.DataFrame:
    """Long: model, level, voltage (classic only), label, count, percent (of that model's subjects)."""
    stages = {s["level"]: s for s in scen["stages"]}
    classic = scen["unit"] == "volts"
    rows = []
    for m in _order(b["model"]):
        g = b[b["model"] == m]
        for lvl in range(LEVELS + 1):
            c = int((g["breakoff_level"] == lvl).sum())
            rows.append({"model": m, "level": lvl,
                         "voltage": (stages[lvl]["voltage"] if lvl else 0) if classic else np.nan,
                         "label": (stages[lvl]["label"] or "") if lvl else "none",
                         "count": c, "percent": 100 * c / len(g) if len(g) else np.nan,
                         "censored": int(((g["breakoff_level"] == lvl) & g["censored"]).sum())})
    return pd.DataFrame(rows)


def kaplan_meier(levels: np.ndarray, censored: np.ndarray) -> pd.DataFrame:
    """Share still obeying at each level 0..30 (S(L) = P(administered level L)); methods.survival."""
    return km(levels, censored, LEVELS)


def survival(b: pd.DataFrame) -> pd.DataFrame:
    out = []
    for m in _order(b["model"]):
        g = b[b["model"] == m]
        out.append(kaplan_meier(g["breakoff_level"], g["censored"]).assign(model=m, n=len(g)))
    df = pd.concat(out, ignore_index=True)
    return df[["model", "level", "at_risk", "events", "share_obeying", "n"]]


def logrank_test(a_levels, a_censored, b_levels, b_censored) -> dict:
    """Log-rank (Mantel-Cox) chi-square test, 1 df, of two survival curves over levels 1..30; methods.survival."""
    return logrank(a_levels, a_censored, b_levels, b_censored, LEVELS)


def tests(b: pd.DataFrame) -> pd.DataFrame:
    h = b[b["model"] == HUMAN]
    rows = []
    for m in _order(b["model"]):
        if m == HUMAN:
            continue
        g = b[b["model"] == m]
        base = {"model": m, "comparison": f"{m} vs {HUMAN}", "n_model": len(g), "n_human": len(h)}
        small = min(len(g), len(h)) < SMALL_GROUP
        rows.append({**base, **logrank_test(g["breakoff_level"], g["censored"], h["breakoff_level"], h["censored"]),
                     "note": f"{int(g['censored'].sum())} model runs censored (max stages)" +
                     (f"; asymptotic p unreliable with {min(len(g), len(h))} subject(s) in a group: use the "
                      "permutation row" if small else "")})
        if small:  # a tiny group: the chi-square approximation is not trusted; the permutation p is exact
            perm = logrank_permutation(g["breakoff_level"], g["censored"], h["breakoff_level"], h["censored"], LEVELS)
            rows.append({**base, **{k: v for k, v in perm.items() if k != "method"}, "note": perm["method"]})
        unc = g[~g["censored"]]
        if len(unc) and len(h):
            u = stats.mannwhitneyu(unc["breakoff_level"], h["breakoff_level"], alternative="two-sided")
            rows.append({**base, "n_model": len(unc), "test": "Mann-Whitney U test (break-off level)",
                         "statistic": float(u.statistic), "df": np.nan, "p.value": float(u.pvalue),
                         "estimate": float(unc["breakoff_level"].median() - h["breakoff_level"].median()),
                         "estimate_label": "difference of medians (model - human)",
                         "note": "censored runs left out" if g["censored"].any() else ""})
            table = [[int((unc["breakoff_level"] == LEVELS).sum()), int((unc["breakoff_level"] < LEVELS).sum())],
                     [int((h["breakoff_level"] == LEVELS).sum()), int((h["breakoff_level"] < LEVELS).sum())]]
            f = stats.fisher_exact(table)
            rows.append({**base, "n_model": len(unc), "test": "Fisher's exact test (share obedient)",
                         "statistic": float(f.statistic), "df": np.nan, "p.value": float(f.pvalue),
                         "estimate": table[0][0] / len(unc) - table[1][0] / len(h),
                         "estimate_label": "share obedient, model - human",
                         "note": "censored runs left out" if g["censored"].any() else ""})
    cols = ["model", "comparison", "test", "statistic", "df", "p.value", "estimate", "estimate_label", "n_model",
            "n_human", "note"]
    return pd.DataFrame(rows, columns=cols)


def obedience_summary(b: pd.DataFrame) -> pd.DataFrame:
    """Percent obedient (completed all levels) per model and the people. A run cut by --max-stages
    (`censored`) is neither obedient nor not: it is out of the denominator and counted apart (issue 40,
    item 2: before, it counted as disobedient), and beside it the Kaplan-Meier share still obeying at the
    last level (`km_percent_obedient`), which uses the censored runs up to where they stopped."""
    rows = []
    for m in _order(b["model"]):
        g = b[b["model"] == m]
        done = g[~g["censored"]]
        k, n = int((done["breakoff_level"] == LEVELS).sum()), len(done)
        # Wilson score interval (statsmodels; R's prop.test(correct = FALSE)): the Wald interval collapses
        # to a point at 0% or 100% and undercovers with Milgram's 40 or a handful of model subjects
        lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson") if n else (np.nan, np.nan)
        curve = kaplan_meier(g["breakoff_level"], g["censored"]).set_index("level") if len(g) else None
        # the end value where it is estimated: some run reached the last level (at risk there), or every run
        # broke off (the curve is 0); past every censoring with runs still obeying it is carried forward: empty
        end = np.nan if curve is None else curve.at[LEVELS, "share_obeying"]
        end = end if curve is None or curve.at[LEVELS, "at_risk"] > 0 or end == 0 else np.nan
        rows.append({"model": m, "n": len(g), "completed": k, "n_uncensored": n,
                     "percent_obedient": 100 * k / n if n else np.nan,
                     "conf.low": 100 * lo, "conf.high": 100 * hi,
                     "interval": "Wilson 95%, unit: subject (runs not cut by --max-stages)",
                     "km_percent_obedient": 100 * float(end),
                     "median_breakoff": g["breakoff_level"].median(), "censored": int(g["censored"].sum()),
                     **{f"cause: {c}": int((g["cause"] == c).sum()) for c in (*CAUSES, "refused")
                        if (g["cause"] == c).any()}})
    df = pd.DataFrame(rows)
    causes = [c for c in df.columns if c.startswith("cause: ")]
    df[causes] = df[causes].fillna(0).astype(int)
    return df


def judgments_by_level(responses: pd.DataFrame) -> pd.DataFrame:
    """Mean normalized probability of the positive judgment (stop; shock/punish) and Z, by level."""
    j = responses[(responses["condition"] == "judgment") & (responses["source"] == "model")]
    if j.empty:
        return pd.DataFrame(columns=["model", "judgment", "level", "mean_p_positive", "mean_validity", "n_steps"])
    j = shares(j)  # within (source, model, run, trial): runs stacked by `analyze DIR1 DIR2` share trial ids
    pos = j[~j["response"].str.startswith("not ")]
    pos = pos.assign(n_steps=n_trials(pos, ["model", "judgment", "level"]))
    g = pos.groupby(["model", "judgment", "level"])
    out = g.agg(mean_p_positive=("share", "mean"), mean_validity=("validity", "mean"),
                n_steps=("n_steps", "first")).reset_index()
    return out


def validity(responses: pd.DataFrame) -> pd.DataFrame:
    s = responses[(responses["condition"] == "breakoff") & (responses["source"] == "model")]
    rows = []
    for m, g in s.groupby("model"):
        rows.append({"model": m, "n_subjects": len(g), "n_steps": int(g["n_steps"].sum()),
                     "sentence_validity": float(np.average(g["validity"], weights=g["n_steps"]))
                     if g["n_steps"].sum() else np.nan,
                     "judgment_validity": float(np.average(g["judgment_validity"], weights=g["n_steps"]))
                     if g["n_steps"].sum() else np.nan})
    return pd.DataFrame(rows, columns=["model", "n_subjects", "n_steps", "sentence_validity", "judgment_validity"])


def analyze_milgram(responses: pd.DataFrame, items: pd.DataFrame | None = None,
                    scen: dict | None = None) -> dict[str, pd.DataFrame]:
    scen = _scenario_of(responses, scen)
    b = breakoffs(responses)
    table = breakoff_table(b, scen)
    ref = paper_lm5(scen["name"]).rename(columns={"count": "count"})
    paper = pd.DataFrame({"model": "LM-5 (paper)", "level": ref["level"], "count": ref["count"],
                          "percent": 100 * ref["count"] / ref["count"].sum()})
    return {
        "breakoff": table,
        "survival": survival(b),
        "tests": tests(b),
        "obedience": obedience_summary(b),
        "judgments_by_level": judgments_by_level(responses),
        "validity": validity(responses),
        "paper_lm5_breakoff": paper,
    }


def plot_milgram(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir, scen: dict | None = None) -> list:
    """Figure 7/24 (survival by level) and Figure 21/29 (break-off distribution) as PNG."""
    import matplotlib  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    scen = _scenario_of(responses, scen)
    unit = "Shock level (x 15 V)" if scen["unit"] == "volts" else "Number of submersions"
    paths = []
    sv = tables["survival"]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for m in _order(sv["model"]):
        g = sv[sv["model"] == m]
        n = int(g["n"].iat[0])
        ax.step(g["level"], 100 * g["share_obeying"], where="post", lw=2 if m == HUMAN else 1.6,
                label=f"{'Milgram (1963) Exp. 1' if m == HUMAN else m} (n = {n})")
    ref = tables["paper_lm5_breakoff"]
    lm5 = kaplan_meier(np.repeat(ref["level"], ref["count"]), np.zeros(int(ref["count"].sum()), bool))
    ax.step(lm5["level"], 100 * lm5["share_obeying"], where="post", ls=":", color="grey", label="LM-5 (paper, n = 100)")
    ax.axvline(20, color="lightgrey", lw=0.8)
    ax.set(xlabel=unit, ylabel="Subjects still obeying (%)", ylim=(-2, 102), xlim=(0, LEVELS),
           title=f"Obedience by level (cf. Figure {'7' if scen['unit'] == 'volts' else '24'})")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    paths.append(outdir / "fig7_survival.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    bt = tables["breakoff"]
    models = _order(bt["model"])
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(models)
    for k, m in enumerate(models):
        g = bt[bt["model"] == m]
        ax.bar(g["level"] + (k - (len(models) - 1) / 2) * width, g["percent"], width,
               label="Milgram (1963) Exp. 1" if m == HUMAN else m)
    ax.set(xlabel=unit + " (maximum administered; 30 = completed)", ylabel="Subjects (%)", xticks=range(LEVELS + 1),
           title=f"Break-off points (cf. Figure {'21' if scen['unit'] == 'volts' else '29'})")
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(outdir / "fig21_breakoff.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths


def summary(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    bt = tables["breakoff"]
    counts = bt.pivot(index="level", columns="model", values="count")[_order(bt["model"])]
    first = bt.drop_duplicates("level").set_index("level")
    design = first[["voltage", "label"]] if first["voltage"].notna().any() else first[[]]
    wide = design.join(counts).reset_index()
    paper = tables["paper_lm5_breakoff"].set_index("level")["count"]
    wide["LM-5 (paper)"] = wide["level"].map(paper)
    wide.columns.name = None
    count_cols = [c for c in wide.columns if c not in ("level", "voltage", "label")]
    shown = wide[(wide[count_cols].fillna(0).sum(axis=1) > 0) | (wide["level"] == 0)]
    return {
        "break-off points (Figure 21; counts, 30 = completed)": shown,
        "obedience": tables["obedience"],
        "model vs Milgram (1963)": tables["tests"][["model", "test", "statistic", "df", "p.value", "estimate",
                                                     "estimate_label", "n_model", "n_human"]],
        "validity": tables["validity"],
    }


def format_record(rec: dict) -> str:
    """A record as text: header, the full transcript, then one line per step with its judgments."""
    head = (f"{rec['subject']} | {rec['scenario']} | break-off level {rec['breakoff_level']} | {rec['cause']} | "
            f"rule {rec['rule']}")
    lines = [head, "=" * len(head), rec["text"], "", "steps:"]
    for s in rec["steps"]:
        if "failed" in s:
            lines.append(f"  {s['step']:3d} level {s['level']:2d}  FAILED: {s['failed']}")
            continue
        lines.append(f"  {s['step']:3d} level {s['level']:2d} {s['kind']:9s} attempt {s['attempt']}  "
                     f"P(stop)={s['termination']['p']:.3f} P(punish)={s['obedience']['p']:.3f}  "
                     f"{s['outcome']}{' -> ' + s['experimenter'] if s['experimenter'] else ''} |{s['action']}")
    return "\n".join(lines)


def records_text(run_dir) -> str:
    """Every record of a run folder's records.jsonl, readable (see format_record)."""
    path = Path(run_dir) / "records.jsonl"
    return "\n\n".join(format_record(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()
                       if line.strip())
