"""Multiplicity control: Holm and Benjamini-Hochberg adjusted p-values for a family of tests.

Where `analyze` reports a family of tests (the survey-bias Table 4 grid: Delta b, three Delta p
and r per model x bias, 225 tests in Tjuatja et al.'s Table 4; the Ultimatum pairing tests; a
system's AMCE per factor; paired comparisons), it adds two columns beside each p-value:

* ``<p>.holm`` — Holm (1979) step-down, strong familywise error control;
* ``<p>.bh`` — Benjamini & Hochberg (1995) step-up, false discovery rate control.

BH is statsmodels' `multipletests(method="fdr_bh")`; Holm is the same arithmetic written out
(`_holm`, see there why); missing p-values are
left out of the family and stay missing, as R's `p.adjust` does (n = number of non-missing p).
The R twin is `adjust_p()` in R/multiplicity.R (p.adjust), compared by `--check-r`.

A long table names its family in the column ``family`` (the tests adjusted together); a wide
table (Table 4) adjusts all its p-value columns together as one family.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

METHODS = {"holm": "holm", "bh": "fdr_bh"}


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm (1979): the k-th smallest of n p-values times (n - k + 1), made non-decreasing, capped at 1.

    Written out, not `multipletests(method="holm")`, because statsmodels' Holm branch calls
    `gc.collect()` on every call (statsmodels 0.15), about 0.5 s in a process that holds a model:
    17 of the 24 s of a MoCa analysis. The arithmetic is statsmodels' own (the same products and
    running maximum; tied p-values get one value whatever their order); tests/test_multiplicity.py
    checks it against `multipletests` and R's `p.adjust`."""
    n = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(np.maximum.accumulate(p[order] * np.arange(n, 0, -1)), 1.0)
    out = np.empty(n)
    out[order] = adjusted
    return out


def adjust(p, method: str) -> np.ndarray:
    """Adjusted p-values of one family (NaN stays NaN and does not count toward the family size)."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = _holm(p[ok]) if method == "holm" else multipletests(p[ok], method=METHODS[method])[1]
    return out


def p_column(df: pd.DataFrame) -> str:
    """The p-value column of a test table: broom's p.value, or this package's older p."""
    return "p.value" if "p.value" in df else "p"


def add_adjusted(df: pd.DataFrame, by: Sequence[str] = (), family: str | None = None,
                 p: str | None = None) -> pd.DataFrame:
    """Add ``<p>.holm`` and ``<p>.bh`` to a long table of tests, one family per group of `by`.

    `family` names the family in a column ``family`` (a prefix; the group's values are appended).
    """
    if df.empty:
        return df
    p = p or p_column(df)
    out = df.copy()
    by = [c for c in by if c in out]
    keys = out[by].astype(str).agg(" | ".join, axis=1) if by else pd.Series("", index=out.index)
    fam = keys if family is None else (family + (" | " + keys if by else ""))
    out["family"] = fam.str.strip(" |") if family is None else fam
    for m in METHODS:
        col = np.full(len(out), np.nan)
        for _, idx in out.groupby("family", sort=False).indices.items():
            col[idx] = adjust(out[p].to_numpy(float)[idx], m)
        out[f"{p}.{m}"] = col
    return out


WIDE_BY = ("model",)  # a wide table's family: one model's cells (a run keeps its numbers beside other runs)


def _wide_families(df: pd.DataFrame, n_cols: int) -> list[str]:
    """The family of every cell of a wide table, row by row: its row's WIDE_BY values."""
    by = [c for c in WIDE_BY if c in df]
    rows = df[by].astype(str).agg(" | ".join, axis=1) if by else pd.Series("all", index=df.index)
    return np.repeat(rows.to_numpy(str), n_cols).tolist()


def add_adjusted_wide(df: pd.DataFrame, p_columns: Sequence[str]) -> pd.DataFrame:
    """Adjust the cells of `p_columns` as one family per model (a wide table such as Table 4)."""
    out = df.copy()
    cols = [c for c in p_columns if c in out]
    if not cols or out.empty:
        return out
    flat = out[cols].to_numpy(float).ravel()
    fam = np.asarray(_wide_families(out, len(cols)))
    for m in METHODS:
        adj = np.full(flat.size, np.nan)
        for f in dict.fromkeys(fam):
            idx = np.flatnonzero(fam == f)
            adj[idx] = adjust(flat[idx], m)
        adj = adj.reshape(len(out), len(cols))
        for j, c in enumerate(cols):
            out[f"{c}.{m}"] = adj[:, j]
    return out


def adjusted_columns(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(p column, method) pairs of the adjusted columns a table carries."""
    return [(c[: -len(m) - 1], m) for c in df.columns for m in METHODS
            if c.endswith(f".{m}") and c[: -len(m) - 1] in df]
