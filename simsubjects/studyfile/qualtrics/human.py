"""A response export as the study's human rows: one per respondent x item, subject = ResponseId,
condition = the randomizer arm read from the export's display-order column (FL_n_DO)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .build import Conversion, Factor, Item, Note, _numeric
from .qsf import clean
from .responses import Export

UNFINISHED = {"0", "false", "False", "FALSE"}
PREVIEW = {"1", "Survey Preview", "preview"}


@dataclass
class Human:
    rows: list[dict]
    texts: list[dict]  # free-text answers: kept, not scored
    respondents: int
    dropped_unfinished: int = 0
    dropped_preview: int = 0
    unfinished: int = 0  # kept (without --finished-only)
    preview: int = 0
    unmatched: list[dict] = field(default_factory=list)  # {respondent, item, column, value, reason}
    notes: list[Note] = field(default_factory=list)
    missing_items: list[str] = field(default_factory=list)  # items with no column in the export
    embedded: list[str] = field(default_factory=list)  # embedded-data columns kept


def _cell(ex: Export, row: list[str], col: int | None) -> str:
    return row[col].strip() if col is not None and col < len(row) else ""


def _choice(it: Item, value: str, ex: Export, colname: str):
    """An answer as its option label: the recode value the export records, or the choice text."""
    for o in it.options:
        if value == o.recode or (_numeric(value) is not None and _numeric(value) == _numeric(o.recode)):
            return o.label
    text = clean(value)
    for o in it.options:
        if text and text in (o.text, o.label):
            return o.label
    lab = ex.labels.get(colname, {}).get(value)  # .sav: the value label of an unknown code
    if lab is not None:
        for o in it.options:
            if clean(lab) in (o.text, o.label):
                return o.label
    return None


def _arm(f: Factor, ex: Export, row: list[str], survey) -> str | None:
    """The block a respondent was shown by randomizer f: `FL_n_DO` holds the shown block(s) ('|'-joined ids
    or names, first = shown when one is shown), or one `FL_n_DO_<block>` column per block holds its
    display position (empty: not shown)."""
    if f.efield:  # an embedded-data randomizer: the field's column holds the value it set
        value = _cell(ex, row, ex.column([f.efield], [f.efield]))
        return next((lv for lv, v in f.levels.items() if v == value), None)
    names = {b: survey.blocks[b].name for b in f.blocks}
    lookup = {**{b: lv for b, lv in f.blocks.items()}, **{names[b]: lv for b, lv in f.blocks.items()},
              **{lv: lv for lv in f.levels}}
    col = ex.column([f"{f.flow_id}_DO"], [f"{f.flow_id}_DO"])
    if col is not None:
        for tok in _cell(ex, row, col).split("|"):
            if tok.strip() in lookup:
                return lookup[tok.strip()]
        return None
    shown = []
    for key, lv in lookup.items():
        c = ex.column([f"{f.flow_id}_DO_{key}"], [f"{f.flow_id}_DO_{key}"])
        v = _cell(ex, row, c)
        if c is not None and v:
            shown.append((_numeric(v) if _numeric(v) is not None else 0, lv))
    return min(shown)[1] if shown else None


def human_rows(conv: Conversion, ex: Export, finished_only: bool) -> Human:
    rid = ex.meta("ResponseId", "ResponseID", "responseId", "Response ID", "_recordId")
    fin = ex.meta("Finished", "finished")
    status = ex.meta("Status", "status")
    channel = ex.meta("DistributionChannel", "distributionChannel")
    h = Human([], [], 0)
    cols = {it.id: ex.column(it.columns, it.imports) for it in conv.items}
    _ambiguous(h, conv, ex, cols)
    h.missing_items = [it.id for it in conv.items if cols[it.id] is None]
    asked_cols = {it.id: [[ex.column([n]) for n in ns] + [ex.column([], [i]) for i in ims] for ns, ims in it.asked]
                  for it in conv.items}
    has_do = {f.name: ex.column([f.efield], [f.efield]) is not None if f.efield else
              ex.column([f"{f.flow_id}_DO"], [f"{f.flow_id}_DO"]) is not None or
              any(n.startswith(f"{f.flow_id}_DO_") for n in ex.names) for f in conv.factors}
    # embedded data the export holds: respondent columns of the human rows (and their groups)
    from ..spec import NAME, RESERVED

    taken = {*RESERVED, "respondent", "response", *(f.name for f in conv.factors)}
    embedded = {e: ex.column([e], [e]) for e in conv.survey.embedded
                if ex.column([e], [e]) is not None and e not in taken and NAME.fullmatch(e)}
    h.embedded = list(embedded)
    for f in conv.factors:
        if not has_do[f.name]:
            col = f.efield or f"{f.flow_id}_DO"
            h.notes.append(Note(f.flow_id, "BlockRandomizer", f"the export has no column {col}: "
                                "each respondent's arm is the block they answered (respondents who answered none or "
                                "several are listed)"))
    for row in ex.rows:
        resp = _cell(ex, row, rid)
        is_preview = _cell(ex, row, status) in PREVIEW or _cell(ex, row, channel) == "preview"
        is_unfinished = _cell(ex, row, fin) in UNFINISHED
        if finished_only and (is_preview or is_unfinished):
            h.dropped_preview += is_preview
            h.dropped_unfinished += is_unfinished and not is_preview
            continue
        h.preview += is_preview
        h.unfinished += is_unfinished
        h.respondents += 1
        arms = {}
        for f in conv.factors:
            lv = _arm(f, ex, row, conv.survey) if has_do[f.name] else _answered_arm(f, conv, cols, row, ex)
            if lv is None:
                h.unmatched.append({"respondent": resp, "item": "", "column": f"{f.flow_id}_DO", "value": "",
                                    "reason": f"no arm of randomizer {f.flow_id} found; the respondent's rows are not "
                                              "imported"})
                break
            arms[f.name] = lv
        else:
            condition = ",".join(f"{k}={v}" for k, v in arms.items())
            arms.update({e: _cell(ex, row, c) for e, c in embedded.items()})
            for it in conv.items:
                if it.arm is not None and arms.get(it.arm[0]) != it.arm[1]:
                    continue
                _answer(h, it, ex, row, cols[it.id], asked_cols[it.id], resp, condition, arms)
    return h


def _ambiguous(h: Human, conv: Conversion, ex: Export, cols: dict) -> None:
    """Two items read from one column (a legacy export names two questions' columns alike, e.g. from shared
    choice export tags): the item named exactly like the column keeps it; the others are listed, not guessed."""
    claims: dict[int, list[Item]] = {}
    for it in conv.items:
        if cols[it.id] is not None:
            claims.setdefault(cols[it.id], []).append(it)
    for col, its in claims.items():
        if len(its) < 2:
            continue
        keep = next((it for it in its if it.id == ex.names[col]), None)
        for it in its:
            if it is not keep:
                cols[it.id] = None
                h.notes.append(Note(it.qid, it.qtype, f"column {ex.names[col]!r} of the export could be item {it.id} "
                                    f"or {', '.join(x.id for x in its if x is not it)}; not read for {it.id} (an export "
                                    "with three header rows names each column's question by its ImportId)"))


def _answered_arm(f: Factor, conv: Conversion, cols: dict, row: list[str], ex: Export) -> str | None:
    answered = {it.arm[1] for it in conv.items if it.arm and it.arm[0] == f.name and _cell(ex, row, cols[it.id])}
    return answered.pop() if len(answered) == 1 else None


def _answer(h: Human, it: Item, ex: Export, row, col, asked, resp: str, condition: str, arms: dict) -> None:
    value = _cell(ex, row, col)
    base = {"respondent": resp, "item": it.id, "condition": condition, **arms}
    if col is None and it.kind != "rank_first":
        return  # the export has no column for it (listed in the notes)
    colname = ex.names[col] if col is not None else ""
    if it.kind == "yesno":
        if not any(_cell(ex, row, c) for group in asked for c in group):
            return  # the question was not answered: no row
        selected = value not in ("", "0")
        h.rows.append({**base, "response": "Yes" if selected else "No"})
        return
    if it.kind == "rank_first":
        # columns hold each option's rank; the first-ranked option is the answer
        ranks = [(_numeric(_cell(ex, row, ex.column([c], [i]))), o.label)
                 for c, i, o in zip(it.columns, it.imports, it.options)]
        first = [lab for r, lab in ranks if r == 1]
        if first:
            h.rows.append({**base, "response": first[0]})
        return
    if not value or value == "-99":  # -99: Qualtrics' code for "seen but not answered"
        return
    if it.kind == "free_text":
        h.texts.append({**base, "text": value})
        return
    if it.kind == "estimate":
        x = _numeric(value)
        if x is None or (it.min is not None and x < it.min) or (it.max is not None and x > it.max):
            h.unmatched.append({**base, "column": colname, "value": value,
                                "reason": "not a number within the item's range"})
            return
        h.rows.append({**base, "response": repr(x) if not x.is_integer() else str(int(x))})
        return
    label = _choice(it, value, ex, colname)
    if label is None:
        h.unmatched.append({**base, "column": colname, "value": value, "reason": "matches no option's recode or text"})
        return
    h.rows.append({**base, "response": label})
