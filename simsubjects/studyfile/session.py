"""A session study file (`session:` instead of `items:`): blocks, logic, rounds, payoffs, players.

The format is documented in docs/studies.md ("Sessions"). Everything is checked here without a
model: each problem is one StudyFileError line `FILE:LINE: KEY: what to fix` (exit code 2), so
`study check` and `collect` refuse a bad file before a model loads or a file is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from string import Template

import pandas as pd

from . import expr as X
from . import limits as L
from .load import did_you_mean
from .players import Player, parse_player
from .runcopy import without_credentials
from .session_tree import context_domains, problems, read_names, walk_block
from .spec import (NAME, SESSION_RESERVED, Checker, Item, Study, _design, _plain, _prompt, _table,
                   parse_response, placeholders, response_types, study_header)
from .bounds import growth
from .session_people import read_people

TOP = {"study", "title", "citation", "license", "description", "prompt", "response", "response_types", "design",
       "session", "analyses", "human"}
HUMAN = {"file", "name", "columns"}
HUMAN_COLUMNS = {"respondent", "measure", "value", "by"}
SESSION = {"blocks", "block_order", "memory", "paths", "max_leaves", "max_steps", "variables", "players", "history",
           "people"}
PEOPLE = {"file", "columns", "condition"}  # paths: people: the recorded decisions (session_people.py)
BLOCK = {"id", "items", "order", "intro", "rounds", "players", "moves", "payoffs", "update", "feedback", "position"}
POSITIONS = ("first", "last")  # under block_order: randomized, a block kept at the start or the end
SITEM = {"id", "text", "response", "show_if", "skip_to"}
SKIP = {"if", "to"}
ROUNDS = {"max", "continue"}
PAYOFFS = {"matrix", "moves", "rules"}
MEMORY = ("none", "answers", "transcript")
DEFAULT_HISTORY = "Q: ${question}\nA: ${answer}\n"
ENDS = ("end_block", "end")
# every name a session writes as a column is one of spec.SESSION_RESERVED (collect/schema.py's columns)
NOT_RESERVED = "not a column the package writes (reserved: docs/robustness.md)"
DEFAULT_MARK = ":-"  # ${item:-TEXT}: TEXT where the item was not shown on the path


class SessionText(Template):
    """A session text (item, intro, feedback, a player's text): `${name}`, or `${name:-TEXT}`, which is
    TEXT where `name` is an item not shown on this path (docs/studies.md, "Logic")."""

    braceidpattern = r"(?a:[_a-z][_a-z0-9]*)(?::-[^}$]*)?"


class FillValues(dict):
    """The values a SessionText is filled with: `name:-TEXT` is the value of `name`, or TEXT where
    that is empty (an item not shown)."""

    def __missing__(self, key):
        name, mark, default = key.partition(DEFAULT_MARK)
        if not mark:
            raise KeyError(key)
        return self.get(name, "") or default


def text_placeholders(text: str) -> list[tuple[str, bool]]:
    """(name, has a default) of each placeholder of a session text; ("$", False) for a lone $."""
    t = SessionText(text)
    if not t.is_valid():
        return [("$", False)]
    return [(x.partition(DEFAULT_MARK)[0], bool(x.partition(DEFAULT_MARK)[1])) for x in t.get_identifiers()]


@dataclass
class SItem:
    item: Item
    show_if: X.Expr | None = None
    skip_to: list = field(default_factory=list)  # [(Expr or None, target)]
    where: tuple = ()

    @property
    def id(self) -> str:
        return self.item.id

    @property
    def labels(self) -> list[str]:
        return [o.label for o in self.item.response.options]


@dataclass
class Block:
    id: str
    items: list[SItem]
    where: tuple
    order: str = "fixed"
    intro: str = ""
    rounds: int = 1
    cont: float | None = None  # continuation probability after each round (None: always, up to rounds)
    cont_expr: X.Expr | None = None  # or an expression (a persona column such as delta): checked in (0, 1] when run
    players: list[str] = field(default_factory=list)
    sequence: list[str] | None = None  # sequential: item ids and player names in order; None: simultaneous
    matrix: dict | None = None  # {(row, col): (mine, theirs)}
    matrix_moves: tuple = ()  # (item id, player name)
    rules: list = field(default_factory=list)  # [(name, Expr)]
    update: list = field(default_factory=list)  # [(variable, Expr)]
    feedback: str = ""
    position: str = ""  # block_order: randomized: "first" / "last" keep the block there; "" is shuffled
    round_leaves: int | None = None  # the answer sequences of one round, enumerated (session_tree.py)

    def payoff_names(self) -> list[str]:
        out = ["payoff", f"{self.matrix_moves[1]}_payoff"] if self.matrix else []
        return out + [n for n, _ in self.rules]


@dataclass
class Session:
    blocks: list[Block]
    memory: str = "transcript"
    paths: int | str = 1
    max_leaves: int = 1024
    max_steps: int = 10_000
    variables: dict = field(default_factory=dict)
    players: dict[str, Player] = field(default_factory=dict)
    block_order: str = "fixed"
    history: str = DEFAULT_HISTORY
    # paths: people (teacher forcing): the people's recorded decisions, one row per person x block x round
    # with columns person, block, round and one per item and replayed player (session_people.read_people)
    recorded: pd.DataFrame | None = None
    people_file: str = ""
    people_condition: str = ""  # a subjects-table column: each person's condition in the fit tables

    @property
    def enumerate(self) -> bool:
        return self.paths == "enumerate"

    @property
    def people(self) -> bool:
        return self.paths == "people"

    def item(self, iid: str) -> SItem:
        return next(it for b in self.blocks for it in b.items if it.id == iid)


@dataclass
class SessionStudy(Study):
    session: Session | None = None
    people: pd.DataFrame | None = None  # person-level values: respondent, measure, value, and the `by` columns
    people_by: list = field(default_factory=list)


def load_session(file, seed: int | None = None) -> SessionStudy:
    src, c, d, head = study_header(file, TOP, ("study", "title", "session"))
    s = SessionStudy(file=src.file, source=src, **head)
    s.files[src.file.name] = src.file
    s.raw[src.file.name] = src.raw  # the bytes hashed and parsed: what the run's copy gets (runcopy.copy_files)
    _prompt(c, {"prompt": d.get("prompt") or {"template": "${question}\n${options}"}}, s)
    if isinstance(d.get("prompt"), dict) and "template" not in d["prompt"]:
        s.template = "${question}\n${options}"
    named, default = response_types(c, d)
    g = d.get("design") or {}
    c.mapping(g, ("design",), {"subjects", "seed"})
    _design(c, {"design": g}, s, seed)
    s.session = _session(c, d["session"], s, named, default)
    s.items = [it.item for b in s.session.blocks for it in b.items]
    _people(c, d, s)
    if d.get("analyses") is not None:
        c.listed(d, "analyses", ())  # the session analyses run always (docs/studies.md); reserved for more
    _check(c, s)
    if s.session.people or d["session"].get("people") is not None:
        read_people(c, d["session"], s)
    _max_leaves(c, s.session)
    _size(c, s.session, len(s.subjects))  # after the leaves: an enumerated tree's size counts them
    # the run's copy without a model player's URL credentials (the sha256 stays the file's as read)
    s.raw[src.file.name] = without_credentials(src, {(*p.where, "model"): p.spec for p in s.session.players.values()
                                                     if p.spec is not None})
    return s


# ------------------------------------------------------------------------------------------ parsing

def _session(c: Checker, v, s: Study, named, default) -> Session:
    p = ("session",)
    d = c.mapping(v, p, SESSION, required=("blocks",))
    sess = Session(blocks=[])
    sess.memory = c.choice(d, "memory", p, MEMORY, "transcript")
    sess.block_order = c.choice(d, "block_order", p, ("fixed", "randomized"), "fixed")
    sess.max_steps = c.number(d, "max_steps", p, 10_000, integer=True, low=1, high=L.MAX_STEPS)
    sess.max_leaves = c.number(d, "max_leaves", p, 1024, integer=True, low=1, high=L.MAX_LEAVES)
    paths = d.get("paths", 1)
    if paths in ("enumerate", "people"):
        sess.paths = paths
    else:
        sess.paths = c.number(d, "paths", p, 1, integer=True, low=1, high=L.MAX_PATHS)
    sess.history = c.text(d, "history", p, DEFAULT_HISTORY)
    bad = [x for x in placeholders(sess.history) if x not in ("question", "answer")]
    if bad:
        raise c.err((*p, "history"), f"placeholder ${bad[0]} has no value (available: $question, $answer)")
    for k, val in c.typed(d.get("variables") or {}, (*p, "variables"), dict, "a mapping").items():
        if not NAME.fullmatch(str(k)) or k in SESSION_RESERVED:
            raise c.err((*p, "variables", k), f"variable name {k!r}: letters, digits and _, {NOT_RESERVED}")
        sess.variables[str(k)] = _number_ok(c, c.typed(val, (*p, "variables", k), (int, float, str, bool),
                                                       "a number, text or true/false"), (*p, "variables", k))
    for k, val in c.typed(d.get("players") or {}, (*p, "players"), dict, "a mapping").items():
        if not NAME.fullmatch(str(k)) or k in SESSION_RESERVED or k in sess.variables:
            raise c.err((*p, "players", k), f"player name {k!r}: letters, digits and _, not a variable, "
                                            f"{NOT_RESERVED}")
        sess.players[str(k)] = parse_player(c, str(k), val, (*p, "players", k), s, named)
    blocks = c.listed(d, "blocks", p, required=True)
    if not blocks:
        raise c.err((*p, "blocks"), "no blocks: list at least one")
    seen_items: dict[str, int] = {}
    seen_blocks: set[str] = set()
    for i, b in enumerate(blocks):
        blk = _block(c, b, (*p, "blocks", i), s, sess, named, default, seen_items)
        if blk.id in seen_blocks or blk.id in seen_items:
            raise c.err((*p, "blocks", i, "id"), f"duplicate id {blk.id!r} (block ids and item ids are one set)")
        seen_blocks.add(blk.id)
        sess.blocks.append(blk)
    steps = sum(b.rounds * len(b.items) for b in sess.blocks)
    if steps > sess.max_steps:
        big = max(sess.blocks, key=lambda b: b.rounds * len(b.items))
        raise c.err((*big.where, "rounds"), f"{steps} decisions per path exceed max_steps ({sess.max_steps}); "
                                            "fewer rounds, or raise session.max_steps")
    for b in sess.blocks:
        if b.position and sess.block_order != "randomized":
            raise c.err((*b.where, "position"), f"position: {b.position} keeps a block in place among randomized "
                                                "ones: it needs session.block_order: randomized")
    return sess


def decisions_per_path(sess: Session) -> int:
    """At most this many decisions on one path: every item and model player of every round."""
    return sum(b.rounds * (len(b.items) + sum(sess.players[n].kind == "model" for n in b.players))
               for b in sess.blocks)


def size_error(sess: Session, subjects: int, paths: int | None = None) -> str | None:
    """Why subjects x paths (enumerate: x leaves) x decisions per path is past limits.MAX_DECISIONS, or None."""
    per_subject = min(leaves(sess), sess.max_leaves) if sess.enumerate else 1 if sess.people else (paths or sess.paths)
    n = subjects * per_subject * decisions_per_path(sess)
    if n <= L.MAX_DECISIONS:
        return None
    return (f"{subjects} subjects x {per_subject:g} {'leaves' if sess.enumerate else 'paths'} x "
            f"{decisions_per_path(sess)} decisions per path = {n:.3g} decisions, more than {L.MAX_DECISIONS:,}; "
            "fewer subjects, paths or rounds")


def _size(c: Checker, sess: Session, subjects: int) -> None:
    why = size_error(sess, subjects)
    if why:
        raise c.err(("session", "paths"), why)


def _max_leaves(c: Checker, sess: Session) -> None:
    """paths: enumerate: the tree's leaves (each round's answer sequences as the logic walk counted
    them, with its show_if and skip_to) within max_leaves, before anything runs."""
    if sess.enumerate:
        n = leaves(sess)
        if n > sess.max_leaves:
            raise c.err(("session", "paths"), f"paths: enumerate gives up to {n:g} leaves, more than max_leaves "
                                              f"({sess.max_leaves}); use paths: K (sampled paths) or raise "
                                              "max_leaves")


def leaves(sess: Session) -> float:
    """An upper bound of the enumerated tree's leaves: each round's answer sequences (as the logic walk
    of `study check` counted them, else every item shown), players' branches, continuation branches."""
    total = 1.0
    for b in sess.blocks:
        per_round = 1.0
        for it in b.items:
            per_round *= len(it.labels)
        if b.round_leaves is not None:
            per_round = float(b.round_leaves)
        for name in b.players:  # a chance player drawn once branches once (below)
            if sess.players[name].draw != "once":
                per_round *= sess.players[name].branches
        n = per_round
        for _ in range(b.rounds - 1):
            n = per_round * ((1 + n) if b.cont is not None else n)
            if n > 1e15:
                return n
        total *= n
    for p in sess.players.values():
        if p.draw == "once" and any(p.name in b.players for b in sess.blocks):
            total *= p.branches
    return total


