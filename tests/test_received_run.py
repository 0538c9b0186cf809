"""A received run folder is data, never code (issue 28, docs/robustness.md).

A study-file run is collected once on the embedded model; each test copies it, makes the copy
hostile the way a sender could (its study copy, its manifest, links, module files beside it) and
checks that analyze, report and export run no code and write nothing outside the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simsubjects.cli import main

ROOT = Path(__file__).resolve().parents[1]

STUDY = """study: tiny
title: A tiny study
design:
  factors:
    frame: {levels: [gain, loss], assignment: between}
  subjects: {table: people.csv, id: id, template: "Age ${age}."}
items:
  - {id: q1, text: "Do you agree (${frame})?", response: yesno}
prompt:
  template: "${persona} ${question}\\n${options}"
  answer_prefix: "\\nAnswer:"
analyses:
  - distribution
  - {type: welch, factor: frame, levels: [gain, loss], name: frame_test}
"""
PEOPLE = "id,age\np1,30\np2,40\np3,50\np4,60\n"
# a module that leaves a mark when imported or called: the test that code ran
MARKER_MODULE = """import os, pathlib
pathlib.Path(os.environ["SIMSUBJECTS_TEST_MARK"]).write_text("imported")
def table(responses, items, **kw):
    import pandas as pd
    pathlib.Path(os.environ["SIMSUBJECTS_TEST_MARK"]).write_text("called")
    return pd.DataFrame({"n": [len(responses)]})
def evil_names(responses, items, **kw):
    import pandas as pd
    return {"../../escaped": pd.DataFrame({"x": [1]})}
