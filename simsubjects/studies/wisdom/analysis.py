"""Wisdom of Crowds analyses (Aher et al. 2023, §7, Table 2, Figure 8).

Per question and model, over the valid estimates: median, quartiles and IQR (numpy's default
linear interpolation), the median normalized by the truth (Figure 8), the share of estimates
exactly equal to the truth (the "hyper-accuracy distortion"), and the validity rate. Human
medians/IQRs (Moussaïd et al. 2013, first five questions) and the paper's LM-1..LM-6 values are
summary statistics, so they are kept as reference columns and tables, never as response rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsubjects.studies.wisdom.design import paper_lm_reference, questions


def estimates(responses: pd.DataFrame) -> pd.DataFrame:
    """Model rows with a numeric `estimate` (NaN when invalid), from the column or the response text."""
    df = responses[responses["source"] == "model"].copy()
    if "estimate" not in df:
        df["estimate"] = pd.to_numeric(df["response"].replace("", np.nan), errors="coerce")
    return df


def per_question(responses: pd.DataFrame) -> pd.DataFrame:
    df = estimates(responses)
    qs = questions().set_index("item")
    rows = []
    for (m, item), g in df.groupby(["model", "item"]):
        x = g["estimate"].dropna().to_numpy(float)
        truth = float(qs.loc[item, "truth"])
        q1, med, q3 = np.percentile(x, [25, 50, 75]) if len(x) else (np.nan,) * 3
        rows.append({
            "model": m, "item": item, "question": qs.loc[item, "question"], "truth": truth,
            "n": len(g), "n_valid": len(x), "validity": g["validity"].mean(),
            "median": med, "q1": q1, "q3": q3, "iqr": q3 - q1,
            "median_norm": med / truth, "q1_norm": q1 / truth, "q3_norm": q3 / truth,
            "share_exact": float(np.mean(x == truth)) if len(x) else np.nan,
            "human_median": qs.loc[item, "human_median"], "human_iqr": qs.loc[item, "human_iqr"],
        })
    out = pd.DataFrame(rows)
    out["human_median_norm"] = out["human_median"].astype(float) / out["truth"]
    return out


def validity(responses: pd.DataFrame) -> pd.DataFrame:
    df = estimates(responses)
    rows = [{"model": m, "condition": "all", "validity": g["validity"].mean(), "n": len(g)}
            for m, g in df.groupby("model")]
    rows += [{"model": m, "condition": c, "validity": g["validity"].mean(), "n": len(g)}
             for (m, c), g in df.groupby(["model", "condition"])]
    return pd.DataFrame(rows)


def by_title(responses: pd.DataFrame) -> pd.DataFrame:
    """Validity and exact-answer share by title (Mr./Ms./Mx.): the paper reports no human split."""
    df = estimates(responses)
    if "title" not in df:
        return pd.DataFrame(columns=["model", "title", "validity", "share_exact", "n"])
    df = df.assign(exact=np.where(df["estimate"].notna(), df["estimate"] == df["truth"], np.nan))
    return (df.groupby(["model", "title"])
            .agg(validity=("validity", "mean"), share_exact=("exact", "mean"), n=("validity", "size"))
            .reset_index())


def human_reference() -> pd.DataFrame:
    """Moussaïd et al. (2013) medians and IQRs of the first five questions (summary statistics)."""
    q = questions().dropna(subset=["human_median"])
    return q.assign(human_median_norm=q["human_median"] / q["truth"])[
        ["item", "question", "truth", "human_median", "human_iqr", "human_median_norm"]]


def analyze_wisdom(responses: pd.DataFrame, items: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    return {
        "per_question": per_question(responses),
        "validity": validity(responses),
        "by_title": by_title(responses),
        "human_reference": human_reference(),
        "paper_lm_reference": paper_lm_reference(),
    }


def plot_wisdom(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir) -> list:
    """Figure 8: median normalized estimate with quartile bars per question, beside the human median."""
    import matplotlib  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    pq = tables["per_question"]
    items = [i for i in questions()["item"] if i in set(pq["item"])]
    models = sorted(pq["model"].unique())
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(items) + 2), 4.4))
    width = 0.8 / (len(models) + 1)
    for k, m in enumerate(models):
        g = pq[pq["model"] == m].set_index("item").reindex(items)
        x = np.arange(len(items)) + (k - len(models) / 2) * width
        med = g["median_norm"].to_numpy(float)
        lo = np.clip(med - g["q1_norm"].to_numpy(float), 0, None)
        hi = np.clip(g["q3_norm"].to_numpy(float) - med, 0, None)
        ax.errorbar(x, med, yerr=[np.nan_to_num(lo), np.nan_to_num(hi)], fmt="o", capsize=3, ecolor="black",
                    label=f"{m} (median, quartiles)")
    hr = tables["human_reference"].set_index("item").reindex(items)
    ax.scatter(np.arange(len(items)) + (len(models) / 2) * width, hr["human_median_norm"], marker="D",
               color="#c0504d", zorder=3, label="human median (Moussaïd et al. 2013; quartiles not published)")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    # symlog: estimates span orders of magnitude, and a zero or negative estimate must still show.
    ax.set_yscale("symlog", linthresh=0.01)
    shown = np.concatenate([pq[c].to_numpy(float) for c in ("q1_norm", "q3_norm", "median_norm")]
                           + [hr["human_median_norm"].to_numpy(float), [1.0]])
    shown = shown[np.isfinite(shown)]
    ax.set_ylim(min(0.0, shown.min() * 2), shown.max() * 3)
    ax.set_xticks(range(len(items)), [i.replace("wisdom-", "Q") for i in items])
    ax.set(ylabel="Estimate / truth (symlog scale)", xlabel="Question (Q01-Q05: Moussaïd et al.; Q06-Q10: novel)",
           title="Median normalized estimate (cf. Figure 8)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = outdir / "fig8_normalized_estimates.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]


def summary(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    pq = tables["per_question"]
    cols = ["model", "item", "truth", "validity", "n_valid", "median", "iqr", "median_norm", "share_exact",
            "human_median", "human_iqr"]
    return {
        "estimates per question (Table 2, Figure 8)": pq[cols],
        "validity": tables["validity"],
    }