def _block(c: Checker, v, path, s, sess: Session, named, default, seen_items) -> Block:
    d = c.mapping(v, path, BLOCK, required=("id", "items"))
    bid = c.text(d, "id", path, required=True)
    if not NAME.fullmatch(bid):
        raise c.err((*path, "id"), f"block id {bid!r}: letters, digits and _")
    raw = c.listed(d, "items", path, required=True)
    if not raw:
        raise c.err((*path, "items"), "no items: list at least one")
    items = []
    for j, it in enumerate(raw):
        items.append(_item(c, it, (*path, "items", j), s, named, default, seen_items))
    b = Block(bid, items, path, order=c.choice(d, "order", path, ("fixed", "randomized"), "fixed"),
              intro=c.text(d, "intro", path, ""), feedback=c.text(d, "feedback", path, ""))
    if d.get("position") is not None:
        b.position = c.choice(d, "position", path, POSITIONS, "")
    _rounds(c, d, path, b)
    if b.rounds > sess.max_steps:
        raise c.err((*path, "rounds"), f"{b.rounds} rounds exceed max_steps ({sess.max_steps}) decisions per path")
    names = c.listed(d, "players", path) if "players" in d else list(sess.players)
    for k, n in enumerate(names):
        if n not in sess.players:
            raise c.err((*path, "players", k), f"unknown player {n!r}{did_you_mean(n, sess.players)}")
    b.players = [str(n) for n in names]
    ids = [it.id for it in items]
    moves = d.get("moves", "simultaneous")
    if moves != "simultaneous":
        if moves == "sequential":
            moves = {"order": [*b.players, *ids]}
        m = c.mapping(moves, (*path, "moves"), {"order"}, required=("order",))
        order = [str(x) for x in c.listed(m, "order", (*path, "moves"), required=True)]
        for k, x in enumerate(order):
            if x not in ids and x not in b.players:
                raise c.err((*path, "moves", "order", k), f"{x!r} is neither an item of this block nor one of its "
                                                          f"players{did_you_mean(x, [*ids, *b.players])}")
        missing = [x for x in [*ids, *b.players] if x not in order]
        if missing or len(set(order)) != len(order):
            raise c.err((*path, "moves", "order"), f"list every item and player of the block once"
                                                   f"{f' (missing {missing[0]!r})' if missing else ''}")
        if b.order == "randomized":
            raise c.err((*path, "order"), "sequential moves fix the order; use order: fixed")
        b.sequence = order
    _payoffs(c, d, path, b, sess)
    for k, e in c.typed(d.get("update") or {}, (*path, "update"), dict, "a mapping").items():
        if k not in sess.variables:
            raise c.err((*path, "update", k), f"{k!r} is not a declared variable (session.variables)"
                                              f"{did_you_mean(k, sess.variables)}")
        b.update.append((str(k), _parse(c, e, (*path, "update", k))))
    for it in items:
        if it.skip_to and b.order == "randomized":
            raise c.err((*it.where, "skip_to"), "skip_to needs the block's order: fixed")
    return b


