"""Where a session's numbers can go, known before the run: interval arithmetic over its rounds.

Each numeric name gets an interval: `round` its round, a subjects-table column its range, a payoff
matrix its cells' range, a variable its starting value; payoff rules and updates are evaluated on
intervals round by round (`x if c else y` takes both branches), as the run would apply them. The
result bounds every path (it may be wider than any path goes). A variable whose interval leaves the
range a value may take (a whole number: int64; else a finite float) is reported by `study check`
with the update's line; where even the interval's nearest end is past the range, every path that
reaches that round passes it, and the file is refused (issue 42; evaluation checks the values as
they are made as well: expr.bounded).

Hand-written: no maintained library evaluates this expression language on intervals.
"""

from __future__ import annotations

import ast
import math
import sys
from dataclasses import dataclass

from . import expr as X

FLOAT_MAX = sys.float_info.max


@dataclass(frozen=True)
class Iv:
    lo: float
    hi: float
    whole: bool  # a whole number (int64 bound), else a float (finite bound)

    @property
    def top(self) -> float:
        # float(2^63 - 1) rounds to 2^63: an end beyond it is past int64 (one at it is left to evaluation)
        return float(X.INT_MAX) if self.whole else FLOAT_MAX

    def inside(self) -> bool:
        return -self.top <= self.lo and self.hi <= self.top

    def never_inside(self) -> bool:
        return self.lo > self.top or self.hi < -self.top


@dataclass
class Growth:
    name: str  # the variable
    where: tuple  # the update's key path
    block: str
    round: int
    iv: Iv
    every_path: bool


def _mul(a: float, b: float) -> float:
    return 0.0 if a == 0 or b == 0 else a * b  # 0 x inf is 0 here: an endpoint, not an undefined product


def _arith(op, a: Iv, b: Iv) -> Iv:
    whole = a.whole and b.whole and not isinstance(op, ast.Div)
    if isinstance(op, ast.Add):
        return Iv(a.lo + b.lo, a.hi + b.hi, whole)
    if isinstance(op, ast.Sub):
        return Iv(a.lo - b.hi, a.hi - b.lo, whole)
    if isinstance(op, ast.Mult):
        ps = [_mul(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        return Iv(min(ps), max(ps), whole)
    if isinstance(op, ast.Mod):
        if b.lo > 0:
            return Iv(0.0, b.hi, whole)
        if b.hi < 0:
            return Iv(b.lo, 0.0, whole)
        return Iv(-math.inf, math.inf, whole)
    if b.lo <= 0 <= b.hi:  # / and // by an interval holding 0: unbounded
        return Iv(-math.inf, math.inf, whole)
    qs = [x / y for x in (a.lo, a.hi) for y in (b.lo, b.hi) if math.isfinite(x) or math.isfinite(y)]
    qs = [q for q in qs if not math.isnan(q)] or [-math.inf, math.inf]
    lo, hi = min(qs), max(qs)
    return Iv(math.floor(lo), math.floor(hi), whole) if isinstance(op, ast.FloorDiv) else Iv(lo, hi, whole)


def interval(n, env: dict) -> Iv | None:
    """The interval of a numeric expression node (None: not a number)."""
    if isinstance(n, ast.Constant):
        v = n.value
        return None if isinstance(v, (bool, str)) else Iv(float(v), float(v), isinstance(v, int))
    if isinstance(n, ast.Name):
        return env.get(n.id)
    if isinstance(n, ast.UnaryOp):
        a = interval(n.operand, env)
        if a is None or isinstance(n.op, ast.Not):
            return None
        return Iv(-a.hi, -a.lo, a.whole) if isinstance(n.op, ast.USub) else a
    if isinstance(n, ast.BinOp):
        a, b = interval(n.left, env), interval(n.right, env)
        return None if a is None or b is None else _arith(n.op, a, b)
    if isinstance(n, ast.IfExp):
        a, b = interval(n.body, env), interval(n.orelse, env)
        return None if a is None or b is None else Iv(min(a.lo, b.lo), max(a.hi, b.hi), a.whole and b.whole)
    return None


def _start(v) -> Iv | None:
    return None if isinstance(v, (bool, str)) else Iv(float(v), float(v), isinstance(v, int))


def growth(study) -> tuple[dict[str, Iv], Growth | None]:
    """Each numeric variable's interval over the whole session, and the first update that can leave the
    range (None: every variable stays inside). Blocks are taken in the declared order (with
    block_order: randomized, another order may differ: such a finding is never `every_path`)."""
    sess = study.session
    env: dict = {}
    for col, t in _persona_ranges(study).items():
        env[col] = t
    vars_ = {k: _start(v) for k, v in sess.variables.items()}
    seen = {k: v for k, v in vars_.items() if v is not None}
    for b in sess.blocks:
        mine = [v[0] for v in b.matrix.values()] if b.matrix else []
        theirs = [v[1] for v in b.matrix.values()] if b.matrix else []
        for r in range(1, b.rounds + 1):
            cur = {**env, **{k: v for k, v in vars_.items() if v is not None}, "round": Iv(r, r, True)}
            if mine:
                cur["payoff"] = Iv(min(mine), max(mine), False)
                cur[f"{b.matrix_moves[1]}_payoff"] = Iv(min(theirs), max(theirs), False)
            for name, e in b.rules:
                cur[name] = interval(e.tree, cur)
            new = {k: interval(e.tree, cur) for k, e in b.update}
            for (k, e) in b.update:
                iv = new[k]
                if iv is not None and not iv.inside():
                    every = iv.never_inside() and sess.block_order == "fixed"
                    return seen, Growth(k, (*b.where, "update", k), b.id, r, iv, every)
            vars_.update(new)
            for k, iv in new.items():
                if iv is not None:
                    old = seen.get(k, iv)
                    seen[k] = Iv(min(old.lo, iv.lo), max(old.hi, iv.hi), old.whole and iv.whole)
    return seen, None


def _persona_ranges(study) -> dict[str, Iv]:
    import pandas as pd  # lazy: imports pandas, pyarrow

    out = {}
    for col in study.subjects.columns:
        s = study.subjects[col]
        if col in ("subject", "persona") or pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            continue
        v = s.dropna()
        if len(v):
            out[col] = Iv(float(v.min()), float(v.max()), pd.api.types.is_integer_dtype(s))
    return out


def describe(iv: Iv) -> str:
    return f"[{iv.lo:.6g}, {iv.hi:.6g}]"


def summary(study) -> list[str]:
    """`study check`'s lines on the numbers: each variable's range over every path, or where it can grow
    past what a value may be."""
    seen, g = growth(study)
    if g is not None:
        limit = "2^63 (a whole number)" if g.iv.whole else "the float range"
        return [f"numbers: {g.name} can pass {limit} in round {g.round} of block {g.block} (between "
                f"{describe(g.iv)}); the run stops there with one line naming the update"]
    if not seen:
        return []
    return ["numbers: " + "; ".join(f"{k} within {describe(v)}" for k, v in seen.items())
            + " over every path (interval bound)"]
