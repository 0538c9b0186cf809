"""Turn a read survey (and its response export) into a study file: DIR/study.yaml, DIR/human.csv,
DIR/codebook.csv and DIR/IMPORT_NOTES.md.

Each Qualtrics question becomes one or more items in today's study-file format (docs/studies.md);
what that format cannot express is listed, never dropped: `Note(qid, type, reason)` rows, printed
on screen and written to IMPORT_NOTES.md. Item ids are the export's column names (DataExportTag,
`_choice`, `_statement_answer`), so an item and its column in the response export share a name.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .qsf import PIPED, Question, Survey, _entries, clean, piped
from .qsf import _logic_text

# Question types with no counterpart (Qualtrics' codes): listed with their reason
UNSUPPORTED = {"FileUpload": "file upload: a model cannot upload a file", "Timing": "timing: page timers measure "
               "people, not answers", "HeatMap": "heat map: a click on an image", "HotSpot": "hot spot: regions of an "
               "image", "Draw": "signature / drawing", "Captcha": "captcha: a check for bots", "Meta": "meta info: the "
               "browser's data, not an answer", "GAP": "gap analysis", "PGR": "pick, group and rank",
               "Highlight": "highlight: words marked in a text", "Camera": "camera capture", "Video": "video response",
               "Audio": "audio response", "Signature": "signature"}


@dataclass
class Note:
    qid: str
    type: str
    reason: str


@dataclass
class Opt:
    label: str
    recode: str
    choice_id: str
    text: str
    position: float | None = None
    refusal: bool = False


@dataclass
class Item:
    id: str
    qid: str
    tag: str
    block: str
    qtype: str
    kind: str  # choice | yesno | estimate | free_text | rank_first
    text: str  # plain text (literal; escaped when written)
    options: list[Opt] = field(default_factory=list)
    min: float | None = None
    max: float | None = None
    integer: bool = False
    columns: list[str] = field(default_factory=list)  # export column names
    imports: list[str] = field(default_factory=list)  # ImportIds
    asked: list[tuple[list[str], list[str]]] = field(default_factory=list)  # columns that show the question was answered
    arm: tuple[str, str] | None = None  # (factor, level) for items inside a randomizer's block
    context: str = ""  # descriptive text shown before it in its block
    merged: dict[str, "Item"] = field(default_factory=dict)  # --merge-arms: level -> that arm's own item
    merged_factor: str = ""  # the factor whose arms were merged into this item


@dataclass
class Factor:
    name: str
    flow_id: str
    levels: dict[str, str]  # level -> block name
    blocks: dict[str, str]  # block id -> level
    context: dict[str, str]  # level -> the arm block's descriptive text
    efield: str = ""  # an embedded-data randomizer's field (respondents' arms: that column of the export)
    split: dict[str, dict[str, str]] = field(default_factory=dict)  # --merge-arms: crossed factor -> {level: its level}
    unsplit: str = ""  # --merge-arms: why the arms' names were not split into crossed factors


@dataclass
class Conversion:
    survey: Survey
    items: list[Item]
    factors: list[Factor]
    notes: list[Note]
    piped_refs: list[tuple[str, str]]  # (qid, reference)
    session_notes: list | None = None  # what session.yaml leaves out (None: no session written)
    parallel: list[tuple[str, list[list[str]]]] = field(default_factory=list)  # (factor, item ids per position)
    merged: bool = False  # --merge-arms: the parallel arms' items are one item each, read per arm


def _slug(text: str, taken: set) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "arm"
    if not s[0].isalpha():
        s = "b_" + s
    out, k = s, 2
    while out in taken:
        out, k = f"{s}_{k}", k + 1
    taken.add(out)
    return out


def _text(q: Question, refs: list, notes: list) -> str:
    """The question's text with piped text marked in brackets (a model has no earlier answer to pipe)."""
    raw = q.raw_text
    for ref in piped(raw):
        refs.append((q.qid, ref))
    return clean(PIPED.sub(lambda m: f"[piped: {m.group(1)}://{m.group(2)}]", raw))


def _numeric(v: str) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


MAX_POSITION = 1000  # a recode larger than this is a code (a colour, an id), not a scale position


