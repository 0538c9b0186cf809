"""Bounds on a study file and its tables, checked before the work they bound starts (docs/robustness.md).

A small file must not buy unbounded work: a YAML alias bomb, a deeply nested list, a zip bomb of an
xlsx, a count of 10^9 or a k! of orderings. Each limit is generous for a real study and named in the
one-line error (exit code 2) that a file past it gets. Hand-written: PyYAML, openpyxl and pandas
offer no such limits.
"""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import yaml

MAX_STUDY_BYTES = 2 * 1024 * 1024  # a study file
MAX_YAML_DEPTH = 64  # nesting of mappings and lists
MAX_YAML_NODES = 200_000  # nodes once every alias is expanded
MAX_TABLE_BYTES = 200 * 1024 * 1024  # a table file on disk
MAX_UNPACKED_BYTES = 500 * 1024 * 1024  # an xlsx's members, unpacked
MAX_ZIP_RATIO = 200  # unpacked / packed bytes of an xlsx member (real sheets: 5 to 30)
MAX_ROWS = 1_000_000  # rows of a table
MAX_COLUMNS = 5_000  # columns of a table
MAX_COUNT = 100_000  # repetitions, subjects n, sample, per_item
MAX_ORDERINGS = 5_040  # option_order.max_orderings (7!)
MAX_TRIALS = 2_000_000  # trials of a design (upper bound computed before building them)
MAX_SEED = 2**32 - 1  # as the CLI's --seed
MAX_CHOICES = 1_000  # choices (or scale points) of one imported Qualtrics question (a country list: about 200)
MAX_FLOW_DEPTH = 64  # nesting of an imported Qualtrics survey flow (groups, branches, randomizers)
# sessions (studyfile/session.py), each checked before the first decision (issue 42)
MAX_STEPS = 100_000  # the largest max_steps a file may declare: a path is held in memory
MAX_PATHS = 10_000  # sampled paths per subject
MAX_LEAVES = 100_000  # max_leaves of an enumerated tree, per subject (the tree is held in memory)
MAX_DECISIONS = 2_000_000  # subjects x paths (or leaves) x decisions per path, bounded before any is made


def regular_file(path: Path, what: str) -> str | None:
    """Why `path` cannot be read as a `what` (a FIFO blocks, a device never ends), or None."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None  # the caller's own message
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if not stat.S_ISREG(st.st_mode):
        return f"is not a regular file (a FIFO, device or socket); a {what} is a file"
    return None


def yaml_shape(text: str) -> str | None:
    """Why the YAML text is too deep or expands too far (from its event stream, which builds nothing),
    or None. Aliases count with the size of what they point at, nested aliases included."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    sizes: dict[str, int] = {}
    stack: list[list] = []  # [anchor, nodes so far] per open collection
    total = depth = 0
    try:
        while True:
            ev = loader.get_event()
            if ev is None or isinstance(ev, yaml.StreamEndEvent):
                break
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    return f"nested deeper than {MAX_YAML_DEPTH} levels (line {ev.start_mark.line + 1})"
                stack.append([ev.anchor, 1])
                continue
            if isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
                anchor, n = stack.pop()
                if anchor:
                    sizes[anchor] = n
                n_add = n
            elif isinstance(ev, yaml.ScalarEvent):
                n_add = 1
                if ev.anchor:
                    sizes[ev.anchor] = 1
            elif isinstance(ev, yaml.AliasEvent):
                n_add = sizes.get(ev.anchor, 1)
            else:
                continue
            if stack:
                stack[-1][1] += n_add
            else:
                total += n_add
            if total + sum(s[1] for s in stack) > MAX_YAML_NODES:
                return f"expands to more than {MAX_YAML_NODES} values through its aliases (&anchor / *alias)"
    except yaml.YAMLError:
        return None  # the parser's own error, with its line, comes next
    finally:
        loader.dispose()
    return None


def table_file(path: Path) -> str | None:
    """Why a table file is too large to read, or unpacks too far (xlsx is a zip), or None."""
    why = regular_file(path, "table")
    if why:
        return why
    try:
        size = path.stat().st_size
    except OSError:
        return None
    if size > MAX_TABLE_BYTES:
        return f"is {size / 2**20:.0f} MB; a table is at most {MAX_TABLE_BYTES // 2**20} MB"
    if path.suffix.lower() == ".xlsx":
        try:
            with zipfile.ZipFile(path) as z:
                unpacked = 0
                for m in z.infolist():
                    unpacked += m.file_size
                    if m.file_size > 1_000_000 and m.file_size > MAX_ZIP_RATIO * max(m.compress_size, 1):
                        return (f"member {m.filename} unpacks {m.file_size // max(m.compress_size, 1)}-fold "
                                f"(at most {MAX_ZIP_RATIO}): not a spreadsheet a person saved")
                if unpacked > MAX_UNPACKED_BYTES:
                    return f"unpacks to {unpacked / 2**20:.0f} MB (at most {MAX_UNPACKED_BYTES // 2**20} MB)"
        except zipfile.BadZipFile:
            return "cannot be read as xlsx (not a zip archive)"
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow.parquet as pq  # lazy: optional (numpy, pyarrow)

            meta = pq.ParquetFile(path).metadata
            return shape(meta.num_rows, meta.num_columns)
        except Exception:  # noqa: BLE001 - not parquet: the reader's own error names it
            return None
    return None


def shape(rows: int, columns: int) -> str | None:
    if rows > MAX_ROWS:
        return f"has {rows} rows; a table has at most {MAX_ROWS}"
    if columns > MAX_COLUMNS:
        return f"has {columns} columns; a table has at most {MAX_COLUMNS}"
    return None
