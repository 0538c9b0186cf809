"""Option order of k-choice questions: fixed, randomized per subject, or balanced/exhaustive orderings.

A study that shows options in a list calls `orderings` for each (subject, question) and records the
order shown in the trials table (column ``order_shown``: the labels as shown, JSON text, so it
survives every export). After collection `add_shown_position` gives every response row the
1-based position at which its option was shown, which is what `analyze.order_effects` needs.

Modes (`MODES`):
* ``fixed``  - the order of the source;
* ``random`` - one seeded random permutation per subject and question (Tjuatja et al. 2024 and
  EDSL users randomize this way; the order is recorded, so it can be analyzed or controlled for);
* ``cyclic`` - the k rotations: each option is shown once in every position (a Latin square), so
  the mean over the k orderings is free of position effects that add up over positions;
* ``all``    - all k! permutations: the exact average over orderings (k <= 6).
Options flagged ``fixed_last`` (refusals such as "Refused", which surveys list last) stay last.

This is the one option-order module: built-in studies (``--order``) and study files (``option_order:``,
docs/studies.md) draw their orders here, with one generator (`random.Random` seeded by the text of
(seed, subject, item, ...)), and record them in one vocabulary: ``order`` (the ordering's index, 0 =
first), ``order_shown`` and ``n_ordered``, labelled by one table (`COLUMN_LABELS`). A study file's
mode names are the format's (`FILE_MODES` maps them); ``averaged`` with more than ``max_orderings``
orderings draws that many distinct ones with the same generator.

Run folders of study files made before this module served them (commit 31822bf and earlier) recorded
``ordering`` (counted from 1) and ``option_order``, and drew random orders with numpy:
`before_one_module` re-derives exactly those orders, so such a folder resumes from its cache without
a new request (studyfile/adapter.order_parameters decides which folder is one).
"""

from __future__ import annotations

import itertools
import json
import math
import random
from typing import Sequence

import pandas as pd

from simsubjects.errors import UserError
from .seeds import rng_from_text as rng

MODES = ("fixed", "random", "cyclic", "all")
# a study file's option_order.mode -> the mode drawn here ("reversed": the source order backwards)
FILE_MODES = {"as_listed": "fixed", "reversed": "reversed", "randomized": "random", "averaged": "all"}
HELP = ("Option order: fixed, random (per subject), cyclic (each option once in every position) or all "
        "(every permutation; exact average).")
# variable labels of the columns reorder_trials / add_shown_position add (codebook, .dta/.sav/.rds)
COLUMN_LABELS = {
    "order": "Index of the option ordering shown to this subject (0 = first)",
    "order_shown": "Options in the order shown (JSON list)",
    "n_ordered": "Number of options whose order varies (refusals stay last)",
    "shown_position": "Position at which this response option was shown (1 = first)",
    "n_shown": "Number of options shown",
    # study-file run folders made before this module served them (read as recorded, never written)
    "option_order": "Options in the order shown to this subject", "ordering": "Index of the option ordering",
}
MAX_ALL = 6  # 720 orderings; more would multiply a run beyond reason


def orderings(k: int, mode: str, seed, fixed_last: Sequence[bool] | None = None,
              max_orderings: int | None = None) -> list[tuple[int, ...]]:
    """Permutations of range(k) to show (indices into the source order). `max_orderings` (study files'
    ``averaged``): mode ``all`` with more orderings than that draws that many distinct ones, seeded."""
    if mode not in MODES and mode != "reversed":
        raise UserError(f"--order {mode!r}: choose {', '.join(MODES)}")
    fixed_last = list(fixed_last or [False] * k)
    free = [i for i in range(k) if not fixed_last[i]]
    tail = tuple(i for i in range(k) if fixed_last[i])
    if mode == "fixed" or len(free) < 2:
        perms = [tuple(free)]
    elif mode == "reversed":
        perms = [tuple(free[::-1])]
    elif mode == "random":
        rng = random.Random(str(seed))  # seeded by (seed, subject, question) text: independent of row order
        perms = [tuple(rng.sample(free, len(free)))]
    elif mode == "cyclic":
        perms = [tuple(free[(s + j) % len(free)] for j in range(len(free))) for s in range(len(free))]
    elif max_orderings is not None and math.factorial(len(free)) > max_orderings:
        perms = _distinct_sample(free, max_orderings, seed)
    else:
        if len(free) > MAX_ALL and max_orderings is None:
            raise UserError(f"--order all: {len(free)} options give {math.factorial(len(free))} orderings; "
                            f"use cyclic (balanced) or random above {MAX_ALL} options")
        perms = list(itertools.permutations(free))
    return [p + tail for p in perms]


