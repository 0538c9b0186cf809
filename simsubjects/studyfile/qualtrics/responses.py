"""Read a Qualtrics response export: CSV with three header rows (names, question texts, ImportIds),
two ("legacy": V1..V10 names, then labels), or one (a cleaned export: the export tags), or an SPSS
.sav (pyreadstat; the values are the recode codes, the value labels their texts).

The result is an `Export`: one list of raw strings per respondent and a lookup from column keys
(export-tag names and, where the export has them, ImportIds such as `QID4-1`) to positions.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import UserError

RID = re.compile(r"^R_[A-Za-z0-9]+$")
ID_NAMES = ("ResponseId", "ResponseID", "Response ID", "responseId", "_recordId")
IMPORT = re.compile(r"""^\{\s*['"]ImportId['"]\s*:\s*['"]([^'"]*)['"]""")


@dataclass
class Export:
    file: Path
    layout: str
    names: list[str]
    rows: list[list[str]]
    index: dict[str, int] = field(default_factory=dict)  # name or "import:ID" -> column position
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # .sav value labels: column -> code -> text
    lines: list[int] = field(default_factory=list)  # each response row's line in the file (a .sav: its case number)
    id_column: int | None = None  # the respondent id's column (ResponseId, or --id-column)

    def column(self, names: list[str], import_ids: list[str] = ()) -> int | None:
        for i in import_ids:
            if f"import:{i}" in self.index:
                return self.index[f"import:{i}"]
        for n in names:
            if n in self.index:
                return self.index[n]
        return None

    def meta(self, *keys: str) -> int | None:
        """A metadata column (ResponseId, Finished, Status, ...) under any of its spellings."""
        low = {k.lower(): v for k, v in self.index.items()}
        for k in keys:
            if k.lower() in low:
                return low[k.lower()]
            if f"import:{k}".lower() in low:
                return low[f"import:{k}".lower()]
        return None


def _fail(path: Path, msg: str) -> UserError:
    return UserError(f"{path}: {msg}")


def read_export(file, id_column: str | None = None) -> Export:
    path = Path(file)
    if not path.is_file():
        raise _fail(path, "no such response export" if not path.exists() else "is a folder, not a response export")
    suffix = path.suffix.lower()
    if suffix == ".sav":
        return _read_sav(path, id_column)
    if suffix not in (".csv", ".tsv"):
        raise _fail(path, f"unknown response export type {path.suffix!r}; use a Qualtrics .csv or .sav export")
    raw = path.read_bytes()
    # UTF-16 only where the file says so (a byte-order mark: Qualtrics' TSV export) or its first bytes hold
    # NULs (no UTF-8 text does): a UTF-8 file with one stray latin-1 byte is not UTF-16 text (issue 42)
    utf16 = raw.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in raw[:4096]
    enc = "utf-16" if utf16 else "utf-8-sig"
    try:
        text = raw.decode(enc)
    except UnicodeDecodeError as e:
        at = e.start + (3 if not utf16 and raw.startswith(b"\xef\xbb\xbf") else 0)  # utf-8-sig counts after its mark
        raise _fail(path, f"not {'UTF-16' if utf16 else 'UTF-8'} text (byte {at}); export the responses again "
                          "as CSV (UTF-8)") from None
    try:
        reader = csv.reader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ",")
        read = [(r, reader.line_num) for r in reader]  # each row with the line it ends on
    except csv.Error as e:
        raise _fail(path, f"not a readable CSV ({e})") from None
    starts, prev = [], 1  # the line each row starts on (a quoted cell may span lines)
    for _, end in read:
        starts.append(prev)
        prev = end + 1
    kept = [(r, ln) for (r, _), ln in zip(read, starts) if any(c.strip() for c in r)]
    if not kept:
        raise _fail(path, "empty response export")
    return _layout(path, [r for r, _ in kept], [ln for _, ln in kept], id_column)


def _layout(path: Path, rows: list[list[str]], lines: list[int], id_column: str | None = None) -> Export:
    head = [c.strip() for c in rows[0]]
    legacy = head[:1] == ["V1"]  # the legacy export: V1..V10 names in row 1, their labels in row 2
    names = list(head)
    if legacy and len(rows) > 1:
        names = [rows[1][i].strip() if re.fullmatch(r"V\d+", h) and i < len(rows[1]) else h for i, h in enumerate(head)]
    if id_column is not None:  # a cleaned export whose id column was renamed
        if id_column not in names:
            raise _fail(path, f"--id-column {id_column}: no such column in the first header row")
        rid = names.index(id_column)
    else:
        rid = next((names.index(n) for n in ID_NAMES if n in names), None)
    if rid is None:
        raise _fail(path, f"no ResponseId column in the first header row (looked for {', '.join(ID_NAMES[:2])}; "
                          "a cleaned export names its id column with --id-column NAME); not a Qualtrics response export")
    # header rows: every row before the first whose ResponseId looks like R_xxx; exports whose ids were
    # replaced (a cleaned file) have header rows only where the id cell reads as a label or an ImportId
    n_head = next((i for i, r in enumerate(rows) if rid < len(r) and RID.match(r[rid].strip())), None)
    if n_head is None:
        n_head = 1 + sum(1 for r in rows[1:3] if rid < len(r) and (r[rid].strip() in (*ID_NAMES, "Response Id")
                                                                   or IMPORT.match(r[rid].strip())))
        if n_head >= len(rows):
            raise _fail(path, "no response rows below the header")
    if n_head > 3:
        raise _fail(path, f"{n_head} header rows; a Qualtrics export has one, two or three")
    imports = {}
    for r in rows[1:n_head]:
        found = [IMPORT.match(c.strip()) for c in r]
        if sum(m is not None for m in found) > len(r) // 2:
            imports = {i: m.group(1) for i, m in enumerate(found) if m}
    layout = {1: "one header row (export tags)", 2: "two header rows (names, question texts)",
              3: "three header rows (names, question texts, ImportIds)"}[n_head]
    if imports and n_head == 2:
        layout = "two header rows (names, ImportIds)"
    width = len(names)
    body = [(r + [""] * width)[:width] for r in rows[n_head:]]
    ex = Export(path, layout, names, body, lines=lines[n_head:], id_column=rid)
    for i, n in enumerate(names):
        ex.index.setdefault(n, i)
    for i, imp in imports.items():
        if i < width:
            ex.index.setdefault(f"import:{imp}", i)
    return ex


def _read_sav(path: Path, id_column: str | None = None) -> Export:
    import pyreadstat  # lazy: imports numpy, narwhals

    try:
        df, meta = pyreadstat.read_sav(str(path), apply_value_formats=False)
    except Exception as e:  # noqa: BLE001 - pyreadstat's errors vary; one line for the user
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise _fail(path, f"cannot be read as SPSS .sav ({msg[:160]})") from None
    names = [str(c) for c in df.columns]
    if id_column is not None and id_column not in names:
        raise _fail(path, f"--id-column {id_column}: no such variable")
    rid = id_column or next((n for n in ID_NAMES if n in names), None)
    if rid is None:
        raise _fail(path, "no ResponseId variable (a cleaned export names its id column with --id-column NAME); "
                          "not a Qualtrics response export")
    if df.empty:
        raise _fail(path, "no response rows")

    def text(v) -> str:
        if v is None or (isinstance(v, float) and v != v):
            return ""
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    rows = [[text(v) for v in rec] for rec in df.itertuples(index=False, name=None)]
    labels = {col: {text(k): str(lab) for k, lab in vals.items()} for col, vals in meta.variable_value_labels.items()}
    ex = Export(path, "SPSS .sav (codes, with value labels)", names, rows, labels=labels,
                lines=list(range(1, len(rows) + 1)), id_column=names.index(rid))
    ex.index = {n: i for i, n in enumerate(names)}
    return ex