def _rounds(c: Checker, d: dict, path, b: Block) -> None:
    """`rounds: N`, or `rounds: {max: N, continue: P}` (P a number in (0, 1] or an expression)."""
    r = d.get("rounds", 1)
    if not isinstance(r, dict):
        b.rounds = c.number(d, "rounds", path, 1, integer=True, low=1)
        return
    rd = c.mapping(r, (*path, "rounds"), ROUNDS, required=("max",))
    b.rounds = c.number(rd, "max", (*path, "rounds"), 1, integer=True, low=1)
    if isinstance(rd.get("continue"), str):  # e.g. a persona column: the treatment's delta
        b.cont_expr, b.cont = _parse(c, rd["continue"], (*path, "rounds", "continue")), 1.0
    else:
        b.cont = c.number(rd, "continue", (*path, "rounds"), None)
    if b.cont is not None and not 0 < b.cont <= 1:
        raise c.err((*path, "rounds", "continue"), f"a continuation probability is in (0, 1], got {b.cont}")


def _payoffs(c: Checker, d: dict, path, b: Block, sess: Session) -> None:
    if d.get("payoffs") is None:
        return
    p = (*path, "payoffs")
    pd_ = c.mapping(d["payoffs"], p, PAYOFFS)
    if ("matrix" in pd_) == ("rules" in pd_):
        raise c.err(p, "give matrix: (with moves: [ITEM, PLAYER]) or rules: {name: EXPR}")
    if "matrix" in pd_:
        moves = c.listed(pd_, "moves", p, required=True)
        if len(moves) != 2:
            raise c.err((*p, "moves"), "moves: [ITEM, PLAYER]: the row's item and the column's player")
        iid, pl = str(moves[0]), str(moves[1])
        it = next((x for x in b.items if x.id == iid), None)
        if it is None:
            raise c.err((*p, "moves", 0), f"{iid!r} is not an item of block {b.id}"
                                          f"{did_you_mean(iid, [x.id for x in b.items])}")
        if pl not in b.players:
            raise c.err((*p, "moves", 1), f"{pl!r} is not a player of block {b.id}{did_you_mean(pl, b.players)}")
        hidden = hidden_items(b, len(b.items)).get(it.id)
        if hidden:  # a hidden item has no answer: its round would have no payoff (issue 42)
            raise c.err((*p, "moves", 0), f"{iid!r} may be hidden ({hidden}); a payoff matrix needs an item "
                                          "every round shows: use payoff rules that read it only where it is shown")
        rows = it.labels
        cols = sess.players[pl].moves_of(sess, b) or rows
        m = c.mapping(pd_["matrix"], (*p, "matrix"), set(rows), required=tuple(rows))
        out = {}
        for r in rows:
            mr = c.mapping(m[r], (*p, "matrix", r), set(cols), required=tuple(cols))
            for col in cols:
                cell = c.typed(mr[col], (*p, "matrix", r, col), list, "[mine, theirs]")
                if len(cell) != 2:
                    raise c.err((*p, "matrix", r, col), "a cell is [mine, theirs]: two numbers")
                out[(r, col)] = tuple(float(_number_ok(c, c.typed(x, (*p, "matrix", r, col), (int, float), "a number"),
                                                       (*p, "matrix", r, col))) for x in cell)
        b.matrix, b.matrix_moves = out, (iid, pl)
        if "rules" in pd_:
            pass
    else:
        for k, e in c.typed(pd_["rules"], (*p, "rules"), dict, "a mapping").items():
            taken = k in sess.variables or k in sess.players or k in [it.id for it in b.items]
            if not NAME.fullmatch(str(k)) or taken or (k in SESSION_RESERVED and k != "payoff"):  # payoff: the subject's
                raise c.err((*p, "rules", k), f"payoff name {k!r}: letters, digits and _, not a variable, player "
                                              f"or item, {NOT_RESERVED}")
            b.rules.append((str(k), _parse(c, e, (*p, "rules", k))))


