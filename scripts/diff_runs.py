"""Compare two run folders' tables: every CSV under A beside the CSV at the same path under B.

    python scripts/diff_runs.py OLD_RUNS NEW_RUNS [--tol 1e-9] [--out differences.csv]

Lists, one row per difference: a file present on one side only, a column present on one side only,
a different number of rows, and each column whose values differ (numbers beyond the tolerance,
absolute, in the column's own unit; text exactly; empty equals empty). Rows are compared in the
order written, which is how the package writes its tables. Exit 0 when the tables agree, 1 when
they differ, 2 when an argument is not a folder. Used to check that a refactor left every number of
`make demo` unchanged (issue 37): run the demo on both commits and point this at the two run folders.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = ["file", "column", "kind", "rows", "max_abs_diff", "example"]


def csv_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*.csv") if p.is_file()}


def _example(a, b, i) -> str:
    return f"row {i}: {a!r} -> {b!r}"


def column_difference(name: str, col: str, a: pd.Series, b: pd.Series, tol: float) -> dict | None:
    """One row when the two columns differ: numbers beyond `tol` (absolute), text exactly."""
    na, nb = a.isna().to_numpy(), b.isna().to_numpy()
    num_a, num_b = pd.to_numeric(a, errors="coerce"), pd.to_numeric(b, errors="coerce")
    numeric = (num_a.notna() | a.isna()).all() and (num_b.notna() | b.isna()).all()
    if numeric:
        x, y = num_a.to_numpy(float), num_b.to_numpy(float)
        both = ~na & ~nb
        with np.errstate(invalid="ignore"):  # inf - inf: equal infinities are caught just below
            gap = np.where(both, np.abs(x - y), 0.0)
        # inf == inf is no difference; inf beside a number is
        gap = np.where(both & (x == y), 0.0, gap)
        bad = (na != nb) | (both & ~(gap <= tol))
        worst = float(np.nanmax(np.where(both & bad, gap, np.nan))) if (both & bad).any() else np.nan
    else:
        sa, sb = a.astype(str).to_numpy(), b.astype(str).to_numpy()
        bad = (na != nb) | (~na & ~nb & (sa != sb))
        worst = np.nan
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return {"file": name, "column": col, "kind": "values" if numeric else "text", "rows": int(bad.sum()),
            "max_abs_diff": worst, "example": _example(a.iloc[i], b.iloc[i], i)}


def table_differences(name: str, a: pd.DataFrame, b: pd.DataFrame, tol: float) -> list[dict]:
    out = [{"file": name, "column": c, "kind": f"column only in {side}", "rows": len(t), "max_abs_diff": np.nan,
            "example": ""}
           for side, t, other in (("A", a, b), ("B", b, a)) for c in t.columns if c not in other.columns]
    if len(a) != len(b):
        return out + [{"file": name, "column": "", "kind": "row count", "rows": abs(len(a) - len(b)),
                       "max_abs_diff": np.nan, "example": f"{len(a)} rows -> {len(b)} rows"}]
    for col in [c for c in a.columns if c in b.columns]:
        row = column_difference(name, col, a[col].reset_index(drop=True), b[col].reset_index(drop=True), tol)
        if row:
            out.append(row)
    return out


def read_table(path: Path) -> pd.DataFrame:
    """Every cell as text, so a column is judged numeric on its whole content, not pandas' guess; an empty
    file (a table with no columns) is an empty table."""
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=True)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def diff_runs(a: Path, b: Path, tol: float = 1e-9) -> pd.DataFrame:
    """Every difference between the CSV tables of run folders `a` and `b` (see the module's text)."""
    fa, fb = csv_files(a), csv_files(b)
    rows = [{"file": f, "column": "", "kind": f"file only in {side}", "rows": 0, "max_abs_diff": np.nan,
             "example": ""} for side, only in (("A", fa - fb), ("B", fb - fa)) for f in sorted(only)]
    for f in sorted(fa & fb):
        rows += table_differences(f, read_table(a / f), read_table(b / f), tol)
    return pd.DataFrame(rows, columns=COLUMNS)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Compare two run folders' CSV tables.")
    p.add_argument("a", type=Path, help="the first run folder (e.g. the old code's runs/demo)")
    p.add_argument("b", type=Path, help="the second run folder")
    p.add_argument("--tol", type=float, default=1e-9, help="largest absolute difference taken as equal (default 1e-9)")
    p.add_argument("--out", type=Path, help="also write the differences to this CSV")
    args = p.parse_args(argv)
    for name, path in (("A", args.a), ("B", args.b)):
        if not path.is_dir():
            print(f"diff_runs: {name} {path}: not a folder", file=sys.stderr)
            return 2
    diffs = diff_runs(args.a, args.b, args.tol)
    n = len(csv_files(args.a) | csv_files(args.b))
    if args.out:
        diffs.to_csv(args.out, index=False)
    if diffs.empty:
        print(f"{n} tables: equal (tolerance {args.tol:g})")
        return 0
    with pd.option_context("display.max_rows", None, "display.max_colwidth", 80, "display.width", 200):
        print(diffs.to_string(index=False))
    print(f"{diffs['file'].nunique()} of {n} tables differ ({len(diffs)} differences, tolerance {args.tol:g})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
