"""Issue 18's reproductions (except the network ones): each is exit code 2, one line on stderr that names
the file, key or argument, no traceback, and nothing written (the folder is byte for byte as before).
Also the top-level guard (exit 70 and a crash log without secrets) and refused writes: a read-only or
full --out for export, analyze, report, datasets import and collect, on real tmpfs mounts where the
tests run as root, and by a file system that raises ENOSPC everywhere else.
"""

from __future__ import annotations

import errno
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.cli.commands import main
from tests.harden_util import can_mount, edit_manifest, imported_run, snapshot, tmpfs

MOUNT = can_mount()
needs_mount = pytest.mark.skipif(not MOUNT, reason="needs root and tmpfs mounts (a real read-only or full disk)")


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    return imported_run(tmp_path_factory.mktemp("base"))


@pytest.fixture
def run(base_run, tmp_path):
    import shutil

    shutil.copytree(base_run, tmp_path / "run")
    return tmp_path / "run"


@pytest.fixture(autouse=True)
def _no_model(monkeypatch):
    """Every reproduction here is refused before a model would load."""
    def refuse(*a, **k):
        raise AssertionError("a model was loaded: this bad input was not caught before loading the model")

    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_model", refuse)
    monkeypatch.setattr(models, "load_model", refuse)


def refused(argv, root: Path, capsys, needle: str) -> str:
    """Run the CLI in-process; assert exit 2, one line naming `needle`, no traceback, nothing changed."""
    before = snapshot(root)
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 2, f"exit code {rc}; stderr: {err}"
    assert "Traceback" not in err + out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    after = snapshot(root)
    assert after == before, f"changed: {sorted(set(after) ^ set(before))}"
    return lines[0]


# --- model files --------------------------------------------------------------------------------------

@pytest.mark.parametrize("keep", [0, 4, 1000, 1 << 20])
def test_truncated_gguf_is_refused_before_loading(tmp_path, capsys, keep):
    from simsubjects.collect.models import smollm2_path

    with open(smollm2_path(), "rb") as f:
        (tmp_path / "model.gguf").write_bytes(f.read(keep))
    refused(["collect", "ultimatum", "--pairs", "1", "--model", f"hf:{tmp_path / 'model.gguf'}",
             "--out", tmp_path / "out"], tmp_path, capsys, "model.gguf")


# --- BiasMonkey num_options -----------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["inf", "1e30", "27", "3.5", "nan", "-inf", "26"])
def test_biasmonkey_response_num_options(tmp_path, capsys, value):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "acquiescence.csv").write_text(
        f"key,response,group,num_options\nK1,a,orig alpha,2\nK1,b,pos alpha,{value}\n")
    refused(["import-responses", "biasmonkey", tmp_path / "results", "--model", "m", "--out", tmp_path / "out"],
            tmp_path, capsys, "acquiescence.csv:3")


@pytest.mark.parametrize("value", ["inf", "1e30", "27", "3.5", "nan"])
def test_biasmonkey_question_num_options(tmp_path, capsys, value):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "response_order.csv").write_text(
        "key,num options,orig alpha,reversed alpha\n"
        f'K1,{value},"Is it good?\nA. Yes\nB. Maybe\nC. No","Is it good?\nA. No\nB. Maybe\nC. Yes"\n')
    refused(["datasets", "import", "biasmonkey", tmp_path / "prompts"], tmp_path, capsys, "num options")


# --- manifests with fields of the wrong type -------------------------------------------------------------

WRONG_TYPES = [
    ("model", "smollm2"), ("counts", [22, 22]), ("parameters", ["pairs", 2]), ("failures", {"n": 0}),
    ("timings", 3.5), ("versions", "0.1"), ("created", 20260101), ("seed", "0"), ("short", None),
    ("identity", []), ("datasets", "x"),
]


@pytest.mark.parametrize("key, value", WRONG_TYPES, ids=[k for k, _ in WRONG_TYPES])
def test_report_on_a_manifest_with_wrong_types(run, capsys, key, value):
    edit_manifest(run, **{key: value})
    refused(["report", run], run.parent, capsys, "manifest.json")


@pytest.mark.parametrize("field, value", [("counts", {"trials": "22"}), ("counts", {"answered": float("nan")}),
                                          ("model", {"spec": 5}), ("timings", {"seconds": "fast"})])
def test_nested_manifest_fields_with_wrong_types(run, capsys, field, value):
    m = json.loads((run / "manifest.json").read_text())
    m[field] = {**m.get(field, {}), **value}
    (run / "manifest.json").write_text(json.dumps(m, allow_nan=True))
    for cmd in (["report", run], ["analyze", run], ["export", run, "--to", "csv"]):
        refused(cmd, run.parent, capsys, "manifest.json")


