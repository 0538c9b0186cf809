"""Distances between answer distributions."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def wasserstein_normalized(pos_a, w_a, pos_b, w_b, span: float | None = None) -> float:
    """W1 between two weighted ordinal distributions divided by `span`, the span of the question's
    option list (OpinionQA's get_max_wd: max - min of the options' ordinal values); by default the
    span of the positions listed in either distribution, zero-weight rows included."""
    if span is None:
        span = max(np.max(pos_a), np.max(pos_b)) - min(np.min(pos_a), np.min(pos_b))
    if span <= 0:
        return math.nan
    return float(stats.wasserstein_distance(pos_a, pos_b, w_a, w_b) / span)
