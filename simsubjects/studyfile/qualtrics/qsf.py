"""Read a Qualtrics survey file (.qsf: JSON) into a small model of questions, blocks and flow.

A QSF is `{"SurveyEntry": {...}, "SurveyElements": [...]}`; each element has an `Element` code:
`SQ` a question, `BL` the blocks, `FL` the survey flow, others (quotas `QO`, notes `NT`, scoring
`SCO`, ...) are listed by the importer. No library reads QSF (it is an undocumented export
format), so this is written here, after the files in ../shared/data/qualtrics and QualtricsTools'
reading of them. Every structural problem is one UserError line (the CLI exits 2, nothing written).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from ...errors import UserError

PIPED = re.compile(r"\$\{([a-z]+)://([^}]*)\}")


class _Text(HTMLParser):
    """The visible text of an HTML fragment: tags dropped, br/p/div/li/tr/span tags as spaces,
    scripts skipped (this reads Qualtrics' HTML; it renders none)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.skip += 1
        elif tag in ("br", "p", "div", "li", "tr", "span"):
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def clean(text) -> str:
    """Question or choice text as a reader sees it: HTML stripped, entities decoded, spaces collapsed."""
    if text is None:
        return ""
    p = _Text()
    p.feed(str(text))
    p.close()
    out = html.unescape("".join(p.parts)).replace("\xa0", " ")
    return re.sub(r"\s+", " ", out).strip()


def piped(text: str) -> list[str]:
    """The piped-text references in a text: `q://QID1/ChoiceGroup/SelectedChoices`, `e://Field/x`, ..."""
    return [f"{a}://{b}" for a, b in PIPED.findall(text or "")]


@dataclass
class Choice:
    id: str
    text: str
    recode: str  # what the export records for it (RecodeValues, default the choice id)
    export_tag: str = ""  # ChoiceDataExportTags: the column name of this choice, where set
    text_entry: bool = False  # "Other: ____": a text box beside the choice
    exclusive: bool = False  # selecting it clears the others (check-all)
    has_logic: bool = False  # display logic on this choice


@dataclass
class Question:
    qid: str
    tag: str  # DataExportTag: the export's column stem, the item id
    type: str  # QuestionType: MC, Matrix, SBS, Slider, TE, RO, CS, DB, NPS, ...
    selector: str
    subselector: str
    text: str  # cleaned
    raw_text: str
    choices: list[Choice] = field(default_factory=list)
    answers: list[Choice] = field(default_factory=list)  # a matrix's scale points
    payload: dict = field(default_factory=dict)
    parts: list["Question"] = field(default_factory=list)  # side-by-side: its columns

    @property
    def kind(self) -> str:
        return "/".join(x for x in (self.type, self.selector, self.subselector) if x)


@dataclass
class Block:
    id: str
    name: str
    qids: list[str]
    trash: bool = False


@dataclass
class Randomizer:
    flow_id: str
    arms: list[str]  # block ids, one shown per subject (empty for an embedded-data randomizer)
    even: bool
    efield: str = ""  # an embedded-data randomizer: the field it sets ...
    values: list[str] = field(default_factory=list)  # ... to one of these values per subject


@dataclass
class FlowNote:
    id: str
    type: str
    reason: str


@dataclass
class Survey:
    file: Path
    name: str
    id: str
    questions: dict[str, Question]
    blocks: dict[str, Block]
    order: list[str]  # block ids in flow order (first showing)
    randomizers: list[Randomizer]
    embedded: list[str]  # embedded-data field names set in the flow
    flow_notes: list[FlowNote]
    other_elements: list[tuple[str, str]]  # (Element code, PrimaryAttribute) not read
    branches: dict[str, list] = field(default_factory=dict)  # block id -> [(FlowID, BranchLogic)] it sits under
    reshown: list[tuple[str, int]] = field(default_factory=list)  # (block id, blocks in order before it) shown again


def _fail(path: Path, msg: str) -> UserError:
    return UserError(f"{path}: {msg}")


def _read_json(path: Path):
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise _fail(path, "no such survey file") from None
    except IsADirectoryError:
        raise _fail(path, "is a folder, not a Qualtrics survey file (.qsf)") from None
    except OSError as e:
        raise _fail(path, f"cannot be read ({e.strerror or e})") from None
    if not raw.strip():
        raise _fail(path, "empty file, not a Qualtrics survey file (.qsf)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _fail(path, f"not UTF-8 text (byte {e.start}): not a Qualtrics survey file (.qsf is JSON)") from None
    try:
        data = json.loads(text)
    except RecursionError:  # json's C decoder recurses per level: 100,000 nested [ stop it
        raise _fail(path, f"not a Qualtrics survey file: the JSON is nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()) - 1:  # the text ran out: a cut-off download
            raise _fail(path, "truncated: the JSON ends early (download the .qsf again)") from None
        raise _fail(path, f"not a Qualtrics survey file: not JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if _too_deep(data):  # the flow is read recursively: bounded here, before any of it is
        raise _fail(path, f"not a Qualtrics survey file: the JSON is nested deeper than {MAX_DEPTH} levels")
    return data


MAX_DEPTH = 100  # JSON nesting of a survey file (real ones: about 10; flows nest a few levels a branch)


def _too_deep(data) -> bool:
    todo = [(data, 1)]
    while todo:
        v, depth = todo.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(v, dict):
            todo.extend((x, depth + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            todo.extend((x, depth + 1) for x in v if isinstance(x, (dict, list)))
    return False


def _count(v) -> int | None:
    """A key or count written as ASCII digits ("0", "12"), else None: "²" passes str.isdigit and a
    5,000-digit string int()'s digit limit, and neither is a count (issue 42)."""
    s = str(v)
    return int(s) if s.isascii() and s.isdecimal() and len(s) <= 9 else None


def _entries(value) -> list:
    """QSF lists are sometimes objects keyed "0", "1", ...: both read as a list."""
    if isinstance(value, dict):
        return [value[k] for k in sorted(value, key=lambda k: (_count(k) is None, _count(k) or 0, str(k)))]
    return list(value) if isinstance(value, list) else []


def load_qsf(file) -> Survey:
    path = Path(file)
    data = _read_json(path)
    if not isinstance(data, dict):
        raise _fail(path, "not a Qualtrics survey file: the JSON is not an object with SurveyEntry and SurveyElements")
    for key in ("SurveyEntry", "SurveyElements"):
        if key not in data:
            raise _fail(path, f"not a Qualtrics survey file: no {key} (a .qsf holds SurveyEntry and SurveyElements)")
    entry, elements = data["SurveyEntry"], data["SurveyElements"]
    if not isinstance(entry, dict):
        raise _fail(path, "SurveyEntry: expected an object")
    if not isinstance(elements, list) or not elements:
        raise _fail(path, "SurveyElements: expected a non-empty list of elements")
    by_code: dict[str, list] = {}
    for i, el in enumerate(elements):
        if not isinstance(el, dict) or "Element" not in el or "Payload" not in el:
            raise _fail(path, f"SurveyElements[{i}]: not an element (needs Element and Payload)")
        by_code.setdefault(str(el["Element"]), []).append(el)
    for code, what in (("FL", "survey flow"), ("BL", "blocks")):
        if code not in by_code:
            raise _fail(path, f"no {code} element ({what}): truncated or not a survey export")
    questions = _questions(path, by_code.get("SQ", []))
    blocks = _blocks(path, by_code["BL"][0]["Payload"], questions)
    flow = by_code["FL"][0]["Payload"]
    if not isinstance(flow, dict) or not isinstance(flow.get("Flow"), (list, dict)):
        raise _fail(path, "FL (survey flow): no Flow list")
    s = Survey(path, clean(entry.get("SurveyName")) or path.stem, str(entry.get("SurveyID") or ""), questions,
               blocks, [], [], [], [], [(c, str(el.get("PrimaryAttribute") or "")) for c, els in by_code.items()
                                           if c not in ("SQ", "BL", "FL") for el in els])
    _walk_flow(path, s, _entries(flow["Flow"]), "")
    if not s.order:
        raise _fail(path, "the survey flow shows no block")
    return s


def _questions(path: Path, elements: list) -> dict[str, Question]:
    out: dict[str, Question] = {}
    for el in elements:
        p = el["Payload"]
        if not isinstance(p, dict):
            raise _fail(path, f"question {el.get('PrimaryAttribute')}: Payload is not an object (truncated or edited)")
        qid = str(p.get("QuestionID") or el.get("PrimaryAttribute") or "")
        if not qid or "QuestionType" not in p:
            raise _fail(path, f"question {qid or '?'}: no QuestionID or QuestionType (truncated or edited)")
        if qid in out:
            raise _fail(path, f"question {qid} appears twice")
        q = _question(path, qid, p)
        if q.type == "SBS":
            q.parts = [_question(path, f"{qid}#{k}", {**part, "DataExportTag": part.get("DataExportTag") or f"{q.tag}#{k}"})
                       for k, part in sorted(((str(k), v) for k, v in (p.get("AdditionalQuestions") or {}).items()),
                                             key=lambda kv: _count(kv[0]) or 0)
                       if isinstance(part, dict)]
        out[qid] = q
    return out


def _choice_list(path: Path, qid: str, p: dict, key: str, order_key: str, recodes: dict, tags) -> list[Choice]:
    raw = p.get(key)
    if raw in (None, [], ""):
        return []
    if not isinstance(raw, dict):
        raise _fail(path, f"question {qid}: {key} is not an object of choices (truncated or edited)")
    from ..limits import MAX_CHOICES  # lazy: imports yaml

    if len(raw) > MAX_CHOICES:  # checked before anything is built or loaded: a prompt of 10^5 options
        raise _fail(path, f"question {qid}: {len(raw)} {key.lower()}; at most {MAX_CHOICES} per question "
                          "(studyfile/limits.py MAX_CHOICES)")
    order = [str(x) for x in (p.get(order_key) or [])] or list(raw)
    order += [k for k in raw if k not in order]
    out = []
    for cid in order:
        c = raw.get(cid)
        if not isinstance(c, dict):
            continue  # an order entry without its choice (Qualtrics keeps deleted ids in orders)
        out.append(Choice(cid, clean(c.get("Display")), str(recodes.get(cid, cid)) if isinstance(recodes, dict) else cid,
                          str(tags.get(cid) or "") if isinstance(tags, dict) else "",
                          "TextEntry" in c and str(c.get("TextEntry")).lower() not in ("false", "0", ""),
                          bool(c.get("ExclusiveAnswer")), "DisplayLogic" in c))
    return out


def _question(path: Path, qid: str, p: dict) -> Question:
    raw = str(p.get("QuestionText") or "")
    q = Question(qid, str(p.get("DataExportTag") or qid), str(p["QuestionType"]), str(p.get("Selector") or ""),
                 str(p.get("SubSelector") or ""), clean(raw), raw, payload=p)
    recodes = p.get("RecodeValues") or {}
    q.choices = _choice_list(path, qid, p, "Choices", "ChoiceOrder", recodes if q.type != "Matrix" else {},
                             p.get("ChoiceDataExportTags"))
    q.answers = _choice_list(path, qid, p, "Answers", "AnswerOrder", recodes if q.type == "Matrix" else {}, {})
    own = [x for x in _entries(p.get("SkipLogic") or []) if isinstance(x, dict)]
    if own:  # skip logic in the question's own payload (older exports): read as the block's is
        p["_SkipLogic"] = own
    return q


def _blocks(path: Path, payload, questions: dict) -> dict[str, Block]:
    out = {}
    for b in _entries(payload):
        if not isinstance(b, dict) or "ID" not in b:
            raise _fail(path, "BL (blocks): a block without an ID (truncated or edited)")
        qids = []
        for e in _entries(b.get("BlockElements") or []):
            if isinstance(e, dict) and e.get("Type") == "Question":
                qid = str(e.get("QuestionID"))
                if qid not in questions:
                    raise _fail(path, f"block {b['ID']} lists {qid}, which has no question element (truncated or edited)")
                qids.append(qid)
                skips = [x for x in _entries(e.get("SkipLogic") or []) if isinstance(x, dict)]
                if skips:  # skip logic sits in the block (or the question's payload): kept with the question
                    had = questions[qid].payload.get("_SkipLogic") or []
                    questions[qid].payload["_SkipLogic"] = had + [x for x in skips if x not in had]
        out[str(b["ID"])] = Block(str(b["ID"]), clean(b.get("Description")) or str(b["ID"]), qids,
                                  trash=b.get("Type") == "Trash")
    return out


def _flow_block(path: Path, s: Survey, bid: str, fid: str, under: tuple) -> None:
    """A block in the flow: appended to the order, or, shown again, recorded (its questions are asked once;
    an arm's vignette shown again precedes the later blocks: write._shown_again)."""
    if bid not in s.blocks:
        raise _fail(path, f"survey flow {fid} shows block {bid}, which is not in BL (truncated or edited)")
    if bid in s.order:
        s.reshown.append((bid, len(s.order)))
        s.flow_notes.append(FlowNote(fid, "Block", f"block {s.blocks[bid].name!r} is shown again here; "
                                                   "its questions are asked once"))
    else:
        s.order.append(bid)
        if under:
            s.branches[bid] = list(under)


def _walk_flow(path: Path, s: Survey, flow: list, inside: str, under: tuple = (), depth: int = 1) -> None:
    """Blocks in the order shown; a randomizer that shows one of its blocks becomes a condition; everything
    else (branches, embedded data, end of survey, web services, ...) is recorded for the notes."""
    from ..limits import MAX_FLOW_DEPTH  # lazy: imports yaml

    if depth > MAX_FLOW_DEPTH:
        raise _fail(path, f"the survey flow nests deeper than {MAX_FLOW_DEPTH} levels (groups, branches, "
                          "randomizers); studyfile/limits.py MAX_FLOW_DEPTH")
    for el in flow:
        if not isinstance(el, dict):
            continue
        kind, fid = str(el.get("Type")), str(el.get("FlowID") or "?")
        if kind in ("Block", "Standard", "Default"):
            _flow_block(path, s, str(el.get("ID")), fid, under)
        elif kind == "BlockRandomizer":
            kids = _entries(el.get("Flow") or [])
            blocks = [str(k.get("ID")) for k in kids if isinstance(k, dict) and k.get("Type") in ("Block", "Standard")]
            subset = _count(el.get("SubSet") or 0) or 0
            if subset == 1 and len(blocks) == len(kids) >= 2 and not inside and not set(blocks) & set(s.order):
                even = bool(el.get("EvenPresentation"))
                s.randomizers.append(Randomizer(fid, blocks, even))
                for b in blocks:
                    if b not in s.blocks:
                        raise _fail(path, f"randomizer {fid} shows block {b}, which is not in BL (truncated or edited)")
                    s.order.append(b)
            elif subset == 1 and not inside and _assigns(kids):
                # the common survey-experiment pattern: the randomizer sets an embedded-data field
                # (condition = A | B) and branches on it show each arm its blocks; a crossed design
                # (frame x source, each arm setting both) is one factor per field
                for fname, values in _assigns(kids):
                    s.randomizers.append(Randomizer(fid, [], bool(el.get("EvenPresentation")), fname, values))
                    s.embedded += [fname] if fname not in s.embedded else []
            else:
                why = ("it shows several of its elements" if subset != 1 else
                       "it holds more than blocks" if len(blocks) != len(kids) else
                       "it has fewer than two blocks" if len(blocks) < 2 else f"it sits inside {inside}")
                s.flow_notes.append(FlowNote(fid, "BlockRandomizer", f"randomizer (SubSet {el.get('SubSet')}) not "
                                             f"converted: {why}; its elements are asked of every subject in order"))
                _walk_flow(path, s, kids, inside or f"randomizer {fid}", under, depth + 1)
        elif kind == "Branch":
            desc = _logic_text(el.get("BranchLogic"))
            s.flow_notes.append(FlowNote(fid, "Branch", f"branch ({desc}) not converted in study.yaml: its blocks "
                                                        "are asked of every subject (session.yaml shows them where the condition is an answer "
                                                        "to an earlier question)"))
            _walk_flow(path, s, _entries(el.get("Flow") or []), inside or f"branch {fid}",
                       (*under, (fid, el.get("BranchLogic"))), depth + 1)
        elif kind == "Group":
            _walk_flow(path, s, _entries(el.get("Flow") or []), inside, under, depth + 1)
        elif kind == "EmbeddedData":
            names = [str(f.get("Field")) for f in _entries(el.get("EmbeddedData") or []) if isinstance(f, dict)]
            s.embedded += [n for n in names if n not in s.embedded]
            s.flow_notes.append(FlowNote(fid, "EmbeddedData", f"embedded data {', '.join(names) or '(none)'}: kept as "
                                         "respondent columns of the human table where the export has them; not "
                                         "set for model subjects"))
        else:
            s.flow_notes.append(FlowNote(fid, kind, f"flow element {kind} has no counterpart in a study file"))


def _assigns(kids: list) -> list[tuple[str, list[str]]] | None:
    """[(field, values)] when every element of a randomizer is embedded data setting the same fields to
    fixed values: one field with two or more values, or several fields whose values the elements cross
    fully (a 2 x 2: frame = gain | loss by source = expert | peer, each arm setting both: two factors,
    issue 41 item 11); else None."""
    arms = []
    for k in kids:
        fields = [f for f in _entries((k or {}).get("EmbeddedData") or []) if isinstance(f, dict)] \
            if isinstance(k, dict) and k.get("Type") == "EmbeddedData" else []
        if not fields or any(f.get("Value") in (None, "") or "${" in str(f.get("Value")) for f in fields):
            return None
        arms.append({str(f.get("Field")): str(f["Value"]) for f in fields})
    names = list(arms[0]) if arms else []
    if not names or any(list(a) != names for a in arms):
        return None
    values = {n: list(dict.fromkeys(a[n] for a in arms)) for n in names}
    cells = {tuple(a[n] for n in names) for a in arms}
    full = 1
    for n in names:
        full *= len(values[n])
    if any(len(v) < 2 for v in values.values()) or len(cells) != full:  # not a full crossing: not factors
        return None
    return [(n, values[n]) for n in names]


def _logic_text(logic) -> str:
    """The Description texts of a Qualtrics logic object, joined: what a person reads in the editor."""
    out = []

    def walk(v):
        if isinstance(v, dict):
            if "Description" in v and isinstance(v["Description"], str):
                out.append(clean(v["Description"]))
            for k, x in v.items():
                if k != "Description":
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(logic)
    return " ".join(out) or "a condition"
