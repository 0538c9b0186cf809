"""Other players of a session: scripted strategies, recorded people's moves, and model players
(docs/studies.md, "Players").

A scripted player's move is a function of the rounds before (the repeated-game strategies of
Axelrod 1984 and of Dal Bó & Fréchette 2011's strategy estimation: always cooperate/defect,
tit-for-tat, grim trigger) or of a fixed schedule; a recorded player replays a person's moves
from a table. Both are deterministic, so they add no branch to an enumerated tree.

A chance player (`nature: {OUTCOME: PROBABILITY, ...}`) draws an outcome with declared
probabilities, every round (noise that flips an intended move with probability 1/8) or once
(`draw: once`: a random partner type), by the path's seeded generator; enumerated, each outcome
is a branch. Scripted strategies may respond to a session variable instead of an item: the
carried-out move that `update` computes from the intended move and the noise (Fudenberg, Rand &
Dreber 2012, "Slow to anger and fast to forgive", AER 102(2)).

A model player (`model: same` with its own `persona`, or `model: SPEC`, another model) answers
its own k-choice question: its move is a decision like the subject's, with its exact option
distribution recorded (rows with `player` = its name) and the move drawn by the path's seeded
generator (or, enumerating, every option a branch).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..collect.untrusted import chat_control
from .load import did_you_mean
from ..errors import UserError

STRATEGIES = {"always": {"move"}, "tit_for_tat": {"responds_to", "first"},
              "grim_trigger": {"responds_to", "cooperate", "defect"}, "schedule": {"moves"}}
TABLE = {"table", "round", "move", "match"}
MODEL = {"model", "persona", "text", "response"}
NATURE = {"nature", "draw"}
DRAWS = ("every_round", "once")
PROB_TOL = 1e-9  # a chance player's probabilities sum to 1 within this
SAME = "same"  # the subject's own model (with the player's own persona)


@dataclass
class Player:
    name: str
    kind: str  # always | tit_for_tat | grim_trigger | schedule | table
    where: tuple
    move: str = ""
    responds_to: str = ""
    first: str = ""
    cooperate: str = ""
    defect: str = ""
    schedule: list = field(default_factory=list)
    recorded: dict = field(default_factory=dict)  # (match value, round) -> move
    match: str = ""
    model: str = ""  # model players: "same" or a model spec
    spec: object = None  # model players other than "same": the ModelSpec parsed once, at load
    persona: str = ""  # model players: the text before its question (its role)
    text: str = ""  # model players: its question (placeholders: the state when it moves)
    response: object = None  # model players: a k-choice Response
    outcomes: dict = field(default_factory=dict)  # chance players: outcome -> probability (sums to 1)
    draw: str = "every_round"  # chance players: every_round, or once (round 1 of each block; kept after)

    @property
    def branches(self) -> int:
        """Deterministic players add no branch to an enumerated tree; a model player one per option."""
        if self.kind == "nature":
            return len(self.outcomes)
        return len(self.response.options) if self.kind == "model" else 1

    @property
    def labels(self) -> list[str]:
        return [o.label for o in self.response.options] if self.response is not None else []

    def moves_of(self, sess, block) -> list[str]:
        """The moves this player can make (the options of the item it answers, or its listed moves)."""
        if self.kind == "nature":
            return list(self.outcomes)
        if self.responds_to in sess.variables:  # a carried-out move: any text the update gives
            return [x for x in dict.fromkeys([self.first, self.cooperate, self.defect, self.move]) if x]
        if self.responds_to:
            try:
                return [o.label for o in sess.item(self.responds_to).item.response.options]
            except StopIteration:
                return []
        if self.kind == "model":
            return self.labels
        if self.kind == "always":
            return [self.move]
        if self.kind == "schedule":
            return list(dict.fromkeys(self.schedule))
        return sorted(set(self.recorded.values()))

    def check(self, c, sess, items: dict) -> None:
        if self.responds_to in sess.variables:
            if not isinstance(sess.variables[self.responds_to], str):
                raise c.err((*self.where, "responds_to"), f"variable {self.responds_to!r} holds a number or "
                                                          "true/false; a strategy responds to moves (text)")
        elif self.responds_to:
            if self.responds_to not in items:
                known = [*items, *sess.variables]
                raise c.err((*self.where, "responds_to"), f"{self.responds_to!r} is not an item or a variable"
                                                          f"{did_you_mean(self.responds_to, known)}")
            labels = items[self.responds_to].labels
            for key in ("first", "cooperate", "defect"):
                v = getattr(self, key)
                if v and v not in labels:
                    raise c.err((*self.where, key), f"{v!r} is not an option of {self.responds_to} "
                                                    f"({', '.join(labels)})")

    def play(self, round_: int, own: list[str], answers: list[str], person=None) -> str:
        """The move in round `round_` (1, 2, ...): `own` its earlier moves, `answers` the subject's
        earlier answers to `responds_to` ('' where the item was not shown), or the values of the
        variable it responds to after each earlier round."""
        if self.kind == "always":
            return self.move
        if self.kind == "schedule":
            return self.schedule[min(round_, len(self.schedule)) - 1]
        if self.kind == "tit_for_tat":
            # round 1: `first`; then the subject's last answer (its own last move if that item was skipped)
            if round_ == 1:
                return self.first
            last = answers[-1] if answers else ""
            return last or own[-1]
        if self.kind == "grim_trigger":
            return self.defect if self.defect in answers else self.cooperate
        # recorded: the person's move in this round, else their last recorded move
        key = (person, round_)
        while key not in self.recorded and key[1] > 1:
            key = (person, key[1] - 1)
        return self.recorded[key]


def parse_player(c, name: str, v, path, study, named=None) -> Player:
    if isinstance(v, str):
        v = {"strategy": v}
    if not isinstance(v, dict):
        raise c.err(path, "a player is a mapping: {strategy: tit_for_tat, ...} or {table: FILE, ...}")
    if "model" in v:
        return _model(c, name, v, path, named or {})
    if "nature" in v:
        return _nature(c, name, v, path)
    if "table" in v:
        return _recorded(c, name, v, path, study)
    if "strategy" not in v:
        raise c.err(path, "a player needs strategy: (always, tit_for_tat, grim_trigger, schedule), table: FILE, "
                          "model: (same, or a model spec) or nature: {OUTCOME: PROBABILITY}")
    kind = v["strategy"]
    if kind not in STRATEGIES:
        raise c.err((*path, "strategy"), f"unknown strategy {kind!r}{did_you_mean(kind, STRATEGIES)}")
    c.mapping(v, path, {"strategy", *STRATEGIES[kind]}, required=tuple(STRATEGIES[kind]))
    p = Player(name, kind, path)
    if kind == "always":
        p.move = c.text(v, "move", path, required=True)
    elif kind == "schedule":
        p.schedule = [str(c.typed(x, (*path, "moves", i), (str, int), "a move"))
                      for i, x in enumerate(c.listed(v, "moves", path, required=True))]
        if not p.schedule:
            raise c.err((*path, "moves"), "a schedule lists at least one move")
    else:
        p.responds_to = c.text(v, "responds_to", path, required=True)
        for key in STRATEGIES[kind] - {"responds_to"}:
            setattr(p, key, c.text(v, key, path, required=True))
    return p


def _recorded(c, name: str, v, path, study) -> Player:
    from .spec import _plain, _table  # lazy: imports pandas, pyarrow

    d = c.mapping(v, path, TABLE, required=("table", "round", "move", "match"))
    df = _table(c, study, d["table"], (*path, "table"))
    for key in ("round", "move", "match"):
        col = c.text(d, key, path, required=True)
        if col not in df.columns:
            raise c.err((*path, key), f"column {col!r} is not in {d['table']}{did_you_mean(col, df.columns)}")
    p = Player(name, "table", path, match=d["match"])
    if d["match"] not in study.subjects.columns:
        raise c.err((*path, "match"), f"column {d['match']!r} is not a column of the subjects table "
                                      f"(design.subjects): it pairs each subject with a recorded person")
    for i, rec in enumerate(df.to_dict("records")):
        r = _round(rec[d["round"]])
        if r is None:
            raise c.err((*path, "round"), f"row {i + 2} of {d['table']}: round {rec[d['round']]!r} is not a "
                                          "whole number from 1")
        key = (_plain(rec[d["match"]]), r)
        if key in p.recorded:  # two moves for one round: which one is the person's is unknown
            raise c.err((*path, "round"), f"row {i + 2} of {d['table']}: a second move of {d['match']} = "
                                          f"{key[0]!r} in round {r}")
        move = _plain(rec[d["move"]])
        token = chat_control(move)
        if token:  # the move reaches the prompt: a chat template would read it as its own control token
            raise c.err((*path, "move"), f"row {i + 2} of {d['table']}: the move holds {token!r}, a chat control "
                                         "token; a recorded move is plain text")
        p.recorded[key] = move
    people = {k for k, _ in p.recorded}
    for s in study.subjects[d["match"]].map(_plain):
        if s not in people or (s, 1) not in p.recorded:
            raise c.err((*path, "match"), f"subject {d['match']} = {s!r} has no round-1 move in {d['table']}")
    return p


def _round(v) -> int | None:
    """A round number of a recorded table: a whole number from 1 (1, 1.0, "2"), else None (1.5, 0, "x")."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if f.is_integer() and 1 <= f <= 10**9 else None


