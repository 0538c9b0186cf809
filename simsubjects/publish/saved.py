"""What an analysis folder was computed from, so that `report` reads it back instead of computing it again.

`analyze` (and `replicate`) write RUN/analysis/analysis.json beside the tables and figures: the
simsubjects version and the sha256 of the study's analysis code, the sha256 of the run's
manifest.json, responses.parquet and items.parquet the analysis was computed from, the sha256 of
every table's CSV and every figure, and for each table how its CSV reads back into the very frame
the analysis computed (column types; text columns whose missing cells were empty text; the columns'
name). That read-back is checked equal to the computed frame when the record is written; where any
table does not read back exactly (CSV cannot tell every value apart), the record says it is not
reusable and `report` computes the analysis again, as it always did. At scale 1 the analyses and
figures take minutes; reading them back takes a second (issue 27).

A received run folder is data: a table is read from NAME.csv only for an identifier NAME, a figure
only for a plain file name, never through a link, and only when its bytes have the recorded hash.
The record is signed (HMAC-SHA256) with a key that never leaves this machine's cache folder, so a
record someone else wrote (a replication package, a hand-edited CSV with its hash updated) is not
believed: that folder's analysis is computed again from its responses, as before.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import os
import io
import json
import re
import sys
from pathlib import Path

import pandas as pd

from simsubjects import __version__
from simsubjects.collect.store import ITEMS, MANIFEST, RESPONSES
from simsubjects.collect.untrusted import is_ident
from simsubjects.collect.models.weight_cache import root
from simsubjects.analyze.estimand import annotate

RECORD = "analysis.json"
FORMAT = 1
FIGURE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}\.png")
TEXT_TYPES = ("str", "object", "bool")  # read with the recorded type; numbers are inferred, then checked


def _key() -> bytes | None:
    """This machine's signing key (32 random bytes, created once, readable by its owner only); None where
    the cache folder cannot hold one (the analysis is then always computed)."""

    path = root() / "analysis.key"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            key = path.read_bytes() if not path.is_symlink() else b""
            return key if len(key) == 32 else None
        with os.fdopen(fd, "wb") as f:  # another process may read it half-written: it then finds < 32 bytes
            f.write(os.urandom(32))
        return path.read_bytes()
    except OSError:
        return None


def _mac(rec: dict, key: bytes) -> str:
    body = json.dumps({k: v for k, v in rec.items() if k != "mac"}, sort_keys=True).encode("utf-8")
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def inputs(folder: Path) -> dict[str, str]:
    """The run's files an analysis is computed from, by sha256."""
    return {name: sha256_file(folder / name) for name in (MANIFEST, RESPONSES, ITEMS)}


def code(spec) -> str:
    """sha256 of the source files of the study's analysis and plot functions: a changed analysis is stale
    even where the version number did not move (a checkout between releases)."""
    h = hashlib.sha256()
    for ref in (spec.analyze, spec.plot):
        # a function by its module and name (its repr holds its address, new in every process)
        h.update(repr(ref if isinstance(ref, str) else (getattr(ref, "__module__", None),
                                                        getattr(ref, "__qualname__", None))).encode())
        path = _source(ref)
        h.update(path.read_bytes() if path is not None else b"")
    # the estimand policy every test table passes through (its `sample` and `low_validity` columns, issue 40)
    path = _source(annotate)
    h.update(path.read_bytes() if path is not None else b"")
    return h.hexdigest()


def _source(ref) -> Path | None:
    """The source file of a "module:function" reference (or a function), found without importing it (the
    analysis modules import statsmodels and matplotlib: seconds a report that reads its tables back saves)."""
    module = ref.partition(":")[0] if isinstance(ref, str) else getattr(ref, "__module__", None)
    if not module:
        return None
    loaded = sys.modules.get(module)
    try:
        origin = getattr(loaded, "__file__", None) if loaded is not None else importlib.util.find_spec(module).origin
    except (ImportError, AttributeError, ValueError):
        return None
    return Path(origin) if origin and Path(origin).is_file() else None


