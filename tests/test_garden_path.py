"""Garden Path TE: stimuli against the paper, trial design, per-sentence analysis, CLI end to end."""

import numpy as np
import pandas as pd
import pytest

from simsubjects.studies.garden_path.analysis import analyze_garden_path
from simsubjects.cli.commands import main
from simsubjects.studies.garden_path.design import build_trials, sentences
from simsubjects.errors import UserError


def test_sentence_counts_as_in_the_paper():
    # Appendix C: 24 sentences of Christianson et al. (12 OT, 12 RAT) and 24 novel ones (12 + 12).
    s = sentences("both")
    assert len(s) == 48 and s["id"].is_unique
    for set_ in ("published", "novel"):
        part = sentences(set_)
        assert len(part) == 24
        assert (part["type"] == "OT").sum() == 12 and (part["type"] == "RAT").sum() == 12
        assert list(part["type"]) == ["OT"] * 12 + ["RAT"] * 12  # first 12 rows OT (figure captions)
    ex = s[s["control"].str.startswith("While the student read,")]
    assert len(ex) == 1  # the control of Figure 1's example


def test_trials_pair_both_versions_with_the_same_names():
    trials, items = build_trials(names=3, set_="published", seed=1)
    assert len(trials) == 24 * 2 * 3 and trials["trial"].is_unique
    assert len(items) == 24
    for item, g in trials.groupby("item"):
        gp = set(g.loc[g["condition"] == "garden_path", "subject"])
        ctl = set(g.loc[g["condition"] == "control", "subject"])
        assert gp == ctl and len(gp) == 3
    row = trials.iloc[0]
    assert row["prompt"].startswith(f"{row['subject']} was asked to indicate whether")
    assert f"Sentence: {row['sentence']}\n\n" in row["prompt"]
    assert row["prompt"].endswith(f"Answer: {row['subject']} indicated that the sentence was")
    assert tuple(row["options"]) == (" grammatical", " ungrammatical")
    # another seed draws other names; the same seed the same ones
    assert not build_trials(names=3, set_="published", seed=2)[0]["subject"].equals(trials["subject"])
    assert build_trials(names=3, set_="published", seed=1)[0]["subject"].equals(trials["subject"])


@pytest.mark.parametrize("kw", [{"names": 0}, {"names": 1001}, {"set_": "classic"}])
def test_bad_options(kw):
    with pytest.raises(UserError):
        build_trials(**kw)


def _rows(item, type_, version, probs, model="m"):
    out = []
    for k, p in enumerate(probs):
        for label, w in (("grammatical", 1 - p), ("ungrammatical", p)):
            out.append({"study": "garden_path", "trial": f"{item}|{version}|{k}", "item": item, "condition": version,
                        "subject": f"n{k}", "source": "model", "model": model, "method": "exact", "response": label,
                        "weight": w, "validity": 0.5, "set": "published", "type": type_})
    return out


def test_per_sentence_averages_then_sem_across_sentences():
    rows = (_rows("a", "OT", "garden_path", [0.8, 0.6]) + _rows("a", "OT", "control", [0.2, 0.4])
            + _rows("b", "OT", "garden_path", [0.5, 0.5]) + _rows("b", "OT", "control", [0.6, 0.6])
            + _rows("c", "RAT", "garden_path", [0.9, 0.7]) + _rows("c", "RAT", "control", [0.1, 0.1]))
    t = analyze_garden_path(pd.DataFrame(rows))
    sent = t["per_sentence"].set_index("item")
    assert sent.loc["a", "garden_path"] == pytest.approx(0.7) and sent.loc["a", "control"] == pytest.approx(0.3)
    assert sent.loc["b", "difference"] == pytest.approx(-0.1)
    bt = t["by_type"].set_index(["type", "version"])
    # OT garden path: sentences average 0.7 and 0.5 -> mean 0.6, SEM = sd / sqrt(2) = 0.1
    assert bt.loc[("OT", "garden_path"), "mean_p_ungrammatical"] == pytest.approx(0.6)
    assert bt.loc[("OT", "garden_path"), "std.error"] == pytest.approx(0.1)
    assert bt.loc[("all", "control"), "n_sentences"] == 3
    tests = t["paired_tests"]
    allrow = tests[(tests["type"] == "all") & (tests["test"] == "Paired t-test")].iloc[0]
    assert (allrow["n_gp_greater"], allrow["n_gp_lower"]) == (2, 1)
    d = np.array([0.4, -0.1, 0.7])
    assert allrow["statistic"] == pytest.approx(d.mean() / (d.std(ddof=1) / np.sqrt(3)))
    assert "Wilcoxon signed-rank test" in set(tests["test"])
    assert t["validity"]["validity"].eq(0.5).all()


@pytest.fixture
def bundled(monkeypatch, smollm2):
    """The CLI loads the session's model instead of a second copy."""
    monkeypatch.setattr("simsubjects.collect.pipeline.load_model", lambda spec, **kw: smollm2)
    return smollm2


def test_cli_end_to_end(tmp_path, bundled):
    out = tmp_path / "gp"
    args = ["collect", "garden-path", "--out", str(out), "--names", "1", "--set", "novel", "-q"]
    assert main(args) == 0
    r = pd.read_parquet(out / "responses.parquet")
    assert r["trial"].nunique() == 48 and len(r) == 96
    assert set(r["study"]) == {"garden_path"} and set(r["method"]) == {"exact"}
    assert np.allclose(r.groupby("trial")["weight"].sum(), 1.0)
    assert r["validity"].between(0, 1).all() and (r["validity"] > 0).all()
    first = r.copy()
    assert main(args) == 0  # a re-run resumes from the cache and rebuilds the same table
    pd.testing.assert_frame_equal(first, pd.read_parquet(out / "responses.parquet"))
    assert main(["analyze", str(out)]) == 0
    a = out / "analysis"
    assert len(pd.read_csv(a / "per_sentence.csv")) == 24
    assert (a / "fig10a_ungrammatical_by_type.png").stat().st_size > 0
    assert (a / "fig10b_gp_vs_control.png").stat().st_size > 0