def _ordinal(nums: list) -> str:
    """Why numeric recodes are not ordinal positions ("" when they are): positions are distinct, run one way
    (up or down) in the choices' shown order, and are small. Recodes such as colour codes (16777215) or
    shuffled ids would make means and correlations of codes, not of a scale (issue 41, item 9)."""
    subst = [x for x in nums if x >= 0]
    if any(abs(x) > MAX_POSITION for x in nums):
        return f"a recode above {MAX_POSITION} (a code, not a position)"
    if len(set(subst)) != len(subst):
        return "two choices share a recode"
    steps = [b - a for a, b in zip(subst, subst[1:])]
    if steps and not (all(d > 0 for d in steps) or all(d < 0 for d in steps)):
        return "the recodes do not run one way in the choices' order"
    gaps = sorted(abs(d) for d in steps)
    if len(gaps) >= 3 and gaps[-1] > 5 * gaps[len(gaps) // 2]:  # 1..5 then 99: a code such as "don't know"
        return f"one recode jumps by {gaps[-1]:g} where the others step by {gaps[len(gaps) // 2]:g} (a code such " \
               "as 99 for \"don't know\"? mark it refusal: true in study.yaml, or recode it negative in Qualtrics)"
    return ""


def _options(choices, notes: list, q: Question) -> list[Opt]:
    """Choice texts as option labels (unique, non-empty), recode values as positions where every one is a
    number and they are ordinal positions (_ordinal); negative recodes are refusals ("No basis for
    evaluation" = -1: QualtricsTools' convention). Other recodes make a nominal item (no mean), noted."""
    out, seen = [], set()
    nums = [_numeric(c.recode) for c in choices]
    ordinal = all(x is not None for x in nums)
    why = _ordinal(nums) if ordinal and choices else ""
    if why:
        notes.append(Note(q.qid, q.kind, f"recode values {', '.join(c.recode for c in choices[:8])}"
                                         f"{' ...' if len(choices) > 8 else ''} are not ordinal positions ({why}); "
                                         "the item is nominal: no means, correlations or t-tests of its codes"))
        ordinal = False
    for c, x in zip(choices, nums):
        label = c.text or f"Choice {c.id}"
        if label in seen:
            label = f"{label} ({c.recode})"
        seen.add(label)
        refusal = ordinal and x < 0
        out.append(Opt(label, c.recode, c.id, c.text, None if (not ordinal or refusal) else x, refusal))
    if ordinal and all(o.refusal for o in out):
        for o in out:
            o.refusal, o.position = False, _numeric(o.recode)
    return out


def scale(it: "Item") -> str:
    """The scale an item's score is on: items are compared (agreement) only with items on the same scale;
    "" for a nominal item (no score)."""
    if it.kind == "yesno":
        return "yes/no share"
    if it.kind == "estimate":
        lo = "" if it.min is None else f"{it.min:g}"
        hi = "" if it.max is None else f"{it.max:g}"
        return f"number {lo} to {hi}" if lo and hi else "number"
    pos = [o.position for o in it.options if o.position is not None and not o.refusal]
    if it.kind == "choice" and len(pos) >= 2:
        return f"positions {min(pos):g} to {max(pos):g}"
    return ""


def _names(tag: str, c, rest: str = "") -> list[str]:
    """A choice's column names: with choice export tags `tag_choicetag` (Qualtrics' newer exports) or the bare
    choice tag, and `tag_choiceid` (legacy exports ignore the choice tags); the first is the item id."""
    out = [f"{tag}_{c.export_tag}{rest}", f"{c.export_tag}{rest}"] if c.export_tag else []
    return out + [f"{tag}_{c.id}{rest}"]


def convert(s: Survey) -> Conversion:
    notes: list[Note] = []
    refs: list[tuple[str, str]] = []
    factors = _factors(s)
    _branch_arms(s, factors)
    arm_of = {b: (f.name, lv) for f in factors for b, lv in f.blocks.items()}
    items: list[Item] = []
    carried: dict[str, list[str]] = {}  # block id -> descriptive text that ended the block shown before it
    for bid in s.order:
        block = s.blocks[bid]
        context, trailing = list(carried.pop(bid, [])), []  # trailing: texts after the block's last question
        for qid in block.qids:
            q = s.questions[qid]
            before = len(items)
            if q.type == "DB":
                context.append(_text(q, refs, notes))
                trailing.append(context[-1])
                continue
            _carry_forward(s, q)
            _question_items(q, block.name, items, notes, refs)
            for it in items[before:]:
                it.arm = arm_of.get(bid)
                it.context = " ".join(t for t in context if t)
            _question_notes(q, notes)
            trailing = [] if len(items) > before else trailing
        carried.update(_block_end(s, factors, bid, [t for t in trailing if t], arm_of, notes))
        if bid in arm_of:
            f = next(x for x in factors if x.name == arm_of[bid][0])
            f.context[arm_of[bid][1]] = " ".join(t for t in context if t)
    shown = {qid for b in s.order for qid in s.blocks[b].qids}
    for qid, q in s.questions.items():
        if qid not in shown:
            where = next((b for b in s.blocks.values() if qid in b.qids), None)
            why = ("in the trash block" if where and where.trash else
                   f"its block {where.name!r} is not in the survey flow" if where else "in no block")
            notes.append(Note(qid, q.kind, f"not shown to respondents ({why}); not imported"))
    for fn in s.flow_notes:
        notes.append(Note(fn.id, fn.type, fn.reason))
    known = {"SO", "SCO", "STAT", "QC", "RS", "BR", "SQ", "BL", "FL", "PL", "PROJ", "SV"}
    for code, attr in s.other_elements:
        if code == "QO":
            notes.append(Note(attr, "Quota", "quotas are not converted: every model subject answers"))
        elif code == "NT":
            notes.append(Note(attr, "Notes", "reviewer notes on questions: not part of the instrument"))
        elif code not in known:
            notes.append(Note(attr or code, code, f"survey element {code} is not read"))
    ids = [it.id for it in items]
    dup = {x for x in ids if ids.count(x) > 1}
    for it in items:  # two questions with one export tag: Qualtrics allows it, item ids may not repeat
        if it.id in dup:
            notes.append(Note(it.qid, it.qtype, f"export tag {it.id!r} is shared by other questions; item renamed "
                                               f"{it.id}__{it.qid}"))
            it.id = f"{it.id}__{it.qid}"
    conv = Conversion(s, items, factors, _unique(notes), list(dict.fromkeys(refs)))
    find_parallel(conv)
    return conv


def _signature(it: Item) -> tuple:
    """What a respondent sees of an item, less its arm's vignette: parallel arms ask the same."""
    return (it.kind, it.qtype, it.text, tuple(o.label for o in it.options), it.min, it.max)


def find_parallel(conv: Conversion) -> None:
    """Parallel arms: one block per arm under one randomizer, asking the same questions (texts, types,
    options) under their own export tags, the common Qualtrics pattern of a between-subject manipulation
    (issue 41, item 11). Imported as they are, the arms' items are disjoint and no test compares them."""
    for f in conv.factors:
        per_level: dict[str, list[Item]] = {}
        for it in conv.items:
            if it.arm and it.arm[0] == f.name:
                per_level.setdefault(it.arm[1], []).append(it)
        if len(per_level) < 2 or set(per_level) != set(f.levels):
            continue
        rows = list(per_level.values())
        if len({len(r) for r in rows}) != 1 or not rows[0]:
            continue
        if all(len({_signature(r[k]) for r in rows}) == 1 for k in range(len(rows[0]))):
            conv.parallel.append((f.name, [[r[k].id for r in rows] for k in range(len(rows[0]))]))


def _merged_id(ids: list[str], taken: set) -> str:
    """support_gain, support_loss -> support: their common start (or the first id + _arms)."""
    common = ids[0]
    for x in ids[1:]:
        while not x.startswith(common):
            common = common[:-1]
    common = common.rstrip("_-. ")
    out = common if len(common) >= 2 and common[0].isalpha() and common not in taken else f"{ids[0]}_arms"
    while out in taken:
        out += "_"
    return out


def merge_arms(conv: Conversion) -> None:
    """--merge-arms: each position of parallel arms becomes one item asked in every arm, with the arm's
    vignette before it per level and each respondent's answer read from their arm's column; the factor's
    tests then compare the arms on it."""
    by_id = {it.id: it for it in conv.items}
    taken = set(by_id)
    out, done = [], set()
    merged_of: dict[str, Item] = {}
    for fname, positions in conv.parallel:
        for ids in positions:
            own = [by_id[i] for i in ids]
            first = own[0]
            m = Item(_merged_id(ids, taken), first.qid, first.tag, first.block, first.qtype, first.kind, first.text,
                     first.options, first.min, first.max, first.integer, [], [], [], None, "",
                     {it.arm[1]: it for it in own}, fname)
            taken.add(m.id)
            merged_of[ids[0]] = m
            done.update(ids)
    for it in conv.items:
        if it.id in merged_of:
            out.append(merged_of[it.id])
        elif it.id not in done:
            out.append(it)
    conv.items = out
    conv.merged = True
    from ..spec import RESERVED  # lazy: imports pandas, pyarrow (as human.py's _embedded)

    taken = {*RESERVED, "respondent", "scale", *(f.name for f in conv.factors), *conv.survey.embedded}
    for f in conv.factors:
        if any(f.name == fname for fname, _ in conv.parallel):
            f.split, f.unsplit = split_arms(f, taken)


SEPARATORS = ("_", "-", "/", " ")  # Gain_Low, Gain-Low, Gain / Low, Gain Low


def split_arms(f: Factor, taken: set) -> tuple[dict[str, dict[str, str]], str]:
    """A 2x2 (or larger crossing) built as one block per cell, its design declared only by the blocks' names
    (Gain_Low, Gain_High, Loss_Low, Loss_High): the names split on one separator into parts that form a full
    crossing give one factor per part, each level of the arm factor mapped to its part's level (issue 41,
    item 11). ({factor: {arm level: level}}, "") or ({}, why not)."""
    if f.efield:
        return {}, "the arms are an embedded-data field's values, not blocks named by their cells"
    names = f.levels  # arm level -> its block's name
    for sep in SEPARATORS:
        parts = {lv: [p.strip() for p in n.split(sep)] for lv, n in names.items()}
        k = {len(p) for p in parts.values()}
        if len(k) != 1 or k == {1} or any(not x for p in parts.values() for x in p):
            continue
        per = [list(dict.fromkeys(p[j] for p in parts.values())) for j in range(k.pop())]
        cells = {tuple(p) for p in parts.values()}
        if any(len(vals) < 2 for vals in per) or len(cells) != len(names) or len(names) != math.prod(map(len, per)):
            continue
        out = {}
        for vals in per:
            slugs: set = set()
            level = {v: _slug(v, slugs) for v in vals}
            j = len(out)
            out[_slug("_".join(level[v] for v in vals), taken)] = {lv: level[parts[lv][j]] for lv in names}
        return out, ""
    shown = ", ".join(repr(n) for n in names.values())
    return {}, (f"the arms' block names ({shown}) do not split on one separator ({', '.join(map(repr, SEPARATORS))}) "
                "into parts that form a full crossing (every name the same number of parts, at least two values "
                "per part, one block per combination)")


def _unique(notes: list[Note]) -> list[Note]:
    """Each element once with each reason (a skip listed per copy, an SBS's columns, a re-shown block)."""
    seen, out = set(), []
    for n in notes:
        if (n.qid, n.type, n.reason) not in seen:
            seen.add((n.qid, n.type, n.reason))
            out.append(n)
    return out


def _block_end(s: Survey, factors: list, bid: str, trailing: list[str], arm_of: dict, notes: list) -> dict:
    """Descriptive text after a block's last question (a transition, a debriefing) is read before the next
    question a respondent sees: {next block id: texts}, every arm's block when the next is a randomizer. An
    arm's own is its arm's only (not carried into a block every arm sees), and the last block's has no
    question after it: both are listed with their text, not dropped."""
    if not trailing:
        return {}
    nxt = s.order.index(bid) + 1
    if bid not in arm_of and nxt < len(s.order):
        target = s.order[nxt]
        f = next((f for f in factors if target in f.blocks), None)
        return {b: list(trailing) for b in (f.blocks if f is not None else [target])}
    where = "the arm's block ends with it" if bid in arm_of else "no question follows it"
    notes.append(Note(bid, "DB", f"descriptive text at the end of block {s.blocks[bid].name!r} ({where}): "
                                 f"{' '.join(trailing)}"))
    return {}


def _branch_arms(s: Survey, factors: list[Factor]) -> None:
    """A block under a branch `FIELD is equal to VALUE` on a randomized embedded-data field is that arm's
    block: its items are shown in that level only (the branch is then converted, not listed)."""
    by_field = {f.efield: f for f in factors if f.efield}
    for bid, under in list(s.branches.items()):
        for fid, logic in under:
            exprs = [e for g in _entries(logic if isinstance(logic, dict) else {}) if isinstance(g, dict)
                     for k, e in g.items() if isinstance(e, dict) and e.get("Type") == "Expression"]
            if len(exprs) != 1 or exprs[0].get("LogicType") != "EmbeddedField" or \
                    exprs[0].get("Operator") not in ("EqualTo", "Equal"):
                continue
            f = by_field.get(str(exprs[0].get("LeftOperand")))
            value = str(exprs[0].get("RightOperand"))
            level = next((lv for lv, v in (f.levels.items() if f else []) if v == value), None)
            if level is None or bid in f.blocks:
                continue
            f.blocks[bid] = level
            s.branches[bid] = [x for x in under if x[0] != fid]
            s.flow_notes = [n for n in s.flow_notes if n.id != fid]


def _carry_forward(s: Survey, q: Question) -> None:
    """Carry-forward choices (`DynamicChoices`, Locator q://QIDn/ChoiceGroup/...): the source question's
    choices, all of them (which ones a subject carries depends on its answers; listed in the notes)."""
    loc = str((q.payload.get("DynamicChoices") or {}).get("Locator") or "")
    m = re.match(r"^q://(QID[0-9]+)/", loc)
    src = s.questions.get(m.group(1)) if m else None
    if src is not None and src is not q and len(q.choices) < 2:
        q.choices = [type(c)(**{**c.__dict__, "has_logic": False}) for c in src.choices]


def _factors(s: Survey) -> list[Factor]:
    out, taken = [], set()
    for r in s.randomizers:
        if r.efield:  # an embedded-data randomizer: its values are the levels
            names: set = set()
            levels = {_slug(v, names): v for v in r.values}
            out.append(Factor(_slug(r.efield, taken), r.flow_id, levels, {}, {}, efield=r.efield))
            continue
        names: set = set()
        levels = {}
        blocks = {}
        for b in r.arms:
            lv = _slug(s.blocks[b].name, names)
            levels[lv] = s.blocks[b].name
            blocks[b] = lv
        out.append(Factor(_slug(f"randomizer_{r.flow_id}", taken), r.flow_id, levels, blocks, {}))
    return out


def _question_items(q: Question, block: str, items: list, notes: list, refs: list) -> None:
    text = _text(q, refs, notes)
    base = dict(qid=q.qid, tag=q.tag, block=block, qtype=q.kind)
    sel = q.selector
    if q.type == "MC" and sel in ("SAVR", "SAHR", "SACOL", "DL", "SB", "NPS"):
        opts = _options(q.choices, notes, q)
        if len(opts) < 2:
            notes.append(Note(q.qid, q.kind, f"a choice question with {len(opts)} choice(s): nothing to choose; "
                                             "not imported"))
            return
        items.append(Item(q.tag, kind="choice", text=text, options=opts, columns=[q.tag], imports=[q.qid], **base))
    elif q.type == "MC" and sel in ("MAVR", "MAHR", "MACOL", "MSB"):
        cols = [(_names(q.tag, c), f"{q.qid}-{c.id}") for c in q.choices]
        asked = [([n for a, _ in cols for n in a], [b for _, b in cols])]
        for c, (names, imp) in zip(q.choices, cols):
            label = c.text or f"Choice {c.id}"
            items.append(Item(names[0], kind="yesno", text=f"{text}\nOption: {label}\nDo you select this option?",
                              columns=names, imports=[imp], asked=asked, **base))
        excl = [c.text for c in q.choices if c.exclusive]
        if excl:
            notes.append(Note(q.qid, q.kind, f"exclusive option(s) {', '.join(map(repr, excl))}: in study.yaml each "
                                             "option is an independent yes/no decision (session.yaml asks an "
                                             "exclusive option listed last only when no other was selected)"))
    elif q.type == "NPS" or (q.type == "MC" and sel == "NPS"):
        opts = [Opt(str(k), str(k), str(k), str(k), float(k)) for k in range(11)]
        items.append(Item(q.tag, kind="choice", text=f"{text}\n(0 = not at all likely, 10 = extremely likely)",
                          options=opts, columns=[q.tag], imports=[q.qid], **base))
    elif q.type in ("Matrix", "SBS"):
        parts = q.parts if q.type == "SBS" else [q]
        for part in parts:
            _matrix_items(q, part, text, items, notes, base)
    elif q.type == "Slider" or (q.type == "CS"):
        cfg = q.payload.get("Configuration") or {}
        if q.type == "CS":
            lo, hi = 0.0, _numeric(str(q.payload.get("Configuration", {}).get("CSTotal") or "")) or 100.0
            notes.append(Note(q.qid, q.kind, f"constant sum: each option is a numeric allocation from 0 to {hi:g}; "
                                             "the total is not enforced across options"))
        else:
            lo = _numeric(str(cfg.get("CSSliderMin", 0))) or 0.0
            hi = _numeric(str(cfg.get("CSSliderMax", 100)))
            hi = 100.0 if hi is None else hi
        integer = str(cfg.get("NumDecimals", "0")) in ("0", "") or q.type == "CS"
        choices = q.choices or []
        for c in choices:
            names = _names(q.tag, c)
            items.append(Item(names[0], kind="estimate",
                              text=f"{text}\n{c.text}\nAnswer with a number from {lo:g} to {hi:g}.",
                              min=lo, max=hi, integer=integer, columns=names, imports=[f"{q.qid}-{c.id}"], **base))
        if not choices:
            notes.append(Note(q.qid, q.kind, "a slider without statements; not imported"))
    elif q.type == "TE" and sel in ("SL", "ML", "ESTB"):
        v = (q.payload.get("Validation") or {}).get("Settings") or {}
        if str(v.get("ContentType", "")).startswith("ValidNumber"):
            rng = v.get("ValidNumber") or {}
            lo, hi = _numeric(str(rng.get("Min", ""))), _numeric(str(rng.get("Max", "")))
            rule = f" from {lo:g} to {hi:g}" if lo is not None and hi is not None else ""
            items.append(Item(q.tag, kind="estimate", text=f"{text}\nAnswer with a number{rule}.", min=lo, max=hi,
                              columns=[q.tag, f"{q.tag}_TEXT"], imports=[f"{q.qid}-TEXT", q.qid], **base))
        else:
            items.append(Item(q.tag, kind="free_text", text=text, columns=[q.tag, f"{q.tag}_TEXT"],
                              imports=[f"{q.qid}-TEXT", q.qid], **base))
            notes.append(Note(q.qid, q.kind, "text entry: generated text, classified by the default judge (did it "
                                             "answer the question? yes/no); edit the judge in study.yaml. People's "
                                             "texts are kept in human_text.csv, not scored"))
    elif q.type == "RO" or (q.type == "PGR"):
        if q.type == "PGR":
            notes.append(Note(q.qid, q.kind, UNSUPPORTED["PGR"] + " is not converted"))
            return
        opts = _options(q.choices, [], q)  # a rank's options have no positions: their recodes are not read
        for o in opts:
            o.position, o.refusal = None, False
        items.append(Item(f"{q.tag}_first", kind="rank_first", text=f"{text}\nWhich option do you rank first?",
                          options=opts, columns=[_names(q.tag, c)[0] for c in q.choices],
                          imports=[f"{q.qid}-{c.id}" for c in q.choices], **base))
        notes.append(Note(q.qid, q.kind, f"rank order: in study.yaml its first rank is the k-choice item "
                                         f"{q.tag}_first (session.yaml asks every rank as sequential choices, the "
                                         "next from the options left)"))
    elif q.type in UNSUPPORTED:
        notes.append(Note(q.qid, q.kind, UNSUPPORTED[q.type] + "; not converted"))
    else:
        notes.append(Note(q.qid, q.kind, f"question type {q.kind} has no counterpart in a study file; not converted"))


def _matrix_items(q: Question, part: Question, text: str, items: list, notes: list, base: dict) -> None:
    tag, sub = part.tag, part.subselector
    statements = part.choices or q.choices
    head = text if part is q else f"{text}\n{part.text}"
    if part.type != "Matrix":
        notes.append(Note(part.qid, part.kind, "side-by-side column of this type is not converted"))
        return
    if sub in ("SingleAnswer", "DL", "") and part.selector in ("Likert", "Bipolar", "RO", "") or \
            (part.selector == "Likert" and sub == "DL"):
        opts = _options(part.answers, notes, part)
        if len(opts) < 2:
            notes.append(Note(part.qid, part.kind, f"a matrix with {len(opts)} scale point(s): nothing to choose; "
                                                   "not imported"))
            return
        for st in statements:
            names = _names(tag, st)
            items.append(Item(names[0], kind="choice", text=f"{head}\nStatement: {st.text}", options=opts,
                              columns=names, imports=[f"{part.qid}-{st.id}"], **base))
    elif sub == "MultipleAnswer":
        for st in statements:
            cols = [(_names(tag, st, f"_{a.id}"), f"{part.qid}-{st.id}-{a.id}") for a in part.answers]
            asked = [([n for a, _ in cols for n in a], [b for _, b in cols])]
            for a, (names, imp) in zip(part.answers, cols):
                items.append(Item(names[0], kind="yesno", text=f"{head}\nStatement: {st.text}\nOption: {a.text}\n"
                                                          "Do you select this option?",
                                  columns=names, imports=[imp], asked=asked, **base))
    else:
        notes.append(Note(part.qid, part.kind, f"matrix of type {part.selector}/{sub} (text or other entries) is not "
                                               "converted"))


def _question_notes(q: Question, notes: list) -> None:
    p = q.payload
    if p.get("QuestionJS"):
        notes.append(Note(q.qid, q.kind, "JavaScript on the question is not run"))
    if p.get("DisplayLogic"):
        notes.append(Note(q.qid, q.kind, f"display logic ({_logic_text(p['DisplayLogic'])}) not converted in "
                                         "study.yaml: the question is asked of every subject (session.yaml shows it "
                                         "where the condition is an earlier answer)"))
    if any(c.has_logic for c in q.choices) or any(c.has_logic for c in q.answers):
        notes.append(Note(q.qid, q.kind, "display logic on choices not converted: every choice is shown"))
    if p.get("Randomization"):
        notes.append(Note(q.qid, q.kind, "choice randomization not converted: options are shown as listed (set "
                                         "option_order: randomized in study.yaml to randomize every item's options)"))
    if p.get("DynamicChoices"):
        src = str((p.get("DynamicChoices") or {}).get("Locator", ""))
        notes.append(Note(q.qid, q.kind, f"carry-forward choices ({src}): every choice of the source question is "
                                         "shown, not only those carried forward"))
    if p.get("DefaultChoices"):  # pre-filled answers: a person sees them selected, a model subject does not
        refs = sorted({r for r in piped(str(p["DefaultChoices"]))})
        notes.append(Note(q.qid, q.kind, "default answers set in the survey (pre-filled for respondents"
                                         + (f", piped from {', '.join(refs)}" if refs else "") + "): not shown "
                                         "to model subjects, who start from no answer"))
    excl = [a.text for a in (*q.answers, *q.choices) if a.exclusive] if q.type == "Matrix" else []
    if excl:
        notes.append(Note(q.qid, q.kind, f"exclusive answer(s) {', '.join(map(repr, excl))} in a multiple-answer "
                                         "matrix: not enforced; each statement x answer is an independent yes/no "
                                         "decision"))
    if p.get("InPageDisplayLogic"):
        notes.append(Note(q.qid, q.kind, "in-page display logic not converted"))
    if any(c.text_entry for c in q.choices):
        notes.append(Note(q.qid, q.kind, "text boxes beside choices ('Other: ...') are not imported; the choice itself is "
                                         "imported"))
    for skip in q.payload.get("_SkipLogic") or []:
        notes.append(Note(q.qid, q.kind, f"skip logic ({clean(skip.get('Description'))}) not converted in "
                                         "study.yaml: the questions after it are asked of every subject (session.yaml "
                                         "skips them where the condition is an answer)"))


JUDGE = ("Question: ${question}\nSomeone answered: ${answer}\n"
         "Does this answer respond to the question? Answer Yes or No.")


def response_yaml(it: Item):
    """The item's `response:` as study.yaml and session.yaml write it (write.py, session.py)."""
    if it.kind == "yesno":
        return "yesno"
    if it.kind == "estimate":
        r = {"type": "estimate", "integer": it.integer}
        if it.min is not None:
            r["min"] = it.min
        if it.max is not None:
            r["max"] = it.max
        return r
    if it.kind == "free_text":
        return {"type": "free_text", "max_tokens": 48, "judge": {"prompt": JUDGE, "response": "yesno"}}
    opts = []
    for o in it.options:
        d = {"label": o.label}
        if o.position is not None:
            d["position"] = int(o.position) if float(o.position).is_integer() else o.position
        if o.refusal:
            d["refusal"] = True
        opts.append(d)
    # letters label at most 26 options; a longer list (countries, states) is scored by the option texts
    return {"type": "choice", "options": opts, **({"style": "words"} if len(opts) > 26 else {})}
