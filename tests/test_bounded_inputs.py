"""Inputs are bounded before the work starts; identity and resume hold (issue 28, docs/robustness.md).

Each case is a small hostile input: one line naming file, line or key, exit code 2, nothing written,
before the work starts (a limit that let it start would hang or exhaust memory instead).
"""

from __future__ import annotations

import io
import json
import os
import threading
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from simsubjects.cli import main
from simsubjects.studyfile import limits

BASE = """study: t
title: T
prompt: {template: "${persona}${question}\\n${options}", answer_prefix: "\\nAnswer:"}
items:
  - {id: q1, text: "Pick one", response: {type: choice, options: [Red, Blue, Green]}}
"""


def check(tmp_path, text: str | bytes, files: dict | None = None, name="s.yaml"):
    for fname, content in (files or {}).items():
        (tmp_path / fname).write_bytes(content if isinstance(content, bytes) else content.encode())
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def refused(capsys, argv, *needles, seconds: float = 120.0):
    """One line, exit 2. `seconds`: not a speed test (benchmarks measure speed), a bound that tells a
    refusal from work that started (an alias bomb or 10^9 trials would run for hours)."""
    t0 = time.perf_counter()
    code = main(argv)
    took = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, err
    assert took < seconds, f"{took:.1f}s: the work started before the check"
    return err


# ------------------------------------------------------------------ YAML: aliases, depth, keys, NUL

def alias_bomb(levels: int = 12) -> str:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return BASE + "tables:\n" + "\n".join("  " + line for line in lines) + "\n"


@pytest.mark.parametrize("levels", [6, 9, 12])
def test_yaml_alias_bomb_is_refused_from_its_events(tmp_path, capsys, levels):
    p = check(tmp_path, alias_bomb(levels))
    assert p.stat().st_size < 2000
    refused(capsys, ["study", "check", str(p)], "aliases")