# --- tables that do not fit -----------------------------------------------------------------------------

def _edit_responses(run, **cols):
    r = pd.read_parquet(run / "responses.parquet")
    for k, v in cols.items():
        r[k] = v
    r.to_parquet(run / "responses.parquet", index=False)


@pytest.mark.parametrize("edit, needle", [
    ({"weight": "heavy"}, "'weight'"),
    ({"weight": np.nan}, "'weight'"),
    ({"weight": np.inf}, "'weight'"),
    ({"weight": -1.0}, "'weight'"),
    ({"validity": "x"}, "'validity'"),
    ({"weight": True}, "'weight'"),
    ({"trial": 7}, "'trial'"),
    ({"study": "ultimatum"}, "ultimatum"),
], ids=["weight-strings", "weight-all-nan", "weight-inf", "weight-negative", "validity-strings", "weight-bool",
        "trial-int", "another-studys-rows"])
def test_analyze_refuses_tables_that_do_not_fit(run, capsys, edit, needle):
    _edit_responses(run, **edit)
    refused(["analyze", run], run.parent, capsys, needle)
    refused(["export", run, "--to", "csv"], run.parent, capsys, needle)


def test_analyze_another_studys_manifest_over_these_tables(run, capsys):
    edit_manifest(run, study="ultimatum")
    refused(["analyze", run], run.parent, capsys, "responses.parquet")


def test_analyze_tables_without_a_column_the_analysis_needs(run, capsys):
    for name in ("responses.parquet", "items.parquet"):
        pd.read_parquet(run / name).drop(columns=["bias"]).to_parquet(run / name, index=False)
    refused(["analyze", run], run.parent, capsys, "bias")


# --- report on unfinished runs -------------------------------------------------------------------------

def test_report_on_a_single_unfinished_run_exits_2(run, capsys):
    edit_manifest(run, status="running")  # counts of an earlier complete run are still in it
    refused(["report", run], run.parent, capsys, "did not finish")


def test_report_never_shows_an_unfinished_run_as_answered(run, tmp_path, capsys):
    from simsubjects.cli.replicate import KIND

    folder = tmp_path
    edit_manifest(run, status="running", counts={"trials": 22, "answered": 22, "rows": 44})
    (folder / "manifest.json").write_text(json.dumps({"kind": KIND, "papers": ["tjuatja2024"],
                                                      "studies": [{"study": "survey_bias", "folder": "run"}]}))
    assert main(["report", str(folder)]) == 0
    page = (folder / "report.html").read_text()
    assert "22 of 22" not in page and "did not finish" in page


def test_report_on_a_replicate_folder_with_a_mistyped_study_manifest(run, tmp_path, capsys):
    from simsubjects.cli.replicate import KIND

    edit_manifest(run, counts=["x"])
    (tmp_path / "manifest.json").write_text(json.dumps({"kind": KIND, "papers": ["tjuatja2024"],
                                                        "studies": [{"study": "survey_bias", "folder": "run"}]}))
    assert main(["report", str(tmp_path)]) == 0
    assert "counts" in (tmp_path / "report.html").read_text()
    (tmp_path / "manifest.json").write_text(json.dumps({"kind": KIND, "studies": {"survey_bias": "run"}}))
    refused(["report", tmp_path], tmp_path, capsys, "manifest.json")


# --- collect: checks that need no model run before it loads -----------------------------------------------

@pytest.mark.parametrize("argv, needle", [
    (["collect", "moca", "--personas", ","], "--personas"),
    (["collect", "moca", "--personas", " "], "--personas"),
    (["collect", "ultimatum", "--pairs", "1", "--seed", "-1"], "--seed"),
    (["collect", "ultimatum", "--pairs", "1", "--seed", "4294967296"], "--seed"),
    (["collect", "survey-bias", "--as-sample", "50", "--method", "sampled"], "--as-sample"),
    (["collect", "survey-bias", "--as-sample", "1000000000"], "--as-sample"),
    (["collect", "ultimatum", "--pairs", "1", "--method", "sampled", "--n", "1000000000000"], "--n"),
    (["collect", "milgram", "--max-tokens", "99999999999"], "--max-tokens"),
    (["replicate", "aher2023", "--seed", "-5"], "--seed"),
    (["replicate", "aher2023", "--scale", "nan"], "--scale"),
], ids=["personas-comma", "personas-blank", "seed-negative", "seed-too-big", "as-sample-with-sampled",
        "as-sample-huge", "n-huge", "max-tokens-huge", "replicate-seed", "replicate-scale-nan"])