def _item(c: Checker, v, path, s, named, default, seen) -> SItem:
    d = c.mapping(v, path, SITEM, required=("id", "text"))
    iid = c.text(d, "id", path, required=True)
    if not NAME.fullmatch(iid) or iid in SESSION_RESERVED:
        raise c.err((*path, "id"), f"item id {iid!r}: letters, digits and _ (an expression names it), "
                                   f"{NOT_RESERVED}")
    if iid in seen:
        raise c.err((*path, "id"), f"duplicate item id {iid!r} (first at line {seen[iid]})")
    seen[iid] = c.src.line((*path, "id")) or 0
    if d.get("response") is not None:
        resp = parse_response(c, d["response"], (*path, "response"), named)
    elif default is not None:
        resp = default
    else:
        raise c.err(path, "no response: give the item response: ..., or a study-level response:")
    if resp.kind != "choice":
        raise c.err((*path, "response"), "a session decision is a k-choice question (choice, yesno, likert); "
                                         "estimates and free text are not in sessions yet")
    text = c.text(d, "text", path, required=True)
    it = SItem(Item(iid, text, resp, {}, path), where=path)
    if d.get("show_if") is not None:
        it.show_if = _parse(c, d["show_if"], (*path, "show_if"))
    sk = d.get("skip_to")
    if sk is not None:
        for k, one in enumerate(sk if isinstance(sk, list) else [sk]):
            w = (*path, "skip_to", k) if isinstance(sk, list) else (*path, "skip_to")
            if isinstance(one, str):
                one = {"to": one}
            o = c.mapping(one, w, SKIP, required=("to",))
            it.skip_to.append((_parse(c, o["if"], (*w, "if")) if o.get("if") is not None else None,
                               c.text(o, "to", w, required=True)))
    return it


