"""Running a session study file: every subject's path step by step, every decision's exact distribution.

All paths advance together: at each step, the decisions of every running path (the subjects of a
round, and their paths) go to the model in one batch through the run's request cache (committed
before the next step), so a killed run re-reads the stored distributions, redraws the same answers
(seeded) and goes on where it stopped, with identical rows. A path continues with an answer drawn
from the decision's distribution (numpy `default_rng` seeded by (seed, subject, path)); with
`paths: enumerate` every option and every continuation outcome is a branch, carried with its exact
probability (`reach`), and the leaves of a subject's tree sum to 1. A chance player's outcome is
drawn the same way (its declared probabilities), or enumerated as branches. Each decision's exact
text is kept for the run folder's transcripts.jsonl (session_def.write_transcripts).

Rows (docs/studies.md, "Paths and rows"), told apart by `condition` as Milgram's are:
* "decision": one row per decision x option: weight = probability (exact) or count (sampled);
* "round": one row per path x round (enumerate: per tree node at a round's end) with the round's
  answers, moves, payoffs and variables; weight 1 (sampled) or the node's probability (enumerate);
* "path": one row per path (enumerate: per leaf) with its probability and final variables.
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import replace
from dataclasses import dataclass, field
from string import Template

import numpy as np
import pandas as pd

from ..errors import UserError
from . import expr as X
from .design import shown_options
from ..collect.models.base import ChoiceRequest, ChoiceResult
from ..collect.runner import cache_key, cached_map, progress
from .players import SAME
from .session import FillValues, SessionText
from ..collect.seeds import rng_from_text
from .session_people import plan

LEAF_TOLERANCE = 1e-9


_rng = rng_from_text  # (seed, subject, path, block, round): docs/studies.md


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


@dataclass
class Decision:
    state: "State"
    item: object  # SItem
    prompt: str
    question: str
    shown: list  # shown_options(...)
    rendered: str  # the question as shown (template filled)
    player: str = ""  # a model player's decision: its name ('' for the subject's)
    messages: tuple = ()  # chat turns ((role, content), ...): a chat model's request (prompt then '')
    orig: tuple = ()  # --ablate labels: the options' declared labels (the model is shown neutral ones)

    @property
    def completions(self) -> tuple[str, ...]:
        return tuple(s[2] for s in self.shown)


@dataclass
class State:
    """One path of one subject, with its program counter (block, round, position in the round)."""

    subject: str
    person: dict
    path: int
    rng: np.random.Generator | None
    blocks: list[int]
    reach: float = 1.0
    bi: int = 0
    round: int = 1
    order: list | None = None  # this round's sequence of item ids and player names
    pos: int = 0
    answers: dict = field(default_factory=dict)
    answer_hist: dict = field(default_factory=dict)  # item -> answers round by round ('' not shown)
    moves: dict = field(default_factory=dict)
    move_hist: dict = field(default_factory=dict)
    variables: dict = field(default_factory=dict)
    payoffs: dict = field(default_factory=dict)
    text: str = ""  # the transcript so far (memory: transcript)
    lines: str = ""  # question/answer lines (memory: answers)
    step: int = 1  # the number of the next decision in the path
    parent: str = ""
    key: tuple = ()  # branch indices (enumerate): orders the leaves
    hist: tuple = ()  # labels drawn
    named: tuple = ()  # the same, as "item=label" (the path row's answers)
    skip: str | None = None
    asked: list = field(default_factory=list)  # the path's requests so far (the chain of its keys/values)
    pending: tuple | None = None  # (continuation probability or None, more rounds) at a round's end
    done: bool = False
    validity: list = field(default_factory=list)  # this round's decisions' Z
    # model players: each one's own memory and chain of requests (replaced, never changed in place,
    # so the branches of an enumerated tree that share them stay apart)
    ptext: dict = field(default_factory=dict)
    pasked: dict = field(default_factory=dict)
    # chat turns (a chat template): the path's turns so far, where the text not yet in a turn starts
    # (intro, feedback), and each model player's own turns; tuples and dicts replaced, never changed
    turns: tuple = ()
    mark: int = 0
    pturns: dict = field(default_factory=dict)
    var_hist: dict = field(default_factory=dict)  # variable -> its values after each round (responds_to)
    kept: dict = field(default_factory=dict)  # chance players with draw: once -> the outcome drawn


class SessionRun:
    def __init__(self, study, model, method: str, n: int, paths: int | None, chat: bool = False,
                 ablation: str = "", twins: bool = False):
        self.study, self.sess, self.model = study, study.session, model
        self.chat = chat  # memory as chat turns (the model's chat template), else as text
        self.method, self.n = method, n
        self.paths = 1 if self.sess.enumerate or self.sess.people else int(paths or self.sess.paths)
        # --ablate: this run's twin ("" the full prompt); twins: the rows carry the `ablation` column
        self.ablation, self.twins = ablation, twins
        self.people = None
        if self.sess.people:
            self.people = plan(self.sess)  # person -> recorded blocks and their rounds' answers and moves
        self.relabel, self.relabeled = _relabeling(self.sess) if ablation == "labels" else ({}, {})
        self.relabel_re = (re.compile(r"(?<!\w)(" + "|".join(re.escape(x) for x in sorted(self.relabel, key=len,
                                                                                            reverse=True)) + r")(?!\w)")
                           if self.relabel else None)
        self.rows: list[dict] = []
        self.round_rows: list[dict] = []
        self.leaves: list[State] = []
        self.transcripts: list[dict] = []  # one record per decision: the exact text scored (transcripts.jsonl)
        self.spec = model.info.spec
        self.persona_cols = [c for c in study.subjects.columns if c not in ("subject", "persona")]

    # ---------------------------------------------------------------------------------- states
    def initial(self) -> list[State]:
        out = []
        nb = len(self.sess.blocks)
        for rec in self.study.subjects.to_dict("records"):
            s = str(rec["subject"])
            for p in range(1, self.paths + 1):
                blocks = list(range(nb))
                if self.sess.block_order == "randomized":
                    blocks = self.block_order(s, p)
                if self.people is not None:  # the blocks the person played, in the order recorded
                    ids = [b.id for b in self.sess.blocks]
                    blocks = [ids.index(b) for b in self.people[s]["blocks"]]
                rng = None if self.sess.enumerate or self.people is not None else _rng(self.study.seed, "path", s, p)
                out.append(State(s, rec, p, rng, blocks, variables=dict(self.sess.variables)))
        return out

    def block_order(self, subject: str, path: int) -> list[int]:
        """block_order: randomized: the blocks without a `position` in a seeded order (numpy default_rng
        from (seed, "blocks", subject, path): the permutation of their indices), between the
        `position: first` and `position: last` blocks in file order (docs/studies.md)."""
        idx = {k: [i for i, b in enumerate(self.sess.blocks) if b.position == k] for k in ("first", "", "last")}
        mid = idx[""]
        perm = _rng(self.study.seed, "blocks", subject, path).permutation(len(mid))
        return idx["first"] + [mid[int(i)] for i in perm] + idx["last"]

    def env(self, st: State) -> dict:
        return {"round": st.round, **{c: st.person[c] for c in self.persona_cols}, **st.variables,
                **st.answers, **st.moves, **st.payoffs}

    def fill(self, text: str, st: State) -> str:
        """A session text filled on this path (`${item:-TEXT}`: TEXT where the item was not shown)."""
        return self.shown(SessionText(text).substitute(FillValues({k: _fmt(v) for k, v in self.env(st).items()})))

    def shown(self, text: str) -> str:
        """--ablate labels: every declared option label in a text shown to the model (a whole word) replaced by
        its neutral label; otherwise the text itself."""
        if self.relabel_re is None:
            return text
        return self.relabel_re.sub(lambda m: self.relabel[m.group(1)], text)

    def recorded(self, st: State) -> dict:
        """paths: people: the person's recorded row of this block and round."""
        return self.people[st.subject][(self.sess.blocks[st.blocks[st.bi]].id, st.round)]

    def header(self, st: State, block) -> str:
        if self.ablation == "instructions":  # the system text, persona and block intro removed (docs/people.md)
            return ""
        parts = []
        if self.study.system:
            parts.append(self.fill(self.study.system, st))
        if st.person.get("persona"):
            parts.append(str(st.person["persona"]))
        head = "".join(p + "\n\n" for p in parts)
        if self.sess.memory != "transcript" and block.intro:
            head += self.fill(block.intro, st) + "\n\n"
        return head

    def node(self, st: State) -> str:
        twin = f"|{self.ablation}" if self.ablation else ""  # an ablation twin's trials apart from the full run's
        if self.sess.enumerate:
            return f"{st.subject}|e|{st.step}|{'.'.join(st.hist)}{twin}"
        return f"{st.subject}|p{st.path}|{st.step}{twin}"

    # ---------------------------------------------------------------------------------- program
    def advance(self, st: State):
        """Run `st` to its next decision (a Decision), a chance node (('chance', p)), or its end (None)."""
        sess = self.sess
        while True:
            if st.bi >= len(st.blocks):
                st.done = True
                return None
            b = sess.blocks[st.blocks[st.bi]]
            if st.order is None:  # a round starts
                seq = b.sequence or [it.id for it in b.items]
                if b.order == "randomized":
                    perm = _rng(self.study.seed, "items", st.subject, st.path, b.id, st.round).permutation(len(seq))
                    seq = [seq[int(i)] for i in perm]
                if b.sequence is None:  # simultaneous: players move on the rounds before, first
                    seq = [*b.players, *seq]
                st.order, st.pos, st.moves, st.payoffs, st.validity = seq, 0, {}, {}, []
                st.skip = None
                if self.ablation == "history":  # each decision sees its own round's text only
                    st.text, st.lines, st.turns, st.mark = "", "", (), 0
                if st.round == 1 and b.intro and sess.memory == "transcript" and self.ablation != "instructions":
                    st.text += self.fill(b.intro, st) + "\n\n"
                for it in b.items:
                    st.answers.pop(it.id, None)
            if st.pos >= len(st.order):
                chance = self.end_round(st, b)
                if chance is not None:
                    return chance
                continue
            name = st.order[st.pos]
            if name in b.players and sess.players[name].kind == "model":
                return self.player_decision(st, b, name)
            if name in b.players and sess.players[name].kind == "nature":
                if name not in st.kept:
                    return ("nature", name)
                self.nature_move(st, name, st.kept[name])  # draw: once, drawn earlier on this path
                continue
            if name in b.players:
                self.play(st, b, name)
                st.pos += 1
                continue
            it = next(x for x in b.items if x.id == name)
            if st.skip is not None and name != st.skip:
                self.unanswered(st, it)
                continue
            st.skip = None
            if it.show_if is not None and not self.eval(it.show_if, st, (*it.where, "show_if")):
                self.unanswered(st, it)
                continue
            return self.decision(st, b, it)

    def unanswered(self, st: State, it) -> None:
        st.answers[it.id] = ""
        st.answer_hist.setdefault(it.id, []).append("")
        st.pos += 1

    def play(self, st: State, b, name: str) -> None:
        p = self.sess.players[name]
        # the subject's answers so far: simultaneous players move first in a round, so these are the
        # rounds before; a sequential player sees the answers given before it in this round too
        answers = (st.var_hist if p.responds_to in self.sess.variables else st.answer_hist).get(p.responds_to, []) \
            if p.responds_to else []
        person = _plain(st.person.get(p.match)) if p.match else None
        move = p.play(st.round, st.move_hist.get(name, []), answers, person)
        if self.people is not None:  # paths: people: the other player's recorded move
            move = self.recorded(st)[name]
        st.moves[name] = move
        st.move_hist.setdefault(name, []).append(move)

    def nature_move(self, st: State, name: str, outcome: str, drawn: bool = False) -> None:
        """A chance player's outcome (drawn now, or kept from its one draw) as its move of the round."""
        st.moves[name] = outcome
        st.move_hist.setdefault(name, []).append(outcome)
        if drawn:
            st.hist += (outcome,)
            st.named += (f"{name}={outcome}",)
            if self.sess.players[name].draw == "once":
                st.kept = {**st.kept, name: outcome}
        st.pos += 1

    def eval(self, e: X.Expr, st: State, where):
        try:
            return X.evaluate(e, self.env(st))
        except X.ExprError as err:
            raise UserError(f"{self.study.source.error(where, str(err))} (subject {st.subject}, round "
                            f"{st.round})") from None

    def decision(self, st: State, b, it) -> Decision:
        r = it.item.response
        order = tuple(range(sum(not o.refusal for o in r.options)))
        orig = tuple(o[0].label for o in shown_options(r, order)) if it.id in self.relabeled else ()
        r = self.relabeled.get(it.id, r)
        shown = shown_options(r, order)
        question = self.fill(it.item.text, st)
        options = r.option_separator.join(s[3] for s in shown)
        fill = {"question": question, "options": options, "item": it.id, "persona": str(st.person.get("persona", "")),
                **{k: _fmt(v) for k, v in self.env(st).items()}}
        rendered = self.shown(Template(self.study.template).safe_substitute(fill))
        if self.chat:
            user = (st.text[st.mark:] if self.sess.memory == "transcript" else "") + rendered
            messages = self.system_turn(self.header(st, b)) + self.memory_turns(st.turns) + (
                ("user", user + self.fill(self.study.answer_prefix, st)),)
            return Decision(st, it, "", question, shown, rendered, messages=messages, orig=orig)
        memory = {"transcript": st.text, "answers": st.lines, "none": ""}[self.sess.memory]
        prompt = self.header(st, b) + memory + rendered + self.fill(self.study.answer_prefix, st)
        return Decision(st, it, prompt, question, shown, rendered, orig=orig)

    def system_turn(self, head: str) -> tuple:
        return (("system", head.strip()),) if head.strip() else ()

    def memory_turns(self, turns: tuple) -> tuple:
        return turns if self.sess.memory != "none" else ()

    def turn_pair(self, d: Decision, label: str, completion: str, before: str = "") -> tuple:
        """The chat turns a decision leaves in memory: transcript, the question as shown (after the
        text since the last turn: intro, feedback) and the answer; answers, the question and label."""
        if self.sess.memory == "answers":
            return (("user", d.question), ("assistant", self.shown(label)))
        return (("user", before + d.rendered + self.fill(self.study.answer_prefix, d.state)),
                ("assistant", completion.strip()))

    def player_decision(self, st: State, b, name: str) -> Decision:
        """A model player's move: its persona, its own memory (per session.memory) and its question."""
        p = self.sess.players[name]
        shown = shown_options(p.response, tuple(range(sum(not o.refusal for o in p.response.options))))
        question = self.fill(p.text, st)
        fill = {"question": question, "options": p.response.option_separator.join(x[3] for x in shown),
                "item": name, "persona": "", **{k: _fmt(v) for k, v in self.env(st).items()}}
        rendered = Template(self.study.template).safe_substitute(fill)
        head = self.fill(p.persona, st) + "\n\n" if p.persona else ""
        if self.chat:
            messages = self.system_turn(head) + self.memory_turns(st.pturns.get(name, ())) + (
                ("user", rendered + self.fill(self.study.answer_prefix, st)),)
            return Decision(st, None, "", question, shown, rendered, player=name, messages=messages)
        memory = st.ptext.get(name, "") if self.sess.memory != "none" else ""
        prompt = head + memory + rendered + self.fill(self.study.answer_prefix, st)
        return Decision(st, None, prompt, question, shown, rendered, player=name)

    def player_answer(self, d: Decision, label: str, completion: str) -> None:
        st, name = d.state, d.player
        st.moves[name] = label
        st.move_hist.setdefault(name, []).append(label)
        if self.sess.memory == "transcript":
            seen = d.rendered + self.fill(self.study.answer_prefix, st) + completion + "\n\n"
        else:
            seen = Template(self.sess.history).safe_substitute(question=d.question, answer=label)
        st.ptext = {**st.ptext, name: st.ptext.get(name, "") + seen}
        if self.chat:
            st.pturns = {**st.pturns, name: st.pturns.get(name, ()) + self.turn_pair(d, label, completion)}
        st.hist += (label,)
        st.named += (f"{name}={label}",)
        st.pos += 1

    def answer(self, d: Decision, label: str, completion: str) -> None:
        if d.player:
            return self.player_answer(d, label, completion)
        st, it = d.state, d.item
        st.answers[it.id] = label
        st.answer_hist.setdefault(it.id, []).append(label)
        if self.chat:
            st.turns = st.turns + self.turn_pair(d, label, completion, st.text[st.mark:])
        st.text += d.rendered + self.fill(self.study.answer_prefix, st) + completion + "\n\n"
        st.mark = len(st.text)
        st.lines += Template(self.sess.history).safe_substitute(question=d.question, answer=self.shown(label))
        st.hist += (label,)
        st.named += (f"{it.id}={label}",)
        st.pos += 1
        for e, to in it.skip_to:
            if e is None or self.eval(e, st, (*it.where, "skip_to")):
                if to == "end":
                    st.bi = len(st.blocks)
                    st.order = None
                elif to == "end_block":
                    st.pos = len(st.order)
                else:
                    st.skip = to
                break

    def end_round(self, st: State, b):
        """Payoffs, updates, feedback and the round's row; then a chance node or the next round/block."""
        if st.pending is None:
            if b.matrix:
                iid, pl = b.matrix_moves
                mine, theirs = b.matrix.get((st.answers.get(iid, ""), st.moves.get(pl, "")), (float("nan"),) * 2)
                st.payoffs.update({"payoff": mine, f"{pl}_payoff": theirs})
            for name, e in b.rules:
                st.payoffs[name] = self.eval(e, st, (*b.where, "payoffs", "rules", name))
            new = {k: self.eval(e, st, (*b.where, "update", k)) for k, e in b.update}
            st.variables.update(new)
            st.var_hist = {k: [*st.var_hist.get(k, []), v] for k, v in st.variables.items()}
            if b.feedback:
                fb = self.fill(b.feedback, st)
                st.text += fb + "\n\n"
            more = st.round < b.rounds
            cont = b.cont
            if self.people is not None:  # the block goes on exactly when the person played another round
                st.pending = (None, (b.id, st.round + 1) in self.people[st.subject])
                self.finish_round(st, b, None)
                return None
            if b.cont_expr is not None:
                cont = self.eval(b.cont_expr, st, (*b.where, "rounds", "continue"))
                if not 0 < cont <= 1:
                    raise UserError(self.study.source.error((*b.where, "rounds", "continue"),
                                                            f"continuation probability {cont!r} for subject "
                                                            f"{st.subject}: not in (0, 1]"))
            st.pending = (cont if (more and cont is not None and cont < 1) else None, more)
            if st.pending[0] is not None:
                return ("chance", st.pending[0])
        self.finish_round(st, b, None)
        return None

    def finish_round(self, st: State, b, go_on: bool | None) -> None:
        _, more = st.pending
        st.pending = None
        cont = more if go_on is None else go_on
        self.round_row(st, b, cont)
        if cont:
            st.round += 1
        else:
            st.bi, st.round = st.bi + 1, 1
        st.order = None

    def round_row(self, st: State, b, continued: bool) -> None:
        trial = f"{self.node(st)}|r{st.round}" if self.sess.enumerate else f"{st.subject}|p{st.path}|r{st.round}|{b.id}"
        row = {"study": self.study.name, "trial": trial, "item": b.id, "condition": "round", "subject": st.subject,
               "source": "model", "model": self.spec, "method": "session",
               "response": st.answers.get(b.matrix_moves[0], "") if b.matrix else "",
               "weight": st.reach if self.sess.enumerate else 1.0,
               "validity": float(np.mean(st.validity)) if st.validity else float("nan"),
               "round": st.round, "step": st.step - 1, "path": st.path, "parent": st.parent, "block": b.id,
               "reach": st.reach, "continued": int(continued), "_key": st.key,
               **{c: st.person[c] for c in self.persona_cols}, **self.twin()}
        for it in b.items:
            row[it.id] = st.answers.get(it.id, "")
        row.update({k: v for k, v in st.moves.items()})
        row.update({k: float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                    for k, v in st.payoffs.items()})  # a text rule (a carried-out move) stays text
        row.update({k: v for k, v in st.variables.items()})
        self.round_rows.append(row)

    # ---------------------------------------------------------------------------------- outcome
    def record(self, d: Decision, res: ChoiceResult, drawn: int | None) -> None:
        st = d.state
        trial = self.node(st)
        labels = list(d.orig) or [s[0].label for s in d.shown]  # the declared labels (--ablate labels too)
        for i, label in enumerate(labels):
            w = res.probs[i] if res.method == "exact" else float(res.counts[i])
            self.rows.append({"study": self.study.name, "trial": trial, "item": d.player or d.item.id,
                              "condition": "decision",
                              "subject": st.subject, "source": "model", "model": self.spec, "method": res.method,
                              "response": label, "weight": w, "validity": res.validity, "round": st.round,
                              "step": st.step, "path": st.path, "parent": st.parent,
                              "block": self.sess.blocks[st.blocks[st.bi]].id, "player": d.player or "subject",
                              "drawn": int(drawn is None or drawn == i), "reach": st.reach,
                              "question": d.question, "block_order": " | ".join(self.sess.blocks[i].id
                                                                                 for i in st.blocks),
                              "item_order": " | ".join(x for x in st.order if x not in self.sess.players),
                              "n_samples": res.n_samples, "n_queries": res.n_queries, "_key": st.key,
                              **{c: st.person[c] for c in self.persona_cols}, **self.twin()})

    def twin(self) -> dict:
        """The `ablation` column, on every row of a run with --ablate ("" on the full prompt's rows)."""
        return {"ablation": self.ablation} if self.twins else {}

    def chosen(self, d: Decision, j: int) -> tuple[str, str]:
        """(label, completion) the path goes on with: option j, or (j = -1, paths: people) the person's
        recorded answer that is no option, as its own text."""
        if j >= 0:
            return (d.orig[j] if d.orig else d.shown[j][0].label), d.shown[j][2]
        raw = self.recorded(d.state)[d.item.id]
        r = d.item.item.response
        return raw, Template(r.completion).safe_substitute(label=self.shown(raw), text=self.shown(raw), letter="")

    def recorded_index(self, d: Decision) -> int:
        """paths: people: the index of the person's recorded answer among the options (-1: none matches)."""
        raw = self.recorded(d.state)[d.item.id]
        labels = list(d.orig) or [s[0].label for s in d.shown]
        return labels.index(raw) if raw in labels else -1

    def transcript(self, d: Decision, text: str, res: ChoiceResult, drawn: int | None) -> None:
        """The decision's record in transcripts.jsonl: the exact text the model scored (the prompt, or the
        chat turns through the chat template, as the backend renders it), the completions scored after
        it, their probabilities and the option drawn (none when enumerated: every option is a branch)."""
        st = d.state
        self.transcripts.append({
            "trial": self.node(st), "subject": st.subject, "path": st.path, "step": st.step, "round": st.round,
            "block": self.sess.blocks[st.blocks[st.bi]].id, "item": d.player or d.item.id,
            "player": d.player or "subject", "text": text, "messages": [list(m) for m in d.messages],
            "completions": list(d.completions), "labels": [x[0].label for x in d.shown],
            "probs": [float(x) for x in res.probs], "method": res.method,
            "drawn": None if drawn is None or drawn < 0 else d.shown[drawn][0].label, "_key": st.key,
            **({"recorded": self.recorded(st)[d.item.id]} if self.people is not None and not d.player else {}),
            **self.twin()})


