"""The survey as a session (docs/studies.md, "Sessions"): DIR/session.yaml beside study.yaml.

A session keeps what study.yaml cannot: the blocks in order with each earlier answer in the
transcript, display logic as `show_if` and skip logic as `skip_to` (where their conditions are
answers to earlier questions), and a randomizer's arm as a column of the subjects table that the
arm's items are shown on. Sessions score k-choice decisions only (choice, yes/no), and have no
human rows yet, so numeric and text items and the respondents stay in study.yaml.
"""

from __future__ import annotations

import re
from itertools import combinations, permutations

from .build import Conversion, Item, Note, response_yaml
from .qsf import _entries

LOCATOR = re.compile(r"^q://(QID[0-9]+)/(SelectableChoice|SelectableAnswer)/([0-9]+)(?:/([0-9]+))?$")
IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
MAX_CONDITION = 4000  # characters of one show_if


def _quote(text: str) -> str | None:
    """A text in an expression: single-quoted; a text holding a quote cannot be written (None)."""
    return None if "'" in text or "\\" in text else f"'{text}'"


class _Logic:
    """Qualtrics logic (`{"0": {"0": {Expression}, "1": {...}, "Type": "If"}, "Type": "BooleanExpression"}`)
    as an expression over earlier answers, or None with the reason it cannot be."""

    def __init__(self, conv: Conversion, before: dict[str, Item], ids: dict[str, str], visible: dict | None = None):
        self.conv = conv
        self.ids = ids  # item id -> session item id
        self.visible = visible or {}  # session item id -> its show_if (an item not shown has no answer)
        self.before = before  # item id -> Item, the items asked before this one
        self.by_qid: dict[str, list[Item]] = {}
        for it in before.values():
            self.by_qid.setdefault(it.qid, []).append(it)

    def expr(self, logic) -> tuple[str | None, str]:
        groups = []
        for g in _entries(logic if isinstance(logic, dict) else {}):
            if not isinstance(g, dict):
                continue
            parts = []
            for e in _entries({k: v for k, v in g.items() if k not in ("Type",)}):
                if not isinstance(e, dict) or e.get("Type") != "Expression":
                    continue
                one, why = self.expression(e)
                if one is None:
                    return None, why
                conj = str(e.get("Conjuction") or "").lower()
                parts.append((conj, one))
            if parts:
                text = parts[0][1]
                for conj, one in parts[1:]:
                    text = f"({text}) {'or' if conj == 'or' else 'and'} ({one})"
                groups.append(text)
        if not groups:
            return None, "no condition found"
        return " and ".join(f"({g})" for g in groups) if len(groups) > 1 else groups[0], ""

    def expression(self, e: dict) -> tuple[str | None, str]:
        if e.get("LogicType") != "Question":
            return None, f"a {e.get('LogicType')} condition (only answers to earlier questions convert)"
        op = e.get("Operator")
        if op not in ("Selected", "NotSelected"):
            return None, f"operator {op} (only Selected / Not Selected convert)"
        m = LOCATOR.match(str(e.get("LeftOperand") or e.get("ChoiceLocator") or ""))
        if not m:
            return None, f"locator {e.get('LeftOperand')!r}"
        qid, kind, cid, aid = m.groups()
        items = self.by_qid.get(qid, [])
        if not items:
            return None, f"it refers to {qid}, which is not asked before in the session"
        neg = op == "NotSelected"
        if aid is not None:  # a matrix cell: statement cid, answer aid
            single = [it for it in items if it.kind == "choice" and it.imports[:1] == [f"{qid}-{cid}"]]
            target = single[0] if single else None
            opt = next((o for o in target.options if o.choice_id == aid), None) if target else None
            if target is None or opt is None:
                return None, f"matrix cell {qid}/{cid}/{aid} is not a single-answer item"
            return self._cmp(self.ids[target.id], opt.label, neg)
        check = [it for it in items if it.kind == "yesno" and it.imports[:1] == [f"{qid}-{cid}"]]
        if check:
            return self._cmp(self.ids[check[0].id], "Yes", neg)
        one = [it for it in items if it.kind == "choice"]
        opt = next((o for o in one[0].options if o.choice_id == cid), None) if one else None
        if opt is None:
            return None, f"choice {qid}/{cid} is not an option of an imported item"
        return self._cmp(self.ids[one[0].id], opt.label, neg)

    def _cmp(self, iid: str, label: str, neg: bool) -> tuple[str | None, str]:
        """`iid == 'label'`; an item that may be hidden is read only where it was shown (its show_if first:
        `and` stops there), since a hidden item has no answer; "not selected" holds where it was hidden."""
        q = _quote(label)
        if not IDENT.fullmatch(iid):
            return None, f"item id {iid!r} is not a name an expression can use"
        if q is None:
            return None, f"option {label!r} holds a quote"
        atom = f"{iid} == {q}"
        if self.visible.get(iid):
            atom = f"({self.visible[iid]}) and ({atom})"
        return (f"not ({atom})" if neg else atom), ""


MAX_RANKED = 5  # options of a rank question expanded into sequential choices (items: 1 + sum of C(k, j))


