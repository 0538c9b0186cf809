"""`study check` of a session block's logic by enumerating its finite tree (docs/studies.md, "Logic").

A block's items have finitely many options and its rounds are numbered 1..N, so every way through
one round of the block can be listed: an item is shown or not (its `show_if`), answered with one of
its options, and `skip_to` jumps on its first true condition. Walking that tree finds what no type
check can: an item no path shows (`employed == 'Yes' and employed == 'No'`, `round > 1` in a
one-round block, a `skip_to` whose conditions cover every answer), a condition that is never true,
and the number of answer sequences a round really has (what `paths: enumerate` multiplies, so
`max_leaves` counts the tree with its `show_if`s, not the product of every item's options).

The walk branches on a value only when a condition reads it (lazily): an answer of an earlier item
of the block, `round`, a column of the subjects table (its values in the table), an answer of an
earlier block (its options, and "" where it may not have been shown). Names whose values are not
listed (variables, payoffs, players' moves) make a condition undecided: both outcomes are followed.
So the walk over-approximates what can happen, and everything it reports is certain. Past
MAX_NODES nodes it gives up and reports nothing (the bound falls back to the product).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import expr as X

MAX_NODES = 20_000  # per block; a walk that would take more gives up (nothing reported)
MAX_ROUNDS = 200  # a block with more rounds: `round` is undecided (not listed)
FREE = object()  # an item shown on this path whose answer no condition has read yet


class TooBig(Exception):
    pass


@dataclass
class Walk:
    """What the walk of one block saw: items shown, each condition's outcomes, the answer sequences."""

    domains: dict  # name -> the values it can take (lazily branched on), for the names a walk may list
    labels: dict  # item id -> its option labels (this block's items)
    shown: set = field(default_factory=set)
    reached: set = field(default_factory=set)  # items a path came to (shown or not)
    outcomes: dict = field(default_factory=dict)  # (item id, "show_if" | k) -> {True, False} seen
    nodes: int = 0


def walk_block(b, domains: dict, read: set) -> Walk | None:
    """Walk one round of block `b` (module docstring): a Walk with `leaves`, the most answer sequences
    of one round over the listed values, or None when the walk is too big."""
    w = Walk(domains, {it.id: it.labels for it in b.items})
    try:
        w.leaves = _walk(w, b, 0, {}, None, read)
    except TooBig:
        return None
    return w


def _walk(w: Walk, b, i: int, env: dict, skip, read: set) -> int:
    """The answer sequences from item i on (env: the values fixed so far; skip: a skip_to target)."""
    w.nodes += 1
    if w.nodes > MAX_NODES:
        raise TooBig
    if i >= len(b.items):
        return 1
    it = b.items[i]
    if skip is not None and it.id != skip:
        return _walk(w, b, i + 1, {**env, it.id: ""}, skip, read)
    w.reached.add(it.id)
    if it.show_if is not None:
        return _branches(w, it.show_if, (it.id, "show_if"), env, lambda e, ok: (
            _shown(w, b, i, e, read) if ok else _walk(w, b, i + 1, {**e, it.id: ""}, None, read)))
    return _shown(w, b, i, env, read)


def _shown(w: Walk, b, i: int, env: dict, read: set) -> int:
    """Item i is shown: each of its answers (branched now where a later condition reads it), then its skip_to."""
    it = b.items[i]
    w.shown.add(it.id)
    if it.id not in read:  # no condition reads it: its options multiply the count, one walk on
        return len(it.labels) * _skips(w, b, i, {**env, it.id: FREE}, 0, read)
    return sum(_skips(w, b, i, {**env, it.id: lab}, 0, read) for lab in it.labels)


def _skips(w: Walk, b, i: int, env: dict, k: int, read: set) -> int:
    """The item's k-th skip_to condition (the first true one jumps; none true: the next item)."""
    it = b.items[i]
    if k >= len(it.skip_to):
        return _walk(w, b, i + 1, env, None, read)
    e, to = it.skip_to[k]

    def go(env2, ok):
        if not ok:
            return _skips(w, b, i, env2, k + 1, read)
        if to == "end":
            return 1
        if to == "end_block":
            return _walk(w, b, len(b.items), env2, None, read)
        return _walk(w, b, i + 1, env2, to, read)

    if e is None:
        return go(env, True)
    return _branches(w, e, (it.id, k), env, go)


def _branches(w: Walk, e: X.Expr, key, env: dict, then) -> int:
    """Evaluate condition `e` on every listed value of the names it reads that are not fixed yet
    (a branch each); a name whose values are not listed makes both outcomes possible. The count
    under a condition is the sum over the branches where a branch fixes an answer of this round,
    and the largest where it fixes the round or the subject (one subject's tree has one of them)."""
    seen = w.outcomes.setdefault(key, set())
    names = sorted(e.names())
    if any(n not in env and n not in w.domains for n in names):
        seen.update((True, False))
        return then(env, True) + then(env, False)
    return _fix(w, e, [n for n in names if n not in env or env[n] is FREE], env, then, seen)


def _fix(w: Walk, e: X.Expr, todo: list, env: dict, then, seen: set) -> int:
    if not todo:
        try:
            ok = bool(X.evaluate(e, env))
        except X.ExprError:  # e.g. a division by zero on some values: stops the run there
            seen.update((True, False))
            return then(env, True) + then(env, False)
        seen.add(ok)
        return then(env, ok)
    n, rest = todo[0], todo[1:]
    values = w.labels[n] if n in w.labels else w.domains[n]
    counts = [_fix(w, e, rest, {**env, n: v}, then, seen) for v in values]
    # an answer of this round splits the count; a fixed value of the context (round, a subjects
    # column, an earlier block's answer) is one of them for the whole subtree: the largest counts
    return sum(counts) if n in w.labels else max(counts)


def context_domains(study, b, known: dict, hidden: set) -> dict:
    """The listed values of the names a condition of block `b` may read besides its own items: `round`,
    the subjects table's columns, and the answers of earlier blocks (with "" where maybe not shown)."""
    out = {}
    if b.rounds <= MAX_ROUNDS:
        out["round"] = list(range(1, b.rounds + 1))
    for col in study.subjects.columns:
        if col not in ("subject", "persona"):
            out[col] = list(dict.fromkeys(study.subjects[col].tolist()))
    for iid, t in known.items():
        if t.labels is not None and iid not in {it.id for it in b.items}:
            out[iid] = sorted(t.labels) + ([""] if iid in hidden else [])
    return out


def read_names(b) -> set[str]:
    """The items of block `b` that one of its conditions (show_if, skip_to) reads."""
    out = set()
    for it in b.items:
        for e in [it.show_if, *(x for x, _ in it.skip_to)]:
            if e is not None:
                out |= e.names()
    return out


def problems(b, w: Walk) -> list[tuple[tuple, str]]:
    """(where, what) of each thing the walk proved: an item no path shows, a condition never true."""
    out = []
    for it in b.items:
        if it.id not in w.reached:
            out.append(((*it.where, "id"), f"item {it.id!r} is unreachable: every path skips it (skip_to "
                                           "conditions enumerated over the options and rounds)"))
        elif it.id not in w.shown:
            out.append(((*it.where, "show_if"), f"item {it.id!r} is unreachable: show_if {it.show_if.text!r} is "
                                                "false on every path (its options and rounds enumerated)"))
        for k, (e, to) in enumerate(it.skip_to):
            if e is not None and w.outcomes.get((it.id, k)) == {False}:
                out.append(((*it.where, "skip_to"), f"skip_to {to!r}: the condition {e.text!r} is never true "
                                                    "(its options and rounds enumerated)"))
    return out