def _relabeling(sess) -> tuple[dict, dict]:
    """--ablate labels: ({declared label: neutral label}, {item id: the Response with neutral labels}). The
    declared labels become the letters A, B, ... that are no declared label, in the order the file declares
    them (Option 1, Option 2, ... past 26), so a text that names an option names its neutral label."""
    labels = list(dict.fromkeys(o.label for b in sess.blocks for it in b.items for o in it.item.response.options))
    letters = [chr(ord("A") + i) for i in range(26) if chr(ord("A") + i) not in labels]
    ok = len(labels) <= len(letters)
    # distinct labels get distinct neutral ones (first come, first lettered): no two options of an item meet
    relabel = {lab: letters[i] if ok else f"Option {i + 1}" for i, lab in enumerate(labels)}
    responses = {}
    pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(x) for x in sorted(relabel, key=len, reverse=True))
                         + r")(?!\w)") if relabel else None

    def sub(text):
        return pattern.sub(lambda m: relabel[m.group(1)], text) if text is not None and pattern else text
    for b in sess.blocks:
        for it in b.items:
            r = it.item.response
            responses[it.id] = replace(r, options=[replace(o, label=relabel[o.label], text=sub(o.text),
                                                           completion=sub(o.completion)) for o in r.options])
    return relabel, responses