def _later_ranks(it: Item, first: dict, ids: dict, notes: list, visible: dict) -> list[dict]:
    """A rank-order question as sequential exact choices: the first from all options (the item `first`),
    then, for each set S of options already ranked, the next from the rest (shown where the earlier picks
    were exactly S), so the enumerated paths give the full ranking distribution exactly."""
    labels = [o.label for o in it.options]
    k = len(labels)
    if k > MAX_RANKED or any("'" in x for x in labels):
        notes.append(Note(it.qid, it.qtype, f"{it.id}: ranks after the first not written ({k} options; at most "
                                            f"{MAX_RANKED} are expanded into sequential choices)"))
        return []
    base = visible.get(first["id"])
    cid = {o.label: o.choice_id for o in it.options}

    def name(chosen) -> str:
        return f"{first['id']}_after_" + "_".join(sorted(cid[x] for x in chosen))

    def chain(order) -> str:
        parts = [f"{first['id']} == '{order[0]}'"]
        for j in range(1, len(order)):
            parts.append(f"{name(order[:j])} == '{order[j]}'")
        return " and ".join(parts)

    out = []
    for j in range(1, k - 1):  # the last rank is what is left
        for chosen in combinations(labels, j):
            rest = [x for x in labels if x not in chosen]
            cond = " or ".join(f"({chain(p)})" for p in permutations(chosen))
            show = f"({base}) and ({cond})" if base else cond
            text = (f"{first['text'].rsplit(chr(10), 1)[0]}\nAlready ranked: {', '.join(chosen)}.\n"
                    f"Which of the remaining options do you rank next?")
            out.append({"id": name(chosen), "text": text,
                        "response": {"type": "choice", "options": [{"label": x} for x in rest]}, "show_if": show})
            visible[name(chosen)] = show
    return out


def _exclusive(q, it: Item, items: list[Item], ids: dict, notes: list, visible: dict) -> list[str]:
    """A check-all option that clears the others ("None of these"), listed last: asked only if no other
    option of the question was selected, so the exclusivity holds exactly."""
    if it.kind != "yesno" or q.type != "MC":
        return []
    cid = it.imports[0].split("-", 1)[1] if it.imports and "-" in it.imports[0] else ""
    choice = next((c for c in q.choices if c.id == cid), None)
    if choice is None or not choice.exclusive:
        return []
    siblings = [x for x in items if x.qid == q.qid and x is not it]
    if any(items.index(x) > items.index(it) for x in siblings):
        notes.append(Note(q.qid, q.kind, f"exclusive option {choice.text!r} is not listed last; not enforced"))
        return []
    return [f"{ids[x.id]} == 'No'" for x in siblings]  # the siblings share this item's visibility


def _session_ids(items: list[Item]) -> dict[str, str]:
    """Session item ids are names an expression can use: other characters become _, unique, not reserved."""
    from ..spec import SESSION_RESERVED  # lazy: imports pandas, pyarrow

    out, taken = {}, set()
    for it in items:
        sid = re.sub(r"[^A-Za-z0-9_]", "_", it.id)
        if not sid[:1].isalpha() or sid in SESSION_RESERVED:
            sid = f"q_{sid}"
        base, k = sid, 2
        while sid in taken:
            sid, k = f"{base}_{k}", k + 1
        taken.add(sid)
        out[it.id] = sid
    return out


def _skipped(conv: Conversion, items: list[Item], ids: dict, notes: list) -> dict[str, list]:
    """Skip logic as conditions on the questions it skips: "if Q1 is X, skip to Q4" = every item between Q1
    and Q4 is shown only if not (Q1 == X); to the end of the block or survey likewise (exact, and the
    condition reads an earlier answer, as show_if must)."""
    out: dict[str, list[str]] = {}
    order = [it.id for it in items]
    for q in conv.survey.questions.values():
        own = [it for it in items if it.qid == q.qid]
        seen = set()
        for sk in q.payload.get("_SkipLogic") or []:
            key = (sk.get("Condition"), sk.get("ChoiceLocator") or sk.get("Locator"))
            if key in seen:  # Qualtrics applies the first skip whose condition holds: a repeat never fires
                continue
            seen.add(key)
            if not own:
                notes.append(Note(q.qid, q.kind, "skip logic on a question that is not in the session"))
                break
            last = order.index(own[-1].id)
            before = {it.id: it for it in items[:last + 1]}
            cond = {"Type": "Expression", "LogicType": "Question", "Operator": sk.get("Condition"),
                    "LeftOperand": sk.get("ChoiceLocator") or sk.get("Locator")}
            e, why = _Logic(conv, before, ids).expression(cond)  # convertible? (the guarded form comes later)
            dest = str(sk.get("SkipToDestination") or "")
            block = own[-1].block
            later = items[last + 1:]
            if dest == "ENDOFSURVEY":
                skipped = later
            elif dest == "ENDOFBLOCK":
                skipped = [it for it in later if it.block == block]
            else:
                stop = next((i for i, it in enumerate(later) if it.qid == dest), None)
                if stop is None or any(it.block != block for it in later[:stop]):
                    e, why = None, f"destination {dest} is not later in the block"
                skipped = later[:stop or 0]
            if e is None:
                notes.append(Note(q.qid, q.kind, f"skip logic not converted ({why}); the questions after it are "
                                                 "asked of every subject"))
                continue
            for it in skipped:
                out.setdefault(it.id, []).append((before, cond))
    return out


