"""Wisdom of Crowds TE: the integer parser, questions, per-question statistics, CLI end to end."""

import numpy as np
import pandas as pd
import pytest

from simsubjects.studies.wisdom.analysis import analyze_wisdom
from simsubjects.cli.commands import main
from simsubjects.studies.wisdom.design import build_trials, parse_estimate, participants, questions
from simsubjects.errors import UserError


@pytest.mark.parametrize("text,value", [
    ("1,064]", 1064),
    (" 299 792 458]", 299792458),
    ("206]\n\nMore text", 206),
    ("-40]", -40),
    ("12]34]", 12),
    (" 7 ] and so on", 7),
])
def test_parser_valid(text, value):
    assert parse_estimate(text) == value


@pytest.mark.parametrize("text", ["about 5]", "5", "3.5]", "]", "", "five]", "1e6]", "12\n]"])
def test_parser_invalid(text):
    assert parse_estimate(text) is None


def test_questions_and_truths():
    q = questions()
    assert len(q) == 10 and q["truth"].notna().all()
    assert q["human_median"].notna().sum() == 5 and q["human_median"].iloc[:5].notna().all()
    truths = dict(zip(q["question"], q["truth"]))
    assert truths["How many bones does an adult human have?"] == 206
    assert truths["What is the speed of light in a vacuum (in meters per second)?"] == 299792458


def test_participants_and_trials():
    p = participants(30, seed=0)
    assert p["name"].is_unique and set(p["title"]) <= {"Mr.", "Ms.", "Mx."}
    assert set(participants(1500)["title"]) == {"Mr.", "Ms.", "Mx."}
    trials, items = build_trials(participants_=3, questions_="1-5")
    assert len(trials) == 15 and len(items) == 5 and set(trials["condition"]) == {"moussaid2013"}
    row = trials.iloc[0]
    assert row["prompt"].endswith(f"{row['subject']}'s answer (integer): [")
    assert "Question (text): [How many bones does an adult human have?]" in row["prompt"]
    assert len(build_trials(participants_=2, questions_="1,8")[0]) == 4
    for bad in ({"participants_": 0}, {"questions_": "0"}, {"questions_": "11"}, {"questions_": "x"}):
        with pytest.raises(UserError):
            build_trials(**bad)


def test_per_question_statistics_by_hand():
    est = [1, 2, 3, 4, 206, None]
    rows = [{"study": "wisdom", "trial": f"t{k}", "item": "wisdom-01", "condition": "moussaid2013",
             "subject": f"s{k}", "source": "model", "model": "m", "method": "generated",
             "response": "" if e is None else str(e), "weight": 1.0, "validity": float(e is not None),
             "estimate": np.nan if e is None else float(e), "truth": 206.0, "title": "Mx."}
            for k, e in enumerate(est)]
    t = analyze_wisdom(pd.DataFrame(rows))
    q = t["per_question"].iloc[0]
    assert (q["n"], q["n_valid"]) == (6, 5)
    assert q["validity"] == pytest.approx(5 / 6)
    assert (q["median"], q["q1"], q["q3"], q["iqr"]) == (3, 2, 4, 2)
    assert q["median_norm"] == pytest.approx(3 / 206)
    assert q["share_exact"] == pytest.approx(1 / 5)
    assert (q["human_median"], q["human_iqr"]) == (190, 108)
    assert len(t["human_reference"]) == 5
    assert set(t["paper_lm_reference"]["model"]) == {f"LM-{k}" for k in range(1, 7)}


@pytest.fixture
def bundled(monkeypatch, smollm2):
    monkeypatch.setattr("simsubjects.collect.pipeline.load_model", lambda spec, **kw: smollm2)
    return smollm2


def test_cli_end_to_end(tmp_path, bundled):
    out = tmp_path / "w"
    assert main(["collect", "wisdom", "--out", str(out), "--participants", "2", "--questions", "1,6", "-q"]) == 0
    r = pd.read_parquet(out / "responses.parquet")
    assert len(r) == 4 and set(r["method"]) == {"generated"} and (r["weight"] == 1).all()
    for rec in r.to_dict("records"):
        v = parse_estimate(rec["completion"])
        assert rec["validity"] == float(v is not None)
        assert rec["response"] == ("" if v is None else str(v))
        assert (np.isnan(rec["estimate"]) if v is None else rec["estimate"] == v)
    assert main(["analyze", str(out)]) == 0
    pq = pd.read_csv(out / "analysis" / "per_question.csv")
    assert list(pq["item"]) == ["wisdom-01", "wisdom-06"]
    assert (out / "analysis" / "fig8_normalized_estimates.png").stat().st_size > 0


def test_validate_reports_validity_rates_only(smollm2):
    from simsubjects.studies.wisdom.design import validate

    trials, _ = build_trials(participants_=2, questions_="1,6")
    v = validate(smollm2, trials, {"seed": 0}, n=2)
    assert list(v.columns) == ["condition", "mean", "min", "max", "size"]
    assert v["size"].sum() == 2 and v["mean"].between(0, 1).all()