"""


def write_study(folder: Path, text: str = STUDY) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "people.csv").write_text(PEOPLE)
    (folder / "study.yaml").write_text(text)
    return folder / "study.yaml"


@pytest.fixture(scope="module")
def base_run(smollm2, tmp_path_factory):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.studyfile import load_study
    from simsubjects.studyfile.adapter import file_parameters, study_def

    root = tmp_path_factory.mktemp("received")
    study = load_study(write_study(root / "src"))
    out = root / "run"
    params = {"studyfile": file_parameters(study), "seed": study.seed, "chat_template": False, "judge_model": None}
    run_study(study_def(study, out=out), "smollm2", out, params=params, method="exact", n=1, model=smollm2,
              show_progress=False)
    return out


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def received(base_run, tmp_path):
    """A copy of the run inside tmp_path/inbox/run; tmp_path holds nothing else to write to."""
    run = tmp_path / "inbox" / "run"
    shutil.copytree(base_run, run)
    return run


def hostile_copy(run: Path, text: str, extra: dict | None = None) -> None:
    """Replace the run's study copy (and its manifest's sha256), as a sender can."""
    (run / "study" / "study.yaml").write_text(text)
    m = json.loads((run / "manifest.json").read_text())
    m["parameters"]["studyfile"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    m["parameters"].update(extra or {})
    (run / "manifest.json").write_text(json.dumps(m))


def edit_manifest(run: Path, fn) -> None:
    m = json.loads((run / "manifest.json").read_text())
    fn(m)
    (run / "manifest.json").write_text(json.dumps(m))


def one_line_exit_2(capsys, code, *needles):
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, err
    return err


# ------------------------------------------------------------------ class: paths escape the run

BAD_NAMES = ["../escaped", "/tmp/simsubjects-escaped-abs", "sub/dir", "a.b", "x\\ny", "..", "", "1st",
             "trials", "distribution"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_study_check_refuses_an_analysis_name_that_is_not_an_identifier(tmp_path, capsys, name):
    text = STUDY.replace("name: frame_test", f"name: {json.dumps(name)}")
    study = write_study(tmp_path / "s", text)
    before = files_under(tmp_path)
    err = one_line_exit_2(capsys, main(["study", "check", str(study)]), "analyses[1].name", ":14:")
    assert "identifier" in err or "always writes" in err
    assert files_under(tmp_path) == before


def test_duplicate_analysis_names_are_refused(tmp_path, capsys):
    text = STUDY + "  - {type: welch, factor: frame, levels: [loss, gain], name: frame_test}\n"
    one_line_exit_2(capsys, main(["study", "check", str(write_study(tmp_path / "s", text))]), "analyses[2].name")


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/simsubjects-escaped-abs-analyze", "x\\n../y"])
def test_analyze_refuses_a_path_name_in_a_received_copy(received, tmp_path, capsys, name):
    hostile_copy(received, STUDY.replace("name: frame_test", f"name: {json.dumps(name)}"))
    before = files_under(tmp_path)
    for argv in (["analyze", str(received)], ["report", str(received)]):
        one_line_exit_2(capsys, main(argv), "analyses[1].name", "identifier")
    assert files_under(tmp_path) == before
    assert not Path("/tmp/simsubjects-escaped-abs-analyze.csv").exists()


@pytest.mark.parametrize("rel", ["../elsewhere/study.yaml", "/etc/hostname", "study/../../x.yaml", ""])
def test_a_manifest_study_path_outside_the_run_is_refused(received, tmp_path, capsys, rel):
    outside = tmp_path / "inbox" / "elsewhere"
    write_study(outside)
    edit_manifest(received, lambda m: m["parameters"]["studyfile"].update(file=rel))
    before = files_under(tmp_path)
    for argv in (["analyze", str(received)], ["export", str(received)], ["report", str(received)]):
        one_line_exit_2(capsys, main(argv), "parameters.studyfile")
    assert files_under(tmp_path) == before


def test_a_study_copy_that_links_outside_the_run_is_refused(received, tmp_path, capsys):
    outside = write_study(tmp_path / "inbox" / "elsewhere")
    (received / "study" / "study.yaml").unlink()
    (received / "study" / "study.yaml").symlink_to(outside)
    before = files_under(tmp_path)
    one_line_exit_2(capsys, main(["analyze", str(received)]), "leads outside")
    assert files_under(tmp_path) == before


@pytest.mark.parametrize("target", ["analysis", "export"])
def test_an_output_folder_linking_outside_the_run_is_refused(received, tmp_path, capsys, target):
    elsewhere = tmp_path / "victim"
    elsewhere.mkdir()
    (elsewhere / "keep.csv").write_text("mine\n")
    shutil.rmtree(received / target, ignore_errors=True)
    (received / target).symlink_to(elsewhere, target_is_directory=True)
    cmd = "analyze" if target == "analysis" else "export"
    one_line_exit_2(capsys, main([cmd, str(received)]), "is a link")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.csv"]


@pytest.mark.parametrize("folder", ["../victim", "/tmp", "..", "a/b", "x\ny"])
def test_a_replication_manifest_folder_outside_is_refused(received, tmp_path, capsys, folder):
    top = tmp_path / "inbox"
    (top / "victim").mkdir()
    shutil.copytree(received, top / "victim" / "run")
    (top / "manifest.json").write_text(json.dumps({
        "kind": "simsubjects-replication", "papers": ["x"], "command": "simsubjects replicate x", "studies": [
            {"paper": "x", "study": "tiny", "folder": folder, "status": "complete"}]}))
    before = files_under(tmp_path)
    one_line_exit_2(capsys, main(["report", str(top)]), "studies[0]")
    assert files_under(tmp_path) == before


def test_a_replication_folder_that_is_a_link_outside_is_refused(received, tmp_path, capsys):
    top = tmp_path / "inbox"
    victim = tmp_path / "victim"
    shutil.copytree(received, victim)
    (top / "tiny").symlink_to(victim, target_is_directory=True)
    (top / "manifest.json").write_text(json.dumps({
        "kind": "simsubjects-replication", "papers": ["x"], "command": "simsubjects replicate x", "studies": [
            {"paper": "x", "study": "tiny", "folder": "tiny", "status": "complete"}]}))
    before = files_under(tmp_path)
    one_line_exit_2(capsys, main(["report", str(top)]), "leads outside")
    assert files_under(tmp_path) == before
    # without a replication manifest, a folder of runs does not follow a link to a run elsewhere
    (top / "manifest.json").unlink()
    victim_before = files_under(victim)
    assert main(["report", str(top)]) == 0  # the real run beside the link is reported
    assert files_under(victim) == victim_before
    assert (top / "report.html").read_text().count('<section id="tiny">') == 1  # the link's run is not


# ------------------------------------------------------------------ class: a run's copy names code

FUNCTION_STUDY = STUDY + "  - {type: function, function: \"marker_mod:table\", name: mine}\n"


def _run_cli(args, cwd, env_extra=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "simsubjects", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_received_copy_naming_code_runs_none_even_with_a_module_beside_it(received, tmp_path):
    """The attack of issue 28: a module file beside the run, analyze run from that folder (`python -m`
    puts the working folder on sys.path). The copy's `type: function` is refused; nothing is imported."""
    hostile_copy(received, FUNCTION_STUDY)
    inbox = received.parent
    (inbox / "marker_mod.py").write_text(MARKER_MODULE)
    (received / "marker_mod.py").write_text(MARKER_MODULE)
    mark = tmp_path / "mark"
    before = files_under(tmp_path)
    for cmd in (["analyze", "run"], ["report", "run"]):
        r = _run_cli(cmd, inbox, {"SIMSUBJECTS_TEST_MARK": str(mark)})
        assert r.returncode == 2, r.stderr
        assert "--allow-code" in r.stderr and "never from a run folder's copy" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert not mark.exists()
    assert files_under(tmp_path) == before