def session_yaml(conv: Conversion, subjects: int, study_name: str) -> tuple[dict, list[dict], list[Note]]:
    """(session.yaml data, the subjects table rows, notes of what the session leaves out)."""
    s = conv.survey
    notes: list[Note] = []
    # --merge-arms: the session shows each arm its own items on the arm's column (as without merging)
    every = [x for it in conv.items for x in (it.merged.values() if it.merged else [it])]
    for it in every:
        if it.kind not in ("choice", "yesno", "rank_first"):
            notes.append(Note(it.qid, it.qtype, f"{it.id}: sessions score k-choice decisions only; this {it.kind} "
                                                "item is in study.yaml, not session.yaml"))
    items = [it for it in every if it.kind in ("choice", "yesno", "rank_first")]
    ids = _session_ids(items)
    skips = _skipped(conv, items, ids, notes)
    blocks, before, taken, branch_noted, visible = [], {}, set(), set(), {}
    for bid in s.order:
        bname = s.blocks[bid].name
        slug = re.sub(r"[^a-z0-9]+", "_", bname.lower()).strip("_") or "block"
        while slug in taken:
            slug += "_"
        taken.add(slug)
        out = []
        for it in [x for x in items if x.block == bname]:
            text = f"{it.context}\n\n{it.text}" if it.context else it.text
            d = {"id": ids[it.id], "text": text.replace("$", "$$"), "response": response_yaml(it)}
            conds = [f"{it.arm[0]} == '{it.arm[1]}'"] if it.arm else []
            logic_of = _Logic(conv, before, ids, visible)
            for fid, logic in s.branches.get(bid, []):  # a block under a branch: shown where the branch holds
                e, why = logic_of.expr(logic)
                if e is None:
                    if (fid, it.block) not in branch_noted:
                        branch_noted.add((fid, it.block))
                        notes.append(Note(fid, "Branch", f"branch not converted ({why}); block {it.block!r} is "
                                                         "shown to every subject"))
                else:
                    conds.append(e)
            q = s.questions[it.qid]
            if q.payload.get("DisplayLogic"):
                e, why = logic_of.expr(q.payload["DisplayLogic"])
                if e is None:
                    notes.append(Note(it.qid, it.qtype, f"{it.id}: display logic not converted ({why}); shown to "
                                                        "every subject"))
                else:
                    conds.append(e)
            for src_before, cond in skips.get(it.id, []):
                e, _ = _Logic(conv, src_before, ids, visible).expression(cond)
                if f"not ({e})" not in conds:
                    conds.append(f"not ({e})")
            conds += _exclusive(q, it, items, ids, notes, visible)
            if conds:
                d["show_if"] = " and ".join(f"({c})" for c in conds) if len(conds) > 1 else conds[0]
                if len(d["show_if"]) > MAX_CONDITION:  # guards nest: a deep chain of logic is listed, not written
                    notes.append(Note(it.qid, it.qtype, f"{it.id}: its logic nests too deep to write "
                                                        f"({len(d['show_if'])} characters); shown to every subject"))
                    del d["show_if"]
                else:
                    visible[ids[it.id]] = d["show_if"]
            out.append(d)
            before[it.id] = it
            if it.kind == "rank_first":
                out += _later_ranks(it, d, ids, notes, visible)
        if out:
            blocks.append({"id": slug, "items": out})
    renamed = [f"{a} -> {b}" for a, b in ids.items() if a != b]
    if renamed:
        notes.append(Note("(items)", "ids", f"session item ids are names: {', '.join(renamed[:12])}"
                                            + (f" and {len(renamed) - 12} more" if len(renamed) > 12 else "")))
    rows = []
    for k in range(subjects):
        row, div = {"id": f"s{k + 1}"}, 1
        for f in conv.factors:  # crossed and balanced: subject k's cell is k written in mixed radix
            levels = list(f.levels)
            row[f.name] = levels[(k // div) % len(levels)]
            div *= len(levels)
        rows.append(row)
    design = {"seed": 0}
    if conv.factors:
        design["subjects"] = {"table": "subjects.csv", "id": "id", "template": "You are taking part in a survey."}
    else:
        design["subjects"] = subjects
    data = {"study": f"{study_name}-session"[:60], "title": f"{s.name} (imported from Qualtrics, as a session)",
            "citation": f"Qualtrics survey {s.id or s.file.name} ({s.file.name})",
            "description": "Written by `simsubjects study import qualtrics`: the survey's blocks in order, display "
                           "and skip logic; see IMPORT_NOTES.md.",
            "prompt": {"template": "${question}\n${options}", "answer_prefix": "\nAnswer:"}, "design": design,
            "session": {"memory": "transcript", "blocks": blocks}}
    return data, rows, notes
