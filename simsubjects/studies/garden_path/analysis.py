"""Garden Path analyses (Aher et al. 2023, Appendix C, Figures 10 and 12).

The unit of inference is the sentence: P(ungrammatical) is first averaged over the names that
judged a sentence version, then summarized across sentences (mean and SEM, as Figure 10a) and
compared pairwise, garden path vs control of the same sentence (Figure 10b), with a Wilcoxon
signed-rank test and a paired t-test across sentences.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsubjects.analyze.methods.paired import wilcoxon
from simsubjects.analyze.methods.tests import mean_se, paired_t
from simsubjects.analyze.tidy import prob_of

SET_TITLES = {"published": "Christianson et al. (2001) sentences\n(cf. Figure 10a)",
              "novel": "novel sentences (cf. Figure 12a)", "both": "all sentences"}
KEEP = ["model", "item", "condition", "subject", "set", "type"]

def ungrammatical_probs(responses: pd.DataFrame) -> pd.DataFrame:
    """One row per trial: normalized P(ungrammatical), validity Z and design columns."""
    p = prob_of(responses[responses["source"] == "model"], "ungrammatical", keep=KEEP)
    return p.rename(columns={"condition": "version"})

def _with_all_sets(df: pd.DataFrame) -> pd.DataFrame:
    """The rows once per set and once more as set "both" (when both sets are present)."""
    if df["set"].nunique() < 2:
        return df
    return pd.concat([df, df.assign(set="both")], ignore_index=True)

def validity(p: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (m, s, v), g in _with_all_sets(p).groupby(["model", "set", "version"]):
        rows.append({"model": m, "set": s, "version": v, "validity": g["validity"].mean(),
                     "min": g["validity"].min(), "n_trials": len(g)})
    for (m, s), g in _with_all_sets(p).groupby(["model", "set"]):
        rows.append({"model": m, "set": s, "version": "all", "validity": g["validity"].mean(),
                     "min": g["validity"].min(), "n_trials": len(g)})
    return pd.DataFrame(rows).sort_values(["model", "set", "version"], ignore_index=True)

def per_sentence(p: pd.DataFrame) -> pd.DataFrame:
    """One row per model x sentence: mean P(ungrammatical) over names, GP and control side by side."""
    avg = p.groupby(["model", "set", "type", "item", "version"])["p_ungrammatical"].agg(["mean", "size"]).reset_index()
    wide = avg.pivot_table(index=["model", "set", "type", "item"], columns="version", values="mean").reset_index()
    names = avg.groupby(["model", "item"])["size"].min().rename("n_names").reset_index()
    wide = wide.merge(names, on=["model", "item"])
    for v in ("garden_path", "control"):
        if v not in wide:
            wide[v] = np.nan
    wide["difference"] = wide["garden_path"] - wide["control"]
    wide.columns.name = None
    return wide[["model", "set", "type", "item", "garden_path", "control", "difference", "n_names"]]

def by_type(sent: pd.DataFrame) -> pd.DataFrame:
    """Figure 10a: mean and SEM across sentences of the per-sentence P(ungrammatical), by type and version."""
    long = sent.melt(id_vars=["model", "set", "type", "item"], value_vars=["garden_path", "control"],
                     var_name="version", value_name="value").dropna(subset=["value"])
    long = _with_all_sets(long)
    long = pd.concat([long, long.assign(type="all")], ignore_index=True)
    rows = [{"model": m, "set": s, "type": t, "version": v, **mean_se(g["value"])}
            for (m, s, t, v), g in long.groupby(["model", "set", "type", "version"])]
    out = pd.DataFrame(rows).rename(columns={"mean": "mean_p_ungrammatical",  "n": "n_sentences"})
    return out[["model", "set", "type", "version", "mean_p_ungrammatical", "std.error", "sd", "n_sentences"]]

def paired_tests(sent: pd.DataFrame) -> pd.DataFrame:
    """Garden path vs control across sentences: count of GP > control, Wilcoxon signed-rank, paired t."""
    out = []
    both = _with_all_sets(sent.dropna(subset=["difference"]))
    both = pd.concat([both, both.assign(type="all")], ignore_index=True)
    for (m, s, t), g in both.groupby(["model", "set", "type"]):
        d = g["difference"].to_numpy(float)
        base = {"model": m, "set": s, "type": t, "n_sentences": len(d), "n_gp_greater": int((d > 0).sum()),
                "n_gp_lower": int((d < 0).sum()), "mean_difference": d.mean()}
        if len(d) >= 2 and np.any(d != 0):
            # the package's one signed-rank test: V, the rank sum of the positive differences (R's
            # wilcox.test), not scipy's min(W+, W-), which names no direction (issue 40, item 7)
            w = wilcoxon(g["garden_path"].to_numpy(float), g["control"].to_numpy(float)).iloc[0]
            out.append({**base, "test": "Wilcoxon signed-rank test", "statistic": float(w["statistic"]),
                        "df": np.nan, "p.value": float(w["p.value"])})
            # the package's one paired t-test; differences without spread: no statistic (tests.no_test)
            tt = paired_t(g["garden_path"].to_numpy(float), g["control"].to_numpy(float))
            # Cohen's d_z: the mean difference over the sd of the differences (as a study file's paired)
            dz = d.mean() / d.std(ddof=1) if np.isfinite(tt["statistic"]) else np.nan
            out.append({**base, "test": "Paired t-test", "statistic": tt["statistic"], "df": tt["df"],
                        "p.value": tt["p.value"], "effect_size": dz, "effect_size_type": "cohen_d_z"})
        else:
            out.append({**base, "test": "none (fewer than 2 sentences or no differences)",
                        "statistic": np.nan, "df": np.nan, "p.value": np.nan})
    cols = ["model", "set", "type", "n_sentences", "n_gp_greater", "n_gp_lower", "mean_difference",
            "test", "statistic", "df", "p.value", "effect_size", "effect_size_type"]
    return pd.DataFrame(out, columns=cols)

def analyze_garden_path(responses: pd.DataFrame, items: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    p = ungrammatical_probs(responses)
    sent = per_sentence(p)
    return {
        "validity": validity(p),
        "by_type": by_type(sent),
        "per_sentence": sent,
        "paired_tests": paired_tests(sent),
    }

def plot_garden_path(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir) -> list:
    """Figure 10a/12a (bars by type with SEM) and 10b/12b (GP vs control per sentence)."""
    import matplotlib  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    paths = []
    bt = tables["by_type"]
    models = sorted(bt["model"].unique())
    sets = [s for s in ("published", "novel", "both") if s in set(bt["set"])]
    fig, axes = plt.subplots(1, len(sets), figsize=(4.6 * len(sets), 4), squeeze=False)
    colors = {"garden_path": "#c0504d", "control": "#4f81bd"}
    for ax, s in zip(axes[0], sets):
        g = bt[(bt["set"] == s) & (bt["type"] != "all")]
        types = sorted(g["type"].unique())
        slots = [(m, t) for m in models for t in types]
        width = 0.38
        for k, v in enumerate(("garden_path", "control")):
            gv = g[g["version"] == v].set_index(["model", "type"])
            y = [gv["mean_p_ungrammatical"].get(sl, np.nan) for sl in slots]
            e = [gv["std.error"].get(sl, np.nan) for sl in slots]
            ax.bar(np.arange(len(slots)) + (k - 0.5) * width, y, width, yerr=np.nan_to_num(e), capsize=3,
                   color=colors[v], label=v.replace("_", " "))
        ax.set_xticks(range(len(slots)),
                      [t if len(models) == 1 else f"{t}\n{m}" for m, t in slots], fontsize=8)
        ax.set(ylim=(0, 1), ylabel="Mean P(ungrammatical) across sentences",
               title=SET_TITLES[s])
        ax.legend(fontsize=8)
    fig.suptitle("Error bars: SEM across per-sentence averages", fontsize=8)
    fig.tight_layout()
    paths.append(outdir / "fig10a_ungrammatical_by_type.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    sent = tables["per_sentence"]
    fig, axes = plt.subplots(1, len(models), figsize=(4.4 * len(models), 4.2), squeeze=False)
    for ax, m in zip(axes[0], models):
        g = sent[sent["model"] == m]
        for (s, t), gg in g.groupby(["set", "type"]):
            ax.scatter(gg["control"], gg["garden_path"], s=18, marker="o" if s == "published" else "^",
                       label=f"{s} {t}", alpha=0.8)
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="P(ungrammatical), control", ylabel="P(ungrammatical), garden path",
               title=f"{m}\nper sentence, averaged over names (cf. Figure 10b)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(outdir / "fig10b_gp_vs_control.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths

def summary(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    bt = tables["by_type"]
    wide = bt.pivot_table(index=["model", "set", "type"], columns="version",
                          values=["mean_p_ungrammatical", "std.error"]).reset_index()
    wide.columns = [a if not b else f"{'P' if a.startswith('mean') else 'SEM'}({b})" for a, b in wide.columns]
    tests = tables["paired_tests"]
    return {
        "mean P(ungrammatical) across sentences (Figure 10a)": wide,
        "garden path vs control per sentence (Figure 10b)": tests,
        "validity": tables["validity"].query("version == 'all'"),
    }
