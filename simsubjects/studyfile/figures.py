"""Figures of a study file's run (issue 25: study files got none): the answer distribution per item,
model beside people, and every test's estimate with its 95% interval. Written by `analyze` unless
--no-plots, embedded by `report`. Labels are the study's text, drawn as text (matplotlib, no markup)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

MAX_ITEMS = 12  # panels of the distribution figure; the CSV holds every item


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plain(text) -> str:
    """Study text shown literally: matplotlib reads $...$ as mathtext."""
    return str(text).replace("$", r"\$")


def plot_distribution(d: pd.DataFrame, outdir) -> Path | None:
    """One panel per item: the share of each answer (scale order) for each system, conditions pooled by
    their trial counts."""
    if d is None or d.empty:
        return None
    plt = _plt()
    d = d.assign(system=d["source"].astype(str).where(d["source"] != "human", "people") + ": " + d["model"].astype(str))
    d = d.assign(w=d["share"] * d["n"])
    items = list(dict.fromkeys(d["item"]))[:MAX_ITEMS]
    cols = min(3, len(items))
    rows = -(-len(items) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.2 * rows), squeeze=False)
    for ax, item in zip(axes.ravel(), items):
        g = d[d["item"] == item]
        answers = list(dict.fromkeys(g["response"].astype(str)))  # the table's (scale) order
        systems = list(dict.fromkeys(g["system"]))
        width = 0.8 / len(systems)
        for k, s in enumerate(systems):
            h = g[g["system"] == s]
            n = h.drop_duplicates("condition")["n"].sum()
            share = h.groupby(h["response"].astype(str))["w"].sum().reindex(answers).fillna(0) / max(n, 1)
            ax.bar(np.arange(len(answers)) + (k - (len(systems) - 1) / 2) * width, share, width, label=_plain(s))
        ax.set_xticks(range(len(answers)), [_plain(a) for a in answers], rotation=35, ha="right", fontsize=8)
        ax.set_title(_plain(item), fontsize=10)
        ax.set_ylabel("share")
        ax.legend(fontsize=7)
    for ax in axes.ravel()[len(items):]:
        ax.axis("off")
    fig.tight_layout()
    path = Path(outdir) / "distribution.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_tests(t: pd.DataFrame, outdir) -> Path | None:
    """Each test row with an interval: estimate and 95% interval, one line per system x contrast x group
    (a test without one, such as chi-square or a degenerate t-test, is in tests.csv only)."""
    if t is None or t.empty or "conf.low" not in t:
        return None
    # rows with an interval (t-tests): a chi-square's estimate is its statistic, on another scale
    t = t[np.isfinite(pd.to_numeric(t["conf.low"], errors="coerce")) & np.isfinite(pd.to_numeric(t["estimate"], errors="coerce"))]
    if t.empty:
        return None
    plt = _plt()
    label = (t["source"].astype(str) + ": " + t["model"].astype(str) + " | " + t.get("contrast", t["test"]).astype(str)
             + (" | " + t["item"].astype(str) if "item" in t else ""))
    fig, ax = plt.subplots(figsize=(7.5, 0.42 * len(t) + 1.2))
    y = np.arange(len(t))[::-1]
    est = t["estimate"].to_numpy(float)
    lo, hi = t["conf.low"].to_numpy(float), t["conf.high"].to_numpy(float)
    err = np.vstack([np.nan_to_num(est - lo), np.nan_to_num(hi - est)])
    ax.errorbar(est, y, xerr=err, fmt="o", capsize=3)
    ax.axvline(0, color="grey", lw=0.8, ls="--")
    ax.set_yticks(y, [_plain(v) for v in label], fontsize=8)
    ax.set_xlabel("estimate, 95% interval (unit: subject)")
    fig.tight_layout()
    path = Path(outdir) / "tests.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_study(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir) -> list[Path]:
    paths = [plot_distribution(tables.get("distribution"), outdir), plot_tests(tables.get("tests"), outdir)]
    return [p for p in paths if p is not None]