def _number_ok(c: Checker, v, path):
    """A starting value or a payoff: finite, and a whole number within int64 (expr.bounded; issue 42)."""
    try:
        return X.bounded(v, "the value")
    except X.ExprError as e:
        raise c.err(path, str(e)) from None


def _parse(c: Checker, text, path) -> X.Expr:
    try:
        return X.parse(text)
    except X.ExprError as e:
        raise c.err(path, str(e)) from None


# ------------------------------------------------------------------------------------------ checks

def persona_types(s: Study) -> dict[str, X.T]:
    out = {}
    for col in s.subjects.columns:
        if col in ("subject", "persona"):
            continue
        dt = s.subjects[col].dtype
        out[col] = X.BOOL if pd.api.types.is_bool_dtype(dt) else X.NUM if pd.api.types.is_numeric_dtype(dt) else X.TEXT
    return out


def _vtype(v) -> X.T:
    return X.BOOL if isinstance(v, bool) else X.NUM if isinstance(v, (int, float)) else X.TEXT


def _check(c: Checker, s: SessionStudy) -> None:
    """Names, order, cycles, reachability and types of every expression and text (docs: "Logic")."""
    sess = s.session
    base = {"round": X.NUM, **persona_types(s), **{k: _vtype(v) for k, v in sess.variables.items()}}
    for key in ("system", "answer_prefix"):  # filled per subject: persona columns and variables
        _text(c, getattr(s, key), {**persona_types(s), **{k: X.TEXT for k in sess.variables}}, ("prompt", key), {})
    all_items = {it.id: it for b in sess.blocks for it in b.items}
    _columns_apart(c, s, all_items)
    players = {n: X.T("text", frozenset(p.moves_of(sess, None) or []) or None) for n, p in sess.players.items()}
    for k, p in sess.players.items():
        p.check(c, sess, all_items)
    known: dict[str, X.T] = {}  # answers of the items before (earlier blocks, earlier in this block)
    hidden: set[str] = set()  # of those, the items some path does not show (filled with "")
    for group, in_order in block_groups(sess):
        seen, unseen = dict(known), set(hidden)  # what every block of a shuffled group knows
        for b in group:
            k, h = (known, hidden) if in_order else (dict(seen), set(unseen))
            _check_block(c, s, b, base, k, h, players, all_items)
            h |= maybe_hidden(b, len(b.items))
            if not in_order:  # after the shuffled group: every block of it has run
                known.update(k)
                hidden |= h
    _growth(c, s)


