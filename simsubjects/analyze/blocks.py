"""A study's report block as data: a title, tables, a caption, a figure. publish/report.py renders it
to HTML, so a study's folder (simsubjects/studies/<name>/report.py) returns data and needs nothing of
publish/ (the layers: docs/architecture.md). `fmt` writes a number as people read it (tables and the
report's cells use the same text)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Table:
    """A table of a block: shown up to `max_rows` (None: the report's default), with a link to `csv`
    (the full table) when cut."""

    data: pd.DataFrame
    max_rows: int | None = None
    csv: str | None = None


@dataclass(frozen=True)
class Block:
    """One block of a study's report section.

    kind "block": a heading (`title`), the `caption` (trusted text: the study's own wording, shown as
    written), then the tables and the figure (a PNG path); "note": the caption alone, as a note;
    "details": the tables folded under `title`."""

    title: str = ""
    tables: tuple = ()  # pandas DataFrames or Tables, shown one after another
    caption: str = ""
    figure: str | None = None
    kind: str = "block"


def fmt(v) -> str:
    """Numbers people read: p-values small in e-notation, whole numbers without decimals."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT:
        return "–"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):d}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == int(v) and abs(v) < 1e15:
            return f"{int(v):d}"
        if abs(v) < 1e-3:
            return f"{v:.2e}"
        return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 1000 else f"{v:,.1f}"
    return str(v)


def spec(run) -> str:
    """The model spec a run's manifest records ("model" when none)."""
    return run.manifest.get("model", {}).get("spec", "model")


def model_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The model's rows of a table that may also hold people's (source == "human")."""
    return df if "source" not in df else df[df["source"] != "human"]