def _model(c, name: str, v, path, named) -> Player:
    """A model player: checked here as far as it can be without a model (the spec's syntax, the
    local path's existence, a k-choice response); its placeholders are checked with the session."""
    from ..collect.models.spec import parse_spec  # lazy: imports numpy
    from .spec import parse_response  # lazy: imports pandas, pyarrow

    d = c.mapping(v, path, MODEL, required=("model", "text", "response"))
    spec, parsed = c.text(d, "model", path, required=True), None
    if spec != SAME:
        try:
            parsed = parse_spec(spec)
        except UserError as e:
            raise c.err((*path, "model"), f"{e} (or model: same, the subject's model)") from None
    resp = parse_response(c, d["response"], (*path, "response"), named)
    if resp.kind != "choice":
        raise c.err((*path, "response"), "a model player's move is a k-choice question (choice, yesno, likert)")
    return Player(name, "model", path, model=spec, spec=parsed, persona=c.text(d, "persona", path, ""),
                  text=c.text(d, "text", path, required=True), response=resp)


def _probability(c, v, path) -> float:
    """A declared probability: a number, or a fraction written as text ("1/8")."""
    if isinstance(v, str) and "/" in v:
        num, _, den = v.partition("/")
        try:
            p = float(num) / float(den)
        except (ValueError, ZeroDivisionError):
            raise c.err(path, f"{v!r} is not a probability (a number, or a fraction such as 1/8)") from None
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        p = float(v)
    else:
        raise c.err(path, f"{v!r} is not a probability (a number, or a fraction such as 1/8)")
    if not 0 <= p <= 1:
        raise c.err(path, f"a probability is in [0, 1], got {v!r}")
    return p


def _nature(c, name: str, v, path) -> Player:
    """A chance player: outcomes with declared probabilities that sum to 1."""
    d = c.mapping(v, path, NATURE, required=("nature",))
    raw = c.typed(d["nature"], (*path, "nature"), dict, "a mapping {OUTCOME: PROBABILITY}")
    if len(raw) < 2:
        raise c.err((*path, "nature"), "a chance player lists at least two outcomes")
    out = {str(k): _probability(c, p, (*path, "nature", k)) for k, p in raw.items()}
    if abs(sum(out.values()) - 1) > PROB_TOL:
        raise c.err((*path, "nature"), f"the probabilities sum to {sum(out.values()):g}, not 1")
    return Player(name, "nature", path, outcomes=out, draw=c.choice(d, "draw", path, DRAWS, "every_round"))