def test_a_few_aliases_are_fine(tmp_path, capsys):
    text = BASE.replace("items:\n  - {id: q1, text: \"Pick one\", response: {type: choice, options: [Red, Blue, Green]}}",
                        "response_types:\n  colour: &c {type: choice, options: [Red, Blue, Green]}\nitems:\n"
                        "  - {id: q1, text: \"Pick one\", response: *c}\n  - {id: q2, text: \"Again\", response: *c}")
    assert main(["study", "check", str(check(tmp_path, text)), "--show", "0"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
def test_deep_nesting_is_refused_without_recursion(tmp_path, capsys, depth):
    p = check(tmp_path, BASE + "description: " + "[" * depth + "]" * depth + "\n")
    refused(capsys, ["study", "check", str(p)], "nested deeper than 64")


@pytest.mark.parametrize("key", ["yes", "on", "No", "off", "true", "~", "null"])
def test_yaml_11_boolean_and_null_keys_are_refused(tmp_path, capsys, key):
    p = check(tmp_path, BASE + f"tables:\n  {key}: 1\n")
    refused(capsys, ["study", "check", str(p)], "quote it", ":7:")


def test_a_nul_in_a_label_is_refused(tmp_path, capsys):
    p = check(tmp_path, BASE.replace("Red,", '"Re\\0d",'))
    refused(capsys, ["study", "check", str(p)], "NUL", "items[0]")


# ------------------------------------------------------------------ special and large files

def test_a_fifo_study_file_does_not_block(tmp_path, capsys):
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(main(["study", "check", str(fifo)])), daemon=True)
    t.start()
    t.join(10)
    assert done == [2], "study check blocked on a FIFO"
    assert "not a regular file" in capsys.readouterr().err


def test_a_device_study_file_is_refused(tmp_path, capsys):
    dev = tmp_path / "s.yaml"
    dev.symlink_to("/dev/zero")
    refused(capsys, ["study", "check", str(dev)], "not a regular file")


def test_a_fifo_table_does_not_block(tmp_path, capsys):
    os.mkfifo(tmp_path / "people.csv")
    p = check(tmp_path, BASE + "design:\n  subjects: {table: people.csv}\n")
    refused(capsys, ["study", "check", str(p)], "not a regular file", "design.subjects.table")


def test_a_huge_study_file_is_refused_before_parsing(tmp_path, capsys):
    p = check(tmp_path, BASE + "description: |\n" + ("  " + "x" * 1000 + "\n") * 2200)
    refused(capsys, ["study", "check", str(p)], "larger than 2 MB")


def xlsx_bomb(path: Path, unpacked_mb: int = 300) -> None:
    """A valid-looking xlsx whose sheet unpacks from well under a megabyte to `unpacked_mb` MB."""
    buf = io.BytesIO()
    df = pd.DataFrame({"id": ["p1"], "age": [30]})
    df.to_excel(buf, index=False, engine="openpyxl")
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                pad = b"<!--" + b" " * (unpacked_mb * 2**20) + b"-->"
                data = data.replace(b"<sheetData>", pad + b"<sheetData>", 1)
            z.writestr(info.filename, data)


def test_an_xlsx_zip_bomb_is_refused_before_unpacking(tmp_path, capsys):
    xlsx_bomb(tmp_path / "people.xlsx")
    assert (tmp_path / "people.xlsx").stat().st_size < 1_000_000
    p = check(tmp_path, BASE + "design:\n  subjects: {table: people.xlsx, n: 1}\n")
    refused(capsys, ["study", "check", str(p)], "unpacks", "people.xlsx")


def test_a_real_xlsx_is_read(tmp_path, capsys):
    pd.DataFrame({"id": ["p1", "p2"], "age": [30, 40]}).to_excel(tmp_path / "people.xlsx", index=False)
    p = check(tmp_path, BASE + "design:\n  subjects: {table: people.xlsx, id: id, template: \"Age ${age}. \"}\n")
    assert main(["study", "check", str(p), "--show", "0"]) == 0, capsys.readouterr().err


def test_a_parquet_table_with_too_many_columns_is_refused_from_its_metadata(tmp_path, capsys):
    pd.DataFrame({f"c{i}": [1] for i in range(limits.MAX_COLUMNS + 1)}).to_parquet(tmp_path / "people.parquet")
    p = check(tmp_path, BASE + "design:\n  subjects: {table: people.parquet}\n")
    refused(capsys, ["study", "check", str(p)], "columns; a table has at most")


# ------------------------------------------------------------------ counts, seeds and orderings

@pytest.mark.parametrize("design, needle", [
    ("design: {repetitions: 1000000000}", "design.repetitions: must be at most"),
    ("design: {seed: -1}", "design.seed: must be at least 0"),
    ("design: {seed: 99999999999}", "design.seed: must be at most"),
    ("design: {subjects: 1000000000}", "design.subjects.n: must be at most"),
    ("design: {subjects: 100000, repetitions: 100}", "trials"),
    ("option_order: {mode: averaged, max_orderings: 100000000}", "max_orderings: must be at most"),
    ("design: {repetitions: .inf}", "an integer"),
    ("design: {repetitions: .nan}", "an integer"),
])
def test_counts_are_bounded_before_the_design_is_built(tmp_path, capsys, design, needle):
    refused(capsys, ["study", "check", str(check(tmp_path, BASE + design + "\n"))], needle)


def test_many_orderings_of_many_options_are_bounded(tmp_path, capsys):
    options = ", ".join(f"o{i}" for i in range(12))  # 12! = 479001600 orderings
    text = BASE.replace("[Red, Blue, Green]", f"[{options}]") + "option_order: {mode: averaged, max_orderings: 5040}\n" \
        + "design: {subjects: 400}\n"
    refused(capsys, ["study", "check", str(check(tmp_path, text))], "orderings")


# ------------------------------------------------------------------ identity: trial ids

def test_ids_holding_the_separator_cannot_give_two_trials_one_id(tmp_path, capsys):
    """Subject 'a | q1' with item 'b' and subject 'a' with item 'q1 | b' would both be 'a | q1 | b'."""
    text = BASE.replace("items:\n  - {id: q1, text: \"Pick one\", response: {type: choice, options: [Red, Blue, Green]}}",
                        "items:\n  - {id: b, text: \"One\", response: yesno}\n  - {id: \"q1 | b\", text: \"Two\", "
                        "response: yesno}") + "design:\n  subjects: {table: people.csv, id: id}\n"
    p = check(tmp_path, text, {"people.csv": "id\na | q1\na\n"})
    refused(capsys, ["study", "check", str(p)], "share the id 'a | q1 | b'")


def test_a_trial_id_template_that_merges_trials_is_refused(tmp_path, capsys):
    text = BASE + "design:\n  subjects: 3\n  trial_id: \"${item}\"\n"
    refused(capsys, ["study", "check", str(check(tmp_path, text))], "design.trial_id", "share the id")


# ------------------------------------------------------------------ resume: --out and the copy

def _study_folder(tmp_path) -> Path:
    d = tmp_path / "mine"
    d.mkdir()
    (d / "people.csv").write_text("id,age\np1,30\np2,40\n")
    (d / "items.parquet").write_bytes(b"my own table")
    (d / "study.yaml").write_text(BASE + "design:\n  subjects: {table: people.csv, id: id}\n")
    return d


@pytest.mark.parametrize("out", [".", "..", "sub"])
def test_collect_out_may_not_be_or_hold_the_study_folder(tmp_path, capsys, out):
    d = _study_folder(tmp_path)
    (d / "sub").mkdir()
    target = {".": d, "..": tmp_path, "sub": None}[out]
    if target is None:  # a folder inside the study's is fine
        return
    before = {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}
    refused(capsys, ["collect", str(d / "study.yaml"), "--out", str(target)], "--out", "a file of the study")
    assert {p: p.read_bytes() for p in d.rglob("*") if p.is_file()} == before


def test_the_run_copy_is_the_bytes_that_were_hashed(smollm2, tmp_path):
    """An edit of the study's table while collect runs does not reach the run folder: its copy is the
    bytes load_study read, hashed into the manifest."""
    import hashlib

    from simsubjects.collect.pipeline import run_study
    from simsubjects.studyfile import load_study
    from simsubjects.studyfile.adapter import file_parameters, study_def

    d = _study_folder(tmp_path)
    study = load_study(d / "study.yaml")
    (d / "people.csv").write_text("id,age\nzz,99\n")  # edited after the design was read and hashed
    (d / "study.yaml").write_text(BASE + "# edited\n")
    out = tmp_path / "run"
    params = {"studyfile": file_parameters(study), "seed": 0, "chat_template": False, "judge_model": None}
    run_study(study_def(study, out=out), "smollm2", out, params=params, method="exact", model=smollm2,
              show_progress=False)
    man = json.loads((out / "manifest.json").read_text())
    copy = (out / "study" / "people.csv").read_bytes()
    assert copy == b"id,age\np1,30\np2,40\n"
    assert hashlib.sha256(copy).hexdigest() == man["parameters"]["studyfile"]["tables"]["people.csv"]
    assert "# edited" not in (out / "study" / "study.yaml").read_text()
    assert set(pd.read_parquet(out / "responses.parquet")["subject"]) == {"p1", "p2"}


# ------------------------------------------------------------------ numbers: weights, estimates, PPI, plan

HUMAN = BASE.replace("items:\n  - {id: q1, text: \"Pick one\", response: {type: choice, options: [Red, Blue, Green]}}",
                     "items:\n  - {id: q1, text: \"How many?\", response: {type: estimate}}\n"
                     "  - {id: q2, text: \"Pick\", response: yesno}") + \
    "human:\n  file: human.csv\n  columns: {respondent: rid, item: item, response: answer, weight: w}\n"


@pytest.mark.parametrize("rows, needle", [
    ("h1,q2,Yes,inf\n", "weight inf is not a number (finite"),
    ("h1,q2,Yes,-1\n", "is not a number (finite, >= 0)"),
    ("h1,q2,Yes,nan\n", "is not a number (finite, >= 0)"),
    ("h1,q2,Yes,0\nh2,q2,No,0\n", "every weight of the human table is 0"),
    ("h1,q1,nan,1\n", None),  # an empty answer: no row (then no answered row at all)
    ("h1,q1,inf,1\n", "inf is not a finite number"),
    ("h1,q1,1e400,1\n", "is not a finite number"),
    ("h1,q1,-inf,1\n", "is not a finite number"),
])
def test_human_weights_and_estimates_are_finite(tmp_path, capsys, rows, needle):
    p = check(tmp_path, HUMAN, {"human.csv": "rid,item,answer,w\n" + rows})
    err = refused(capsys, ["study", "check", str(p)], "human")
    assert needle is None or needle in err
    assert needle is None or "row 2" in err or "every weight" in err


def test_human_ids_holding_the_separator_cannot_share_a_trial(tmp_path, capsys):
    text = HUMAN.replace("  - {id: q2, text: \"Pick\", response: yesno}",
                         "  - {id: q2, text: \"Pick\", response: yesno}\n  - {id: \"x|q2\", text: \"P\", response: yesno}")
    p = check(tmp_path, text, {"human.csv": "rid,item,answer,w\nh|x,q2,Yes,1\nh,x|q2,No,1\n"})
    refused(capsys, ["study", "check", str(p)], "share the trial id")


def test_ppi_with_identical_outcomes_warns_instead_of_p_zero():
    from simsubjects.analyze.methods.ppi import ppi_mean

    t = ppi_mean([1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0], lam=1.0)
    assert t["p.value"].isna().all() and t["statistic"].isna().all()
    assert t["warning"].str.contains("zero variance").all()
    ok = ppi_mean([1.0, 0.0, 1.0, 0.0], [0.9, 0.1, 0.8, 0.3], [0.5, 0.6, 0.7])
    # 4 humans: no zero-variance warning, only the small-n rule's note (issue 40)
    assert ok["warning"].str.startswith("4 human units").all() and ok["p.value"].between(0, 1).all()


PILOT = "item,y,yhat\na,1,0.9\nb,0,0.2\nc,1,0.7\nd,,0.4\ne,0,0.1\nf,1,0.8\n"


@pytest.mark.parametrize("args, needle", [
    (["--width", "0.2", "--n-model", str(10**20)], "--n-model"),
    (["--width", "0.2", "--humans", str(10**12)], "--humans"),
    (["--effect", "nan"], "--effect nan: must be a finite number"),
    (["--effect", "inf"], "--effect inf: must be a finite number"),
    (["--width", "inf"], "--width inf: must be a finite number"),
    (["--effect", "0"], "--effect 0"),
])
def test_plan_refuses_absurd_numbers(tmp_path, capsys, args, needle):
    (tmp_path / "pilot.csv").write_text(PILOT)
    refused(capsys, ["plan", str(tmp_path / "pilot.csv"), *args], needle)


@pytest.mark.parametrize("cell", ["inf", "-inf", "1e400", "x"])
def test_plan_refuses_a_prediction_that_is_not_finite(tmp_path, capsys, cell):
    (tmp_path / "pilot.csv").write_text(PILOT.replace("b,0,0.2", f"b,0,{cell}"))
    refused(capsys, ["plan", str(tmp_path / "pilot.csv"), "--width", "0.2"], "row 3, column yhat")


# ------------------------------------------------------------------ export and study new

@pytest.mark.parametrize("column", ["年齢", "ä", "Größe", "é" * 41, "_x"])
def test_sav_export_of_a_non_ascii_column(tmp_path, column):
    import pyreadstat

    from simsubjects.publish.export import _write

    df = pd.DataFrame({column: ["a", "b"], "n": [1.0, 2.0]})
    names = _write(df, tmp_path / "t.sav", "sav")
    back, meta = pyreadstat.read_sav(str(tmp_path / "t.sav"))
    assert list(back.columns) == [names[column], "n"]
    assert meta.column_names_to_labels[names[column]] == column  # the original name is its label


def test_codebook_finds_categorical_columns_once(monkeypatch):
    """Linear in the columns: 2,000 persona columns took 214 s when each column re-scanned all."""
    import simsubjects.publish.export as ex

    calls = []
    real = ex.categorical_columns
    monkeypatch.setattr(ex, "categorical_columns", lambda df: calls.append(1) or real(df))
    df = pd.DataFrame({f"p{i}": ["a", "b"] for i in range(300)})
    book = ex.codebook(df, {}, {})
    assert len(book) == 300 and len(calls) == 1


def test_study_new_keeps_a_users_tmp_folder(tmp_path, capsys):
    mine = tmp_path / ".study.tmp"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert main(["study", "new", "survey", str(tmp_path / "study")]) == 0
    assert (mine / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".study.tmp", "study"]


@pytest.mark.parametrize("x, y", [([1.0, 1.0, 1.0], [0.0, 0.0, 0.0]), ([0.5, 0.5], [0.5, 0.5]),
                                  # a spread of float rounding is none (R's t.test: 'essentially constant')
                                  ([0.9999999, 0.9999999 + 1e-16, 0.9999999], [0.5, 0.5 + 1e-16, 0.5])])
def test_a_degenerate_welch_test_warns_instead_of_p_zero(x, y, recwarn):
    from simsubjects.analyze.methods.subjects import welch

    # trial_scores' layout: one subject per trial (the test's unit), trial weight tw 1 for a model's rows
    trials = pd.DataFrame({"source": "model", "model": "m", "item": "q1", "frame": ["a"] * len(x) + ["b"] * len(y),
                           "subject": [f"s{i}" for i in range(len(x) + len(y))], "tw": 1.0, "score": x + y})
    row = welch(trials, "frame", ["a", "b"], ["item"]).iloc[0]
    assert pd.isna(row["p.value"]) and pd.isna(row["statistic"]) and "zero variance" in row["warning"]
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    ok = welch(trials.assign(score=[1.0, 0.8, 0.9, 0.1, 0.2, 0.0][: len(trials)]), "frame", ["a", "b"], ["item"])
    assert ok["warning"].iloc[0] == "" and 0 <= ok["p.value"].iloc[0] <= 1
