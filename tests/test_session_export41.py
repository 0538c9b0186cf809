"""Issue 41, item 7 (export part): a session run's export keeps the declared option order as factor
levels (not sorted), labels the session columns, and writes path answers with their item names.

Written to run on the code before that fix as well (only public entry points: the session runner of
tests/test_sessions.py, `export_run`, the Stata file read back): there each of the three tests fails (run
against commit 5d8821f): the levels were sorted (No before Yes), a session column's label was its
name, and a path answer read "No Yes"."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.test_sessions import _run  # one session on the model, as test_sessions runs it

# options declared Yes before No: sorted, they would be No, Yes
SESSION = """
study: exp41
title: Two rounds of one choice
prompt: {template: "${question}", answer_prefix: "\\nAnswer:"}
design: {subjects: 2, seed: 3}
session:
  memory: transcript
  paths: 2
  blocks:
    - id: game
      rounds: 2
      items:
        - id: pick
          text: "Round ${round}. Do you pick Yes or No?"
          response: {type: choice, style: words, options: ["Yes", "No"]}
"""


@pytest.fixture(scope="module")
def exported(smollm2, tmp_path_factory):
    from simsubjects.publish.export import export_run

    tmp = tmp_path_factory.mktemp("exp41")
    (tmp / "study.yaml").write_text(SESSION)
    _run(tmp / "study.yaml", tmp / "run", smollm2)
    export_run(tmp / "run", ["dta"], out=tmp / "export")
    path = next((tmp / "export").glob("responses*.dta"))
    with pd.io.stata.StataReader(path) as reader:
        data = reader.read()
        labels = reader.variable_labels()
    return data, labels


def test_declared_option_order_is_the_factor_order(exported):
    data, _ = exported
    # the options first, in the declared order (not sorted); the paths' answers after them
    assert list(data["response"].cat.categories)[:2] == ["Yes", "No"]
    assert list(data["pick"].cat.categories) == ["Yes", "No"]  # the item's own column


def test_session_columns_are_labelled(exported):
    _, labels = exported
    for col in ("round", "path", "reach", "block"):  # session columns of the responses table
        assert labels.get(col) not in (None, "", col), f"{col}: no label in the export but its name"
    assert labels["pick"].startswith("Answer to pick: Round")  # an item's column: its text


def test_path_answers_name_their_items(exported):
    data, _ = exported
    paths = data[data["condition"] == "path"]["response"].astype(str)
    assert len(paths) and paths.str.fullmatch(r"pick=(Yes|No); pick=(Yes|No)").all(), paths.tolist()
