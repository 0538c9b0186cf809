"""HTML pieces of the report: number formatting, tables, blocks, figures, and the Run a section reads.

A study's report section (its declaration's `report`, simsubjects/studies/<name>/report.py) returns
`analyze.blocks.Block`s, data; `render` turns each into HTML here. A study declared outside the package
may still return HTML text, shown as written.
"""

from __future__ import annotations

import base64
import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simsubjects.analyze.blocks import Block, Table, fmt, model_rows, spec  # noqa: F401 - re-exported

NUMBER = re.compile(r"[-−]?[\d,]*\.?\d+( \(.*\)| \[.*\])?|–")
MAX_ROWS = 40  # longer tables are cut in the page; the CSV beside them has every row


def _decimals(col: pd.Series) -> int | None:
    """Decimals that show every value of a float column to 3 places, the same for the whole column."""
    if not pd.api.types.is_float_dtype(col):
        return None
    v = col.to_numpy(float)
    v = v[np.isfinite(v) & (np.abs(v) >= 1e-3) & (np.abs(v) < 1000)]
    return max((len(f"{x:.3f}".rstrip("0").split(".")[1]) for x in v), default=0)


def _cell(v, decimals: int | None = None) -> str:
    num = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
    text = fmt(v)
    if isinstance(v, str) and NUMBER.fullmatch(v):  # numbers formatted upstream still align right
        return f'<td class="n">{html.escape(text)}</td>'
    if num and decimals is not None and isinstance(v, (float, np.floating)) and math.isfinite(v) \
            and (v == 0 or 1e-3 <= abs(v) < 1000):
        text = f"{float(v):.{decimals}f}"
    return f'<td class="n">{html.escape(text)}</td>' if num else f"<td>{html.escape(text)}</td>"


def table(df: pd.DataFrame, max_rows: int = MAX_ROWS, csv: str | None = None) -> str:
    if df is None or df.empty:
        return '<p class="note">(empty table)</p>'
    shown = df.head(max_rows)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
    dec = [_decimals(shown[c]) for c in shown.columns]
    body = "".join("<tr>" + "".join(_cell(v, d) for v, d in zip(row, dec)) + "</tr>"
                   for row in shown.itertuples(index=False, name=None))
    more = ""
    if len(df) > max_rows:
        where = f' (all rows: <a href="{html.escape(csv)}">{html.escape(csv)}</a>)' if csv else ""
        more = f'<p class="note">first {max_rows} of {len(df)} rows{where}</p>'
    return f'<div class="tw"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}'


def block(title: str, content: str, note: str = "", kind: str = "") -> str:
    n = f'<p class="note">{note}</p>' if note else ""
    cls = f' class="{kind}"' if kind else ""
    return f"<div{cls}><h4>{html.escape(title)}</h4>{n}{content}</div>"


def figure(path: Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    name = html.escape(Path(path).name)
    return (f'<figure><img alt="{name}" src="data:image/png;base64,{data}">'
            f"<figcaption>{name}</figcaption></figure>")


def pre(text: str) -> str:
    return f"<pre>{html.escape(text)}</pre>"


@dataclass
class Run:
    """One study run folder and what the report shows of it."""

    folder: Path
    rel: str  # path shown in links, relative to the report
    manifest: dict
    entry: dict = field(default_factory=dict)  # the replicate manifest's entry, if any
    analysis: object | None = None
    error: str = ""


def render(b) -> str:
    """One report block as HTML: a `Block` (data) rendered; text (a section written before blocks were
    data, or a study outside the package) shown as written."""
    if isinstance(b, str):
        return b
    if not isinstance(b, Block):
        raise TypeError(f"a report section returned {type(b).__name__}, not a Block or text")
    shown = "".join(table(t.data, **({"max_rows": t.max_rows} if t.max_rows else {}), csv=t.csv)
                    if isinstance(t, Table) else table(t) for t in b.tables)
    if b.figure:
        shown += figure(Path(b.figure))
    if b.kind == "note":
        return f'<p class="note">{b.caption}</p>'
    if b.kind == "details":
        return f"<details><summary>{html.escape(b.title)}</summary>{shown}</details>"
    return block(b.title, shown, b.caption)