def _distinct_sample(free: list[int], m: int, seed) -> list[tuple[int, ...]]:
    """`m` distinct random orderings of `free`, from the one generator, in the order first drawn."""
    rng, seen = random.Random(str(seed)), {}
    while len(seen) < m:
        seen.setdefault(tuple(rng.sample(free, len(free))), None)
    return list(seen)


def before_one_module(k: int, file_mode: str, max_orderings: int, seed, key: tuple) -> list[tuple[int, ...]]:
    """The orders a study file's run drew before this module served study files (commit 31822bf): numpy
    generators seeded by sha256 of the parts. Only to resume such a run folder as it was recorded; new
    runs draw with `orderings`. `key`: (subject, item, condition, repetition)."""
    ident = tuple(range(k))
    if file_mode == "as_listed" or k < 2:
        return [ident]
    if file_mode == "reversed":
        return [ident[::-1]]
    if file_mode == "randomized":
        return [tuple(int(i) for i in rng(seed, "order", *key).permutation(k))]
    if math.factorial(k) <= max_orderings:
        return list(itertools.permutations(ident))
    r, seen = rng(seed, "orderings", key[1]), {}
    while len(seen) < max_orderings:
        seen.setdefault(tuple(int(i) for i in r.permutation(k)), None)
    return list(seen)


def shown_text(labels: Sequence[str]) -> str:
    return json.dumps(list(labels), ensure_ascii=False)


def add_shown_position(responses: pd.DataFrame) -> pd.DataFrame:
    """Column ``shown_position``: 1-based position at which each row's response option was shown
    (from ``order_shown``); ``n_shown``: how many options were shown; NaN where unknown (human rows)."""
    if "order_shown" not in responses.columns:
        return responses
    cache: dict[str, dict[str, int]] = {}

    def pos(shown, response):
        if not isinstance(shown, str) or not shown:
            return math.nan
        if shown not in cache:
            cache[shown] = {lab: i + 1 for i, lab in enumerate(json.loads(shown))}
        return cache[shown].get(str(response), math.nan)

    out = responses.copy()
    out["shown_position"] = [pos(s, r) for s, r in zip(out["order_shown"], out["response"])]
    out["n_shown"] = [len(json.loads(s)) if isinstance(s, str) and s else math.nan for s in out["order_shown"]]
    return out


def reorder_trials(trials: pd.DataFrame, render, mode: str, seed=0, fixed_last=None,
                   positional: bool = True) -> pd.DataFrame:
    """Any k-choice trials table -> one row per trial x ordering, the order shown recorded.

    `render(row, shown_labels) -> prompt` writes the prompt with the options in the new order (the
    study knows its prompt format). `positional`: the completions are positions (" A", " B", ...)
    that stay while the labels move; otherwise completions move with their labels. `fixed_last(row)`
    -> flags of options that stay last (refusals). Orderings are seeded by (seed, subject, item), so a
    subject sees the same order of a question whatever else the run holds. Trial ids get "|o<j>".
    """
    rows = []
    for rec in trials.to_dict("records"):
        labels, options = list(rec["labels"]), list(rec["options"])
        flags = fixed_last(rec) if fixed_last else None
        perms = orderings(len(labels), mode, (seed, rec.get("subject", ""), rec["item"]), flags)
        for j, perm in enumerate(perms):
            shown = [labels[i] for i in perm]
            rows.append({**rec, "trial": f"{rec['trial']}|o{j}", "prompt": render(rec, shown), "labels": tuple(shown),
                         "options": tuple(options) if positional else tuple(options[i] for i in perm),
                         "order": j, "order_shown": shown_text(shown),
                         "n_ordered": len(labels) - sum(flags or [])})
    out = pd.DataFrame(rows)
    out.attrs = dict(trials.attrs)
    return out
