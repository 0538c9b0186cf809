"""`simsubjects study schema`: a JSON Schema (draft 2020-12) of the study-file format, for editors (VS Code's
YAML extension completes keys and flags unknown ones as you type; docs/studies.md).

It is generated from the definitions `study check` uses, so the two cannot drift (issue 37, item 8): the
allowed keys of every mapping (spec.py's TOP, RESPONSE, ITEM, DESIGN, ...; session.py's and
obedience.py's), the required keys (spec.REQUIRED), the choices (response kinds, styles, option-order
modes, crossings, assignments, trial orders, session memory) and the analysis types with the keys each
takes (spec.ANALYSIS_TYPES, whose tests come from analyze/methods/registry.py). A file the schema
accepts may still fail `study check`, which also checks values against each other, the tables beside
the file and the expressions; a file `study check` accepts always passes the schema
(tests/test_study_schema.py checks every example, starter and built-in study file).
"""
from __future__ import annotations

from . import obedience as O
from . import session as S
from . import spec as P

TEXT = {"type": ["string", "number"]}  # spec.Checker.text takes a number as its text
COUNT = {"type": "integer", "minimum": 1}


def _mapping(keys, required=(), props: dict | None = None, describe: str = "") -> dict:
    """A mapping with exactly `keys` allowed (others are an error, as Checker.mapping says)."""
    props = props or {}
    out = {"type": "object", "additionalProperties": False,
           "properties": {k: props.get(k, {}) for k in sorted(keys)}}
    if required:
        out["required"] = list(required)
    if describe:
        out["description"] = describe
    return out


def _response() -> dict:
    option = {"anyOf": [TEXT, _mapping(P.OPTION, P.REQUIRED["option"], {"label": TEXT, "text": TEXT,
                                                                           "position": {"type": "number"},
                                                                           "refusal": {"type": "boolean"}})]}
    mapping = _mapping(P.RESPONSE, P.REQUIRED["response"], {
        "type": {"enum": list(P.RESPONSE_KINDS)}, "style": {"enum": list(P.STYLES)},
        "options": {"type": "array", "items": option}, "points": {"enum": sorted(P.LIKERT)},
        "labels": {"type": "array", "items": TEXT}, "refusal": {"anyOf": [TEXT, {"type": "array", "items": TEXT}]},
        "integer": {"type": "boolean"}, "min": {"type": "number"}, "max": {"type": "number"},
        "max_tokens": COUNT, "temperature": {"type": "number", "minimum": 0},
        "judge": _mapping(P.JUDGE, P.REQUIRED["judge"], {"response": {"$ref": "#/$defs/response"}})},
        "a response: k-choice, yes/no, Likert, numeric estimate or free text")
    # a name: a shortcut (yesno, likert5, ...) or one of the file's response_types
    return {"anyOf": [{"type": "string", "description": f"{', '.join(P.SHORTCUTS)} or a response_types name"},
                      mapping]}


def _analysis() -> dict:
    one = [{"type": "string", "enum": sorted(P.ANALYSIS_TYPES)}]
    for kind, keys in sorted(P.ANALYSIS_TYPES.items()):
        one.append(_mapping({"type", "name", *keys}, ("type",), {"type": {"const": kind}, "name": {"type": "string"},
                                                                  "by": {"type": "array", "items": {"type": "string"}},
                                                                  "levels": {"type": "array", "items": TEXT},
                                                                  "factors": {"type": "array",
                                                                              "items": {"type": "string"}}}))
    return {"anyOf": one}


