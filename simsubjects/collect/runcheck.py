"""Checks of a run folder's manifest and tables before anything reads them: types, not just presence.

A manifest edited by hand, written by another tool or damaged on disk must be a one-line error
that names the file and the key, not an AttributeError deep in the report. The same holds for the
columns of responses.parquet and items.parquet (docs/schema.md): a weight column of strings, a
weight column with no number in it, or another study's tables under this manifest.
"""

from __future__ import annotations

import math
from numbers import Real
from pathlib import Path

import pandas as pd

from simsubjects.errors import UserError
from simsubjects.collect.untrusted import inside, plain_folder

# key -> allowed types of a study run's manifest.json (docs/schema.md); absent keys are not checked here
_NUM = (int, float)
RUN_KEYS: dict[str, tuple] = {
    "study": (str,), "status": (str,), "created": (str,), "versions": (dict,), "model": (dict,),
    "parameters": (dict,), "seed": (int, type(None)), "datasets": (dict,), "prompt_template_sha256": (list,),
    "timings": (dict,), "identity": (dict,), "counts": (dict,), "failures": (list,), "short": (list,),
    "source": (dict,), "column_labels": (dict,), "panel": (dict,),
}
# key -> allowed types of a replication folder's manifest.json (simsubjects replicate)
REPLICATE_KEYS: dict[str, tuple] = {
    "kind": (str,), "papers": (list,), "paper_titles": (dict,), "scale": _NUM, "seed": (int, type(None)),
    "method": (str,), "model": (dict,), "command": (str,), "options": (dict, type(None)), "created": (str,),
    "versions": (dict,), "studies": (list,), "files": (dict,), "timings": (dict,),
}
# numbers that the report and replicate compute with; a study may add other counts (Milgram: causes by kind)
NUMBER_FIELDS = {"counts": ("trials", "answered", "rows", "queries", "mean_validity"),
                 "timings": ("seconds", "collection_seconds")}
STRING_COLUMNS = ("study", "trial", "item", "condition", "subject", "source", "model", "method", "response")
NUMBER_COLUMNS = ("weight", "validity")


def _type_names(types: tuple) -> str:
    names = {str: "text", int: "an integer", float: "a number", dict: "an object", list: "a list",
             type(None): "null"}
    return " or ".join(dict.fromkeys(names.get(t, t.__name__) for t in types))


def _check_keys(m: dict, keys: dict[str, tuple], path: Path, fix: str) -> None:
    for key, types in keys.items():
        if key in m and (not isinstance(m[key], types) or (isinstance(m[key], bool) and bool not in types)):
            raise UserError(f"{path}: {key!r} is {type(m[key]).__name__} {_short(m[key])}, expected "
                            f"{_type_names(types)}; {fix}")


def _short(v) -> str:
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def check_manifest(m: dict, path: Path, fix: str = "re-run the collection") -> dict:
    """Raise a UserError naming `path` and the key if a known field of a manifest has a wrong type."""
    if m.get("kind") is not None and not isinstance(m.get("kind"), str):
        raise UserError(f"{path}: 'kind' is {type(m['kind']).__name__}, expected text; {fix}")
    if isinstance(m.get("kind"), str) and "study" not in m:
        _check_keys(m, REPLICATE_KEYS, path, fix)
        for i, e in enumerate(m.get("studies", [])):
            if not isinstance(e, dict) or not isinstance(e.get("study"), str) \
                    or not isinstance(e.get("folder", ""), str):
                raise UserError(f"{path}: studies[{i}] is not an object with a study name and folder; {fix}")
            if not isinstance(e.get("counts") or {}, dict) or not isinstance(e.get("error") or "", str):
                raise UserError(f"{path}: studies[{i}] has a counts or error field of the wrong type; {fix}")
            plain_folder(e.get("folder", e["study"]), f"{path}: studies[{i}]")  # never a path outside
        return m
    _check_keys(m, RUN_KEYS, path, fix)
    for key, names in NUMBER_FIELDS.items():
        for k, v in (m.get(key) or {}).items():
            if k in names and v is not None and (not isinstance(v, Real) or isinstance(v, bool) or
                                  (isinstance(v, float) and not math.isfinite(v))):
                raise UserError(f"{path}: {key}.{k} is {_short(v)}, expected a number; {fix}")
    for key in ("spec", "backend", "name", "revision"):
        v = (m.get("model") or {}).get(key)
        if v is not None and not isinstance(v, str):
            raise UserError(f"{path}: model.{key} is {type(v).__name__} {_short(v)}, expected text; {fix}")
    info = (m.get("parameters") or {}).get("studyfile")
    if info is not None:  # the run's copy of its study file: a path inside the run, never outside it
        if not isinstance(info, dict) or not isinstance(info.get("file"), str):
            raise UserError(f"{path}: parameters.studyfile is not an object with a file; {fix}")
        inside(path.parent, info["file"], f"{path}: parameters.studyfile.file")
    for key in ("method",):
        v = (m.get("parameters") or {}).get(key)
        if v is not None and not isinstance(v, str):
            raise UserError(f"{path}: parameters.{key} is {_short(v)}, expected text; {fix}")
    return m


def check_tables(manifest: dict, responses: pd.DataFrame, items: pd.DataFrame, root: Path) -> None:
    """The core columns have the types of docs/schema.md, the weights are numbers, the study fits."""
    where = root / "responses.parquet"
    for c in STRING_COLUMNS:
        s = responses[c]
        if not (pd.api.types.is_string_dtype(s) or s.dtype == object) or \
                not s.dropna().map(lambda v: isinstance(v, str)).all():
            raise UserError(f"{where}: column {c!r} holds {s.dtype} values, expected text (docs/schema.md)")
    for c in NUMBER_COLUMNS:
        s = responses[c]
        if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            raise UserError(f"{where}: column {c!r} holds {s.dtype} values, expected numbers (docs/schema.md)")
        v = s.astype(float)
        if v.isna().all():
            raise UserError(f"{where}: column {c!r} holds no number (all missing); re-run the collection")
        if not v.dropna().map(math.isfinite).all():
            raise UserError(f"{where}: column {c!r} holds an infinite value; re-run the collection")
    if (responses["weight"].astype(float) < 0).any():
        raise UserError(f"{where}: column 'weight' holds a negative value; weights are probabilities or counts")
    study = manifest.get("study")
    found = set(responses["study"].dropna().unique())
    if study not in found:
        raise UserError(f"{where}: holds rows of {', '.join(sorted(found)) or 'no study'}, but manifest.json says "
                        f"{study}; the tables and the manifest come from different runs")
    if "item" not in items.columns:
        raise UserError(f"{root / 'items.parquet'}: no 'item' column; not an item table of docs/schema.md")
