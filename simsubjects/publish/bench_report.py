"""`simsubjects bench report DIR`: the scorecard as CSV (scorecard.csv: one row per finding; across.csv: the
statistics across findings) and one HTML page (bench_report.html): a forest plot per finding (model,
original, replication, with intervals, on the d scale), a scatter of model against replication effects with
the identity line, the scorecard table and the validity rates. Every text from a finding file is escaped.
Each file is written whole (collect/store.py's atomic writes)."""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

from .htmlkit import block, figure, table
from .report import CSS

FILES = ("scorecard.csv", "across.csv", "bench_report.html")
SHOWN = ["finding", "corpus", "model_effect", "model_scale", "original_effect", "replication_effect",
         "direction_vs_original", "direction_vs_replication", "sig_at_original_n", "sig_at_replication_n",
         "in_original_ci", "in_replication_ci", "ratio_d", "pas", "validity"]


def _d_interval(card: pd.DataFrame, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    from ..analyze.methods.effects import to_d

    lo = [to_d(a, s) if isinstance(s, str) and s and a is not None and a == a else math.nan
          for a, s in zip(card[f"{prefix}_ci_low"], card[f"{prefix}_scale"])]
    hi = [to_d(a, s) if isinstance(s, str) and s and a is not None and a == a else math.nan
          for a, s in zip(card[f"{prefix}_ci_high"], card[f"{prefix}_scale"])]
    return np.asarray(lo, float), np.asarray(hi, float)


def forest(card: pd.DataFrame, path: Path) -> Path:
    """Per finding: the model's d (no interval: exact), the original's and the replication's d with their
    intervals (converted to d)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(card)
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.45 * n))
    y = np.arange(n)[::-1]
    for offset, prefix, color, label in ((0.15, "original", "tab:gray", "original"),
                                         (-0.15, "replication", "tab:blue", "replication")):
        d = card[f"{prefix}_d"].to_numpy(float)
        lo, hi = _d_interval(card, prefix)
        ax.errorbar(d, y + offset, xerr=[np.where(np.isfinite(lo), d - lo, 0), np.where(np.isfinite(hi), hi - d, 0)],
                    fmt="o", color=color, label=label, ms=4, capsize=2)
    ax.plot(card["model_d"].to_numpy(float), y, "D", color="tab:red", label="model (exact)", ms=5)
    ax.axvline(0, color="black", lw=0.6)
    ax.set_yticks(y, [str(f) for f in card["finding"]])
    ax.set_xlabel("effect (Cohen's d; positive = the original's direction)")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def scatter(card: pd.DataFrame, path: Path) -> Path:
    """The model's d against the replication's d, one point per finding, with the identity line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x, y = card["replication_d"].to_numpy(float), card["model_d"].to_numpy(float)
    keep = np.isfinite(x) & np.isfinite(y)
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter(x[keep], y[keep], s=18)
    lim = [min(np.min(x[keep], initial=0), np.min(y[keep], initial=0)) - 0.1,
           max(np.max(x[keep], initial=0), np.max(y[keep], initial=0)) + 0.1]
    ax.plot(lim, lim, color="black", lw=0.7, label="identity")
    ax.set_xlabel("replication effect (d)")
    ax.set_ylabel("model effect (d)")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def page(card: pd.DataFrame, across: pd.DataFrame, figures: list[Path], title: str, check: pd.DataFrame | None) -> str:
    esc = html.escape
    main = across[across["split"] == "all"].drop(columns=["split"])
    validity = card.reindex(columns=["finding", "n_subjects", "validity", "note"])
    body = [f"<h1>{esc(title)}</h1>",
            '<p class="sub">Unit of every row: the finding. Effects are aligned: positive = the direction the '
            "original found. The model's effect is exact (its answer distributions); docs/bench.md gives every "
            "column's formula.</p>",
            block("Forest plot", figure(figures[0])),
            block("Model against replication", figure(figures[1])),
            block("Across findings (all)", table(main, max_rows=200, csv="across.csv"),
                  note=esc("splits by corpus, domain and year: across.csv")),
            block("Scorecard", table(card.reindex(columns=SHOWN), max_rows=500, csv="scorecard.csv")),
            block("Validity rates", table(validity, max_rows=500),
                  note=esc("mean probability mass the model put on the valid answers of each finding's outcome"))]
    if check is not None:
        body.append(block("R twin (--check-r)", table(check, max_rows=500)))
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>'
            f"<body><main>{''.join(body)}</main></body></html>\n")


def write_report(out: Path, card: pd.DataFrame, across: pd.DataFrame, check: pd.DataFrame | None = None) -> list[Path]:
    """OUT/scorecard.csv, OUT/across.csv and OUT/bench_report.html (each written whole, collect/store.py's
    atomic writes; the figures are drawn in a temporary folder and embedded in the page); their paths."""
    import tempfile

    from ..collect.store import atomic_write_bytes

    out = Path(out)
    with tempfile.TemporaryDirectory() as tmp:
        figs = [forest(card, Path(tmp) / "forest.png"), scatter(card, Path(tmp) / "scatter.png")]
        text = page(card, across, figs, f"simsubjects bench: {len(card)} findings", check)
    atomic_write_bytes(out / "scorecard.csv", card.to_csv(index=False).encode("utf-8"))
    atomic_write_bytes(out / "across.csv", across.to_csv(index=False).encode("utf-8"))
    if check is not None:
        atomic_write_bytes(out / "check_r.csv", check.to_csv(index=False).encode("utf-8"))
    atomic_write_bytes(out / "bench_report.html", text.encode("utf-8"))
    return [out / f for f in FILES]
