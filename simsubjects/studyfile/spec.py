"""Validate a study file into a `Study`: every problem is one line naming file, line and key.

The format is documented field by field in docs/studies.md. Checks here need no model, so
`study check` and `collect` refuse a bad file before anything loads or is written.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
import json

import pandas as pd
import numpy as np

from simsubjects.analyze.methods.registry import TESTS
from simsubjects.collect.sample_kinds import CENSUS, DRAWN, IDENTICAL_PROMPTS, RECORDED
from simsubjects.collect.schema import COLLECTION_COLUMNS, CORE_COLUMNS, SESSION_COLUMNS
from .load import Source, StudyFileError, did_you_mean, read_source
from .limits import MAX_COUNT, MAX_ORDERINGS, MAX_SEED, MAX_TRIALS
from .tables import read_table
from ..collect.untrusted import is_ident
from .named import NAMED

SLUG = re.compile(r"^[a-z][a-z0-9_-]*$")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # placeholders, factor and attribute names
FUNCTION_REF = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")
# The names the package writes as columns (collect/schema.py's, and the trials table's): no item id, factor,
# attribute or table column of a study file takes one. A session writes its own columns too (schema's
# SESSION_COLUMNS): SESSION_RESERVED holds both, for its items, variables, players, payoff rules and subjects.
RESERVED = {*CORE_COLUMNS, *COLLECTION_COLUMNS,
            "prompt", "options", "labels", "persona", "estimate", "completion", "score"}  # the trials table's
SESSION_RESERVED = {*RESERVED, *SESSION_COLUMNS, "_key"}  # _key: session_run.py's row key, dropped when written

TOP = {"study", "title", "citation", "license", "description", "prompt", "items", "response", "response_types",
       "design", "option_order", "human", "analyses", "tables",
       "finding"}  # a bench finding's declaration (simsubjects/bench/corpus.py reads and validates it)
PROMPT = {"template", "system", "chat_template", "answer_prefix"}
RESPONSE = {"type", "options", "style", "completion", "option_format", "option_separator", "points", "labels",
            "refusal", "min", "max", "integer", "max_tokens", "terminator", "temperature", "judge"}
OPTION = {"label", "text", "completion", "position", "refusal"}
ITEM = {"id", "text", "response", "attributes"}
ITEM_TABLE = {"table", "id", "text", "response", "attributes", "placeholders", "options", "option_labels",
              "option_positions", "option_refusal"}
DESIGN = {"factors", "crossing", "sample", "subjects", "repetitions", "seed", "trial_id", "condition", "columns",
          "trial_order"}
FACTOR = {"levels", "assignment"}
SUBJECTS = {"table", "id", "template", "n", "sample", "label", "per_item"}
ORDER = {"mode", "max_orderings"}
HUMAN = {"file", "columns", "name"}
HUMAN_COLUMNS = {"respondent", "item", "response", "weight", "condition", "groups", "trial", "order"}
JUDGE = {"prompt", "response"}
# the tests come from the one method registry (analyze/methods/registry.py); the other types make tables
ANALYSIS_TYPES = {"distribution": set(), **{name: set(m.keys) for name, m in TESTS.items()}, "amce": {"factors"},
                  "representativeness": {"by"}, "agreement": {"by"}, "summaries": set(), "function": {"function", "args"}}
MODES = ("as_listed", "reversed", "randomized", "averaged")
RESPONSE_KINDS = ("choice", "yesno", "likert", "estimate", "free_text")
STYLES = ("letters", "words")
ASSIGNMENTS = ("within", "between", "item")
CROSSINGS = ("crossed", "sampled")
TRIAL_ORDERS = ("subject", "item")
# the keys each mapping must have: `study check` and `study schema` (studyfile/schema.py) read these
REQUIRED = {"top": ("study", "title", "prompt", "items"), "prompt": ("template",), "response": ("type",),
            "option": ("label",), "judge": ("prompt", "response"), "factor": ("levels",), "item": ("id", "text"),
            "item_table": ("table",), "option_order": ("mode",), "human": ("file", "columns"),
            "human_columns": ("respondent", "item", "response")}
LIKERT = {5: ["Strongly disagree", "Disagree", "Neither agree nor disagree", "Agree", "Strongly agree"],
          7: ["Strongly disagree", "Disagree", "Somewhat disagree", "Neither agree nor disagree", "Somewhat agree",
              "Agree", "Strongly agree"]}
SHORTCUTS = {"yesno": {"type": "yesno"}, "likert5": {"type": "likert", "points": 5},
             "likert7": {"type": "likert", "points": 7}, "estimate": {"type": "estimate"},
             "free_text": {"type": "free_text"}}


@dataclass
class Option:
    label: str  # what the responses table records
    completion: str | None = None  # None: from the response's completion template
    text: str | None = None  # what the prompt shows (${text}); None: the label
    position: float | None = None  # ordinal position (None: unordered)
    refusal: bool = False


@dataclass
class Response:
    kind: str  # choice | estimate | free_text
    options: list[Option] = field(default_factory=list)
    style: str = "letters"  # letters | words
    completion: str = " ${letter}"
    option_format: str = "${letter}. ${text}"
    option_separator: str = "\n"
    min: float | None = None
    max: float | None = None
    integer: bool = False
    max_tokens: int = 16
    terminator: str = ""
    temperature: float = 1.0
    judge_prompt: str = ""
    judge: "Response | None" = None

    @property
    def ordinal(self) -> bool:
        return any(o.position is not None for o in self.options)


@dataclass
class Item:
    id: str
    text: str
    response: Response
    attributes: dict = field(default_factory=dict)
    where: tuple = ()
    text_by: str = ""  # a factor whose level picks the text: `texts` maps level -> text (text: the first)
    texts: dict = field(default_factory=dict)

    response_by: str = ""  # a factor whose level picks the response: `responses` maps level -> Response
    responses: dict = field(default_factory=dict)

    def text_in(self, cond: dict) -> str:
        return self.texts[cond[self.text_by]] if self.text_by else self.text

    def response_in(self, cond: dict) -> "Response":
        return self.responses[cond[self.response_by]] if self.response_by else self.response


@dataclass
class Factor:
    name: str
    levels: dict[str, str]  # level -> text put into templates
    assignment: str = "within"  # within | between | item


@dataclass
class Study:
    file: Path
    source: Source
    name: str
    title: str
    citation: str = ""
    license: str = ""
    description: str = ""
    template: str = ""
    system: str = ""
    chat_template: bool = False
    answer_prefix: str = ""
    items: list[Item] = field(default_factory=list)
    factors: list[Factor] = field(default_factory=list)
    crossing: str = "crossed"
    sample: int | None = None
    subjects: pd.DataFrame | None = None  # columns: subject, persona, and the table's columns
    repetitions: int = 1
    seed: int = 0
    subject_label: str | None = None  # template of the `subject` column (None: the subject's id)
    per_item: int | None = None  # subjects drawn afresh for each item (design.subjects.per_item)
    # what the subjects are a sample of (collect/sample_kinds.py; the `sample` column of test tables)
    subjects_sample: str = IDENTICAL_PROMPTS
    trial_order: str = "subject"  # subject: subject -> cell -> item; item: item -> cell -> subject
    columns: dict = field(default_factory=dict)  # extra trial columns: name -> template (design.columns)
    # extra trial columns set by a factor's level: name -> (factor, {level: value}) (design.columns, a mapping)
    level_columns: dict = field(default_factory=dict)
    trial_id: str = ""  # template of the trial id (default: subject | item | condition ...)
    condition: str = ""  # template of the condition label (default: factor=level,...)
    order_mode: str = "as_listed"
    max_orderings: int = 24
    # set for a run folder made before one option-order module (studyfile/adapter.order_parameters):
    # its orders and order columns are re-made as they were recorded then
    orders_before: bool = False
    human: pd.DataFrame | None = None
    human_name: str = "human"
    # design.subjects: people - the human table's respondents are the subjects, each asked the items they
    # answered in the condition they answered them in (issue 39: every person's answers scored)
    people: bool = False
    answered: dict = field(default_factory=dict)  # people: subject -> {(item, condition label)}
    shown_orders: dict = field(default_factory=dict)  # people: (subject, item, condition) -> the order they saw
    ablate: tuple = ()  # collect --ablate: the twins built beside the full prompt (design.py)
    analyses: list[dict] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)  # relative name -> path: the file and its tables
    # `type: function` analyses run only when the user runs this file themselves with --allow-code,
    # never from a run folder's copy (docs/robustness.md): a received run is data, not code
    allow_code: bool = False
    # relative name -> the bytes read and parsed: hashed into the manifest and copied into the run from
    # here, never re-read (an edit during a run cannot reach the run folder)
    raw: dict[str, bytes] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.text.encode("utf-8")).hexdigest()

    def factor(self, name: str) -> Factor | None:
        return next((f for f in self.factors if f.name == name), None)


class Checker:
    """Typed getters over the parsed data; each failure names its key and line."""

    def __init__(self, src: Source):
        self.src = src

    def err(self, path, msg) -> StudyFileError:
        return self.src.error(tuple(path), msg)

    def mapping(self, value, path, allowed: set[str], required=()) -> dict:
        if not isinstance(value, dict):
            raise self.err(path, f"expected a mapping of keys, got {_kind(value)}")
        for k in value:
            if k not in allowed:
                raise self.err((*path, k), f"unknown key{did_you_mean(k, allowed)}")
        for k in required:
            if k not in value or value[k] is None:
                raise self.err(path, f"missing required key {k!r}")
        return value

    def typed(self, value, path, types, what: str):
        if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
            hint = " (YAML reads yes, no, on, off, true, false as true/false: put it in quotes)" if what == "text" else ""
            raise self.err(path, f"expected {what}, got {_kind(value)}{hint}")
        if not isinstance(value, types):
            raise self.err(path, f"expected {what}, got {_kind(value)}")
        return value

    def text(self, d: dict, key: str, path, default=None, required=False) -> str:
        if key not in d or d[key] is None:
            if required:
                raise self.err(path, f"missing required key {key!r}")
            return default
        v = d[key]
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not required:
            return str(v)
        return self.typed(v, (*path, key), str, "text")

    def number(self, d: dict, key: str, path, default=None, integer=False, low=None, high=None):
        if key not in d or d[key] is None:
            return default
        v = self.typed(d[key], (*path, key), int if integer else (int, float), "an integer" if integer else "a number")
        if isinstance(v, float) and not math.isfinite(v):
            raise self.err((*path, key), f"must be a finite number, got {v}")
        if low is not None and v < low:
            raise self.err((*path, key), f"must be at least {low}, got {v}")
        if high is not None and v > high:  # bounded before the work it counts (docs/robustness.md)
            raise self.err((*path, key), f"must be at most {high}, got {v}")
        return v

    def flag(self, d: dict, key: str, path, default=False) -> bool:
        if key not in d or d[key] is None:
            return default
        return self.typed(d[key], (*path, key), bool, "true or false")

    def listed(self, d: dict, key: str, path, required=False) -> list:
        if key not in d or d[key] is None:
            if required:
                raise self.err(path, f"missing required key {key!r}")
            return []
        return self.typed(d[key], (*path, key), list, "a list")

    def choice(self, d: dict, key: str, path, allowed, default):
        v = self.text(d, key, path, default)
        if v not in allowed:
            raise self.err((*path, key), f"{v!r} is not one of {', '.join(allowed)}{did_you_mean(v, allowed)}")
        return v


def _kind(v) -> str:
    return {dict: "a mapping", list: "a list", str: "text", bool: "true/false", int: "a number", float: "a number",
            type(None): "nothing"}.get(type(v), type(v).__name__)


def placeholders(template: str) -> list[str]:
    t = Template(template)
    if not t.is_valid():
        return ["$"]  # a lone "$": reported by the caller
    return t.get_identifiers()


# ----------------------------------------------------------------------------------------- responses

def parse_response(c: Checker, value, path, named: dict[str, Response]) -> Response:
    if isinstance(value, str):
        if value in named:
            return named[value]
        if value in SHORTCUTS:
            value = SHORTCUTS[value]
        else:
            raise c.err(path, f"unknown response type {value!r}{did_you_mean(value, [*named, *SHORTCUTS])}")
    d = c.mapping(value, path, RESPONSE, required=REQUIRED["response"])
    kind = c.choice(d, "type", path, RESPONSE_KINDS, None)
    if kind in ("estimate", "free_text"):
        return _generated(c, d, path, kind, named)
    default_style = "words" if kind == "yesno" else "letters"
    style = c.choice(d, "style", path, STYLES, default_style)
    r = Response("choice", style=style,
                 completion=c.text(d, "completion", path, " ${letter}" if style == "letters" else " ${text}"),
                 option_format=c.text(d, "option_format", path,
                                      "${letter}. ${text}" if style == "letters" else "${text}"),
                 option_separator=c.text(d, "option_separator", path, "\n"))
    for key, allowed in (("completion", {"letter", "label", "text"}),
                         ("option_format", {"letter", "label", "text", "position"})):
        bad = [p for p in placeholders(getattr(r, key)) if p not in allowed]
        if bad:
            raise c.err((*path, key), f"placeholder ${bad[0]} has no value (available: "
                                      f"{', '.join('$' + a for a in sorted(allowed))})")
    if kind == "yesno":
        r.options = [Option("Yes", position=1.0), Option("No", position=0.0)]
    elif kind == "likert":
        labels = d.get("labels")
        if labels is None:
            points = c.number(d, "points", path, 5, integer=True)
            if points not in LIKERT:
                raise c.err((*path, "points"), f"Likert shortcut has 5 or 7 points, got {points}; give labels: instead")
            labels = LIKERT[points]
        labels = c.listed({"labels": labels}, "labels", path)
        if len(labels) < 2:
            raise c.err((*path, "labels"), "a Likert scale needs at least 2 labels")
        r.options = [Option(str(c.typed(lab, (*path, "labels", i), (str, int, float), "text")), position=float(i + 1))
                     for i, lab in enumerate(labels)]
    else:
        raw = c.listed(d, "options", path, required=True)
        if not raw:
            raise c.err((*path, "options"), "empty options: a k-choice response needs at least 2 options")
        r.options = [_option(c, o, (*path, "options", i)) for i, o in enumerate(raw)]
    refusal = d.get("refusal")
    if refusal is not None:
        for i, lab in enumerate(refusal if isinstance(refusal, list) else [refusal]):
            r.options.append(Option(str(c.typed(lab, (*path, "refusal"), (str, int), "text")), refusal=True))
    _check_options(c, r, path)
    return r


def _option(c: Checker, o, path) -> Option:
    if isinstance(o, (str, int, float)) and not isinstance(o, bool):
        return Option(str(o))
    d = c.mapping(o, path, OPTION, required=REQUIRED["option"])
    pos = c.number(d, "position", path)
    return Option(c.text(d, "label", path, required=True), completion=c.text(d, "completion", path),
                  position=None if pos is None else float(pos), refusal=c.flag(d, "refusal", path),
                  text=c.text(d, "text", path))


def _check_options(c: Checker, r: Response, path) -> None:
    if len(r.options) < 2:
        raise c.err((*path, "options"), f"a k-choice response needs at least 2 options, got {len(r.options)}")
    if len(r.options) > 26 and r.style == "letters":
        raise c.err((*path, "options"), "letters style labels at most 26 options")
    labels = [o.label for o in r.options]
    dup = next((x for x in labels if labels.count(x) > 1), None)
    if dup is not None:
        raise c.err((*path, "options"), f"option {dup!r} is listed twice")
    if any(not o.label.strip() for o in r.options):
        raise c.err((*path, "options"), "an option label is empty")
    ordered = [o for o in r.options if not o.refusal]
    if any(o.position is not None for o in ordered) and any(o.position is None for o in ordered):
        raise c.err((*path, "options"), "give a position to every option that is not a refusal, or to none")
    if r.style == "words" and any(o.completion is not None for o in r.options):
        comps = [o.completion for o in r.options if o.completion is not None]
        if len(set(comps)) != len(comps):
            raise c.err((*path, "options"), "two options have the same completion")


def _generated(c: Checker, d: dict, path, kind: str, named) -> Response:
    r = Response(kind, max_tokens=c.number(d, "max_tokens", path, 16 if kind == "estimate" else 48, integer=True, low=1),
                 temperature=c.number(d, "temperature", path, 1.0, low=0))
    if kind == "estimate":
        r.min, r.max = c.number(d, "min", path), c.number(d, "max", path)
        if r.min is not None and r.max is not None and r.min > r.max:
            raise c.err((*path, "min"), f"min {r.min} is above max {r.max}")
        r.integer = c.flag(d, "integer", path)
        r.terminator = c.text(d, "terminator", path, "")
        for k in ("options", "judge"):
            if k in d:
                raise c.err((*path, k), f"an estimate has no {k}")
        return r
    if "judge" not in d:
        raise c.err(path, "a free_text response needs judge: {prompt, response} to classify the answers")
    j = c.mapping(d["judge"], (*path, "judge"), JUDGE, required=REQUIRED["judge"])
    r.judge_prompt = c.text(j, "prompt", (*path, "judge"), required=True)
    if "answer" not in placeholders(r.judge_prompt):
        raise c.err((*path, "judge", "prompt"), "the judge prompt needs the placeholder ${answer}")
    r.judge = parse_response(c, j["response"], (*path, "judge", "response"), named)
    if r.judge.kind != "choice":
        raise c.err((*path, "judge", "response"), "a judge answers a k-choice question")
    return r


# ----------------------------------------------------------------------------------------- the study

def study_header(file, top: set, required: tuple, empty: str = ""):
    """The top of any study file (plain, session, obedience): (source, checker, top-level mapping, and the
    fields every kind shares: name, title, citation, license, description). `empty`: a hint after
    "the file is empty"."""
    src = read_source(file)
    c = Checker(src)
    if src.data is None:
        raise StudyFileError(f"{src.file}: the file is empty{empty}")
    d = c.mapping(src.data, (), top | {"finding"}, required=required)  # `finding:` is simsubjects bench's (bench/corpus.py validates it)
    name = c.text(d, "study", ())
    if not SLUG.fullmatch(name):  # fullmatch: `$` alone lets a trailing newline through
        raise c.err(("study",), f"{name!r}: use lower-case letters, digits, - and _, starting with a letter")
    return src, c, d, {"name": name, "title": c.text(d, "title", (), required=True),
                       "citation": c.text(d, "citation", (), ""), "license": c.text(d, "license", (), ""),
                       "description": c.text(d, "description", (), "")}


def study_kind(path) -> str:
    """"session", "obedience" (a top-level `session:` or `obedience:` key) or "plain": which loader reads the
    file, from one parse (the loader parses it again); a file that cannot be read is "plain", whose loader
    then says why."""
    try:
        src = read_source(path)
    except StudyFileError:
        return "plain"
    data = src.data if isinstance(src.data, dict) else {}
    return next((k for k in ("session", "obedience") if k in data), "plain")


def load_study(file, seed: int | None = None, allow_code: bool = False) -> Study:
    """The study of `file`; `seed` (collect --seed) replaces design.seed before any seeded table is drawn.
    `allow_code`: its `type: function` analyses may run (the user's own file, given with --allow-code)."""
    src, c, d, head = study_header(file, TOP, REQUIRED["top"],
                                   "; start from `simsubjects study new survey DIR`")
    s = Study(file=src.file, source=src, **head, allow_code=allow_code)
    s.files[src.file.name] = src.file
    s.raw[src.file.name] = src.raw
    _prompt(c, d, s)
    named, default = response_types(c, d)
    _design(c, d, s, seed)
    _items(c, d, s, named, default)
    _order(c, d, s)
    _human(c, d, s)
    if s.people:
        people_subjects(c, s)
    _analyses(c, d, s)
    _check_placeholders(c, s)
    _check_size(c, s)
    return s


def _check_size(c: Checker, s: Study) -> None:
    """An upper bound on the trials, before any is built: subjects x items x within-subject cells x
    repetitions x orderings (a k-choice item's option orders, at most max_orderings)."""
    within = math.prod(len(f.levels) for f in s.factors if f.assignment != "between") or 1
    if s.sample:
        within = min(within, s.sample)
    orders = 1
    if s.order_mode == "averaged":
        for it in s.items:
            r = it.response.judge if it.response.kind == "free_text" else it.response
            k = sum(not o.refusal for o in (r.options if r else []))
            orders = max(orders, min(math.factorial(min(k, 20)), s.max_orderings))
    bound = len(s.subjects) * len(s.items) * within * s.repetitions * orders
    if bound > MAX_TRIALS:
        raise c.err(("design",), f"up to {bound} trials ({len(s.subjects)} subjects x {len(s.items)} items x "
                                 f"{within} cells x {s.repetitions} repetitions x {orders} orderings); a study file "
                                 f"has at most {MAX_TRIALS}")


def response_types(c: Checker, d: dict) -> tuple[dict[str, Response], Response | None]:
    """A file's named `response_types` and its default `response` (a study file's and a session's alike)."""
    named: dict[str, Response] = {}
    for k, v in c.typed(d.get("response_types") or {}, ("response_types",), dict, "a mapping").items():
        if not NAME.fullmatch(str(k)):
            raise c.err(("response_types", k), "a response type name is letters, digits and _")
        named[k] = parse_response(c, v, ("response_types", k), named)
    default = parse_response(c, d["response"], ("response",), named) if d.get("response") is not None else None
    return named, default


def _prompt(c: Checker, d: dict, s: Study) -> None:
    if isinstance(d["prompt"], str):
        p = {"template": d["prompt"]}
    else:
        p = c.mapping(d["prompt"], ("prompt",), PROMPT, required=REQUIRED["prompt"])
    s.template = c.text(p, "template", ("prompt",), required=True)
    s.system = c.text(p, "system", ("prompt",), "")
    s.chat_template = c.flag(p, "chat_template", ("prompt",))
    s.answer_prefix = c.text(p, "answer_prefix", ("prompt",), "")
    for key in ("template", "system", "answer_prefix"):
        if not Template(getattr(s, key)).is_valid():
            raise c.err(("prompt", key), "a lone $ starts no placeholder; write $$ for a dollar sign")


def _table(c: Checker, s: Study, name, path) -> pd.DataFrame:
    rel = c.typed(name, path, str, "a file name")
    if rel.startswith("builtin:"):

        key = rel.removeprefix("builtin:")
        if key not in NAMED:
            raise c.err(path, f"{rel}: no such built-in table{did_you_mean(key, NAMED)}")
        return NAMED[key](s.seed)
    p = (s.file.parent / rel)
    try:
        p.resolve().relative_to(s.file.parent.resolve())
    except ValueError:
        raise c.err(path, f"{rel}: tables sit beside the study file or in a folder under it") from None
    s.files[Path(rel).as_posix()] = p
    df, s.raw[Path(rel).as_posix()] = read_table(p, lambda msg: c.err(path, msg), keep_bytes=True)
    return df


def _design(c: Checker, d: dict, s: Study, seed: int | None = None) -> None:
    g = c.mapping(d.get("design") or {}, ("design",), DESIGN)
    for fname, fv in c.typed(g.get("factors") or {}, ("design", "factors"), dict, "a mapping").items():
        path = ("design", "factors", fname)
        if not NAME.fullmatch(str(fname)) or fname in RESERVED:
            raise c.err(path, f"factor name {fname!r}: letters, digits and _, and not a reserved column "
                              f"({', '.join(sorted(RESERVED))})")
        fd = {"levels": fv} if isinstance(fv, list) else c.mapping(fv, path, FACTOR, required=REQUIRED["factor"])
        levels = fd["levels"]
        if isinstance(levels, list):
            levels = {str(c.typed(x, (*path, "levels", i), (str, int, float), "text")): str(x)
                      for i, x in enumerate(levels)}
        elif isinstance(levels, dict):
            levels = {str(k): str(c.typed(v, (*path, "levels", k), (str, int, float), "text")) for k, v in levels.items()}
        else:
            raise c.err((*path, "levels"), f"expected a list or a mapping level: text, got {_kind(levels)}")
        if len(levels) < 1:
            raise c.err((*path, "levels"), "a factor needs at least one level")
        s.factors.append(Factor(str(fname), levels, c.choice(fd, "assignment", path, ASSIGNMENTS,
                                                             "within")))
    s.crossing = c.choice(g, "crossing", ("design",), CROSSINGS, "crossed")
    s.sample = c.number(g, "sample", ("design",), None, integer=True, low=1, high=MAX_COUNT)
    if s.crossing == "sampled" and s.sample is None:
        raise c.err(("design", "crossing"), "crossing: sampled needs sample: N (conditions per subject)")
    s.repetitions = c.number(g, "repetitions", ("design",), 1, integer=True, low=1, high=MAX_COUNT)
    s.seed = c.number(g, "seed", ("design",), 0, integer=True, low=0, high=MAX_SEED)
    if seed is not None:
        s.seed = seed
    s.trial_order = c.choice(g, "trial_order", ("design",), TRIAL_ORDERS, "subject")
    s.trial_id = c.text(g, "trial_id", ("design",), "")
    s.condition = c.text(g, "condition", ("design",), "")
    s.subjects = _subjects(c, g.get("subjects"), s)
    if s.subjects_sample != IDENTICAL_PROMPTS and not s.people and _one_prompt(s):
        s.subjects_sample = IDENTICAL_PROMPTS
    for name, t in c.typed(g.get("columns") or {}, ("design", "columns"), dict, "a mapping").items():
        path = ("design", "columns", name)
        if not NAME.fullmatch(str(name)) or name in RESERVED or s.factor(name) or name in s.subjects.columns:
            raise c.err(path, f"column name {name!r}: letters, digits and _, and neither a reserved column, a factor "
                              "nor a subjects column")
        if isinstance(t, dict):
            s.level_columns[str(name)] = _level_column(c, t, path, s)
            continue
        s.columns[str(name)] = c.typed(t, path, str, "a template (text)")


def _level_column(c: Checker, v: dict, path, s: Study) -> tuple[str, dict]:
    """design.columns NAME: {FACTOR: {level: value}}: a column set by a factor's level, e.g. a 2x2 run as one
    four-level factor (a Qualtrics import's arm blocks Gain_Low ... Loss_High) with `frame` and `stake` beside
    it, so welch and chi_square compare the levels of each (the factors must already be declared)."""
    if len(v) != 1:
        raise c.err(path, "a column by level is {FACTOR: {level: value, ...}}: one factor")
    (fname, by), = v.items()
    f = s.factor(str(fname))
    if f is None or f.assignment == "item":
        raise c.err((*path, fname), f"{fname!r} is not a within- or between-subject factor"
                                    f"{did_you_mean(str(fname), [x.name for x in s.factors])}")
    by = c.mapping(by, (*path, fname), set(f.levels), required=tuple(f.levels))
    return f.name, {lv: _plain(c.typed(by[lv], (*path, fname, lv), (str, int), "a value (text)")) for lv in f.levels}


def _one_prompt(s: Study) -> bool:
    """A subjects table whose rows all give one persona text and whose columns no text of the file names as a
    placeholder ($col, ${col}): its rows only deal subjects into arms (a Qualtrics import's subjects.csv), so
    the subjects of an arm read one prompt (issue 40: copies, not a sample)."""
    if s.subjects["persona"].nunique() > 1:
        return False
    text = "\n".join(b.decode("utf-8", "replace") for b in s.raw.values())
    cols = [col for col in s.subjects.columns if col not in ("subject", "persona")]
    return not any(re.search(r"\$\{?" + re.escape(str(col)) + r"\b", text) for col in cols)


def _subjects(c: Checker, v, s: Study) -> pd.DataFrame:
    path = ("design", "subjects")
    if v is None:
        return pd.DataFrame({"subject": ["s1"], "persona": [""]})
    if v == "people":  # the respondents of `human:`, read after it (people_subjects)
        s.people = True
        s.subjects_sample = RECORDED  # each respondent's own prompts once (issue 39): nothing drawn, no copies
        return pd.DataFrame({"subject": ["s1"], "persona": [""]})
    if isinstance(v, str):
        raise c.err(path, f"{v!r}: subjects is a number, a mapping ({{table: FILE, ...}}) or `people` (the "
                          "human table's respondents)")
    d = c.mapping({"n": v} if isinstance(v, int) and not isinstance(v, bool) else v, path, SUBJECTS)
    n = c.number(d, "n", path, None, integer=True, low=1, high=MAX_COUNT)
    if "table" not in d:
        if "template" in d or "id" in d:
            raise c.err(path, "template: and id: read a subjects table; add table: FILE")
        n = n or 1
        if "label" in d:
            s.subject_label = c.text(d, "label", path, "")
            if placeholders(s.subject_label):
                raise c.err((*path, "label"), "without a subjects table a label is plain text")
        return pd.DataFrame({"subject": [f"s{i + 1}" for i in range(n)], "persona": [""] * n})
    df = _table(c, s, d["table"], (*path, "table"))
    idcol = c.text(d, "id", path)
    if idcol is not None and idcol not in df.columns:
        raise c.err((*path, "id"), f"column {idcol!r} is not in {d['table']}{did_you_mean(idcol, df.columns)}")
    template = c.text(d, "template", path, "")
    for p in placeholders(template):
        if p == "$":
            raise c.err((*path, "template"), "a lone $ starts no placeholder; write $$ for a dollar sign")
        if p not in df.columns:
            raise c.err((*path, "template"), f"placeholder ${p} has no value: not a column of {d['table']}"
                                             f"{did_you_mean(p, df.columns)}")
    bad = [col for col in df.columns if col in RESERVED and col != idcol]
    if bad:
        raise c.err((*path, "table"), f"column {bad[0]!r} of {d['table']} is a reserved column name; rename it")
    # every row once (a census; `n` alone keeps the first n rows), or drawn: `sample: true`, `per_item`, or a
    # built-in table that is itself a seeded draw (ultimatum_pairs)
    s.subjects_sample = DRAWN if (c.flag(d, "sample", path) and n is not None) or d.get("per_item") or \
        str(d["table"]) == "builtin:ultimatum_pairs" else CENSUS
    if n is not None:
        if c.flag(d, "sample", path):
            df = df.sample(n=min(n, len(df)), random_state=s.seed)
        else:
            df = df.head(n)
    df = df.reset_index(drop=True)
    s.per_item = c.number(d, "per_item", path, None, integer=True, low=1, high=MAX_COUNT)
    if s.per_item is not None and s.per_item > len(df):
        raise c.err((*path, "per_item"), f"{s.per_item} subjects per item, but {d['table']} has {len(df)}")
    ids = df[idcol].astype(str) if idcol else pd.Series([f"s{i + 1}" for i in range(len(df))])
    if ids.duplicated().any():
        raise c.err((*path, "id"), f"subject id {ids[ids.duplicated()].iat[0]!r} appears twice in {d['table']}")
    persona = [Template(template).substitute({k: _plain(v) for k, v in r.items()}) for r in df.to_dict("records")]
    s.subject_label = c.text(d, "label", path, None)
    for p in placeholders(s.subject_label or ""):
        if p not in df.columns:
            raise c.err((*path, "label"), f"placeholder ${p} has no value: not a column of {d['table']}"
                                          f"{did_you_mean(p, df.columns)}")
    # the id column stays under its own name (e.g. pair), unless it is called `subject`
    df = df.drop(columns=[idcol] if idcol in ("subject", "persona") else [])
    return pd.concat([pd.DataFrame({"subject": ids.to_numpy(), "persona": persona}), df], axis=1)


def _plain(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return "" if v is None or (isinstance(v, float) and v != v) else str(v)


def _items(c: Checker, d: dict, s: Study, named, default) -> None:
    raw = d["items"]
    if isinstance(raw, dict):
        raw = _items_from_table(c, raw, s)
        base = None
    else:
        base = ("items",)
        c.typed(raw, ("items",), list, "a list of items or {table: FILE, ...}")
    if not raw:
        raise c.err(("items",), "no items: list at least one")
    seen: dict[str, int] = {}
    for i, it in enumerate(raw):
        path = (*base, i) if base else ("items",)
        it = c.mapping(it, path, ITEM, required=REQUIRED["item"])
        iid = c.text(it, "id", path, required=True)
        if iid in seen:
            raise c.err((*path, "id"), f"duplicate item id {iid!r} (first at line {seen[iid]})")
        seen[iid] = c.src.line((*path, "id")) or i + 2
        by, responses = _responses_by_level(c, it.get("response"), (*path, "response"), s, named)
        if by:
            resp = next(iter(responses.values()))
        elif "response" in it and it["response"] is not None:
            resp = parse_response(c, it["response"], (*path, "response"), named)
        elif default is not None:
            resp = default
        else:
            raise c.err(path, "no response: give the item response: ..., or a study-level response:")
        attrs = c.typed(it.get("attributes") or {}, (*path, "attributes"), dict, "a mapping")
        for k, v in attrs.items():
            if not NAME.fullmatch(str(k)) or k in RESERVED:
                raise c.err((*path, "attributes", k), "attribute names are letters, digits and _, not a reserved column")
            f = s.factor(k)
            if f is not None and str(v) not in f.levels:
                raise c.err((*path, "attributes", k), f"level {v!r} of factor {k!r} is not declared in "
                                                      f"design.factors.{k}.levels{did_you_mean(v, f.levels)}")
        text_by, texts = _texts_by_level(c, it.get("text"), (*path, "text"), s)
        text = next(iter(texts.values())) if text_by else c.text(it, "text", path, required=True)
        s.items.append(Item(iid, text, resp, {k: _plain(v) if s.factor(k) else v for k, v in attrs.items()}, path,
                            text_by, texts, by, responses))
    for f in s.factors:
        if f.assignment == "item" and not any(f.name in it.attributes for it in s.items):
            raise c.err(("design", "factors", f.name), "an item factor is read from items' attributes; no item has it")


def _texts_by_level(c: Checker, v, path, s: Study, row: dict | None = None) -> tuple[str, dict]:
    """`text: {FACTOR: {level: text}}` (in a table: level -> column): the text shown depends on the level.

    ("", {}) for a plain text. Every level of the factor needs its text; the factor is within or
    between (a level must be known when the trial is built).
    """
    if not isinstance(v, dict):
        return "", {}
    if len(v) != 1:
        raise c.err(path, "a text by level is {FACTOR: {level: text, ...}}: one factor")
    (fname, by), = v.items()
    f = s.factor(str(fname))
    if f is None or f.assignment == "item":
        raise c.err((*path, fname), f"{fname!r} is not a within- or between-subject factor"
                                    f"{did_you_mean(fname, [x.name for x in s.factors])}")
    by = c.mapping(by, (*path, fname), set(f.levels), required=tuple(f.levels))
    if row is None:
        return f.name, {lv: c.typed(by[lv], (*path, fname, lv), str, "text") for lv in f.levels}
    out = {}
    for lv in f.levels:
        col = c.typed(by[lv], (*path, fname, lv), str, "a column name")
        if col not in row:
            raise c.err((*path, fname, lv), f"column {col!r} is not in the items table{did_you_mean(col, row)}")
        out[lv] = _plain(row[col])
    return f.name, out


def _responses_by_level(c: Checker, v, path, s: Study, named) -> tuple[str, dict]:
    """`response: {FACTOR: {level: response}}`: the k-choice response (its completions, its format) by level.

    As MoCa's two prompt templates score " Yes"/" No" or " A"/" B" for the same answers. The levels
    record the same labels with the same positions, so the analyses read one scale.
    """
    if not isinstance(v, dict) or len(v) != 1 or next(iter(v)) in RESPONSE or s.factor(str(next(iter(v)))) is None:
        return "", {}
    (fname, by), = v.items()
    f = s.factor(str(fname))
    if f.assignment == "item":
        raise c.err((*path, fname), f"{fname!r} is an item factor; a response by level needs a within- or "
                                    "between-subject factor")
    by = c.mapping(by, (*path, fname), set(f.levels), required=tuple(f.levels))
    out = {lv: parse_response(c, by[lv], (*path, fname, lv), named) for lv in f.levels}
    scale = None
    for lv, r in out.items():
        if r.kind != "choice":
            raise c.err((*path, fname, lv), "a response by level is a k-choice response")
        this = [(o.label, o.position, o.refusal) for o in r.options]
        if scale is not None and sorted(this, key=str) != sorted(scale, key=str):
            raise c.err((*path, fname, lv), "every level's response records the same labels with the same "
                                            "positions and refusals")
        scale = this
    return f.name, out


def _cells(value) -> list:
    """A table cell that holds a list: a list (parquet, a built-in table), JSON text "[...]", or "a | b"."""

    if isinstance(value, (list, tuple, np.ndarray)):  # parquet gives arrays
        return list(value.tolist() if isinstance(value, np.ndarray) else value)
    text = _plain(value)
    if text.startswith("["):
        try:
            out = json.loads(text)
        except ValueError:
            out = None
        if isinstance(out, list):
            return out
    return [x.strip() for x in text.split("|")] if text else []


def _row_options(c: Checker, d: dict, rec: dict, i: int, table: str) -> list[dict]:
    """The options of one row of the items table (options: COLUMN with option_labels/positions/refusal)."""
    texts = _cells(rec[d["options"]])
    extra = {k: _cells(rec[d[k]]) for k in ("option_labels", "option_positions", "option_refusal") if d.get(k)}
    for k, vals in extra.items():
        if len(vals) != len(texts):
            raise c.err(("items", k), f"row {i + 2} of {table}: {len(vals)} values for {len(texts)} options")
    out = []
    for j, t in enumerate(texts):
        o = {"label": str(extra["option_labels"][j]), "text": str(t)} if "option_labels" in extra else {"label": str(t)}
        if "option_positions" in extra:
            pos = extra["option_positions"][j]
            if pos is not None and pos == pos and str(pos).strip() not in ("", "nan", "NA"):
                try:
                    o["position"] = float(pos)
                except (TypeError, ValueError):
                    raise c.err(("items", "option_positions"), f"row {i + 2} of {table}: position {pos!r} "
                                                               "is not a number") from None
        if "option_refusal" in extra:
            o["refusal"] = str(extra["option_refusal"][j]).strip().lower() in ("true", "1", "yes", "1.0")
        out.append(o)
    return out


def _items_from_table(c: Checker, d: dict, s: Study) -> list[dict]:
    path = ("items",)
    c.mapping(d, path, ITEM_TABLE, required=REQUIRED["item_table"])
    df = _table(c, s, d["table"], (*path, "table"))
    by_level = isinstance(d.get("text"), dict)
    idcol, textcol = c.text(d, "id", path, "id"), ("text" if by_level else c.text(d, "text", path, "text"))
    attrs = c.listed(d, "attributes", path)
    templated = c.flag(d, "placeholders", path)
    cols = [(k, c.text(d, k, path)) for k in ("options", "option_labels", "option_positions", "option_refusal")]
    for key, col in (("id", idcol), *([] if by_level else [("text", textcol)]), *(("attributes", a) for a in attrs),
                     *((k, v) for k, v in cols if v is not None)):
        if col not in df.columns:
            raise c.err((*path, key), f"column {col!r} is not in {d['table']}{did_you_mean(col, df.columns)}")
    if d.get("options") is None and any(v for k, v in cols[1:]):
        raise c.err(path, "option_labels, option_positions and option_refusal need options: COLUMN")
    if d.get("options") is not None and d.get("response") is not None and not isinstance(d["response"], dict):
        raise c.err((*path, "response"), "with options: COLUMN the response is a mapping (type: choice, ...)")
    out = []
    for i, rec in enumerate(df.to_dict("records")):
        # Texts in a table are literal ("$10" is ten dollars) unless placeholders: true
        lit = (lambda t: t) if templated else (lambda t: t.replace("$", "$$"))
        if by_level:
            fname, texts = _texts_by_level(c, d["text"], (*path, "text"), s, rec)
            text = {fname: {lv: lit(t) for lv, t in texts.items()}}
        else:
            text = lit(_plain(rec[textcol]))
        item = {"id": _plain(rec[idcol]), "text": text, "attributes": {a: rec[a] for a in attrs}}
        if d.get("response") is not None:
            item["response"] = d["response"]
        if d.get("options") is not None:  # each row its own options (a questionnaire whose scales differ)
            item["response"] = {"type": "choice", **(d.get("response") or {}),
                                "options": _row_options(c, d, rec, i, d["table"])}
        out.append(item)
    return out


def _order(c: Checker, d: dict, s: Study) -> None:
    v = d.get("option_order")
    if v is None:
        return
    o = c.mapping({"mode": v} if isinstance(v, str) else v, ("option_order",), ORDER, required=REQUIRED["option_order"])
    s.order_mode = c.choice(o, "mode", ("option_order",), MODES, "as_listed")
    s.max_orderings = c.number(o, "max_orderings", ("option_order",), 24, integer=True, low=1, high=MAX_ORDERINGS)


def _human(c: Checker, d: dict, s: Study) -> None:
    if d.get("human") is None:
        return
    path = ("human",)
    h = c.mapping(d["human"], path, HUMAN, required=REQUIRED["human"])
    df = _table(c, s, h["file"], (*path, "file"))
    cols = c.mapping(h["columns"], (*path, "columns"), HUMAN_COLUMNS, required=REQUIRED["human_columns"])
    s.human_name = c.text(h, "name", path, "human")
    mapping = {}
    for key in ("respondent", "item", "response", "weight", "condition", "trial", "order"):
        col = c.text(cols, key, (*path, "columns"))
        if col is None:
            continue
        if col not in df.columns:
            raise c.err((*path, "columns", key), f"column {col!r} is not in {h['file']}{did_you_mean(col, df.columns)}")
        mapping[key] = col
    groups = [c.typed(g, (*path, "columns", "groups", i), str, "a column name")
              for i, g in enumerate(c.listed(cols, "groups", (*path, "columns")))]
    for i, g in enumerate(groups):
        if g not in df.columns:
            raise c.err((*path, "columns", "groups", i), f"column {g!r} is not in {h['file']}{did_you_mean(g, df.columns)}")
    s.human = _human_rows(c, s, df, mapping, groups, path)
    if "order" in mapping:
        _shown_orders(c, s, df, mapping, path)
    if s.people:  # every respondent is a subject: one without an answer would be a person never scored
        ids = df[mapping["respondent"]].map(lambda v: _plain(v) if isinstance(v, float) else str(v))
        silent = [r for r in dict.fromkeys(ids) if r not in set(s.human["subject"])]
        if silent:
            raise c.err((*path, "columns", "response"), f"respondent {silent[0]!r} of {h['file']} answered no item; "
                        "with design.subjects: people every respondent is scored (remove their rows)")


def _shown_orders(c: Checker, s: Study, df: pd.DataFrame, m: dict, path) -> None:
    """human.columns.order (design.subjects: people): the option labels in the order the person saw them,
    joined by '|' (refusals stay last, as listed); that person's trial shows them so. An empty cell: the
    study's option_order."""
    if not s.people:
        raise c.err((*path, "columns", "order"), "an order shown is a person's prompt: it needs design.subjects: "
                                                 "people")
    items = {it.id: it for it in s.items}
    for i, rec in enumerate(df.to_dict("records")):
        text, it = _plain(rec[m["order"]]), items[_plain(rec[m["item"]])]
        if not text or it.response.kind != "choice":
            continue
        listed = [o.label for o in it.response.options if not o.refusal]
        got = [x.strip() for x in text.split("|")]
        if sorted(got) != sorted(listed):
            raise c.err((*path, "columns", "order"), f"row {i + 2} of the human table: order {text!r} is not the "
                        f"options of item {it.id} ({' | '.join(listed)}) joined by '|'")
        key = (str(rec[m["respondent"]]) if not isinstance(rec[m["respondent"]], float) else
               _plain(rec[m["respondent"]]), it.id, _plain(rec[m["condition"]]) if "condition" in m else "")
        s.shown_orders[key] = tuple(listed.index(x) for x in got)


def people_subjects(c: Checker, s: Study) -> None:
    """design.subjects: people: one subject per respondent of the human table (in its order), with the
    table's group columns as the subject's columns (a prompt's ${party}), and the (item, condition) pairs
    each answered, which design.py asks them and no others."""
    path = ("design", "subjects")
    if s.human is None:
        raise c.err(path, "subjects: people are the respondents of the human table; add human: {file, columns}")
    if s.condition:
        raise c.err(("design", "condition"), "with subjects: people the conditions are the human table's labels; "
                                             "remove design.condition")
    h = s.human
    if s.factors and (h["condition"] == "").all():
        raise c.err(path, "subjects: people with factors needs each respondent's condition: add "
                          "human.columns.condition")
    dup = h.duplicated(["subject", "item", "condition"])
    if dup.any():
        r = h[dup].iloc[0]
        raise c.err(("human", "columns", "respondent"), f"respondent {r['subject']!r} answered item {r['item']!r} "
                    "twice in one condition; with subjects: people each answer is one decision")
    extra = [col for col in h.columns if col not in RESERVED and col not in ("weight", "validity", "response_type")]
    first = h.drop_duplicates("subject")
    s.subjects = pd.concat([pd.DataFrame({"subject": first["subject"].to_numpy(), "persona": [""] * len(first)}),
                            first[extra].reset_index(drop=True).map(_plain)], axis=1)
    s.answered = {p: set(zip(g["item"], g["condition"])) for p, g in h.groupby("subject", sort=False)}


def _human_rows(c: Checker, s: Study, df: pd.DataFrame, m: dict, groups: list[str], path) -> pd.DataFrame:
    """The human answers as tidy rows (source=human, method=observed), one per respondent x item."""
    items = {it.id: it for it in s.items}
    rows, lines = [], []  # lines: each row's line in the table file (header = 1)
    for i, rec in enumerate(df.to_dict("records")):
        iid = _plain(rec[m["item"]])
        if iid not in items:
            raise c.err((*path, "columns", "item"), f"row {i + 2} of the human table: item {iid!r} is not an item "
                                                    f"of the study{did_you_mean(iid, items)}")
        it, value = items[iid], rec[m["response"]]
        if value is None or (isinstance(value, float) and value != value):
            continue  # item not answered: no row, as in any tidy survey table
        label, estimate = _human_answer(c, it, value, i, path)
        try:
            weight = float(rec[m["weight"]]) if "weight" in m else 1.0
        except (TypeError, ValueError):
            weight = float("nan")
        if not (weight >= 0 and math.isfinite(weight)):  # NaN, inf or negative
            raise c.err((*path, "columns", "weight"), f"row {i + 2} of the human table: weight {rec[m['weight']]!r} "
                                                      "is not a number (finite, >= 0)")
        resp = str(rec[m["respondent"]]) if not isinstance(rec[m["respondent"]], float) else _plain(rec[m["respondent"]])
        trial = _plain(rec[m["trial"]]) if "trial" in m else f"{s.human_name}|{resp}|{iid}"
        rows.append({"study": s.name, "trial": trial, "item": iid,
                     "condition": _plain(rec[m["condition"]]) if "condition" in m else "",
                     "subject": resp, "source": "human", "model": s.human_name, "method": "observed",
                     "response": label, "weight": weight, "validity": 1.0, "response_type": it.response.kind,
                     **({"estimate": estimate} if estimate is not None else {}),
                     **{g: rec[g] for g in groups}})
        lines.append(i + 2)
    if not rows:
        raise c.err(path, "the human table has no answered rows")
    out = pd.DataFrame(rows)
    if not (out["weight"] > 0).any():
        raise c.err((*path, "columns", "weight"), "every weight of the human table is 0; no answer would count")
    pairs = out.drop_duplicates(["trial", "subject", "item"])
    if pairs["trial"].duplicated().any():  # ids holding "|": two respondent x item pairs, one trial id
        t = pairs.loc[pairs["trial"].duplicated(), "trial"].iat[0]
        raise c.err((*path, "columns", "respondent"), f"two respondent x item pairs share the trial id {t!r}: a "
                                                      "respondent or item id holds '|'; rename it")
    _check_human_levels(c, s, rows, lines, m, groups, path)
    _check_human_sums(c, rows, lines, path)
    return out


def _check_human_sums(c: Checker, rows: list[dict], lines: list[int], path) -> None:
    """Each item's weighted sums (of weights, weight x estimate and weight x estimate², the terms of a
    weighted mean and variance; and the unweighted estimate²) are finite: two estimates of 1e308 with
    weights of 1e308 gave a mean of inf and numpy's overflow warnings at analysis (issue 42)."""
    sums: dict = {}
    for line, r in zip(lines, rows):
        w, x = r["weight"], r.get("estimate")
        t = sums.setdefault(r["item"], [0.0, 0.0, 0.0, 0.0, []])
        t[4].append(line)
        t[0] += w
        if x is not None:  # Python floats: overflow gives inf, with no warning
            t[1] += w * abs(x)
            t[2] += w * x * x if w else 0.0
            t[3] += x * x
    for item, (*totals, at) in sums.items():
        if not all(math.isfinite(v) for v in totals):
            shown = ", ".join(map(str, at[:5])) + (", ..." if len(at) > 5 else "")
            raise c.err((*path, "columns", "weight"), f"rows {shown} of the human table: the weights and estimates "
                        f"of item {item} overflow a float when summed (a mean or variance would be inf); rescale "
                        "the estimates or the weights")


def conditions(study: Study) -> tuple[list[dict], list[dict]]:
    """(between-subject conditions, within-subject conditions): each a list of {factor: level}."""
    def product(fs):
        return [dict(zip([f.name for f in fs], lv)) for lv in itertools.product(*[list(f.levels) for f in fs])]

    return (product([f for f in study.factors if f.assignment == "between"]),
            product([f for f in study.factors if f.assignment == "within"]))


def _check_human_levels(c: Checker, s: Study, rows: list[dict], lines: list[int], m: dict, groups: list[str],
                        path) -> None:
    """A human condition or factor level the design does not declare is an error naming its row: such
    rows would silently drop out of every test, as an answer typo would (which is caught)."""
    if "condition" in m and not s.condition:  # the design's own labels (a custom template: not checked)
        between, within = conditions(s)
        allowed = {",".join(f"{k}={v}" for k, v in {**b, **w}.items()) for b in between for w in within}
        for line, r in zip(lines, rows):
            if r["condition"] not in allowed:
                raise c.err((*path, "columns", "condition"), f"row {line} of the human table: condition "
                            f"{r['condition']!r} is not a condition of the design"
                            f"{did_you_mean(r['condition'], sorted(allowed))}")
    for g in groups:
        f = s.factor(g)
        if f is None:
            continue
        for line, r in zip(lines, rows):
            v = _plain(r[g])
            if v and v not in f.levels:
                raise c.err((*path, "columns", "groups"), f"row {line} of the human table: {g} {v!r} is not a "
                                                          f"declared level of factor {g!r}{did_you_mean(v, f.levels)}")


def _human_answer(c: Checker, it: Item, value, i: int, path):
    r = it.response
    if r.kind == "estimate":
        try:
            x = float(value)
        except (TypeError, ValueError):
            x = None
        if x is None or not math.isfinite(x):  # nan, inf, 1e400 (read as inf): refused with the row
            raise c.err((*path, "columns", "response"), f"row {i + 2} of the human table: {value!r} is not a finite "
                                                        f"number (item {it.id} asks for an estimate)")
        return str(value), x
    if r.kind == "free_text":
        r = r.judge
    labels = {o.label: o for o in r.options}
    if _plain(value) in labels:
        return _plain(value), None
    by_pos = {o.position: o.label for o in r.options if o.position is not None}
    try:
        if float(value) in by_pos:
            return by_pos[float(value)], None
    except (TypeError, ValueError):
        pass
    raise c.err((*path, "columns", "response"), f"row {i + 2} of the human table: answer {value!r} to item {it.id} "
                                                f"is neither an option label nor a position{did_you_mean(value, labels)}")


def _analyses(c: Checker, d: dict, s: Study) -> None:
    raw = c.listed(d, "analyses", ())
    for i, a in enumerate(raw):
        path = ("analyses", i)
        if isinstance(a, str):
            a = {"type": a}
        if not isinstance(a, dict) or "type" not in a:
            raise c.err(path, "an analysis is a name (distribution) or a mapping with type: ...")
        kind = a["type"]
        if kind not in ANALYSIS_TYPES:
            raise c.err((*path, "type"), f"unknown analysis {kind!r}{did_you_mean(kind, ANALYSIS_TYPES)}")
        c.mapping(a, path, {"type", "name", *ANALYSIS_TYPES[kind]})
        _analysis_name(c, a, path, s)
        for key in ("factor",):
            if key in ANALYSIS_TYPES[kind]:
                f = s.factor(c.text(a, key, path, required=True)) or _group_factor(c, s, a, key, kind, path)
                levels = [str(x) for x in c.listed(a, "levels", path)] if "levels" in ANALYSIS_TYPES[kind] else []
                if kind in ("welch", "paired") and not levels:
                    if len(f.levels) != 2:
                        raise c.err(path, f"factor {f.name!r} has {len(f.levels)} levels; name the two to compare "
                                          "with levels: [a, b]")
                    levels = list(f.levels)
                for lv in levels:
                    if lv not in f.levels:
                        raise c.err((*path, "levels"), f"level {lv!r} of factor {f.name!r} is not declared"
                                                       f"{did_you_mean(lv, f.levels)}")
                if kind in ("welch", "paired") and len(levels) != 2:
                    raise c.err((*path, "levels"), "compare exactly two levels")
                if kind == "paired" and f.assignment == "between":
                    raise c.err((*path, "factor"), f"a paired test needs a within-subject factor; {f.name!r} is between")
                a = {**a, "levels": levels}
        if kind == "amce":
            for j, fn in enumerate(c.listed(a, "factors", path, required=True)):
                if s.factor(str(fn)) is None:
                    raise c.err((*path, "factors", j), f"{fn!r} is not a declared factor")
        if kind == "one_sample":
            mu = a.get("mu", 0)
            if isinstance(mu, str) and not any(mu in it.attributes for it in s.items):
                raise c.err((*path, "mu"), f"mu: {mu!r} is neither a number nor an item attribute")
        if kind in ("representativeness", "agreement") and s.human is None:
            raise c.err((*path, "type"), f"{kind} compares with human rows; add human: {{file, columns}}")
        if kind == "function":
            ref = c.text(a, "function", path, required=True)
            if not FUNCTION_REF.fullmatch(ref):
                raise c.err((*path, "function"), "name a function as module:function (dotted identifiers)")
        s.analyses.append(a)


def _group_factor(c: Checker, s: Study, a: dict, key: str, kind: str, path) -> Factor:
    """A test by a persona column or a human-table group column (e.g. party), not a manipulated factor:
    its levels are the values seen in those columns. Between subjects by nature: a subject has one."""
    name = a[key]
    values: set[str] = set()
    for df in (s.subjects, s.human):
        if df is not None and name in df.columns and name not in RESERVED:
            values |= {_plain(v) for v in df[name].dropna()}
    if name in s.level_columns:  # design.columns by a factor's level: its values are its levels
        base = s.factor(s.level_columns[name][0])
        if base.assignment != "between":  # a subject would have several levels: Welch's groups must not overlap
            raise c.err((*path, key), f"{name!r} is set by {base.name!r}, which varies within subject; test "
                                      f"{base.name!r} with paired")
        values |= set(s.level_columns[name][1].values())
    if not values:
        human = s.human.columns if s.human is not None else []
        allowed = [x.name for x in s.factors] + [col for col in [*s.subjects.columns, *human]
                                                 if col not in RESERVED and col not in ("response_type", "estimate")]
        allowed = list(dict.fromkeys(allowed))
        raise c.err((*path, key), f"{name!r} is neither a declared factor nor a persona or human group column"
                                  f"{did_you_mean(name, allowed) if allowed else ' (the study declares none)'}")
    return Factor(name=name, levels={v: v for v in sorted(values)}, assignment="between")


RESERVED_TABLES = {"trials", "distribution", "estimates", "tests", "order_effects", "order_effects_average", "ppi",
                   "check_r"}


def _analysis_name(c: Checker, a: dict, path, s: Study) -> None:
    """An analysis's name becomes NAME.csv in the analysis folder: an identifier, never a path
    (docs/robustness.md); checked here (study check, collect) and again at analyze on the run's copy."""
    if "name" not in a:
        return
    name = a["name"]
    if not is_ident(name):
        raise c.err((*path, "name"), f"{name!r} is not an identifier: a letter, then letters, digits and _ "
                                     "(at most 64); it names the table NAME.csv, never a path")
    if name in RESERVED_TABLES:
        raise c.err((*path, "name"), f"{name!r} is the name of a table analyze always writes; choose another")
    if any(b.get("name") == name for b in s.analyses):
        raise c.err((*path, "name"), f"{name!r} names an earlier analysis too; each table needs its own name")


def _check_placeholders(c: Checker, s: Study) -> None:
    """Every ${name} in the prompt and item texts has a value for every trial."""
    design = {f.name for f in s.factors}
    subject_cols = set(s.subjects.columns)
    for it in s.items:
        avail_q = design | set(it.attributes) | subject_cols
        for text in (it.texts.values() if it.text_by else [it.text]):
            for p in placeholders(text):
                if p == "$":
                    raise c.err((*it.where, "text"), "a lone $ starts no placeholder; write $$ for a dollar sign")
                if p not in avail_q:
                    raise c.err((*it.where, "text"), f"placeholder ${p} has no value{did_you_mean(p, avail_q)}")
        avail = avail_q | {"question", "options", "item", "persona"}
        ids = avail_q | {"item", "repetition", "ordering", "subject"}
        for key, t in (("trial_id", s.trial_id), ("condition", s.condition), *s.columns.items()):
            where = ("design", key) if key in ("trial_id", "condition") else ("design", "columns", key)
            for p in placeholders(t):
                if p == "$":
                    raise c.err(where, "a lone $ starts no placeholder; write $$ for a dollar sign")
                if p not in ids | ({"question"} if where[1] == "columns" else set()):
                    raise c.err(where, f"placeholder ${p} has no value{did_you_mean(p, ids)}")
        for key in ("template", "system", "answer_prefix"):
            for p in placeholders(getattr(s, key)):
                if p not in avail:
                    raise c.err(("prompt", key), f"placeholder ${p} has no value (for item {it.id})"
                                                 f"{did_you_mean(p, avail)}")
        r = it.response
        if r.kind == "free_text":
            for p in placeholders(r.judge_prompt):
                if p not in avail | {"answer"}:
                    raise c.err((*it.where, "response"), f"judge prompt placeholder ${p} has no value"
                                                         f"{did_you_mean(p, avail)}")
