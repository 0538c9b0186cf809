"""scripts/diff_runs.py: two run folders' tables compared (issue 37: every number of `make demo`, diffed)."""

import importlib.util
from pathlib import Path

import pandas as pd

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "diff_runs.py"
spec = importlib.util.spec_from_file_location("diff_runs", SCRIPT)
diff_runs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(diff_runs)


def _write(root: Path, name: str, df: pd.DataFrame):
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(root / name, index=False)


def test_every_kind_of_difference_is_listed_and_tiny_gaps_are_not(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    base = pd.DataFrame({"term": ["x", "y", "z"], "estimate": [0.5, 1.25, 2.0], "p.value": [0.01, None, 0.3]})
    _write(a, "s/tests.csv", base)
    # estimate moves by 1e-12 (equal at 1e-9) and 0.125 (a difference); p.value gains a value where none was
    _write(b, "s/tests.csv", base.assign(estimate=[0.5 + 1e-12, 1.25, 2.125], **{"p.value": [0.01, 0.04, 0.3]}))
    _write(a, "s/same.csv", base)
    _write(b, "s/same.csv", base)
    _write(a, "s/cols.csv", base)
    _write(b, "s/cols.csv", base.drop(columns="p.value").assign(note=["", "n < 3", ""]))
    _write(a, "s/rows.csv", base)
    _write(b, "s/rows.csv", base.iloc[:2])
    _write(a, "s/text.csv", base)
    _write(b, "s/text.csv", base.assign(term=["x", "Y", "z"]))
    _write(b, "s/new.csv", base)

    d = diff_runs.diff_runs(a, b)
    got = {(r.file, r.column, r.kind): r for r in d.itertuples()}
    assert set(got) == {("s/tests.csv", "estimate", "values"), ("s/tests.csv", "p.value", "values"),
                        ("s/cols.csv", "p.value", "column only in A"), ("s/cols.csv", "note", "column only in B"),
                        ("s/rows.csv", "", "row count"), ("s/text.csv", "term", "text"),
                        ("s/new.csv", "", "file only in B")}
    est = got[("s/tests.csv", "estimate", "values")]
    assert est.rows == 1 and abs(est.max_abs_diff - 0.125) < 1e-12  # unit: the column's own (here, estimate)
    assert got[("s/tests.csv", "p.value", "values")].rows == 1
    assert diff_runs.main([str(a), str(a)]) == 0 and diff_runs.main([str(a), str(b)]) == 1


def test_a_missing_folder_is_one_line_and_exit_2(tmp_path, capsys):
    assert diff_runs.main([str(tmp_path), str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope" in err[0]


def test_equal_infinities_are_equal_and_inf_beside_a_number_is_not():
    a = pd.Series(["inf", "1", "-inf"])
    assert diff_runs.column_difference("t.csv", "x", a, a, 1e-9) is None
    row = diff_runs.column_difference("t.csv", "x", a, pd.Series(["inf", "1", "5"]), 1e-9)
    assert row["rows"] == 1 and row["example"] == "row 2: '-inf' -> '5'"


def test_an_empty_table_beside_an_empty_table_is_equal(tmp_path):
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "t.csv").write_text("")
    assert diff_runs.diff_runs(tmp_path / "a", tmp_path / "b").empty