def _plain() -> dict:
    item = _mapping(P.ITEM, P.REQUIRED["item"], {"id": TEXT, "text": TEXT, "response": {"$ref": "#/$defs/response"},
                                                 "attributes": {"type": "object"}})
    factor = {"anyOf": [{"type": "array", "items": TEXT},
                        _mapping(P.FACTOR, P.REQUIRED["factor"], {"assignment": {"enum": list(P.ASSIGNMENTS)}})]}
    design = _mapping(P.DESIGN, (), {
        "factors": {"type": "object", "additionalProperties": factor},
        "crossing": {"enum": list(P.CROSSINGS)}, "sample": COUNT, "repetitions": COUNT,
        "seed": {"type": "integer", "minimum": 0}, "trial_order": {"enum": list(P.TRIAL_ORDERS)},
        "subjects": {"anyOf": [COUNT, {"const": "people"}, _mapping(P.SUBJECTS, (), {"n": COUNT})]},
        "columns": {"type": "object", "additionalProperties": {"type": "string"}}})
    return _mapping(P.TOP, P.REQUIRED["top"], {
        **_header(),
        "prompt": {"anyOf": [{"type": "string"}, _mapping(P.PROMPT, P.REQUIRED["prompt"])]},
        "response": {"$ref": "#/$defs/response"},
        "response_types": {"type": "object", "additionalProperties": {"$ref": "#/$defs/response"}},
        "items": {"anyOf": [{"type": "array", "items": item, "minItems": 1},
                            _mapping(P.ITEM_TABLE, P.REQUIRED["item_table"])]},
        "design": design,
        "option_order": {"anyOf": [{"enum": list(P.MODES)},
                                   _mapping(P.ORDER, P.REQUIRED["option_order"], {"mode": {"enum": list(P.MODES)},
                                                                                  "max_orderings": COUNT})]},
        "human": _mapping(P.HUMAN, P.REQUIRED["human"], {"columns": _mapping(P.HUMAN_COLUMNS,
                                                                              P.REQUIRED["human_columns"])}),
        "analyses": {"type": "array", "items": {"$ref": "#/$defs/analysis"}},
    }, "a plain study: items, a design and analyses (docs/studies.md)")


def _header() -> dict:
    """The keys every kind shares (spec.study_header)."""
    return {"study": {"type": "string", "pattern": P.SLUG.pattern}, "title": TEXT, "citation": TEXT,
            "license": TEXT, "description": TEXT}


def _session() -> dict:
    item = _mapping(S.SITEM, (), {"response": {"$ref": "#/$defs/response"}})
    block = _mapping(S.BLOCK, (), {"items": {"type": "array", "items": item},
                                   "rounds": {"anyOf": [COUNT, _mapping(S.ROUNDS)]}})
    session = _mapping(S.SESSION, (), {"blocks": {"type": "array", "items": block}, "memory": {"enum": list(S.MEMORY)}})
    return _mapping(S.TOP, ("study", "title", "session"), {
        **_header(), "session": session, "response": {"$ref": "#/$defs/response"},
        "response_types": {"type": "object", "additionalProperties": {"$ref": "#/$defs/response"}},
        "human": _mapping(S.HUMAN, (), {"columns": _mapping(S.HUMAN_COLUMNS)})},
        "a session: blocks of items over rounds, with players and payoffs (docs/sessions.md)")


def _obedience() -> dict:
    return _mapping(O.TOP, ("study", "title", "obedience"), {
        **_header(), "design": _mapping(O.DESIGN, (), {"seed": {"type": "integer", "minimum": 0}}),
        "obedience": _mapping(O.SCENARIO)},
        "a Milgram obedience scenario (docs/milgram.md)")


def schema() -> dict:
    """The JSON Schema of a study file of any kind (plain, session, obedience: door.load_any's kinds)."""
    plain, session, obedience = _plain(), _session(), _obedience()
    # the kind is told by a top-level `session:` or `obedience:` key (spec.study_kind), as the door reads it
    plain["not"] = {"anyOf": [{"required": ["session"]}, {"required": ["obedience"]}]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://simsubjects.invalid/study.schema.json",
            "title": "simsubjects study file",
            "description": "Generated by `simsubjects study schema` from the definitions `study check` uses.",
            "$defs": {"response": _response(), "analysis": _analysis()},
            "oneOf": [plain, session, obedience]}
