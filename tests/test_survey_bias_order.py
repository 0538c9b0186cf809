"""`collect survey_bias --order`: option order randomized or averaged (issue 15 part 3), recorded per
trial, while the default keeps the paper's forms and its response-order results (Tjuatja et al. 2024)."""

import json

import numpy as np
import pandas as pd
import pytest

from simsubjects.analyze.order_effects import order_effects
from simsubjects.studies.survey_bias.analysis import analyze_survey_bias
from simsubjects.studies.survey_bias import SURVEY_BIAS
from simsubjects.studies.survey_bias.design import build_trials, format_prompt
from simsubjects.errors import UserError

SMALL = dict(bias="response_order,opinion_float", perturbation="none")


def _fake(trials: pd.DataFrame, primacy: float = 0.0) -> pd.DataFrame:
    """A stand-in model: a distribution over labels fixed per item (seeded by the item's text, so every
    ordering of one item gets the same one), plus `primacy` on the option shown first."""
    rows = []
    for rec in trials.to_dict("records"):
        labels = list(rec["labels"])
        rng = np.random.default_rng(sum(map(ord, rec["item"])))
        base = dict(zip(sorted(labels), rng.dirichlet(np.ones(len(labels)))))
        p = np.array([base[lab] for lab in labels])
        p[0] += primacy
        p /= p.sum()
        design = {k: v for k, v in rec.items() if k not in ("prompt", "options", "labels")}
        rows += [{**design, "study": "survey_bias", "source": "model", "model": "fake", "method": "exact",
                  "response": lab, "weight": w, "validity": 1.0} for lab, w in zip(labels, p)]
    return pd.DataFrame(rows)


def test_default_is_the_papers_forms():
    trials, items = SURVEY_BIAS.build(**SMALL)
    pd.testing.assert_frame_equal(trials, build_trials(items))  # no reordering step in between
    assert "order_shown" not in trials.columns and (trials["trial"] == items["item"]).all()
    for t, it in zip(trials.to_dict("records"), items.to_dict("records")):
        assert t["prompt"] == format_prompt(it["question"], it["options"]) and t["labels"] == it["labels"]
    # the response-order pair stays original vs reversed, labels mapped back to the original letters
    ro = items[(items["bias"] == "response_order")].set_index(["key", "form"])
    key = ro.index[0][0]
    assert ro.loc[(key, "modified"), "options"] == ro.loc[(key, "original"), "options"][::-1]
    assert not SURVEY_BIAS.finalize(_fake(trials), {}).columns.isin(["shown_position"]).any()


def test_random_order_is_recorded_and_shown():
    trials, items = SURVEY_BIAS.build(**SMALL, order="random", seed=3)
    forms = items.set_index("item")
    assert len(trials) == len(items) and trials["trial"].str.endswith("|o0").all()
    moved = 0
    for rec in trials.to_dict("records"):
        form = forms.loc[rec["item"]]
        shown = json.loads(rec["order_shown"])
        assert sorted(shown) == sorted(form["labels"]) and tuple(shown) == rec["labels"]
        text = dict(zip(form["labels"], form["options"]))
        assert rec["prompt"] == format_prompt(form["question"], [text[lab] for lab in shown])  # texts move, letters stay
        assert rec["options"] == tuple(f" {chr(65 + i)}" for i in range(len(shown)))
        refusals = [lab for lab, r in zip(form["labels"], form["refusal"]) if r]
        assert shown[len(shown) - len(refusals):] == refusals  # "Don't know" stays last
        moved += tuple(shown) != tuple(form["labels"])
    assert moved > len(trials) / 3
    again, _ = SURVEY_BIAS.build(**SMALL, order="random", seed=3)
    other, _ = SURVEY_BIAS.build(**SMALL, order="random", seed=4)
    assert again["order_shown"].tolist() == trials["order_shown"].tolist() != other["order_shown"].tolist()
    resp = SURVEY_BIAS.finalize(_fake(trials, primacy=0.4), {"method": "exact"})
    first = resp[resp["shown_position"] == 1]
    assert (first["response"] == first["order_shown"].map(lambda s: json.loads(s)[0])).all()


def test_all_orderings_average_exactly_and_show_the_primacy():
    fixed, items = SURVEY_BIAS.build(**SMALL)
    every, _ = SURVEY_BIAS.build(**SMALL, order="all")
    assert len(every) == sum(np.prod(range(1, n + 1 - sum(r))) for n, r in zip(items["num_options"], items["refusal"]))
    # a model with no position effect: averaging over all orderings gives the fixed order's tables
    a = analyze_survey_bias(_fake(fixed), items)["bias_tests"]
    b = analyze_survey_bias(SURVEY_BIAS.finalize(_fake(every), {}), items)["bias_tests"]
    np.testing.assert_allclose(a["estimate"].to_numpy(float), b["estimate"].to_numpy(float), atol=1e-12)
    # with a primacy effect the order-effect table finds it on every option shown first and last
    per_item, avg = order_effects(SURVEY_BIAS.finalize(_fake(every, primacy=0.5), {}))
    assert len(per_item) and (per_item["estimate"] > 0).all() and avg["estimate"].item() > 0.2


def test_bad_order_fails_before_anything_is_read(tmp_path):
    from simsubjects.cli.commands import main

    with pytest.raises(UserError, match="--order 'shuffle'"):
        SURVEY_BIAS.build(order="shuffle", questions=str(tmp_path / "nowhere"))
    assert main(["collect", "survey_bias", "--order", "shuffle", "--out", str(tmp_path / "run")]) == 2
    assert not (tmp_path / "run").exists()


def test_collect_with_cyclic_order_on_the_embedded_model(smollm2, tmp_path):
    """Two response-order questions, each form in its k rotations: recorded, analyzed, in the report."""
    from simsubjects.cli.commands import main
    from simsubjects.collect.pipeline import run_study
    from simsubjects.studies.survey_bias.design import write_biasmonkey_questions
    from simsubjects.publish.export import export_run
    from simsubjects.publish.report import render_report

    _, items = SURVEY_BIAS.build(bias="response_order", perturbation="none")
    write_biasmonkey_questions(items[items["key"].isin(items["key"].unique()[:2])], tmp_path / "questions")
    out = tmp_path / "run"
    resp, man = run_study(SURVEY_BIAS, "smollm2", out, params=dict(bias="response_order", perturbation="none",
                                                                   questions=str(tmp_path / "questions"),
                                                                   order="cyclic", seed=1),
                          model=smollm2, show_progress=False)
    assert resp["order_shown"].notna().all() and (resp["shown_position"] >= 1).all() \
        and (resp["shown_position"] <= resp["n_shown"]).all()
    assert resp.groupby("trial")["weight"].sum().round(9).eq(1).all()
    assert resp.groupby("item")["order_shown"].nunique().eq(resp.groupby("item")["n_shown"].first()).all()
    assert man["column_labels"]["order_shown"].startswith("Options in the order shown")
    export_run(out, ["csv"])
    book = pd.read_csv(out / "export" / "codebook_responses.csv").set_index("column")
    assert book.loc["shown_position", "label"].startswith("Position at which")
    assert main(["analyze", str(out)]) == 0
    per_item = pd.read_csv(out / "analysis" / "order_effects.csv")
    assert len(per_item) == resp.groupby("item")["response"].nunique().sum()  # every option first once, last once
    html = render_report(out).read_text()
    assert "Order effect: P(option) shown first vs last" in html and "Table 4 layout" in html