def _meta(df: pd.DataFrame) -> dict | None:
    """How to read the table's CSV back: None where its columns cannot be named in a CSV header."""
    cols = list(df.columns)
    if not all(isinstance(c, str) for c in cols) or len(set(cols)) != len(cols) or \
            not (df.columns.name is None or isinstance(df.columns.name, str)):
        return None
    blank = [c for c in cols if str(df[c].dtype) in ("str", "object") and not df[c].isna().any()
             and (df[c] == "").any()]
    return {"dtypes": {c: str(t) for c, t in df.dtypes.items()}, "blank": blank, "columns_name": df.columns.name}


def _read_back(data: bytes, meta: dict) -> pd.DataFrame | None:
    types = meta.get("dtypes")
    if not isinstance(types, dict) or not isinstance(meta.get("blank"), list):
        return None
    try:
        df = pd.read_csv(io.BytesIO(data), keep_default_na=False, na_values=[""],
                         dtype={c: t for c, t in types.items() if t in TEXT_TYPES})
        for c in meta["blank"]:
            df[c] = df[c].fillna("")
    except (ValueError, TypeError, KeyError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    name = meta.get("columns_name")
    df.columns.name = name if isinstance(name, str) else None
    return df if list(df.columns) == list(types) and {c: str(t) for c, t in df.dtypes.items()} == types else None


def _same(df: pd.DataFrame, back: pd.DataFrame | None) -> bool:
    if back is None or df.attrs:
        return False
    try:
        pd.testing.assert_frame_equal(df, back, check_exact=True, check_index_type=True, check_column_type=True)
    except (AssertionError, TypeError, ValueError):
        return False
    return True


def record(folder: Path, spec, tables: dict[str, pd.DataFrame], csv: dict[str, bytes], stage: Path,
           figures: list[str], plotted: bool) -> dict:
    """The record written beside a run's own analysis (`stage`: the staging folder being written)."""
    if not plotted:
        return {"reusable": False, "why": "written without figures"}
    how = {}
    for name, df in tables.items():
        meta = _meta(df)
        if meta is None or not _same(df, _read_back(csv[name], meta)):
            return {"reusable": False, "why": f"{name}.csv does not read back as the table computed"}
        how[name] = {**meta, "sha256": sha256_bytes(csv[name])}
    key = _key()
    if key is None:
        return {"reusable": False, "why": "no signing key in the cache folder"}
    rec = {"reusable": True, "format": FORMAT, "simsubjects": __version__, "study": spec.name, "code": code(spec),
           "inputs": inputs(folder), "tables": how, "figures": {f: sha256_file(stage / f) for f in figures}}
    return {**rec, "mac": _mac(rec, key)}


def read(folder: Path, spec) -> tuple[dict[str, pd.DataFrame], list[Path]] | None:
    """(tables, figures) of FOLDER/analysis when its record is current for the run's files; else None."""
    adir = folder / "analysis"
    path = adir / RECORD
    if adir.is_symlink() or not adir.is_dir() or path.is_symlink() or not path.is_file():
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
        key = _key()
        if not (isinstance(rec, dict) and key is not None and isinstance(rec.get("mac"), str)
                and hmac.compare_digest(rec["mac"], _mac(rec, key)) and rec.get("reusable") is True and rec.get("format") == FORMAT
                and rec.get("simsubjects") == __version__ and rec.get("study") == spec.name
                and isinstance(rec.get("tables"), dict) and isinstance(rec.get("figures"), dict)
                and rec.get("inputs") == inputs(folder) and rec.get("code") == code(spec)):
            return None
        tables = {}
        for name, meta in rec["tables"].items():
            if not is_ident(name) or not isinstance(meta, dict):
                return None
            data = _plain_file(adir / f"{name}.csv")
            if data is None or sha256_bytes(data) != meta.get("sha256"):
                return None
            tables[name] = _read_back(data, meta)
            if tables[name] is None:
                return None
        figures = []
        for name, digest in rec["figures"].items():
            if not isinstance(name, str) or FIGURE.fullmatch(name) is None:
                return None
            data = _plain_file(adir / name)
            if data is None or sha256_bytes(data) != digest:
                return None
            figures.append(adir / name)
    except (OSError, ValueError, UnicodeDecodeError, AttributeError, TypeError):
        return None
    return tables, figures


def _plain_file(path: Path) -> bytes | None:
    """The bytes of a regular file inside the analysis folder, never through a link."""
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()