def _plain(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return "" if v is None else str(v)


def _draw(probs, u: float) -> int:
    acc = 0.0
    for i, p in enumerate(probs):
        acc += p
        if u < acc:
            return i
    return max(i for i, p in enumerate(probs) if p > 0)


def collect_session(study, model, cache, params: dict, show_progress: bool = True, sink: list | None = None):
    """(responses, stats, None): every path of every subject, run in lockstep through the cache; `sink`
    (a list) receives the decisions' transcript records. With `ablate` in params (--ablate), each
    ablation's twin runs after the full prompt's, into the same rows with the `ablation` column."""
    t0 = time.perf_counter()
    method = params.get("method", "exact")
    n = int(params.get("n") or 50)
    chunk = int(params.get("batch_size") or 64)
    chat = bool(params.get("chat_template") or study.chat_template)
    ablations = ["", *params.get("ablate", ())]
    runs = [SessionRun(study, model, method, n, params.get("paths"), chat, a, len(ablations) > 1) for a in ablations]
    chain_of: dict[int, list] = {}  # id(request) -> the earlier requests of its path (or player)
    askers = {SAME: _asker(model, method, chain_of)}  # model spec -> (fingerprint, ask)
    models = {SAME: model}
    for p in runs[0].sess.players.values():  # another model spec: loaded once, asked through the same cache
        if p.kind == "model" and p.model not in askers:
            from ..collect.models import load_model  # lazy: looked up per call (tests replace load_model)

            models[p.model] = load_model(p.spec, chat_template=chat)
            askers[p.model] = _asker(models[p.model], method, chain_of)
    starts = [run.initial() for run in runs]
    totals = {"failures": [], "queries": 0, "asked": 0}
    with progress(sum(map(len, starts)), f"{study.name} paths ({model.info.spec})", show_progress) as bar:
        for run, states in zip(runs, starts):
            _walk(run, states, askers, models, cache, chain_of, method, chunk, bar, totals)
    rows = [r for run in runs for r in _finish(run)]
    failures, asked = totals["failures"], totals["asked"]
    total = sum(1 for r in rows if r["condition"] == "decision")
    stats = {"trials": asked, "answered": asked - len(failures), "rows": len(rows), "failures": failures,
             "short": [], "queries": totals["queries"], "paths": sum(len(run.leaves) for run in runs),
             "mean_validity": float(np.mean([r["validity"] for r in rows if r["condition"] == "decision"]))
             if total else None, "seconds": round(time.perf_counter() - t0, 3)}
    if sink is not None:
        sink[:] = [x for run in runs for x in run.transcripts]
    return pd.DataFrame(rows), stats, None


def _walk(run: SessionRun, states, askers, models, cache, chain_of, method, chunk, bar, totals) -> None:
    """Every path of one run (the full prompt, or one ablation's twin) to its end, step by step."""
    while states:
        pending, nxt = [], []
        for st in states:
            more, decisions = _advance(run, st)
            nxt += more
            pending += decisions
        finished = [s for s in nxt if s.done]
        run.leaves += finished
        bar.update(0 if run.sess.enumerate else len(finished))
        if not pending:
            break
        reqs = [ChoiceRequest(d.prompt, d.completions, run.n, d.messages) for d in pending]
        chain_of.clear()
        for d, rq in zip(pending, reqs):
            chain_of[id(rq)] = d.state.pasked.get(d.player, []) if d.player else d.state.asked
        results, fails = _ask_by_model(run, askers, cache, pending, reqs, method, chunk)
        totals["asked"] += len(reqs)
        grown = []
        for i, (d, res, rq) in enumerate(zip(pending, results, reqs)):
            st = d.state
            if d.player:  # new lists and dicts: branches of an enumerated tree share the old ones
                st.pasked = {**st.pasked, d.player: st.pasked.get(d.player, []) + [rq]}
            else:
                st.asked = st.asked + [rq]
            if res is None or not np.isfinite(res.probs).all():
                totals["failures"].append({"trial": run.node(st), "reason": fails.get(i, "no valid answer")})
                continue
            totals["queries"] += res.n_queries
            st.validity.append(res.validity)
            grown += _outcome(run, d, res, _scored_text(models[run.sess.players[d.player].model if d.player
                                                               else SAME], rq))
        states = []
        for d, st, j in grown:  # st: the path (or, enumerating, the branch) that answered option j
            st.parent = run.node(st) if not run.sess.enumerate else run.node(d.state)
            st.step += 1
            label, completion = run.chosen(d, j)
            run.answer(Decision(st, d.item, d.prompt, d.question, d.shown, d.rendered, d.player, d.messages, d.orig),
                       label, completion)
            states.append(st)


def _outcome(run: SessionRun, d: Decision, res: ChoiceResult, text: str) -> list[tuple]:
    """A scored decision's rows and transcript, and the (decision, path, option) each path goes on with:
    enumerated, a branch per option; paths: people, the person's recorded answer (-1: no option);
    else an option drawn from the distribution."""
    st = d.state
    if run.sess.enumerate:
        grown = []
        for j, p in enumerate(res.probs):
            if p <= 0:
                continue
            child = _branch(st, j)
            child.reach = st.reach * p
            grown.append((d, child, j))
        run.record(d, res, None)
        run.transcript(d, text, res, None)
        return grown
    j = run.recorded_index(d) if run.people is not None else _draw(res.probs, float(st.rng.random()))
    run.record(d, res, j)
    run.transcript(d, text, res, j)
    if j >= 0:
        st.reach *= res.probs[j]
    return [(d, st, j)]


def _scored_text(model, rq: ChoiceRequest) -> str:
    """The text a backend scores the completions after (a local model renders chat turns through its
    chat template: `request_text`); a server is sent the prompt, or the turns as messages."""
    if hasattr(model, "request_text"):
        return model.request_text(rq)
    return rq.prompt


def _asker(model, method: str, chain_of: dict):
    """(fingerprint, ask) of one model: a local model reuses each path's keys/values along its chain."""
    from ..collect.models.incremental import PathScorer, supports  # lazy: imports torch, transformers

    if method == "exact" and supports(model):
        scorer = PathScorer(getattr(model, "inner", model))
        priced = getattr(model, "check_choose", None)  # --max-cost (collect/budget.py): each step priced first

        def ask(rs):
            if priced is not None:
                priced(rs, method)
            return scorer.choose(rs, [chain_of[id(r)] for r in rs])
        return model.fingerprint(), ask
    # a server (chat turns are text here), or sampled answers: the decisions of a step in one batch
    return model.fingerprint(), lambda rs: model.choose(rs, method=method)


def _ask_by_model(run, askers, cache, pending, reqs, method, chunk):
    """A step's requests, each to its model (the subject's, or a model player's own), through the
    run's cache; results in the order of `pending`, so the seeded draws do not depend on the grouping."""
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(pending):
        spec = run.sess.players[d.player].model if d.player else SAME
        groups.setdefault(spec, []).append(i)
    results: list = [None] * len(reqs)
    fails: dict = {}
    for spec, idx in groups.items():
        fp, ask = askers[spec]
        sub = [reqs[i] for i in idx]
        got, bad = cached_map(cache, sub, [cache_key(fp, r, method) for r in sub], ask,
                              lambda v: ChoiceResult(**v), chunk)
        for k, i in enumerate(idx):
            results[i] = got[k]
        fails.update({idx[k]: why for k, why in bad.items()})
    return results, fails


def _branch(st: State, j: int) -> State:
    child = copy.copy(st)
    for k in ("answers", "answer_hist", "moves", "move_hist", "variables", "payoffs", "validity", "var_hist"):
        v = getattr(st, k)
        setattr(child, k, copy.deepcopy(v))
    child.key = st.key + (j,)
    return child


def _advance(run: SessionRun, st: State) -> tuple[list[State], list[Decision]]:
    """Run `st` through chance nodes to its next decision: the states (one, or its branches) and their decisions."""
    states, decisions, todo = [], [], [st]
    while todo:
        s = todo.pop(0)
        res = run.advance(s)
        if isinstance(res, tuple) and res[0] == "nature":  # a chance player's draw
            todo += _nature(run, s, res[1])
            continue
        if isinstance(res, tuple):  # a continuation draw after a round
            b = run.sess.blocks[s.blocks[s.bi]]
            p = res[1]
            if run.sess.enumerate:  # both outcomes, each with its probability
                for go, w in ((False, 1 - p), (True, p)):
                    child = _branch(s, int(go))
                    child.reach = s.reach * w
                    run.finish_round(child, b, go)
                    todo.append(child)
            else:
                go = bool(s.rng.random() < p)
                s.reach *= p if go else 1 - p
                run.finish_round(s, b, go)
                todo.append(s)
            continue
        states.append(s)
        if res is not None:
            decisions.append(res)
    return states, decisions


def _nature(run: SessionRun, s: State, name: str) -> list[State]:
    """A chance player's draw: enumerated, one branch per outcome with its probability; sampled, the
    next number u of the path's generator against the cumulative probabilities (as a decision's)."""
    p = run.sess.players[name]
    labels, probs = list(p.outcomes), list(p.outcomes.values())
    if run.people is not None:  # paths: people: the outcome the person met (its probability in reach)
        label = run.recorded(s)[name]
        s.reach *= p.outcomes[label]
        run.nature_move(s, name, label, drawn=True)
        return [s]
    if run.sess.enumerate:
        out = []
        for j, (label, w) in enumerate(zip(labels, probs)):
            if w > 0:
                child = _branch(s, j)
                child.reach = s.reach * w
                run.nature_move(child, name, label, drawn=True)
                out.append(child)
        return out
    j = _draw(probs, float(s.rng.random()))
    s.reach *= probs[j]
    run.nature_move(s, name, labels[j], drawn=True)
    return [s]


def _finish(run: SessionRun) -> list[dict]:
    """Number the paths (enumerate: leaves in branch order), add the path rows, drop helper keys."""
    sess = run.sess
    rows = run.rows + run.round_rows
    if sess.enumerate:
        by_subject: dict[str, list[State]] = {}
        for leaf in run.leaves:
            by_subject.setdefault(leaf.subject, []).append(leaf)
        first: dict[tuple, int] = {}
        for s, leaves in by_subject.items():
            leaves.sort(key=lambda x: x.key)
            total = sum(x.reach for x in leaves)
            if abs(total - 1) > LEAF_TOLERANCE:
                raise UserError(f"{run.study.file}: the leaves of subject {s}'s tree sum to {total!r}, not 1; "
                                "report this as a bug")
            for k, leaf in enumerate(leaves, 1):
                leaf.path = k
                for m in range(len(leaf.key) + 1):
                    first.setdefault((s, leaf.key[:m]), k)
        for r in rows + run.transcripts:
            r["path"] = first.get((r["subject"], r["_key"]), r["path"])
    paths = []
    for leaf in run.leaves:
        twin = f"|{run.ablation}" if run.ablation else ""
        paths.append({"study": run.study.name, "trial": f"{leaf.subject}|path{leaf.path}{twin}", "item": "path",
                      "condition": "path", "subject": leaf.subject, "source": "model", "model": run.spec,
                      "method": "session", "response": "; ".join(leaf.named),
                      "weight": leaf.reach if sess.enumerate else 1.0, "validity": float("nan"),
                      "round": leaf.round, "step": leaf.step - 1, "path": leaf.path, "parent": leaf.parent,
                      "reach": leaf.reach, **{k: v for k, v in leaf.variables.items()}, **run.twin()})
    out = rows + paths
    for r in out + run.transcripts:
        r.pop("_key", None)
    return out
