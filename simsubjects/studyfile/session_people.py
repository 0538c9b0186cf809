"""`paths: people` (teacher forcing, issue 39): a session replayed on people's recorded decisions.

Each subject is a recorded person. Their path follows their own recorded answers instead of draws, and
the feedback is what they actually received: the other player's recorded moves replace the declared
strategy, payoffs and variables are computed from the recorded moves by the block's own rules, and a
block goes on to another round exactly when the person played one (the continuation is the data's).
At every decision the model's exact distribution over the options is scored (session_run.py, with
each path's keys and values reused step by step as for drawn paths), so the run's rows hold p(option)
for every option of every recorded decision. This follows Centaur's per-trial likelihood (Binz et
al., Nature 2025): each person's choices scored with their own earlier trials and feedback in context.

The study file names the recorded decisions (docs/people.md):

    session:
      paths: people
      people:
        file: decisions.csv          # one row per person x block x round
        condition: treatment         # optional: a subjects-table column, each person's condition
        columns: {person: person, block: supergame, round: round, choice: choice, partner: other}

`person`, `round` (and `block` where the session has more than one block) name columns of the file;
every other key is an item id (the person's answer) or a player name (that player's recorded move).
Everything is checked here, before a model loads: one line naming the file, the line and the key.
A recorded answer that is no option of its item is not an error: it is scored, the path goes on
with it, and `decision_frame` lists it in `unmatched` (never dropped silently).

`decision_frame(study, responses) -> (frame, unmatched)` is the one interface with the fit tables
(analyze/methods/fit.py, written by `analyze`): the contract's columns, one row per person x
decision x option.
"""

from __future__ import annotations

import pandas as pd

from .load import did_you_mean
from .spec import _table

FRAME_COLUMNS = ["person", "decision", "item", "round", "condition", "option", "p", "chosen", "model", "ablation",
                 "prev_own", "prev_other"]
UNMATCHED_COLUMNS = ["person", "decision", "item", "answer"]
KEYS = ("person", "block", "round")