def _growth(c, s: SessionStudy) -> None:
    """A variable that passes its range on every path (bounds.py: interval arithmetic over the rounds)."""
    _, g = growth(s)
    if g is not None and g.every_path:
        limit = "2^63 (a whole number)" if g.iv.whole else "the float range"
        raise c.err(g.where, f"{g.name} passes {limit} in round {g.round} of block {g.block} on every path "
                             f"(at least {min(abs(g.iv.lo), abs(g.iv.hi)):.4g}); bound its growth")


def _columns_apart(c, s: SessionStudy, all_items) -> None:
    """A subjects-table column is written on every row and read by expressions: an item, variable, player or
    payoff rule of the same name would overwrite it (issue 42)."""
    sess = s.session
    names = [*((it.id, (*it.where, "id")) for it in all_items.values()),
             *((k, ("session", "variables", k)) for k in sess.variables),
             *((k, p.where) for k, p in sess.players.items()),
             *((n, (*b.where, "payoffs", "rules", n)) for b in sess.blocks for n, _ in b.rules)]
    columns = set(persona_types(s))
    for col in sorted(columns & SESSION_RESERVED):
        raise c.err(("design", "subjects"), f"column {col!r} of the subjects table is {NOT_RESERVED}; rename it")
    for name, where in names:
        if name in columns:
            raise c.err(where, f"{name!r} is also a column of the subjects table (design.subjects): rename one")


def _continue_in_range(c, s: SessionStudy, b: Block) -> None:
    """A continuation probability that reads nothing, or only subjects-table columns, is known before the
    run: each subject's is checked here (others when the round ends, session_run.py)."""
    e = b.cont_expr
    if not e.names() <= set(persona_types(s)):
        return
    for rec in s.subjects.to_dict("records") if e.names() else [{}]:
        try:
            v = X.evaluate(e, rec)
        except X.ExprError as err:
            raise c.err((*b.where, "rounds", "continue"), str(err)) from None
        if not 0 < v <= 1:
            who = f" for subject {rec['subject']}" if rec else ""
            raise c.err((*b.where, "rounds", "continue"), f"continuation probability {v!r}{who}: not in (0, 1]")


def block_groups(sess: Session) -> list[tuple[list[Block], bool]]:
    """The blocks in the order a path meets them: (blocks, in this order?). Fixed: one group in file
    order. Randomized: the `position: first` blocks in file order, the others shuffled (each knows
    only what came before the group), the `position: last` blocks in file order."""
    if sess.block_order != "randomized":
        return [(sess.blocks, True)]
    return [([b for b in sess.blocks if b.position == "first"], True),
            ([b for b in sess.blocks if not b.position], False),
            ([b for b in sess.blocks if b.position == "last"], True)]


