"""One option-order module (simsubjects.collect.option_order) for built-in studies and study files.

The references are run folders made before the two implementations became one (tests/data/old_runs,
made by commit 31822bf): the built-ins' orders must be the ones drawn then, to the trial; a study
file's folder made then must be re-drawn as it was (to resume it), while new study-file runs draw
with the built-ins' generator. The unit of every comparison is the trial."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from simsubjects.collect import option_order
from simsubjects.collect.schema import labels
from simsubjects.collect.studies.registry import get_study
from simsubjects.studyfile.adapter import ORDERS, order_parameters
from simsubjects.studyfile.design import build_trials
from simsubjects.studyfile.spec import load_study

OLD = Path(__file__).parent / "data" / "old_runs"


def _recorded_orders(run: Path, order_col: str) -> dict[str, str]:
    r = pd.read_parquet(run / "responses.parquet")
    r = r[r["source"] == "model"].drop_duplicates("trial")
    return dict(zip(r["trial"], r["order_shown"])) if order_col else {}


def test_builtin_orders_are_the_ones_drawn_before():
    """opinion-survey --order random, per persona: today's trials show every trial's options in the
    order the folder recorded (made before one module)."""
    run = OLD / "opinion_survey_random"
    params = json.loads((run / "manifest.json").read_text())["parameters"]
    trials, _ = get_study("opinion-survey").make(**{k: v for k, v in params.items() if k not in ("method", "n")})
    recorded = _recorded_orders(run, "order")
    made = dict(zip(trials["trial"], trials["order_shown"]))
    assert len(recorded) == 8 and set(recorded) <= set(made)
    assert {t: made[t] for t in recorded} == recorded
    assert len({v for t, v in recorded.items() if t.startswith("ECON1")}) > 1  # orders differ by subject


def _copy_study(tmp_path, name):
    run = tmp_path / name
    shutil.copytree(OLD / name, run)
    return run, load_study(run / "study" / "study.yaml")


@pytest.mark.parametrize("name", ["studyfile_randomized", "studyfile_averaged"])
def test_studyfile_folder_made_before_is_redrawn_as_recorded(tmp_path, name):
    run, study = _copy_study(tmp_path, name)
    assert order_parameters(study, run) == {} and study.orders_before  # the folder's identity kept
    trials, _ = build_trials(study)
    assert {"option_order", "ordering"} <= set(trials) and "order" not in trials
    recorded = _recorded_orders(run, "ordering")
    assert {t: v for t, v in zip(trials["trial"], trials["order_shown"]) if t in recorded} == recorded


def test_new_studyfile_runs_draw_with_the_builtins_generator(tmp_path):
    """The same study file in a new folder: orders from option_order.orderings, seeded by
    (seed, subject, item, condition, repetition), in the one vocabulary."""
    _, study = _copy_study(tmp_path, "studyfile_randomized")
    assert order_parameters(study, tmp_path / "new") == {ORDERS: "simsubjects.collect.option_order"}
    assert not study.orders_before
    trials, _ = build_trials(study)
    assert "option_order" not in trials and "ordering" not in trials and trials["order"].eq(0).all()
    for rec in trials.to_dict("records"):
        source = [o.label for o in next(it for it in study.items if it.id == rec["item"]).response.options]
        free = [lab for lab in source if lab != "Don't know"]
        perm = option_order.orderings(len(free), "random", (study.seed, rec["subject"], rec["item"], "", 0))[0]
        want = [free[i] for i in perm] + [lab for lab in source if lab == "Don't know"]
        assert json.loads(rec["order_shown"]) == want
        assert rec["n_ordered"] == len(free)
    before = _recorded_orders(OLD / "studyfile_randomized", "ordering")
    assert sum(before[t] != v for t, v in zip(trials["trial"], trials["order_shown"])) > 0  # another generator


def test_study_file_modes_map_onto_the_one_vocabulary():
    assert set(option_order.FILE_MODES) == {"as_listed", "reversed", "randomized", "averaged"}
    assert option_order.orderings(4, "reversed", 0) == [(3, 2, 1, 0)]
    assert option_order.orderings(4, "reversed", 0, fixed_last=[False, False, False, True]) == [(2, 1, 0, 3)]
    # averaged above max_orderings: that many distinct orderings, the same for the same seed
    sample = option_order.orderings(6, "all", (1, "item"), max_orderings=10)
    assert len(set(sample)) == 10 and sample == option_order.orderings(6, "all", (1, "item"), max_orderings=10)
    assert sample != option_order.orderings(6, "all", (1, "other item"), max_orderings=10)
    # up to max_orderings: every ordering, as a built-in's --order all (which still refuses k > 6 alone)
    assert option_order.orderings(3, "all", 0, max_orderings=24) == option_order.orderings(3, "all", 0)
    assert len(option_order.orderings(7, "all", 0, max_orderings=5040)) == 5040
    with pytest.raises(Exception, match="--order all"):
        option_order.orderings(7, "all", 0)


def test_one_label_table():
    """The run store's labels of the order columns are option_order's, word for word."""
    got = labels()
    assert {k: got[k] for k in option_order.COLUMN_LABELS} == option_order.COLUMN_LABELS


def test_the_order_columns_are_reserved_in_a_study_file(tmp_path):
    """A persona column named like an order column would overwrite it: refused, naming the column."""
    from simsubjects.errors import UserError

    folder = tmp_path / "study"
    shutil.copytree(OLD / "studyfile_randomized" / "study", folder)
    people = pd.read_csv(folder / "personas.csv")
    people.assign(order=1).to_csv(folder / "personas.csv", index=False)
    with pytest.raises(UserError, match="order"):
        load_study(folder / "study.yaml")
