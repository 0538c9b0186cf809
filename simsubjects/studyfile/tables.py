"""The tables beside a study file: CSV, XLSX (openpyxl), SPSS .sav and Stata .dta (pyreadstat), parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

READERS = {".csv": "csv", ".tsv": "tsv", ".xlsx": "xlsx", ".sav": "sav", ".dta": "dta", ".parquet": "parquet"}


def read_table(path: Path, fail: Callable[[str], Exception]) -> pd.DataFrame:
    """A table as a DataFrame; `fail(message)` builds the error that names the study file's key."""
    kind = READERS.get(path.suffix.lower())
    if kind is None:
        raise fail(f"{path.name}: unknown table type {path.suffix!r}; use {', '.join(READERS)}")
    if not path.is_file():
        raise fail(f"{path}: no such table file")
    try:
        if kind in ("csv", "tsv"):
            df = pd.read_csv(path, sep="\t" if kind == "tsv" else ",", keep_default_na=False, na_values=[""])
        elif kind == "xlsx":
            df = pd.read_excel(path, engine="openpyxl")
        elif kind == "parquet":
            df = pd.read_parquet(path)
        else:
            import pyreadstat

            # value labels applied: answers read as their labels, as a person reads the questionnaire
            reader = pyreadstat.read_sav if kind == "sav" else pyreadstat.read_dta
            df, _ = reader(str(path), apply_value_formats=True)
    except Exception as e:  # noqa: BLE001 - each reader has its own errors; the user needs one line
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise fail(f"{path.name}: cannot be read as {kind} ({msg[:160]})") from None
    if df.empty:
        raise fail(f"{path.name}: the table has no rows")
    df.columns = [str(c).strip() for c in df.columns]
    return df