def _check_block(c: Checker, s: SessionStudy, b: Block, base, known, hidden, players, all_items) -> None:
    """One block's expressions and texts, in the order they are met; adds its items to `known`;
    then its logic, walked (session_tree.py)."""
    sess = s.session
    context = context_domains(s, b, known, hidden)
    _text(c, b.intro, {**base, **known}, (*b.where, "intro"), all_items, hidden)  # shown before the items
    ids = [it.id for it in b.items]
    order = b.sequence or ids
    moved: dict[str, X.T] = {}
    if b.sequence is None:  # simultaneous: players move first, on what was known before the round
        for name in b.players:
            _player_text(c, sess.players[name], {**base, **known}, all_items, hidden)
    for pos, name in enumerate(order):
        now = hidden | maybe_hidden(b, sum(x in ids for x in order[:pos]))
        if name in b.players:
            _player_text(c, sess.players[name], {**base, **known, **moved}, all_items, now)
            moved[name] = players[name]
            continue
        it = all_items[name]
        env = {**base, **known, **moved}
        if b.order == "randomized":
            env = {**base, **{k: v for k, v in known.items() if k not in set(ids)}, **moved}
        if it.show_if is not None:
            _typed(c, it.show_if, env, (*it.where, "show_if"), all_items, b, want="bool")
        own = {**env, it.id: X.T("text", frozenset(it.labels))}  # skip_to is read after the item's answer
        for e, _ in it.skip_to:
            if e is not None:
                _typed(c, e, own, (*it.where, "skip_to"), all_items, b, want="bool")
        _text(c, it.item.text, env, (*it.where, "text"), all_items, now)
        known[it.id] = X.T("text", frozenset(it.labels))
    after = {**base, **known, **players}
    if b.cont_expr is not None:
        t = _typed(c, b.cont_expr, {**base, **known}, (*b.where, "rounds", "continue"), all_items, b)
        if t.kind != "num":
            raise c.err((*b.where, "rounds", "continue"), f"a continuation probability is a number, got {t}")
        _continue_in_range(c, s, b)
    if b.matrix:
        after.update({n: X.NUM for n in b.payoff_names()})
    for n, e in b.rules:
        after[n] = _typed(c, e, after, (*b.where, "payoffs", "rules", n), all_items, b)
    for n, e in b.update:
        t = _typed(c, e, after, (*b.where, "update", n), all_items, b)
        if t.kind != base[n].kind:
            raise c.err((*b.where, "update", n), f"{n} holds {base[n]}, but the expression gives {t}")
    _text(c, b.feedback, after, (*b.where, "feedback"), all_items, hidden | maybe_hidden(b, len(ids)))
    _flow(c, b)
    w = walk_block(b, context, read_names(b))
    if w is not None:
        for where, what in problems(b, w):
            raise c.err(where, what)
        b.round_leaves = w.leaves


def maybe_hidden(b: Block, k: int) -> set[str]:
    """The items of block `b` before its k-th item that a path reaching that point may not have shown."""
    return set(hidden_items(b, k))


def hidden_items(b: Block, k: int) -> dict[str, str]:
    """{item id: why} for the items of block `b` before its k-th item (k = len(items): after the block's
    items) that a path reaching that point may not have shown: a show_if that is not always true, or a
    skip_to over them, whose condition is not never-true, that lands at or before k (`end_block` lands
    after the items; `end` ends the session, so nothing after it is shown)."""
    ids = [it.id for it in b.items]
    out: dict[str, str] = {}
    for i, it in enumerate(b.items[:k]):
        if it.show_if is not None and X.constant(it.show_if) is not True:
            out.setdefault(it.id, f"show_if: {it.show_if.text}")
        for cond, to in it.skip_to:
            j = len(ids) if to == "end_block" else ids.index(to) if to in ids else None
            if j is not None and j <= k and (cond is None or X.constant(cond) is not False):
                out.update({x: f"{it.id}'s skip_to {to}" for x in ids[i + 1:j] if x not in out})
    return out


def _player_text(c, p: Player, env, all_items, hidden=frozenset()) -> None:
    """A model player's persona and question: filled from what is known when it moves."""
    if p.kind == "model":
        _text(c, p.persona, env, (*p.where, "persona"), all_items, hidden)
        _text(c, p.text, env, (*p.where, "text"), all_items, hidden)


def _typed(c, e: X.Expr, env, where, all_items, b, want: str | None = None) -> X.T:
    for n in sorted(e.names()):
        if n not in env and n in all_items:
            raise c.err(where, f"{n!r} is this item or one after it: an expression reads earlier answers only")
        if n not in env and any(n == p for p in b.players):
            raise c.err(where, f"{n!r} moves at the same time (simultaneous moves): known after the round only")
    try:
        t = X.typecheck(e, env)
    except X.ExprError as err:
        raise c.err(where, str(err)) from None
    if want and t.kind != want:
        raise c.err(where, f"a condition is true/false, but {e.text!r} gives {t}")
    return t


def _text(c, text: str, env, where, all_items, hidden=frozenset()) -> None:
    """Every placeholder of a session text has a value where the text is shown; one naming an item
    that may not have been shown on the path (`hidden`) needs a default, `${item:-TEXT}`."""
    for p, has_default in text_placeholders(text):
        if p == "$":
            raise c.err(where, "a lone $ starts no placeholder; write $$ for a dollar sign")
        if p not in env:
            hint = ": an item answered later" if p in all_items else did_you_mean(p, env)
            raise c.err(where, f"placeholder ${p} has no value here{hint}")
        if p in hidden and not has_default:
            raise c.err(where, f"placeholder ${p}: item {p} is not shown on every path before this text "
                               f"(show_if or skip_to), where it would be filled with an empty text; write "
                               f"${{{p}:-TEXT}} for the text to show then")


