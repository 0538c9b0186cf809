"""The expression language of sessions (show_if, skip_to, payoff rules, updates): parsed, never eval'd.

Python's own parser (`ast.parse(mode="eval")`) reads the text; only a whitelist of node kinds is
accepted (literals, names, arithmetic, comparisons, and/or/not, `x if c else y`, `in [..]`), and
the tree is then evaluated here, node by node. Attribute access, calls, subscripts, lambdas,
comprehensions and names starting with `_` are refused when the file is checked, so no text of a
study file ever becomes code (docs/studies.md, "Logic").

Types are checked before anything runs: `num`, `text`, `bool`; a text may carry the option
labels it can take (a choice answer), so `choice == 'X'` with X not an option is an error too.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass


class ExprError(ValueError):
    """A problem in an expression: the caller adds file, line and key."""


# Every number an expression reads or gives is finite, and a whole number fits int64 (the responses
# table's integer columns): a session's variables are written as parquet, Stata and SPSS columns.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
MAX_DEPTH = 100  # nesting of an expression's tree: deeper is refused (the checks below recurse)


def bounded(v, what: str = "the result"):
    """`v` if it is finite and a whole number within int64, else ExprError saying which bound it passes."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    if isinstance(v, int) and not INT_MIN <= v <= INT_MAX:
        raise ExprError(f"{what} {float(v):.4g} is past the whole-number range (-2^63 to 2^63-1)")
    if isinstance(v, float) and not math.isfinite(v):
        raise ExprError(f"{what} is not a finite number ({v})")
    return v


@dataclass(frozen=True)
class T:
    """A value's type: kind is num, text or bool; `labels` are the values a choice answer can take."""

    kind: str
    labels: frozenset | None = None

    def __str__(self) -> str:
        return {"num": "a number", "text": "text", "bool": "true/false"}[self.kind]


NUM, TEXT, BOOL = T("num"), T("text"), T("bool")

_ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_CONST = {"true": True, "false": False, "True": True, "False": False}
_REFUSED = {ast.Attribute: "attribute access", ast.Call: "a call", ast.Subscript: "a subscript",
            ast.Lambda: "a lambda", ast.ListComp: "a comprehension", ast.GeneratorExp: "a comprehension",
            ast.SetComp: "a comprehension", ast.DictComp: "a comprehension", ast.NamedExpr: "an assignment",
            ast.Starred: "a starred value", ast.JoinedStr: "an f-string", ast.Dict: "a mapping",
            ast.Set: "a set", ast.Await: "await", ast.Yield: "yield"}


@dataclass
class Expr:
    text: str
    tree: ast.expr

    def names(self) -> set[str]:
        return {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name) and n.id not in _CONST}

    def __str__(self) -> str:
        return self.text


def parse(text) -> Expr:
    """The parsed expression, or ExprError naming the first construct that is not allowed."""
    if isinstance(text, bool):
        text = "true" if text else "false"
    if isinstance(text, (int, float)):
        text = repr(text)
    if not isinstance(text, str) or not text.strip():
        raise ExprError("an expression is text, e.g. \"choice == 'C' and round > 1\"")
    if len(text) > 2000:
        raise ExprError("an expression is at most 2000 characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ExprError(f"cannot parse {text!r}: {e.msg}") from None
    except (RecursionError, MemoryError):  # the parser's own stack, on deeply nested text
        raise ExprError(f"nested more than {MAX_DEPTH} levels deep") from None
    _shallow(tree)
    for node in ast.walk(tree):
        _allowed(node)
        if isinstance(node, ast.Constant):
            bounded(node.value, "a number")
    return Expr(text.strip(), tree)


def _shallow(tree) -> None:
    """At most MAX_DEPTH levels (1+1+...+1 nests one level a term): walked without recursion, before the
    recursive type check and evaluation."""
    todo = [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        if depth > MAX_DEPTH:
            raise ExprError(f"nested more than {MAX_DEPTH} levels deep; split it over payoff rules or variables")
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _allowed(node) -> None:
    for kind, what in _REFUSED.items():
        if isinstance(node, kind):
            raise ExprError(f"{what} is not allowed in an expression (names, numbers, 'text', arithmetic, "
                            "comparisons, and/or/not, x if c else y)")
    if isinstance(node, ast.Name) and node.id.startswith("_"):
        raise ExprError(f"name {node.id!r}: names starting with _ are not allowed")
    if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, bool)):
        raise ExprError(f"{node.value!r} is not a number, text or true/false")
    if isinstance(node, ast.BinOp) and type(node.op) not in _ARITH:
        raise ExprError(f"operator {type(node.op).__name__} is not allowed (use + - * / // %)")
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        raise ExprError("only -x, +x and not x are allowed")
    ok = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Name, ast.Constant,
          ast.List, ast.Tuple, ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
    if not isinstance(node, ok):
        raise ExprError(f"{type(node).__name__} is not allowed in an expression")


# ------------------------------------------------------------------------------------------ types

def typecheck(e: Expr, types: dict[str, T]) -> T:
    """The type of `e` given the names' types; ExprError on an unknown name or a type error."""
    return _type(e.tree, types)