@pytest.mark.parametrize("ref", ["os:system", "subprocess:getoutput", "builtins:eval"])
def test_a_received_copy_naming_an_installed_module_runs_nothing(received, tmp_path, capsys, ref):
    hostile_copy(received, STUDY + f"  - {{type: function, function: \"{ref}\", args: {{command: touch x}}}}\n")
    before = files_under(tmp_path)
    one_line_exit_2(capsys, main(["analyze", str(received)]), "--allow-code", "type: function")
    assert files_under(tmp_path) == before


def test_allow_code_runs_the_users_own_file_from_installed_modules_only(received, tmp_path, capsys, monkeypatch):
    own = write_study(tmp_path / "mine", FUNCTION_STUDY)
    hostile_copy(received, FUNCTION_STUDY)  # the run was collected from this file: same bytes
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "marker_mod.py").write_text(MARKER_MODULE)
    mark = tmp_path / "mark"
    monkeypatch.setenv("SIMSUBJECTS_TEST_MARK", str(mark))
    # a module only in the working folder is not imported, even with --allow-code
    monkeypatch.chdir(lib)
    monkeypatch.syspath_prepend("")
    one_line_exit_2(capsys, main(["analyze", str(received), "--allow-code", str(own), "--no-plots"]),
                    "cannot import marker_mod:table")
    assert not mark.exists()
    sys.modules.pop("marker_mod", None)
    # installed (on PYTHONPATH by the user's own choice): it runs, and its table is written
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", f"{lib}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.syspath_prepend(str(lib))
    try:
        assert main(["analyze", str(received), "--allow-code", str(own), "--no-plots"]) == 0
    finally:
        sys.modules.pop("marker_mod", None)
    assert mark.read_text() == "called"
    assert (received / "analysis" / "mine.csv").is_file()


def test_allow_code_refuses_a_file_other_than_the_runs(received, tmp_path, capsys):
    other = write_study(tmp_path / "other", FUNCTION_STUDY.replace("A tiny study", "Another"))
    hostile_copy(received, FUNCTION_STUDY)
    one_line_exit_2(capsys, main(["analyze", str(received), "--allow-code", str(other)]), "sha256 differs")


def test_a_function_table_name_that_is_a_path_is_refused(received, tmp_path, capsys, monkeypatch):
    text = STUDY + "  - {type: function, function: \"marker_mod:evil_names\"}\n"
    own = write_study(tmp_path / "mine", text)
    hostile_copy(received, text)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "marker_mod.py").write_text(MARKER_MODULE)
    monkeypatch.setenv("SIMSUBJECTS_TEST_MARK", str(tmp_path / "mark"))
    monkeypatch.syspath_prepend(str(lib))
    monkeypatch.setenv("PYTHONPATH", str(lib))
    before = files_under(tmp_path)
    try:
        one_line_exit_2(capsys, main(["analyze", str(received), "--allow-code", str(own), "--no-plots"]),
                        "not an identifier")
    finally:
        sys.modules.pop("marker_mod", None)
    assert files_under(tmp_path) - before == {"mark"}


def test_replicate_refuses_a_study_file_with_code_before_the_model(tmp_path, capsys):
    study = write_study(tmp_path / "s", FUNCTION_STUDY)
    one_line_exit_2(capsys, main(["replicate", str(study), "--out", str(tmp_path / "out")]), "--allow-code")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("ref", ["os", "os:", ":system", "a b:c", "os:system()", "../x:y"])
def test_a_malformed_function_reference_is_refused_at_check(tmp_path, capsys, ref):
    text = STUDY + f"  - {{type: function, function: {json.dumps(ref)}}}\n"
    one_line_exit_2(capsys, main(["study", "check", str(write_study(tmp_path / "s", text))]), "module:function")


@pytest.mark.parametrize("name", ["responses.parquet", "items.parquet", "manifest.json"])
def test_a_run_file_that_links_outside_the_run_is_not_read(received, tmp_path, capsys, name):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / name).write_bytes((received / name).read_bytes())
    (received / name).unlink()
    (received / name).symlink_to(outside / name)
    before = files_under(tmp_path)
    for argv in (["analyze", str(received)], ["export", str(received)], ["report", str(received)]):
        one_line_exit_2(capsys, main(argv), "leads outside")
    assert files_under(tmp_path) == before
