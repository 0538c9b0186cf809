"""Tests over subjects on a trial table (one row per trial: `source`, `model`, `subject`, a `score`, a
trial weight `tw`): the study file's welch, paired, one_sample and chi_square analyses, moved here from
studyfile/analyses.py (issue 37) so every statistic has one home. Each averages a subject's trials
first (`unit_means`), then calls the package's one test of its kind (tests.py: welch_t, paired_t,
one_sample_t, pearson_chi2) or, for people with survey weights, survey.py's design-based twin; R's twins
are in R/studyfile.R (sf_welch, sf_one_sample, sf_chi_square).

Test tables use broom's names: estimate, std.error, statistic, df, p.value, conf.low, conf.high, n,
plus unit, weights, effect_size, effect_size_type and warning (why a row has no test: tests.no_test).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...errors import UserError
from ..tidy import shares, trial_key
from . import survey
from .tests import DEGENERATE, is_degenerate, one_sample_t, paired_t, pearson_chi2, welch_t

SYSTEM = ["source", "model"]
BROOM = ["estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high"]
UNIT = "subject"  # the unit of every test: a subject (a model persona row, or a human respondent)


def groups(trials: pd.DataFrame, by: list[str]):
    """(key dict, rows) per source x model x `by` over the scored trials."""
    for k, g in trials.dropna(subset=["score"]).groupby([*SYSTEM, *by], sort=False):
        yield dict(zip([*SYSTEM, *by], k if isinstance(k, tuple) else (k,))), g


def unit_means(g: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """One row per subject x `cols`: the mean score over that subject's trials (its option orders and
    repeated draws), and its weight `tw`. Orderings and draws are never units: docs/silicon.md defines a
    subject's answer as the mean over its orderings, and counting each ordering as a subject would double
    n and count the order effect as noise."""
    keys = [UNIT, *[c for c in cols if c != UNIT]]
    u = g.assign(**{c: g[c].astype(str) for c in cols}).groupby(keys, sort=False, dropna=False)
    return u.agg(score=("score", "mean"), tw=("tw", "mean")).reset_index()


def weighted(u: pd.DataFrame) -> bool:
    """True when the units carry survey weights that differ (human rows with a weight column)."""
    w = u["tw"].to_numpy(float)
    return len(w) > 0 and bool(np.isfinite(w).all()) and not np.allclose(w, w[0])


def factor_column(g: pd.DataFrame, factor: str) -> pd.Series | None:
    """The column a test groups by: a declared factor, or any persona or human-table column."""
    return g[factor].astype(str) if factor in g.columns and g[factor].notna().any() else None


def _tested(row: dict, effect_size: float, es_type: str) -> dict:
    """A test row of tests.py with the unit, weights, effect size and `warning` columns; a degenerate row
    (tests.no_test) has no effect size and says why."""
    flat = is_degenerate(row)
    return {**row, "unit": UNIT, "weights": "none", "effect_size": math.nan if flat else effect_size,
            "effect_size_type": es_type, "warning": DEGENERATE if flat else ""}


def _surveyed(row: dict, n: int, sd: float, es_type: str) -> dict:
    return {**row, "n": n, "unit": UNIT, "weights": "survey",
            "effect_size": row["estimate"] / sd if sd > 0 else math.nan, "effect_size_type": es_type}


def welch(trials: pd.DataFrame, factor: str, levels: list[str], by: list[str]) -> pd.DataFrame:
    """Welch two-sample t-test of the mean subject score at levels[0] minus levels[1] (R's t.test(x, y)) on
    one value per subject (its mean over orderings and draws), n = both levels' subjects, with Lakens'
    (2013, eq. 10) d_av: the mean difference over the average of the two standard deviations - scipy has
    no effect sizes."""
    rows = []
    for key, g in groups(trials, by):
        if factor_column(g, factor) is None:
            continue
        u = unit_means(g, [factor])
        both = set(u.loc[u[factor] == levels[0], UNIT]) & set(u.loc[u[factor] == levels[1], UNIT])
        if both:
            raise UserError(f"analyses: welch on {factor!r}: {len(both)} subject(s) answered at both levels "
                            f"({sorted(both)[0]!r}, ...); a within-subject comparison is type: paired")
        x = u.loc[u[factor] == levels[0], "score"].to_numpy(float)
        y = u.loc[u[factor] == levels[1], "score"].to_numpy(float)
        if len(x) < 2 or len(y) < 2:  # no row (as R's sf_welch): a level with fewer than 2 subjects
            continue
        sd = (x.std(ddof=1) + y.std(ddof=1)) / 2
        head = {"contrast": f"{factor}: {levels[0]} - {levels[1]}"}
        both = u[u[factor].isin(levels)]
        if weighted(both):  # survey weights: the weighted means' difference, design-based (svyttest)
            X = np.column_stack([np.ones(len(both)), (both[factor] == levels[0]).to_numpy(float)])
            r = survey.svy_t(both["score"].to_numpy(float), X, both["tw"].to_numpy(float), len(both) - 2)
            rows.append({**key, "test": "Survey-weighted t-test (survey::svyttest)", **head,
                         **_surveyed(r, len(both), sd, "cohen_d_av")})
            continue
        r = welch_t(x, y)
        rows.append({**key, "test": r.pop("test"), **head,
                     **_tested(r, (x.mean() - y.mean()) / sd if sd > 0 else math.nan, "cohen_d_av")})
    return pd.DataFrame(rows)


def paired(trials: pd.DataFrame, factor: str, levels: list[str], by: list[str]) -> pd.DataFrame:
    """Paired t-test over subjects (each subject's mean score at the two levels), with d_z."""
    rows = []
    for key, g in groups(trials, by):
        if factor not in g.columns:
            continue
        u = unit_means(g, [factor])
        m = u.pivot(index=UNIT, columns=factor, values="score")
        if not set(levels) <= set(m.columns):
            continue
        m = m[levels].dropna()
        if len(m) < 2:  # no row: fewer than 2 subjects answered at both levels
            continue
        diff = (m[levels[0]] - m[levels[1]]).to_numpy(float)
        sd = diff.std(ddof=1)
        head = {"contrast": f"{factor}: {levels[0]} - {levels[1]}"}
        w = u.groupby(UNIT)["tw"].mean().reindex(m.index).to_frame()
        if weighted(w):  # survey weights: the weighted mean difference, design-based (survey::svyttest)
            r = survey.svy_mean_t(diff, w["tw"].to_numpy(float))
            rows.append({**key, "test": "Survey-weighted paired t-test (survey::svyttest)", **head,
                         **_surveyed(r, len(diff), sd, "cohen_d_z")})
            continue
        r = paired_t(m[levels[0]].to_numpy(float), m[levels[1]].to_numpy(float))
        rows.append({**key, "test": r.pop("test"), **head,
                     **_tested(r, diff.mean() / sd if sd > 0 else math.nan, "cohen_d_z")})
    return pd.DataFrame(rows)


def one_sample(trials: pd.DataFrame, mu, by: list[str]) -> pd.DataFrame:
    """One-sample t-test of the mean subject score against mu (a number, or an item attribute such as the
    truth: then each trial's score - truth, averaged per subject), with d = mean difference / sd."""
    rows = []
    for key, g in groups(trials, by):
        ref = pd.to_numeric(g[mu], errors="coerce").to_numpy(float) if isinstance(mu, str) else float(mu)
        g = g.assign(score=g["score"].to_numpy(float) - ref).dropna(subset=["score"])
        u = unit_means(g, [])
        x = u["score"].to_numpy(float)
        if len(x) < 2:  # no row: fewer than 2 subjects
            continue
        sd = x.std(ddof=1)
        head = {"contrast": f"score - {mu}"}
        if weighted(u):  # survey weights: the weighted mean, design-based (survey::svymean, svyttest)
            r = survey.svy_mean_t(x, u["tw"].to_numpy(float))
            rows.append({**key, "test": "Survey-weighted one-sample t-test (survey::svyttest)", **head,
                         **_surveyed(r, len(x), sd, "cohen_d")})
            continue
        r = one_sample_t(x, 0.0)
        rows.append({**key, "test": r.pop("test"), **head,
                     **_tested(r, x.mean() / sd if sd > 0 else math.nan, "cohen_d")})
    return pd.DataFrame(rows)


def _expected_counts(g: pd.DataFrame, factor: str, trials: pd.DataFrame) -> tuple[pd.DataFrame, int, bool,
                                                                                 pd.DataFrame]:
    """The factor level x response table of one group, each subject counted once (its per-trial shares
    averaged over its orderings and draws); with survey weights, weighted counts rescaled to Kish's
    effective n, (sum w)^2 / sum w^2, so the test is not credited with more respondents than the weights
    leave (a first-order design-effect correction in the spirit of Rao & Scott 1984; scipy and
    statsmodels have no Rao-Scott test). Last, the rows the table sums (share per trial / the subject's
    trials), which the Monte-Carlo p-value of a sparse table permutes (`_sparse`)."""
    g = g.assign(**{factor: g[factor].astype(str)}).join(trials.set_index(trial_key(trials))["tw"], on=trial_key(g))
    per_unit = g.groupby([UNIT, factor], sort=False)["trial"].transform("nunique")
    levels = g.groupby(UNIT)[factor].nunique()
    if (levels > 1).any():
        raise UserError(f"analyses: chi_square on {factor!r}: {int((levels > 1).sum())} subject(s) answered "
                        "at several levels; the test needs each subject at one level (a between factor)")
    w = g.groupby(UNIT)["tw"].mean().to_frame()
    is_weighted = weighted(w)
    if is_weighted:
        wt = w["tw"].to_numpy(float)
        g = g.assign(share=g["share"] * g["tw"] * (wt.sum() ** 2 / (wt ** 2).sum()) / wt.sum())
    g = g.assign(share=g["share"] / per_unit)
    table = g.pivot_table(index=factor, columns="response", values="share", aggfunc="sum", fill_value=0)
    return table, int(g[UNIT].nunique()), is_weighted, g


def chi_square(responses: pd.DataFrame, trials: pd.DataFrame, factor: str, by: list[str]) -> pd.DataFrame:
    """Factor level x response, each subject counted once (so a row of the table sums to the subjects at
    that level, not to their trials), with Cramér's V. People's rows (0/1 answers): Pearson chi-square on
    the counts (tests.pearson_chi2), a sparse table also with a Monte-Carlo p-value and a note (`_sparse`).
    A model's rows: the same statistic on the subjects' probability vectors, its p-value by permuting
    subjects between levels (`_permuted`): referred to the chi-square distribution, expected counts made of
    probabilities have size and power near 0 (issue 40, item 3). `p.value.asymptotic` is the chi-square
    distribution's p-value on every row (for people, p.value itself; R's chisq.test twin compares it).
    A group whose table has one row or one column (all one answer) has no row, nor has a group of numbers
    (estimates: welch compares their means)."""
    df = shares(responses)
    rows = []
    for key, g in df.groupby([*SYSTEM, *by], sort=False):
        key = dict(zip([*SYSTEM, *by], key if isinstance(key, tuple) else (key,)))
        if factor_column(g, factor) is None:
            continue
        if "response_type" in g.columns and (g["response_type"] == "estimate").all():
            continue  # a number is not a category (101 slider values, df up to 177; issue 41, item 10)
        table, n, is_weighted, per_trial = _expected_counts(g, factor, trials)
        r = pearson_chi2(table.to_numpy(float))
        if r is None:
            continue
        model = key["source"] != "human" and not is_weighted
        test = PERMUTATION_TEST if model else r["test"] + (" (survey-weighted, Kish effective n)" if is_weighted else "")
        extra = _permuted(per_trial, factor, table) if model else _sparse(per_trial, factor, table, is_weighted)
        rows.append({**key, "test": test, "contrast": f"{factor} x response", **{k: r[k] for k in BROOM},
                     "p.value.asymptotic": r["p.value"], "n": n, "unit": UNIT,
                     "weights": "survey" if is_weighted else "none",
                     **({"n_effective": r["total"]} if is_weighted else {}),
                     "effect_size": r["effect_size"], "effect_size_type": r["effect_size_type"], **extra})
    return pd.DataFrame(rows)


PERMUTATION_TEST = "Permutation test of Pearson's chi-square on subjects' answer probabilities"


def _per_level(g: pd.DataFrame, factor: str, table: pd.DataFrame) -> list[np.ndarray]:
    """Each level's subjects' answer-share vectors (subjects x responses, in `table`'s columns)."""
    u = g.pivot_table(index=[UNIT, factor], columns="response", values="share", aggfunc="sum", fill_value=0)
    u = u.reindex(columns=list(table.columns), fill_value=0)
    return [u.xs(lv, level=factor).to_numpy(float) for lv in table.index]


def _permuted(g: pd.DataFrame, factor: str, table: pd.DataFrame) -> dict:
    """A model's p.value: Pearson's statistic on the subjects' probability vectors, referred to its
    permutation distribution over subjects (levels reshuffled, each subject's vector kept whole), p =
    (b + 1)/(R + 1), seed 0 (contingency.monte_carlo_p). Under the null that a subject's expected answer does
    not depend on its level this test has its nominal size, whatever the subjects' spread; the chi-square
    distribution assumes multinomial counts, which a sum of probabilities is not (its variance is smaller,
    so the asymptotic p-value is near 1 and the test rejects nothing: issue 40, item 3)."""
    from .contingency import MC_RESAMPLES, monte_carlo_p

    table = table.loc[table.sum(axis=1) > 0, table.sum(axis=0) > 0]
    return {"p.value": monte_carlo_p(_per_level(g, factor, table)), "p.value.monte_carlo": math.nan,
            "note": f"p.value permutes the subjects' levels ({MC_RESAMPLES} draws, seed 0): a model's answers are "
                    "probabilities, not counts, so the chi-square distribution does not apply (p.value.asymptotic)"}


def _sparse(g: pd.DataFrame, factor: str, table: pd.DataFrame, is_weighted: bool) -> dict:
    """Beside a table that breaks Cochran's rule (contingency.py): a Monte-Carlo p-value with the subject
    as unit, and a note saying the asymptotic p-value cannot be trusted (issue 41, item 10). The
    asymptotic p.value stays (its R twin compares it); read p.value.monte_carlo instead. `table` is
    reduced as pearson_chi2 reduces it (levels and answers without any count dropped)."""
    from .contingency import MC_RESAMPLES, is_sparse, monte_carlo_p, sparse_cells

    table = table.loc[table.sum(axis=1) > 0, table.sum(axis=0) > 0]
    t = table.to_numpy(float)
    if not is_sparse(t):
        return {"p.value.monte_carlo": math.nan, "note": ""}
    low, cells, smallest = sparse_cells(t)
    note = (f"sparse table: {low} of {cells} expected counts below 5 (smallest {smallest:.2g}; Cochran 1954): the "
            "chi-square p.value cannot be trusted")
    if is_weighted:  # permuting weighted subjects is not a design-based test: flagged only
        return {"p.value.monte_carlo": math.nan, "note": note + "; survey weights: no Monte-Carlo p-value"}
    return {"p.value.monte_carlo": monte_carlo_p(_per_level(g, factor, table)),
            "note": note + f"; p.value.monte_carlo permutes the subjects' levels ({MC_RESAMPLES} draws, seed 0)"}
