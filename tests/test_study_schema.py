"""Issue 37, item 8: `simsubjects study schema` prints a JSON Schema of the study-file format, generated
from the definitions `study check` uses. Every example, starter and built-in study file passes it (and
`study check`); the bad-file corpus fails `study check`, and the schema is never stricter than the check;
an unknown key fails both, wherever it is put."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from simsubjects.cli.commands import main
from simsubjects.errors import UserError
from simsubjects.studyfile.door import load_any
from simsubjects.studyfile.load import StudyFileError

ROOT = Path(__file__).resolve().parents[1]
STARTERS = ROOT / "simsubjects" / "studyfile" / "starters"
GOOD = sorted([*ROOT.glob("examples/*/study.yaml"), *STARTERS.glob("*/study.yaml"),
               *(ROOT / "tests" / "data" / "builtin_studyfiles").glob("*/study.yaml")])
BAD = ROOT / "tests" / "data" / "studyfiles" / "bad"


@pytest.fixture(scope="module")
def validator():
    return _printed_validator()


def _printed_validator():
    """The schema as the command prints it (read back from its stdout), checked as draft 2020-12."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["study", "schema"]) == 0
    schema = json.loads(out.getvalue())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator, data) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(data)]


def test_every_example_starter_and_builtin_passes_the_schema_and_the_check(validator):
    assert len(GOOD) >= 16  # 7 examples, 3 starters, 6 built-in study files
    for f in GOOD:
        assert not _errors(validator, yaml.safe_load(f.read_text(encoding="utf-8"))), f
        load_any(f)  # study check's loader accepts it too


def test_the_starters_written_by_study_new_pass(validator, tmp_path):
    for kind in sorted(p.name for p in STARTERS.iterdir() if p.is_dir()):
        assert main(["study", "new", kind, str(tmp_path / kind)]) == 0
        data = yaml.safe_load((tmp_path / kind / "study.yaml").read_text(encoding="utf-8"))
        assert not _errors(validator, data), kind


def test_bad_corpus_fails_the_check_and_the_schema_is_never_stricter(validator):
    """Every file of the bad-file corpus fails `study check`'s loader (one error); the schema flags those
    that break the format's shape (an unknown key, a wrong choice), and whatever it flags, the check flags."""
    flagged = 0
    files = sorted(BAD.glob("*.yaml"))
    assert len(files) >= 25
    for f in files:
        if f.name == "valid_base.yaml":
            continue
        with pytest.raises((StudyFileError, UserError)):
            load_any(f)
        try:
            data = yaml.safe_load(f.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            continue  # not YAML at all: nothing for an editor's schema to read
        flagged += bool(_errors(validator, data))
    assert flagged >= 5, flagged  # the shape errors of the corpus (unknown keys, choices, missing keys)


PLACES = [(), ("design",), ("design", "factors", "frame"), ("design", "subjects"), ("items", 0),
          ("items", 0, "response"), ("prompt",), ("analyses", 1)]


@pytest.mark.parametrize("where", PLACES, ids=["/".join(map(str, p)) or "top" for p in PLACES])
def test_an_unknown_key_fails_both(validator, where, tmp_path):
    """examples/vignette_2x2 with one unknown key put in one of its mappings: the schema flags it, and
    `study check` says `unknown key` for it."""
    src = ROOT / "examples" / "vignette_2x2"
    data = yaml.safe_load((src / "study.yaml").read_text(encoding="utf-8"))
    assert not _errors(validator, data)
    node = data
    for k in where:
        node = node[k]
    node["zz_not_a_key"] = 1
    assert _errors(validator, data), where
    for f in src.iterdir():
        if f.is_file():
            (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(StudyFileError, match="zz_not_a_key.*unknown key"):
        load_any(tmp_path / "study.yaml")
