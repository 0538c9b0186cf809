"""Contingency tables whose asymptotic chi-square p-value cannot be trusted: sparse expected counts.

Pearson's chi-square is referred to its chi-square distribution only when the expected counts are
large; Cochran's (1954) rule asks that no expected count be below 1 and at most 20% below 5. A sparse
table (a 0-100 slider read as 101 categories, a 12-option item in two small arms) gets a Monte-Carlo
p-value instead: the subjects' levels permuted, each subject's answer
shares kept whole, so the subject stays the unit (Hope 1968; Davison & Hinkley 1997, ch. 4).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

MC_RESAMPLES = 1999  # permutations of the Monte-Carlo p-value: its standard error at p = 0.05 is about 0.005


def sparse_cells(table: np.ndarray) -> tuple[int, int, float]:
    """(expected counts below 5, all cells, the smallest expected count) of a two-way table."""
    t = np.asarray(table, float)
    expected = np.outer(t.sum(axis=1), t.sum(axis=0)) / t.sum()
    return int((expected < 5).sum()), int(expected.size), float(expected.min())


def is_sparse(table: np.ndarray) -> bool:
    """Cochran's (1954) rule broken: an expected count below 1, or more than 20% of them below 5."""
    low, cells, smallest = sparse_cells(table)
    return smallest < 1 or low > 0.2 * cells


def _pearson(tables: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Pearson's chi-square of each table in a stack (..., levels, responses) against fixed expected counts;
    cells expected 0 (a response no one gave) are left out, as chi2_contingency drops them."""
    ok = expected > 0
    return (((tables - expected) ** 2)[..., ok] / expected[ok]).sum(axis=-1)


def monte_carlo_p(per_level: list[np.ndarray], seed: int = 0, n_resamples: int = MC_RESAMPLES) -> float:
    """P-value of Pearson's chi-square by permuting subjects between levels, (1 + hits) / (1 + draws)
    (Phipson & Smyth 2010). Hand-written: scipy.stats.permutation_test permutes scalar observations, and
    a subject's observation here is a vector of answer shares. A permutation keeps the level sizes and the
    response totals, so the expected counts are the same for every draw.

    per_level: one array per factor level, shape (subjects at that level, responses): each subject's
    answer shares (a row sums to 1). The table is the column sums per level, as chi_square builds it."""
    x = np.concatenate([np.asarray(a, float) for a in per_level])
    labels = np.repeat(np.arange(len(per_level)), [len(a) for a in per_level])
    onehot = np.eye(len(per_level))
    observed = onehot[labels].T @ x
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    stat = _pearson(observed, expected)
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < n_resamples:  # in chunks: a stack of permuted tables, (chunk, levels, responses)
        k = min(200, n_resamples - done)
        perms = np.stack([rng.permutation(labels) for _ in range(k)])
        tables = np.einsum("bnl,nr->blr", onehot[perms], x)
        hits += int((_pearson(tables, expected) >= stat - 1e-9).sum())
        done += k
    return (1 + hits) / (1 + n_resamples)