def _plain(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return "" if v is None or (isinstance(v, float) and v != v) or v is pd.NA else str(v)


# ------------------------------------------------------------------------------------------ reading

def read_people(c, d: dict, s) -> None:
    """Read and check `session.people` (module docstring); sets session.recorded, one row per person x
    block x round with text values, and `row` (the file's line)."""
    sess, p = s.session, ("session", "people")
    if not sess.people:
        raise c.err(p, "people: names recorded decisions for paths: people; set session.paths: people")
    if d.get("people") is None:
        raise c.err(("session", "paths"), "paths: people replays recorded decisions: name them in "
                                          "session.people (file, columns)")
    h = c.mapping(d["people"], p, {"file", "columns", "condition"}, required=("file", "columns"))
    df = _table(c, s, h["file"], (*p, "file"))
    cols = c.typed(h["columns"], (*p, "columns"), dict, "a mapping")
    names = {str(k): c.text(cols, k, (*p, "columns"), required=True) for k in cols}
    _check_keys(c, sess, names, (*p, "columns"))
    for key, col in names.items():
        if col not in df.columns:
            raise c.err((*p, "columns", key), f"column {col!r} is not in {h['file']}{did_you_mean(col, df.columns)}")
    cond = c.text(h, "condition", p, "")
    subject_cols = [x for x in s.subjects.columns if x not in ("subject", "persona")]
    if cond and cond not in subject_cols:
        raise c.err((*p, "condition"), f"{cond!r} is not a column of the subjects table (design.subjects)"
                                       f"{did_you_mean(cond, subject_cols)}")
    rec = pd.DataFrame({k: df[col].map(_plain) for k, col in names.items()})
    rec["row"] = range(2, len(rec) + 2)  # the file's line (line 1: the header)
    if "block" not in names:
        rec["block"] = sess.blocks[0].id
    _check_rows(c, s, rec, str(h["file"]), names, p)
    rec["round"] = rec["round"].astype(int)
    sess.recorded = rec.reset_index(drop=True)
    sess.people_file, sess.people_condition = str(h["file"]), cond


def _check_keys(c, sess, names: dict, path) -> None:
    """person and round (and block, with several blocks) named; every item and replayed player named;
    no key that is neither; no model player (a replay has no model's move to record)."""
    items = {it.id for b in sess.blocks for it in b.items}
    used = {n for b in sess.blocks for n in b.players}
    for name in sorted(used):
        if sess.players[name].kind == "model":
            raise c.err(sess.players[name].where, f"player {name!r} is a model player: paths: people replays "
                                                  "recorded moves only (a strategy or chance player stands for the "
                                                  "other person)")
    need = ["person", "round", *(["block"] if len(sess.blocks) > 1 else []), *sorted(items), *sorted(used)]
    for k in need:
        if k not in names:
            what = "item" if k in items else "player" if k in used else "key"
            raise c.err(path, f"missing required key {k!r} (the column of {what} {k}'s recorded "
                              f"{'answers' if k in items else 'moves' if k in used else 'values'})")
    for k in names:
        if k not in need and k != "block":
            raise c.err((*path, k), f"{k!r} is neither person, block, round, an item nor a player of the session"
                                    f"{did_you_mean(k, need)}")


def _check_rows(c, s, rec: pd.DataFrame, file: str, names: dict, p) -> None:
    """Each row: a known person, a block of the session, a whole round within the block's max, once;
    a replayed player's move one of its moves; rounds 1, 2, ... without a gap; every subject recorded."""
    sess = s.session
    blocks = {b.id: b for b in sess.blocks}
    subjects = set(s.subjects["subject"].map(_plain))
    players = [n for n in names if n in sess.players]
    moves = {n: sess.players[n].moves_of(sess, None) for n in players}
    seen: set = set()
    for r in rec.to_dict("records"):
        at = f"line {r['row']} of {file}"
        if r["person"] not in subjects:
            raise c.err((*p, "columns", "person"), f"{at}: person {r['person']!r} is not in the subjects table "
                                                   "(design.subjects)")
        if r["block"] not in blocks:
            raise c.err((*p, "columns", "block"), f"{at}: block {r['block']!r} is not a block of the session "
                                                  f"({', '.join(blocks)})")
        rnd = r["round"]
        if not rnd.isdigit() or int(rnd) < 1:
            raise c.err((*p, "columns", "round"), f"{at}: round {rnd!r} is not a whole number from 1")
        if int(rnd) > blocks[r["block"]].rounds:
            raise c.err((*p, "columns", "round"), f"{at}: round {rnd} is beyond block {r['block']}'s rounds: max "
                                                  f"({blocks[r['block']].rounds})")
        key = (r["person"], r["block"], int(rnd))
        if key in seen:
            raise c.err((*p, "columns", "round"), f"{at}: person {key[0]} has round {key[2]} of block {key[1]} twice")
        seen.add(key)
        for n in players:
            if moves[n] and r[n] not in moves[n]:
                raise c.err((*p, "columns", n), f"{at}: {r[n]!r} is not a move of player {n} "
                                                f"({', '.join(moves[n])})")
    for (person, block), got in rec.groupby(["person", "block"], sort=False)["round"]:
        rounds = sorted(int(x) for x in got)
        if rounds != list(range(1, len(rounds) + 1)):
            raise c.err((*p, "columns", "round"), f"{file}: person {person} has rounds {rounds} of block {block}: "
                                                  "a round is missing (rounds run 1, 2, ...)")
    missing = sorted(subjects - set(rec["person"]))
    if missing:
        raise c.err(("design", "subjects"), f"subject {missing[0]!r} has no recorded decisions in {file} "
                                            "(paths: people: every subject is a recorded person)")


# ------------------------------------------------------------------------------------------ the run

def plan(sess) -> dict:
    """{person: {"blocks": [block ids in the order recorded], (block, round): {name: value}}}."""
    out: dict = {}
    for r in sess.recorded.to_dict("records"):
        mine = out.setdefault(r["person"], {"blocks": []})
        if r["block"] not in mine["blocks"]:
            mine["blocks"].append(r["block"])
        mine[(r["block"], int(r["round"]))] = r
    return out


# ------------------------------------------------------------------------------------------ the frame

def decision_frame(study, responses: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The decision frame of a `paths: people` run (fit39_contract: one row per person x decision x
    option) and `unmatched` (person, decision, item, answer): recorded answers that are no option of
    their item, scored by the model but never in the frame. An empty frame where the run is not one."""
    sess = getattr(study, "session", None)
    empty = pd.DataFrame(columns=FRAME_COLUMNS), pd.DataFrame(columns=UNMATCHED_COLUMNS)
    if sess is None or not sess.people or responses is None or responses.empty:
        return empty
    dec = responses[responses["condition"] == "decision"]
    if "player" in dec.columns:
        dec = dec[dec["player"].fillna("subject") == "subject"]
    if dec.empty:
        return empty
    rec = {(r["person"], r["block"], int(r["round"])): r for r in sess.recorded.to_dict("records")}
    other = next((n for b in sess.blocks for n in b.players), "")
    cond = {}
    if sess.people_condition:
        cond = dict(zip(study.subjects["subject"].map(_plain), study.subjects[sess.people_condition].map(_plain)))
    rows, unmatched = [], []
    ablation = dec["ablation"].fillna("") if "ablation" in dec.columns else pd.Series("", index=dec.index)
    for (trial, model, abl), g in dec.assign(ablation=ablation).groupby(["trial", "model", "ablation"], sort=False):
        first = g.iloc[0]
        person, block, item = _plain(first["subject"]), str(first["block"]), str(first["item"])
        rnd = int(first["round"])
        r = rec[(person, block, rnd)]
        answer, decision = r[item], f"{block}/r{rnd}/{item}"
        options = g["response"].astype(str).tolist()
        if answer not in options:
            unmatched.append({"person": person, "decision": decision, "item": item, "answer": answer})
            continue
        w = g["weight"].astype(float).to_numpy()
        prev = rec.get((person, block, rnd - 1))
        for opt, pr in zip(options, w / w.sum()):
            rows.append({"person": person, "decision": decision, "item": item, "round": rnd,
                         "condition": cond.get(person, ""), "option": opt, "p": float(pr), "chosen": opt == answer,
                         "model": str(model), "ablation": str(abl),
                         "prev_own": prev[item] if prev is not None else "",
                         "prev_other": prev[other] if prev is not None and other else ""})
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS)
    frame["round"] = frame["round"].astype("Int64")
    frame["chosen"] = frame["chosen"].astype(bool)
    # one row per recorded answer (not per model or ablation twin that scored it)
    return frame, pd.DataFrame(unmatched, columns=UNMATCHED_COLUMNS).drop_duplicates(ignore_index=True)
