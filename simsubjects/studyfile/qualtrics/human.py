"""A response export as the study's human rows: one per respondent x item, subject = ResponseId,
condition = the randomizer arm read from the export's display-order column (FL_n_DO)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import UserError
from .build import Conversion, Factor, Item, Note, _numeric
from .qsf import clean
from .responses import Export

UNFINISHED = {"0", "false", "False", "FALSE"}
PREVIEW = {"1", "Survey Preview", "preview"}
TEST = {"2", "Survey Test"}  # Status of a test response (Qualtrics' "Generate test responses"): never a person


@dataclass
class Human:
    rows: list[dict]
    texts: list[dict]  # free-text answers: kept, not scored
    respondents: int
    dropped_unfinished: int = 0
    dropped_preview: int = 0
    unfinished: int = 0  # kept (without --finished-only)
    preview: int = 0
    dropped_test: int = 0  # Status = 2 (Survey Test): excluded where the export holds other responses
    all_test: bool = False  # every response is a test response: kept, and the notes say so
    duplicates: list[tuple[str, list[int]]] = field(default_factory=list)  # (ResponseId, its lines) de-duplicated
    dedupe: str | None = None
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


def _deduplicated(ex: Export, rid: int | None, dedupe: str | None, h: "Human") -> list[list[str]]:
    """The export's rows with each ResponseId once. A repeated id (two downloads appended, a merged file)
    would count one person twice in every share and test: refused naming its lines, or with
    --dedupe first|last its first or last row kept and the others listed in the notes."""
    seen: dict[str, list[int]] = {}
    for k, row in enumerate(ex.rows):
        resp = _cell(ex, row, rid)
        if resp:
            seen.setdefault(resp, []).append(k)
    dups = {r: ks for r, ks in seen.items() if len(ks) > 1}
    if not dups:
        return ex.rows
    line = (lambda k: ex.lines[k] if k < len(ex.lines) else k + 1)
    if dedupe is None:
        first = next(iter(dups.items()))
        raise UserError(f"{ex.file}: respondent id {first[0]!r} repeats on lines "
                        f"{', '.join(str(line(k)) for k in first[1])} ({len(dups)} id(s) repeat, "
                        f"{sum(len(v) - 1 for v in dups.values())} extra row(s)); remove the repeats or pass "
                        "--dedupe first|last")
    h.dedupe = dedupe
    h.duplicates = [(r, [line(k) for k in ks]) for r, ks in dups.items()]
    keep = {k for ks in seen.values() for k in ([ks[0]] if dedupe == "first" else [ks[-1]])}
    return [row for k, row in enumerate(ex.rows) if k in keep or not _cell(ex, row, rid)]


def human_rows(conv: Conversion, ex: Export, finished_only: bool, dedupe: str | None = None) -> Human:
    rid = ex.id_column if ex.id_column is not None else ex.meta(
        "ResponseId", "ResponseID", "responseId", "Response ID", "_recordId")
    fin = ex.meta("Finished", "finished")
    status = ex.meta("Status", "status")
    channel = ex.meta("DistributionChannel", "distributionChannel")
    h = Human([], [], 0)
    _headers_agree(conv, ex)
    read = _read_items(conv)  # --merge-arms: each arm's own item, read for the respondents of that arm
    cols = {it.id: ex.column(it.columns, it.imports) for it in read}
    _ambiguous(h, conv, ex, cols, read)
    h.missing_items = [it.id for it in read if cols[it.id] is None]
    asked_cols = {it.id: [[ex.column([n]) for n in ns] + [ex.column([], [i]) for i in ims] for ns, ims in it.asked]
                  for it in read}
    has_do = _arm_columns(conv, ex, h)
    embedded = _embedded(conv, ex)
    h.embedded = list(embedded)
    rows = _deduplicated(ex, rid, dedupe, h)
    tests = sum(_cell(ex, r, status) in TEST for r in rows)
    h.all_test = bool(rows) and tests == len(rows)  # only generated test data: kept (nothing else to read)
    for row in rows:
        resp = _cell(ex, row, rid)
        if not h.all_test and _cell(ex, row, status) in TEST:
            h.dropped_test += 1
            continue
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
                own = it.merged.get(arms.get(it.merged_factor)) if it.merged else it
                if own is None:
                    continue
                _answer(h, it, ex, row, cols[own.id], asked_cols[own.id], resp, condition, arms, own)
    return h


def _arm_columns(conv: Conversion, ex: Export, h: Human) -> dict[str, bool]:
    """Whether the export says each randomizer's arm (FL_n_DO, FL_n_DO_<block>, or the embedded field); where
    it does not, the arm is the block answered, and the notes say so."""
    has_do = {f.name: ex.column([f.efield], [f.efield]) is not None if f.efield else
              ex.column([f"{f.flow_id}_DO"], [f"{f.flow_id}_DO"]) is not None or
              any(n.startswith(f"{f.flow_id}_DO_") for n in ex.names) for f in conv.factors}
    for f in conv.factors:
        if not has_do[f.name]:
            col = f.efield or f"{f.flow_id}_DO"
            h.notes.append(Note(f.flow_id, "BlockRandomizer", f"the export has no column {col}: "
                                "each respondent's arm is the block they answered (respondents who answered none or "
                                "several are listed)"))
    return has_do


def _embedded(conv: Conversion, ex: Export) -> dict[str, int]:
    """Embedded data the export holds: respondent columns of the human rows (and their groups)."""
    from ..spec import NAME, RESERVED  # lazy: imports pandas, pyarrow

    taken = {*RESERVED, "respondent", "response", "scale", *(f.name for f in conv.factors)}
    return {e: ex.column([e], [e]) for e in conv.survey.embedded
            if ex.column([e], [e]) is not None and e not in taken and NAME.fullmatch(e)}


def _headers_agree(conv: Conversion, ex: Export) -> None:
    """An export whose ImportId row names a question whose column the survey exports under another name is
    the export of another survey (or a hand-edited one): reading it by either header would put answers under
    the wrong item. One line naming the column; nothing written."""
    if not any(k.startswith("import:") for k in ex.index):
        return
    for it in conv.items:
        by_import = ex.column([], it.imports[:1])
        if by_import is None or ex.names[by_import] in it.columns:
            continue
        by_name = ex.column(it.columns[:1])
        if by_name is not None and by_name != by_import:
            raise UserError(f"{ex.file}: header rows disagree with the survey file: column {by_import + 1} "
                            f"({ex.names[by_import]!r}) has ImportId {it.imports[0]}, which the survey exports as "
                            f"{it.columns[0]!r} (column {by_name + 1}); export the responses of this survey again")


def _read_items(conv: Conversion) -> list[Item]:
    """The items whose columns are read: a merged item's arm items in its place."""
    return [x for it in conv.items for x in (it.merged.values() if it.merged else [it])]


def _ambiguous(h: Human, conv: Conversion, ex: Export, cols: dict, read: list[Item]) -> None:
    """Two items read from one column (a legacy export names two questions' columns alike, e.g. from shared
    choice export tags): the item named exactly like the column keeps it; the others are listed, not guessed."""
    claims: dict[int, list[Item]] = {}
    for it in read:
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
    answered = {it.arm[1] for it in _read_items(conv) if it.arm and it.arm[0] == f.name
                and _cell(ex, row, cols[it.id])}
    return answered.pop() if len(answered) == 1 else None


def _answer(h: Human, it: Item, ex: Export, row, col, asked, resp: str, condition: str, arms: dict,
            own: Item | None = None) -> None:
    """The respondent's answer to item `it`, read from the columns of `own` (the arm's item of a merged one)."""
    value = _cell(ex, row, col)
    base = {"respondent": resp, "item": it.id, "condition": condition, **arms}
    own = own or it
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
                 for c, i, o in zip(own.columns, own.imports, own.options)]
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
    label = _choice(own, value, ex, colname)
    if label is None:
        h.unmatched.append({**base, "column": colname, "value": value, "reason": "matches no option's recode or text"})
        return
    h.rows.append({**base, "response": label})
