"""The tables beside a study file: CSV, XLSX (openpyxl), SPSS .sav and Stata .dta (pyreadstat), parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Callable
import io
import tempfile

import pandas as pd

READERS = {".csv": "csv", ".tsv": "tsv", ".xlsx": "xlsx", ".sav": "sav", ".dta": "dta", ".parquet": "parquet"}


def read_table(path: Path, fail: Callable[[str], Exception], keep_bytes: bool = False):
    """A table as a DataFrame; `fail(message)` builds the error that names the study file's key.
    Its size, shape and (xlsx) unpacked size are bounded before it is read (limits.py).
    keep_bytes: (table, the file's bytes), parsed from those bytes (read once: what was parsed is what
    a run hashes and copies)."""
    from . import limits  # lazy: imports yaml

    kind = READERS.get(path.suffix.lower())
    if kind is None:
        raise fail(f"{path.name}: unknown table type {path.suffix!r}; use {', '.join(READERS)}")
    why = limits.table_file(path)
    if why:
        raise fail(f"{path.name}: {why}")
    if not path.is_file():
        raise fail(f"{path}: no such table file")
    if kind in ("sav", "dta"):
        import pyreadstat  # lazy: imports narwhals, pyreadstat

        try:
            _, meta = (pyreadstat.read_sav if kind == "sav" else pyreadstat.read_dta)(str(path), metadataonly=True)
            why = limits.shape(meta.number_rows or 0, meta.number_columns or 0)
        except Exception:  # noqa: BLE001 - the full read below names the problem
            why = None
        if why:
            raise fail(f"{path.name}: {why}")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise fail(f"{path.name}: cannot be read ({e.strerror or e})") from None
    try:
        if kind in ("csv", "tsv"):
            df = pd.read_csv(io.BytesIO(data), sep="\t" if kind == "tsv" else ",", keep_default_na=False,
                             na_values=[""])
        elif kind == "xlsx":
            df = pd.read_excel(io.BytesIO(data), engine="openpyxl")
        elif kind == "parquet":
            df = pd.read_parquet(io.BytesIO(data))
        else:
            import pyreadstat  # lazy: optional (narwhals, pyreadstat)

            # value labels applied: answers read as their labels, as a person reads the questionnaire
            reader = pyreadstat.read_sav if kind == "sav" else pyreadstat.read_dta
            with tempfile.NamedTemporaryFile(suffix=path.suffix) as tmp:  # pyreadstat reads paths only
                tmp.write(data)
                tmp.flush()
                df, _ = reader(tmp.name, apply_value_formats=True)
    except Exception as e:  # noqa: BLE001 - each reader has its own errors; the user needs one line
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise fail(f"{path.name}: cannot be read as {kind} ({msg[:160]})") from None
    if df.empty:
        raise fail(f"{path.name}: the table has no rows")
    why = limits.shape(*df.shape)
    if why:
        raise fail(f"{path.name}: {why}")
    df.columns = [str(c).strip() for c in df.columns]
    return (df, data) if keep_bytes else df