def _type(n, types) -> T:
    if isinstance(n, ast.Constant):
        v = n.value
        return BOOL if isinstance(v, bool) else TEXT if isinstance(v, str) else NUM
    if isinstance(n, ast.Name):
        if n.id in _CONST:
            return BOOL
        if n.id not in types:
            from .load import did_you_mean  # lazy: imports yaml

            raise ExprError(f"unknown name {n.id!r}{did_you_mean(n.id, types)}")
        return types[n.id]
    if isinstance(n, ast.UnaryOp):
        t = _type(n.operand, types)
        want = BOOL if isinstance(n.op, ast.Not) else NUM
        if t.kind != want.kind:
            raise ExprError(f"{_op(n.op)} needs {want}, got {t}")
        return want
    if isinstance(n, ast.BinOp):
        a, b = _type(n.left, types), _type(n.right, types)
        if a.kind != "num" or b.kind != "num":
            raise ExprError(f"arithmetic ({_op(n.op)}) needs numbers, got {a} and {b}")
        if isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mod)) and _constant_zero(n.right):
            raise ExprError("division by zero")
        return NUM
    if isinstance(n, ast.BoolOp):
        for v in n.values:
            t = _type(v, types)
            if t.kind != "bool":
                raise ExprError(f"and/or need true/false on both sides, got {t}")
        return BOOL
    if isinstance(n, ast.IfExp):
        if _type(n.test, types).kind != "bool":
            raise ExprError("the condition of x if COND else y must be true/false")
        a, b = _type(n.body, types), _type(n.orelse, types)
        if a.kind != b.kind:
            raise ExprError(f"x if c else y: both branches need one type, got {a} and {b}")
        return T(a.kind)
    if isinstance(n, (ast.List, ast.Tuple)):
        raise ExprError("a list is only allowed after `in`")
    if isinstance(n, ast.Compare):
        left = n.left
        for op, right in zip(n.ops, n.comparators):
            _compare(left, op, right, types)
            left = right
        return BOOL
    raise ExprError(f"{type(n).__name__} is not allowed")  # unreachable: parse() refused it


def _compare(left, op, right, types) -> None:
    a = _type(left, types)
    if isinstance(op, (ast.In, ast.NotIn)):
        if not isinstance(right, (ast.List, ast.Tuple)):
            raise ExprError("`in` needs a list: x in ['a', 'b']")
        for el in right.elts:
            _same(a, _type(el, types), left, el)
        return
    b = _type(right, types)
    if isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) and (a.kind != "num" or b.kind != "num"):
        raise ExprError(f"{_op(op)} compares numbers, got {a} and {b}")
    _same(a, b, left, right)


def _same(a: T, b: T, left, right) -> None:
    if a.kind != b.kind:
        raise ExprError(f"cannot compare {a} with {b}")
    for t, other in ((a, right), (b, left)):
        if t.labels is not None and isinstance(other, ast.Constant) and other.value not in t.labels:
            raise ExprError(f"{other.value!r} is not an option (options: {', '.join(sorted(t.labels))})")


def _constant_zero(n) -> bool:
    try:
        return evaluate(Expr("", n), {}) == 0
    except Exception:  # noqa: BLE001 - not a constant: checked when it runs
        return False


def _op(op) -> str:
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
            ast.USub: "-", ast.UAdd: "+", ast.Not: "not", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
            ast.GtE: ">="}.get(type(op), type(op).__name__)


# ------------------------------------------------------------------------------------------ values

def evaluate(e: Expr, env: dict):
    """The value of `e` with the names' values in `env` (ExprError: a division by zero, a missing name)."""
    return _eval(e.tree, env)


def _eval(n, env):
    if isinstance(n, ast.Constant):
        return n.value
    if isinstance(n, ast.Name):
        if n.id in _CONST:
            return _CONST[n.id]
        if n.id not in env:
            raise ExprError(f"{n.id!r} has no value here")
        return env[n.id]
    if isinstance(n, ast.UnaryOp):
        v = _eval(n.operand, env)
        return (not v) if isinstance(n.op, ast.Not) else bounded(-v if isinstance(n.op, ast.USub) else +v)
    if isinstance(n, ast.BinOp):
        a, b = _eval(n.left, env), _eval(n.right, env)
        if isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
            raise ExprError("division by zero")
        try:
            return bounded(_ARITH[type(n.op)](a, b))
        except OverflowError:  # int / int past the float range
            raise ExprError("the result is past the number range") from None
    if isinstance(n, ast.BoolOp):
        if isinstance(n.op, ast.And):
            return all(_eval(v, env) for v in n.values)
        return any(_eval(v, env) for v in n.values)
    if isinstance(n, ast.IfExp):
        return _eval(n.body, env) if _eval(n.test, env) else _eval(n.orelse, env)
    if isinstance(n, (ast.List, ast.Tuple)):
        return [_eval(x, env) for x in n.elts]
    if isinstance(n, ast.Compare):
        left = _eval(n.left, env)
        for op, right in zip(n.ops, n.comparators):
            r = _eval(right, env)
            if not _CMP[type(op)](left, r):
                return False
            left = r
        return True
    raise ExprError(f"{type(n).__name__} is not allowed")


def constant(e: Expr):
    """The value of `e` if it names nothing (a constant condition), else None."""
    if e.names():
        return None
    try:
        return evaluate(e, {})
    except ExprError:
        return None