def _flow(c: Checker, b: Block) -> None:
    """skip_to targets (forward only: no cycles) and items no path reaches."""
    ids = [it.id for it in b.items]
    edges: dict[int, set[int]] = {}
    n = len(ids)
    for i, it in enumerate(b.items):
        out = set()
        falls_through = True
        for e, to in it.skip_to:
            if to in ENDS:
                j = n
            elif to in ids:
                j = ids.index(to)
                if j <= i:
                    raise c.err((*it.where, "skip_to"), f"skip_to {to!r} goes back to {'itself' if j == i else 'an earlier item'}: "
                                                        "a cycle; skip forward only")
            else:
                raise c.err((*it.where, "skip_to"), f"skip_to {to!r}: no such item in block {b.id}"
                                                    f"{did_you_mean(to, [*ids, *ENDS])}")
            out.add(j)
            if e is None or X.constant(e) is True:
                falls_through = False
                break
        if falls_through:
            out.add(i + 1)
        edges[i] = out
    reach, todo = {0}, [0]
    while todo:
        i = todo.pop()
        shown = b.items[i].show_if is None or X.constant(b.items[i].show_if) is not False
        for j in (edges[i] if shown else {i + 1}):
            if j < n and j not in reach:
                reach.add(j)
                todo.append(j)
    for i, it in enumerate(b.items):
        if i not in reach:
            raise c.err((*it.where, "id"), f"item {it.id!r} is unreachable: every way to it is skipped")
        if it.show_if is not None and X.constant(it.show_if) is False:
            raise c.err((*it.where, "show_if"), f"item {it.id!r} is unreachable: show_if is always false")


def _people(c: Checker, d: dict, s: SessionStudy) -> None:
    """`human:` person-level values (a person's share of an option, or mean payoff) by round, block or a
    persona column, compared with the subjects' own (docs/studies.md, "People beside the model")."""
    if d.get("human") is None:
        return

    p = ("human",)
    h = c.mapping(d["human"], p, HUMAN, required=("file", "columns"))
    df = _table(c, s, h["file"], (*p, "file"))
    cols = c.mapping(h["columns"], (*p, "columns"), HUMAN_COLUMNS, required=("respondent", "measure", "value"))
    s.human_name = c.text(h, "name", p, "human")
    by = [str(x) for x in c.listed(cols, "by", (*p, "columns"))]
    persona = set(persona_types(s))
    for k, b in enumerate(by):
        if b not in ("round", "block") and b not in persona:
            raise c.err((*p, "columns", "by", k), f"{b!r}: compare by round, block or a subjects column"
                                                  f"{did_you_mean(b, ['round', 'block', *persona])}")
    names = {key: c.text(cols, key, (*p, "columns"), required=True) for key in ("respondent", "measure", "value")}
    for key, col in [*names.items(), *(("by", b) for b in by)]:
        if col not in df.columns:
            raise c.err((*p, "columns", key), f"column {col!r} is not in {h['file']}{did_you_mean(col, df.columns)}")
    valid = measures(s.session)
    out = pd.DataFrame({"respondent": df[names["respondent"]].map(_plain), "measure": df[names["measure"]].map(_plain),
                        "value": pd.to_numeric(df[names["value"]], errors="coerce"),
                        **{b: df[b].map(_plain) if b != "round" else df[b] for b in by}})
    for i, rec in enumerate(out.to_dict("records")):
        if rec["measure"] not in valid:
            raise c.err((*p, "columns", "measure"), f"row {i + 2} of {h['file']}: {rec['measure']!r} is not a "
                                                    f"measure of the session{did_you_mean(rec['measure'], valid)}")
        if not rec["value"] == rec["value"]:
            raise c.err((*p, "columns", "value"), f"row {i + 2} of {h['file']}: the value is not a number")
    if "round" in by:  # an empty round: the value is pooled over rounds
        r = pd.to_numeric(df["round"].replace("", None), errors="coerce")
        if ((r.dropna() % 1) != 0).any() or (r.isna() & df["round"].notna() & (df["round"].astype(str) != "")).any():
            raise c.err((*p, "columns", "by"), f"the round column of {h['file']} holds a value that is not a "
                                               "whole number")
        out["round"] = r.astype("Int64")
    s.people, s.people_by = out, by


def measures(sess: Session) -> list[str]:
    """What can be compared with people: `share ITEM=OPTION` and `mean NAME` (payoffs, variables)."""
    out = [f"share {it.id}={lab}" for b in sess.blocks for it in b.items for lab in it.labels]
    out += [f"mean {n}" for b in sess.blocks for n in b.payoff_names()] + [f"mean {v}" for v in sess.variables]
    return list(dict.fromkeys(out))
