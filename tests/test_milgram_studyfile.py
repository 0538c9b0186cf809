"""Milgram as a study file (issue 23, item 5): the built-in `milgram` study IS its bundled study file.

The study file run and `collect milgram` with the same model, seed and settings give the same tidy
rows (unit: one row per subject, and per step x judgment x completion) to 1e-9; an edited prod in a
copy of the file reaches the prompt; malformed files get one line, exit 2, nothing written."""

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.studies.milgram.analysis import analyze_milgram
from simsubjects.cli.commands import main
from simsubjects.collect.models.base import ChoiceResult
from simsubjects.studies.milgram.design import SCENARIOS, declaration, scenario, simulate, subject_pool
from simsubjects.datasets.registry import data_path
from simsubjects.studyfile.obedience import load_obedience
from tests.bad_input import assert_one_line_exit_2

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "milgram" / "study.yaml"
BAD = ROOT / "tests" / "data" / "obedience" / "bad"
EXPECTED = json.loads((BAD / "expected.json").read_text())


def small_copy(tmp_path, **design) -> Path:
    """The example with its design's settings replaced (one line each), in a folder of its own."""
    text = EXAMPLE.read_text(encoding="utf-8")
    for key, value in design.items():
        old = next(line for line in text.splitlines() if line.startswith(f"  {key}: "))
        text = text.replace(old + "\n", f"  {key}: {value}\n", 1)
    d = tmp_path / "src"
    d.mkdir()
    (d / "study.yaml").write_text(text, encoding="utf-8")
    return d / "study.yaml"


# ------------------------------------------------------------------------------ one declaration
def test_builtin_reads_the_bundled_study_file_and_the_example_is_it():
    assert EXAMPLE.resolve() == data_path(SCENARIOS["milgram"]).resolve()  # one file, not a copy
    for study, name in (("milgram", "milgram_classic"), ("milgram_novel", "milgram_novel")):
        assert scenario(study) is declaration(study)["obedience"]  # what the built-in runs
        d = load_obedience(data_path(SCENARIOS[study]))  # the file, checked as `collect FILE.yaml` checks it
        assert d.name == study and d.scenario == scenario(study) and d.scenario["name"] == name
        # the file's settings are the built-in command's defaults
        from simsubjects.collect.studies.registry import get_study

        opts = {o.param: o.kwargs.get("default") for o in get_study(study).options}
        assert d.settings() == {k: opts[k] for k in ("subjects", "max_stages", "max_tokens", "judge_rule")}
        assert d.seed == 0
    # separators survive YAML byte for byte
    assert scenario("milgram")["record"] == {"step_separator": "\n\n", "subject_prompt": "\n\n$subject",
                                             "canned_separator": "\n\n"}


def disobey_always(prompts_seen):
    def generate(prompts):
        prompts_seen.append(list(prompts))
        return [" refuses to go on." for _ in prompts]

    def judge(reqs):  # first completion more likely: " not stop" / " not shock" -> go on, disobey
        return [ChoiceResult.from_logprobs([-0.1, -3.0]) for _ in reqs]

    return generate, judge


def test_an_edited_prod_in_a_copy_of_the_file_changes_the_prompt(tmp_path):
    path = small_copy(tmp_path)
    edited = 'The experimenter tells $subject, "please continue."'
    text = path.read_text(encoding="utf-8")
    assert text.count(edited) == 1
    path.write_text(text.replace(edited, 'The experimenter whispers to $subject, "keep going."'), encoding="utf-8")
    people = subject_pool().head(1).to_dict("records")
    prompts = {}
    for label, scen in (("built-in", scenario("milgram")), ("edited", load_obedience(path).scenario)):
        seen = []
        simulate(scen, people, *disobey_always(seen), max_stages=1)
        prompts[label] = seen[1][0]  # the second step: after the first disobedience, prod 1
    who = people[0]["subject"]
    assert prompts["built-in"].endswith(f'The experimenter tells {who}, "please continue."\n\n{who}')
    assert prompts["edited"].endswith(f'The experimenter whispers to {who}, "keep going."\n\n{who}')


