"""The survey as a session (docs/studies.md, "Sessions"): DIR/session.yaml beside study.yaml.

A session keeps what study.yaml cannot: the blocks in order with each earlier answer in the
transcript, display logic as `show_if` and skip logic as `skip_to` (where their conditions are
answers to earlier questions), and a randomizer's arm as a column of the subjects table that the
arm's items are shown on. Sessions score k-choice decisions only (choice, yes/no), and have no
human rows yet, so numeric and text items and the respondents stay in study.yaml.
"""

from __future__ import annotations

import re

from .build import Conversion, Item, Note
from .qsf import _entries

LOCATOR = re.compile(r"^q://(QID[0-9]+)/(SelectableChoice|SelectableAnswer)/([0-9]+)(?:/([0-9]+))?$")
IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _quote(text: str) -> str | None:
    """A text in an expression: single-quoted; a text holding a quote cannot be written (None)."""
    return None if "'" in text or "\\" in text else f"'{text}'"


class _Logic:
    """Qualtrics logic (`{"0": {"0": {Expression}, "1": {...}, "Type": "If"}, "Type": "BooleanExpression"}`)
    as an expression over earlier answers, or None with the reason it cannot be."""

    def __init__(self, conv: Conversion, before: dict[str, Item]):
        self.conv = conv
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
            single = [it for it in items if it.id.endswith(f"_{cid}") and it.kind == "choice"]
            target = single[0] if single else None
            opt = next((o for o in target.options if o.choice_id == aid), None) if target else None
            if target is None or opt is None:
                return None, f"matrix cell {qid}/{cid}/{aid} is not a single-answer item"
            return self._cmp(target.id, opt.label, neg)
        check = [it for it in items if it.kind == "yesno" and it.columns and it.imports[0] == f"{qid}-{cid}"]
        if check:
            return self._cmp(check[0].id, "Yes", neg)
        one = [it for it in items if it.kind == "choice"]
        opt = next((o for o in one[0].options if o.choice_id == cid), None) if one else None
        if opt is None:
            return None, f"choice {qid}/{cid} is not an option of an imported item"
        return self._cmp(one[0].id, opt.label, neg)

    @staticmethod
    def _cmp(iid: str, label: str, neg: bool) -> tuple[str | None, str]:
        q = _quote(label)
        if not IDENT.match(iid):
            return None, f"item id {iid!r} is not a name an expression can use"
        if q is None:
            return None, f"option {label!r} holds a quote"
        return f"{iid} {'!=' if neg else '=='} {q}", ""


def _response(it: Item):
    if it.kind == "yesno":
        return "yesno"
    opts = []
    for o in it.options:
        d = {"label": o.label}
        if o.position is not None:
            d["position"] = int(o.position) if float(o.position).is_integer() else o.position
        if o.refusal:
            d["refusal"] = True
        opts.append(d)
    return {"type": "choice", "options": opts}


def session_yaml(conv: Conversion, subjects: int, study_name: str) -> tuple[dict, list[dict], list[Note]]:
    """(session.yaml data, the subjects table rows, notes of what the session leaves out)."""
    s = conv.survey
    notes: list[Note] = []
    blocks, before = [], {}
    factors = {f.name: f for f in conv.factors}
    taken: set = set()
    for bid in s.order:
        bname = s.blocks[bid].name
        slug = re.sub(r"[^a-z0-9]+", "_", bname.lower()).strip("_") or "block"
        while slug in taken:
            slug += "_"
        taken.add(slug)
        items = []
        for it in [x for x in conv.items if x.block == bname]:
            if it.kind not in ("choice", "yesno", "rank_first"):
                notes.append(Note(it.qid, it.qtype, f"{it.id}: sessions score k-choice decisions only; this "
                                                    f"{it.kind} item is in study.yaml, not session.yaml"))
                continue
            text = f"{it.context}\n\n{it.text}" if it.context else it.text
            d = {"id": it.id, "text": text.replace("$", "$$"), "response": _response(it)}
            conds = []
            if it.arm:
                conds.append(f"{it.arm[0]} == '{it.arm[1]}'")
            q = s.questions[it.qid]
            if q.payload.get("DisplayLogic"):
                e, why = _Logic(conv, before).expr(q.payload["DisplayLogic"])
                if e is None:
                    notes.append(Note(it.qid, it.qtype, f"{it.id}: display logic not converted ({why}); shown to "
                                                        "every subject"))
                else:
                    conds.append(e)
            if conds:
                d["show_if"] = " and ".join(f"({c})" for c in conds) if len(conds) > 1 else conds[0]
            items.append((it, d))
            before[it.id] = it
        _skips(conv, items, notes)
        if items:
            blocks.append({"id": slug, "items": [d for _, d in items]})
    rows = []
    for k in range(subjects):
        row = {"id": f"s{k + 1}"}
        for name, f in factors.items():
            levels = list(f.levels)
            row[name] = levels[k % len(levels)]  # balanced: subject k gets level k mod L, in block order
        rows.append(row)
    design = {"seed": 0}
    if factors:
        design["subjects"] = {"table": "subjects.csv", "id": "id", "template": "You are taking part in a survey."}
    else:
        design["subjects"] = subjects
    data = {"study": f"{study_name}-session"[:60], "title": f"{s.name} (imported from Qualtrics, as a session)",
            "citation": f"Qualtrics survey {s.id or s.file.name} ({s.file.name})",
            "description": "Written by `simsubjects study import qualtrics`: the survey's blocks in order, display "
                           "and skip logic; see IMPORT_NOTES.md.",
            "prompt": {"answer_prefix": "\nAnswer:"}, "design": design,
            "session": {"memory": "transcript", "blocks": blocks}}
    return data, rows, notes


def _skips(conv: Conversion, items: list, notes: list) -> None:
    """Skip logic on a question's own choice: `skip_to: {if: ..., to: ...}` on its last item."""
    for pos, (it, d) in enumerate(items):
        q = conv.survey.questions[it.qid]
        if pos + 1 < len(items) and items[pos + 1][0].qid == it.qid:
            continue  # the question's last item carries its skips
        out = []
        for sk in q.payload.get("_SkipLogic") or []:
            m = LOCATOR.match(str(sk.get("ChoiceLocator") or sk.get("Locator") or ""))
            dest = str(sk.get("SkipToDestination") or "")
            cond = {"Type": "Expression", "LogicType": "Question", "Operator": "Selected" if sk.get("Condition") ==
                    "Selected" else sk.get("Condition"), "LeftOperand": sk.get("ChoiceLocator") or sk.get("Locator")}
            e, why = _Logic(conv, {x.id: x for x, _ in items[:pos + 1]}).expression(cond) if m else (None, "locator")
            to = {"ENDOFBLOCK": "end_block", "ENDOFSURVEY": "end"}.get(dest)
            if to is None:
                later = [x.id for x, _ in items[pos + 1:] if x.qid == dest]
                to = later[0] if later else None
                if to is None:
                    why = why or f"destination {dest} is not later in the block"
            if e is None or to is None:
                notes.append(Note(it.qid, it.qtype, f"skip logic not converted ({why or 'condition'})"))
                continue
            out.append({"if": e, "to": to})
        if len(out) == 1:
            d["skip_to"] = out[0]
        elif out:
            d["skip_to"] = out  # several skips: read in order, the first that holds applies
