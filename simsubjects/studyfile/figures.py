"""Figures of a study file's run (issue 25: study files got none): the answer distribution per item and
condition (arm), model beside people, every item on pages of 12 panels, and every test's estimate with its
95% interval. Written by `analyze` unless --no-plots, embedded by `report`. Labels are the study's text, drawn as text (matplotlib, no markup)."""

from __future__ import annotations

from pathlib import Path
import textwrap

import numpy as np
import pandas as pd

PANELS = 12  # panels per distribution figure: more items go on further pages (distribution_2.png, ...)
MAX_PAGES = 25  # pages of panels (300 item x arm cells); the CSV holds every item


def _plt():
    import matplotlib  # lazy: imports pyparsing, matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: imports matplotlib, mpl_toolkits

    return plt


def _plain(text) -> str:
    """Study text shown literally: matplotlib reads $...$ as mathtext."""
    return str(text).replace("$", r"\$")


def _wrap(text, width: int) -> str:
    return "\n".join(textwrap.wrap(_plain(text), width)[:3]) or " "


def _save(fig, path: Path, dpi: int = 100) -> Path:
    """Lay out, write and close one figure (pyplot keeps every open figure otherwise)."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    _plt().close(fig)
    return path


def plot_distribution(d: pd.DataFrame, outdir) -> list[Path]:
    """One panel per item x condition (a randomizer's arm): the share of each answer (scale order) for each
    system, people beside the model; every item, on pages of PANELS panels (issue 41, item 12)."""
    if d is None or d.empty:
        return []
    d = d.assign(system=d["source"].astype(str).where(d["source"] != "human", "people") + ": " + d["model"].astype(str))
    d = d.assign(w=d["share"] * d["n"], condition=d["condition"].fillna("").astype(str))
    cells = list(dict.fromkeys(zip(d["item"], d["condition"])))
    pages = [cells[k:k + PANELS] for k in range(0, len(cells), PANELS)][:MAX_PAGES]
    return [_distribution_page(d, page, Path(outdir) / ("distribution.png" if k == 0 else f"distribution_{k + 1}.png"))
            for k, page in enumerate(pages)]


def _distribution_page(d: pd.DataFrame, cells: list, path: Path) -> Path:
    plt = _plt()
    cols = min(3, len(cells))
    rows = -(-len(cells) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)
    for ax, (item, cond) in zip(axes.ravel(), cells):
        g = d[(d["item"] == item) & (d["condition"] == cond)]
        answers = list(dict.fromkeys(g["response"].astype(str)))  # the table's (scale) order
        systems = list(dict.fromkeys(g["system"]))
        width = 0.8 / len(systems)
        for k, s in enumerate(systems):
            h = g[g["system"] == s]
            n = h["n"].iloc[0] if len(h) else 0
            share = h.groupby(h["response"].astype(str))["w"].sum().reindex(answers).fillna(0) / max(n, 1)
            ax.bar(np.arange(len(answers)) + (k - (len(systems) - 1) / 2) * width, share, width,
                   label=f"{_plain(s)} (n = {n:g})")
        ax.set_xticks(range(len(answers)), [_wrap(a, 16) for a in answers], rotation=30, ha="right", fontsize=9)
        ax.set_title(_wrap(f"{item}" + (f" | {cond}" if cond else ""), 48), fontsize=10)
        ax.set_ylabel("share of answers")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
    for ax in axes.ravel()[len(cells):]:
        ax.axis("off")
    return _save(fig, path, dpi=110)


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
    return _save(fig, Path(outdir) / "tests.png")


def plot_fit_people(people: pd.DataFrame, outdir) -> Path | None:
    """Issue 39: every person's mean log-likelihood per decision, people sorted by the model's fit (one
    line per model x ablation), each baseline's on the same people beside it."""
    if people is None or people.empty:
        return None
    plt = _plt()
    people = people.assign(system=people["model"].astype(str) + np.where(people["ablation"].fillna("") != "",
                           " (no " + people["ablation"].fillna("").astype(str) + ")", ""))
    first = people[(people["kind"] == "model") & (people["ablation"].fillna("") == "")]
    order = first.groupby("person")["loglik_mean"].mean().sort_values().index.tolist()
    order += [p for p in dict.fromkeys(people["person"]) if p not in order]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for (kind, system), g in people.groupby(["kind", "system"], sort=False):
        y = g.groupby("person")["loglik_mean"].mean().reindex(order)
        ax.plot(range(len(order)), y.to_numpy(float), "o-" if kind == "model" else "--", ms=3,
                label=f"{'baseline' if kind == 'baseline' else 'model'}: {_plain(system)}")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(f"people, sorted by the model's fit (n = {len(order)})")
    ax.set_ylabel("mean log-likelihood per decision")
    ax.legend(fontsize=8)
    return _save(fig, Path(outdir) / "fit_people.png")


def plot_fit_calibration(cal: pd.DataFrame, outdir) -> Path | None:
    """Issue 39: the model's predicted probability of an answer against the share of people who gave it
    (fit_calibration.csv's bins; points sized by their options), per model x ablation."""
    if cal is None or cal.empty:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    for (model, abl), g in cal.groupby(["model", cal["ablation"].fillna("")], sort=False):
        ax.plot(g["p_mean"], g["observed"], "o-", ms=3, label=_plain(model) + (f" (no {abl})" if abl else ""))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("model's probability of an answer (binned)")
    ax.set_ylabel("share of people who gave it")
    ax.legend(fontsize=8)
    return _save(fig, Path(outdir) / "fit_calibration.png")


def plot_fit(tables: dict[str, pd.DataFrame], outdir) -> list[Path]:
    """The fit figures of a run that scored people (a study file's or a session's)."""
    paths = [plot_fit_people(tables.get("fit_people"), outdir), plot_fit_calibration(tables.get("fit_calibration"), outdir)]
    return [p for p in paths if p is not None]


def plot_study(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir) -> list[Path]:
    paths = [*plot_distribution(tables.get("distribution"), outdir), plot_tests(tables.get("tests"), outdir),
             *plot_fit(tables, outdir)]
    return [p for p in paths if p is not None]