# ------------------------------------------------------------------------------ equal rows
@pytest.fixture
def bundled(monkeypatch, smollm2):
    monkeypatch.setattr("simsubjects.collect.pipeline.load_model", lambda spec, **kw: smollm2)
    return smollm2


@pytest.mark.r
def test_study_file_run_equals_the_builtin(tmp_path, bundled):
    path = small_copy(tmp_path, subjects=2, max_stages=1, max_tokens=5, seed=3)
    a, b = tmp_path / "builtin", tmp_path / "file"
    assert main(["collect", "milgram", "--out", str(a), "--subjects", "2", "--max-stages", "1", "--max-tokens", "5",
                 "--seed", "3", "-q"]) == 0
    assert main(["collect", str(path), "--out", str(b), "-q"]) == 0
    ra, rb = pd.read_parquet(a / "responses.parquet"), pd.read_parquet(b / "responses.parquet")
    assert list(ra.columns) == list(rb.columns) and len(ra) == len(rb)
    assert (ra["source"] == "model").sum() > 0 and (ra["condition"] == "judgment").sum() > 0
    for col in ra.columns:
        x, y = ra[col], rb[col]
        if pd.api.types.is_numeric_dtype(x) and not pd.api.types.is_bool_dtype(x):
            assert np.allclose(x.astype(float), y.astype(float), rtol=0, atol=1e-9, equal_nan=True), col
        else:
            assert x.astype(str).tolist() == y.astype(str).tolist(), col
    # the same records (transcripts) and the run keeps the file it was collected from
    assert (a / "records.jsonl").read_text() == (b / "records.jsonl").read_text()
    assert (b / "study" / "study.yaml").read_bytes() == path.read_bytes()
    assert json.loads((b / "manifest.json").read_text())["parameters"]["studyfile"]["file"] == "study/study.yaml"
    # `analyze` of the file's run gives the built-in's Milgram tables (here computed in-process on its rows)
    assert main(["analyze", str(b), "--check-r"]) == 0  # and R's survival and log-rank agree (check_milgram)
    assert pd.read_csv(b / "analysis" / "check_r.csv")["ok"].all()
    builtin = analyze_milgram(ra, pd.read_parquet(a / "items.parquet"))
    for table in ("breakoff", "survival", "tests", "obedience", "judgments_by_level", "validity"):
        # `analyze` adds the estimand's columns to a test table (analyze/estimand.py, issue 40)
        got = pd.read_csv(b / "analysis" / f"{table}.csv").drop(columns=["sample", "low_validity"], errors="ignore")
        pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(builtin[table].to_csv(index=False))), got,
                                      check_exact=False, atol=1e-9)
    assert (b / "analysis" / "fig7_survival.png").stat().st_size > 0


# ------------------------------------------------------------------------------ malformed files
def test_corpus_base_is_valid():
    assert len(EXPECTED) >= 20
    s = load_obedience(BAD / "valid_base.yaml")
    assert s.scenario["name"] == "small_scenario" and s.subjects == 2 and len(s.scenario["prods"]) == 2


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_obedience_file_one_line_exit_2_nothing_written(name, tmp_path, capsys):
    assert_one_line_exit_2(BAD / f"{name}.yaml", tmp_path, capsys, EXPECTED[name])


def test_subjects_by_name_and_the_settings_reach_the_declaration(tmp_path):
    from simsubjects.studyfile.obedience import obedience_def

    text = (BAD / "valid_base.yaml").read_text()
    path = tmp_path / "named.yaml"
    path.write_text(text.replace("  subjects: 2\n", "  subjects: [Ms. Garcia, Mr. Nguyen]\n"))
    s = load_obedience(path, seed=7)
    assert s.settings() == {"subjects": 2, "max_stages": 3, "max_tokens": 5, "judge_rule": "normalized",
                            "names": ["Ms. Garcia", "Mr. Nguyen"]} and s.seed == 7
    trials, items = obedience_def(s).make(**s.settings(), seed=s.seed)
    assert trials["subject"].tolist() == ["Ms. Garcia", "Mr. Nguyen"] and set(trials["title"]) == {"Ms.", "Mr."}
    assert items["item"].tolist() == ["small_scenario"] and trials["item"].eq("small_scenario").all()
