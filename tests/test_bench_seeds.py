"""The seeds corpus of the bench (issue 38): the built-in studies' findings whose human result the
package's own files hold (Milgram 1963's 26 of 40, MoCa's votes) run as finding files; each study file's
wording is the bundled stimulus, its hypothesis matches its reader key, and a bad seeds key is one line.
The effects themselves are checked against an independent reading in test_bench_corpus.py. Units:
Cohen's h and log odds ratios (natural log) as the Effect names them; Ns are people (votes)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simsubjects.bench.corpus import check_finding, load_corpus
from simsubjects.datasets.replications import readers
from simsubjects.errors import UserError
from simsubjects.studyfile.design import build_trials

SEEDS = {f.id: f for f in load_corpus("seeds")}
DATASETS = Path(readers.__file__).resolve().parents[1]


def spec(f):
    return yaml.safe_load(f.study_path.read_text(encoding="utf-8"))["finding"]["original"]


def test_which_seeds_run():
    assert sorted(i for i, f in SEEDS.items() if f.runnable) == ["seeds.milgram", "seeds.moca_causal", "seeds.moca_moral"]
    blocked = {i: f.reason for i, f in SEEDS.items() if not f.runnable}
    assert sorted(blocked) == ["seeds.acquiescence", "seeds.allow_forbid", "seeds.garden_path", "seeds.odd_even",
                               "seeds.opinion_float", "seeds.response_order", "seeds.ultimatum"]
    assert all("human counts" in r and "(source: datasets/" in r for r in blocked.values()), blocked


def first_minimal_pair(task):
    """The rule that chose each MoCa finding's pair (docs/bench.md): the first two stories of the file with
    the same story text whose annotations differ in exactly one factor (one tag swapped for its opposite)."""
    from simsubjects.datasets.moca_humans import TAGS

    raw = [json.loads(s) for s in json.loads((DATASETS / f"moca/{task}_dataset_v1.json").read_text(encoding="utf-8"))]
    tags = [{a["annotation"][1] for a in s["annotated_sentences"]} for s in raw]
    for i in range(len(raw)):
        for j in range(i + 1, len(raw)):
            swapped = tags[i] ^ tags[j]
            if raw[i]["story"] == raw[j]["story"] and len(swapped) == 2 and \
                    len({TAGS[task].get(t, (t,))[0] for t in swapped}) == 1:
                return i, j
    raise AssertionError(task)


@pytest.mark.parametrize("task", ["causal", "moral"])
def test_moca_pair_is_the_rules(task):
    assert spec(SEEDS[f"seeds.moca_{task}"])["key"] == "moca:{}:{}:{}".format(task, *first_minimal_pair(task))


@pytest.mark.parametrize("fid", ["seeds.moca_causal", "seeds.moca_moral"])
def test_moca_finding_shows_the_two_stories_of_its_key(fid):
    f = SEEDS[fid]
    _, task, i, j = spec(f)["key"].split(":")
    raw = json.loads((DATASETS / f"moca/{task}_dataset_v1.json").read_text(encoding="utf-8"))
    want = [json.loads(raw[int(k)]) for k in (i, j)]
    assert want[0]["story"] == want[1]["story"]  # a minimal pair: one story, two questions
    trials, _ = build_trials(check_finding(f))
    levels = f.hypothesis["levels"]
    for level, story in zip(levels, want):
        shown = set(trials.loc[trials[f.hypothesis["factor"]] == level, "question"])
        assert shown == {story["story"] + "\n" + story["question"]}, (fid, level)
    # the original's groups are the two stories' voters, in the order of the hypothesis' levels
    assert f.original.n_groups == tuple(len(s["individual_votes"]) for s in want)
    assert f.estimator == "log_odds_ratio" and f.test == "fisher" and f.original.scale == "log_or"
    assert (f.original.value > 0) == (f.hypothesis["direction"] == "positive")


def test_milgram_is_one_prompt_of_the_bundled_scenario_and_its_null_is_the_keys():
    f = SEEDS["seeds.milgram"]
    head, what, p0 = spec(f)["key"].split(":")
    assert (head, what, float(p0)) == ("milgram1963", "completed", f.hypothesis["null"])
    assert f.hypothesis["kind"] == "one_sample" and f.estimator == "cohens_h" and f.test == "binomial"
    scenario = yaml.safe_load((DATASETS / "aher2023/milgram_classic.yaml").read_text(encoding="utf-8"))["obedience"]
    trials, _ = build_trials(check_finding(f))
    assert sorted(set(trials["subject"])) == ["Mr. Lopez", "Mr. Wagner"]  # Milgram's subjects were men
    for name, q in zip(trials["subject"], trials["question"]):
        fill = lambda t: t.replace("$poss_obj", "him").replace("$poss", "his").replace("$subject", name)  # noqa: E731
        paragraphs = q.split("\n\n")
        intro = fill(scenario["introduction"]).split("\n\n")
        assert paragraphs[:5] == [intro[k] for k in (1, 2, 3, 6, 17)]  # the bundled text, word for word
        assert paragraphs[5] == fill(scenario["stages"][20]["text"]) and "315 volts" in paragraphs[5]
        assert paragraphs[7] == fill(scenario["stages"][22]["text"]) and "345 volts" in paragraphs[7]
        assert q.endswith("up to the last switch, 450 volts?")
    assert (f.original.n, f.original.statistic) == (40, 26)


@pytest.mark.parametrize("key,what", [
    ("moca:causal:2", "moca:TASK:I:J"),
    ("moca:ethics:2:3", "moca:TASK:I:J"),
    ("moca:causal:2:999", "no story 999"),
    ("milgram1963:completed:1.5", "not a share"),
    ("milgram1963:refused:0.5", "milgram1963:completed:P0"),
    ("wisdom:q1", "milgram1963:completed:P0 or moca:TASK:I:J"),
])
def test_a_bad_seeds_key_is_one_line(tmp_path, key, what):
    text = SEEDS["seeds.moca_causal"].study_path.read_text(encoding="utf-8").replace("key: moca:causal:2:3", f"key: '{key}'")
    assert f"key: '{key}'" in text
    (tmp_path / "study.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as e:
        load_corpus(tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and "finding.original.key" in msg and what in msg, msg