def test_collect_validation_before_the_model(tmp_path, capsys, argv, needle):
    refused(argv + ["--out", tmp_path / "out"], tmp_path, capsys, needle)


# --- refused writes: read-only and full disks ----------------------------------------------------------------

def _enospc(monkeypatch, module_attr):
    """Every write through `module_attr` (module, name) fails like a full disk."""
    mod, name = module_attr

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", "/somewhere/.internal.x1y2.tmp")

    monkeypatch.setattr(mod, name, full)


def test_full_disk_during_export_and_analyze_in_process(run, capsys, monkeypatch):
    """Portable (no mount): pandas' writers raise ENOSPC; one line naming the folder, the old set kept."""
    assert main(["export", str(run), "--to", "csv"]) == 0
    assert main(["analyze", str(run), "--no-plots"]) == 0
    _enospc(monkeypatch, (pd.DataFrame, "to_csv"))
    refused(["export", run, "--to", "csv"], run, capsys, f"{run / 'export'}")
    refused(["analyze", run, "--no-plots"], run, capsys, f"{run / 'analysis'}")


def test_full_disk_during_collect_is_one_line(tmp_path, capsys, monkeypatch, smollm2):
    """sqlite3's 'database or disk is full' mid-collection: exit 2 naming --out, not a raw traceback."""
    import simsubjects.collect.pipeline as pipeline
    from simsubjects.collect.store import RequestCache

    monkeypatch.setattr(pipeline, "load_model", lambda *a, **k: smollm2)

    def full(self, items):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(RequestCache, "put_many", full)
    capsys.readouterr()
    rc = main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--batch-size", "1", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "--out" in err and "full" in err, err
    # what is there is a run in progress (resumable), never one that looks complete
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert man["status"] == "running" and not (tmp_path / "out" / "responses.parquet").exists()


@needs_mount
@pytest.mark.parametrize("mode", ["read-only", "full"])
def test_refused_writes_on_real_disks(run, tmp_path, capsys, mode):
    """export, analyze, report, datasets import and collect onto a read-only or full tmpfs."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "response_order.csv").write_text(
        'key,num options,orig alpha,reversed alpha\nK1,3,"Is it good?\nA. Yes\nB. Maybe\nC. No",'
        '"Is it good?\nA. No\nB. Maybe\nC. Yes"\n')
    disk = tmp_path / "disk"
    with tmpfs(disk, size_kb=128, read_only=mode == "read-only", fill=mode == "full"):
        for argv, target in [
            (["export", run, "--to", "csv,dta", "--out", disk / "export"], disk / "export"),
            (["analyze", run, "--out", disk / "analysis"], disk / "analysis"),
            (["report", run, "--out", disk / "report.html"], disk / "report.html"),
            (["datasets", "import", "biasmonkey", tmp_path / "prompts", "--out", disk / "items.csv"],
             disk / "items.csv"),
            (["collect", "ultimatum", "--pairs", "1", "--out", disk / "run"], disk / "run"),
        ]:
            line = refused(argv, disk, capsys, str(target))
            assert ".tmp" not in line and "staging" not in line, line


# --- the top-level guard ----------------------------------------------------------------------------------

@pytest.mark.internal_error
def test_unexpected_exception_is_one_line_and_a_log_without_secrets(run, tmp_path, capsys, monkeypatch):
    import simsubjects.publish.export as export

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRETVALUE123")

    def boom(*a, **k):
        raise RuntimeError("bug while exporting to http://user:hunter2@10.0.0.1/v1?api-key=QUERYSECRET with "
                           "sk-test-SECRETVALUE123")

    monkeypatch.setattr(export, "load_run", boom)
    capsys.readouterr()
    rc = main(["export", str(run)])
    out, err = capsys.readouterr()
    assert rc == 70
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "internal error" in lines[0] and "Traceback" not in err
    log = Path(lines[0].rsplit(" ", 1)[-1])
    text = log.read_text()
    assert "Traceback" in text and "RuntimeError" in text and "boom" in text
    for secret in ("hunter2", "QUERYSECRET", "SECRETVALUE123"):
        assert secret not in text and secret not in err


def test_no_traceback_from_the_installed_command(tmp_path):
    """Outside pytest's capture: bad input is one line and exit 2 in a real process."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text(json.dumps({"status": "complete", "study": "ultimatum",
                                                                 "model": "smollm2"}))
    r = subprocess.run([sys.executable, "-m", "simsubjects.cli", "report", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "manifest.json" in r.stderr
