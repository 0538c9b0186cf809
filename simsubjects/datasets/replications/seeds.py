"""Human results of the seed studies' findings, read from the package's own bundled files by key.

The seeds (the built-in studies: Aher et al. 2023's Milgram, MoCa) give their human results as counts,
not as a test with an effect size, so the reader computes the effect and its 95% interval from the
counts, by the formulas named here (docs/bench.md, "The seeds"):

- `milgram1963:completed:P0` — Milgram (1963) Experiment 1: how many of the 40 subjects administered
  the 450-volt shock (`aher2023/milgram1963_breakoff.json`, Aher et al. 2023, Figure 21), against the
  share P0. Cohen's h = 2 asin(sqrt p) - 2 asin(sqrt P0) (Cohen 1988, eq. 6.2.1); its interval is the
  Wilson 95% interval of p (statsmodels `proportion_confint`) carried through the same formula (h rises
  with p); the exact two-sided binomial test of p = P0 (scipy `binomtest`).
- `moca:TASK:I:J` — MoCa (Nie et al. 2023): the Yes votes of story I against those of story J of
  `moca/TASK_dataset_v1.json` (25 votes each, from different participants). The log odds ratio with
  Woolf's 95% interval (statsmodels `Table2x2`, which adds 0.5 to every cell when one is 0) and
  Fisher's exact test (scipy `fisher_exact`), the two stories' voters taken as two independent groups.
"""

from __future__ import annotations

import math

from ...errors import UserError
from ..moca_humans import TASKS, read_stories
from ..registry import load_json

MILGRAM = "aher2023/milgram1963_breakoff.json"


class SeedKeyError(UserError):
    """A seeds key that names nothing in the bundled files (exit code 2)."""


def cohens_h(p: float, p0: float) -> float:
    """2 asin(sqrt p) - 2 asin(sqrt p0) (Cohen 1988, eq. 6.2.1)."""
    return 2 * math.asin(math.sqrt(p)) - 2 * math.asin(math.sqrt(p0))


def milgram_counts() -> tuple[int, int]:
    """(subjects who administered the 450-volt shock, all subjects) of Milgram (1963) Experiment 1."""
    t = load_json(MILGRAM)
    return int(t["completed"]), int(t["n"])


def moca_votes(task: str, index: int) -> tuple[int, int]:
    """(Yes votes, votes) of MoCa story `index` of `task`."""
    stories = read_stories(task)
    if not 0 <= index < len(stories):
        raise SeedKeyError(f"moca/{task}_dataset_v1.json: no story {index} (0 to {len(stories) - 1})")
    votes = stories[index]["individual_votes"]
    return sum(bool(v) for v in votes), len(votes)


def _milgram(rest: list[str], key: str) -> dict:
    from scipy.stats import binomtest
    from statsmodels.stats.proportion import proportion_confint

    if len(rest) != 2 or rest[0] != "completed":
        raise SeedKeyError(f"seeds key {key!r}: give milgram1963:completed:P0 (P0 the share tested against)")
    try:
        p0 = float(rest[1])
    except ValueError:
        p0 = math.nan
    if not 0 < p0 < 1:
        raise SeedKeyError(f"seeds key {key!r}: P0 {rest[1]!r} is not a share between 0 and 1")
    x, n = milgram_counts()
    lo, hi = proportion_confint(x, n, alpha=0.05, method="wilson")
    return dict(scale="h", value=cohens_h(x / n, p0), ci_low=cohens_h(lo, p0), ci_high=cohens_h(hi, p0), n=n,
                test="binomial", statistic=float(x), df=None, p=float(binomtest(x, n, p0).pvalue), n_groups=None,
                source=f"datasets/{MILGRAM}:completed ({x} of n = {n}) against {p0:g}")


def _moca(rest: list[str], key: str) -> dict:
    from scipy.stats import fisher_exact
    from statsmodels.stats.contingency_tables import Table2x2

    if len(rest) != 3 or rest[0] not in TASKS or not rest[1].isdigit() or not rest[2].isdigit():
        raise SeedKeyError(f"seeds key {key!r}: give moca:TASK:I:J (TASK causal or moral, I and J story indices)")
    task, i, j = rest[0], int(rest[1]), int(rest[2])
    (a, n1), (b, n2) = moca_votes(task, i), moca_votes(task, j)
    table = [[a, n1 - a], [b, n2 - b]]
    t = Table2x2(table)  # shift_zeros: 0.5 added to every cell when one is 0
    lo, hi = t.log_oddsratio_confint(alpha=0.05)
    return dict(scale="log_or", value=float(t.log_oddsratio), ci_low=float(lo), ci_high=float(hi), n=n1 + n2,
                test="fisher", statistic=None, df=None, p=float(fisher_exact(table).pvalue), n_groups=(n1, n2),
                source=f"datasets/moca/{task}_dataset_v1.json:story {i} ({a} of {n1} Yes) vs story {j} ({b} of {n2} Yes)")


def seeds_original(key: str) -> dict:
    """The fields of the Effect of a seeds key (readers.py builds the Effect)."""
    head, *rest = str(key).split(":")
    if head == "milgram1963":
        return _milgram(rest, key)
    if head == "moca":
        return _moca(rest, key)
    raise SeedKeyError(f"seeds key {key!r}: give milgram1963:completed:P0 or moca:TASK:I:J")
