"""The one k-choice path: one matching rule, one draw-until-n-valid protocol, for every backend.

The same stream of sampled texts goes through the hf backend (its generator replaced by the
stream) and the openai backend (a loopback server that answers with the stream), and both must
give the counts computed here by hand from the rule in docs/conventions.md.
"""

from __future__ import annotations

import pytest

from simsubjects.collect.choice import DrawUntilValid, match_option, sample_choice
from simsubjects.collect.models.base import ChoiceRequest
from tests.fake_openai import FakeOpenAI


@pytest.mark.parametrize("text, options, want", [
    (" Yes", ("Yes", "No", "not sure"), 0),       # leading space in the text: MoCa's sampled options
    ("Yes", (" Yes", " No"), 0),                 # leading space in the option: chat answers have none
    ("\n  No.", (" Yes", " No"), 1),
    ("Yes, I would", ("Yes", "No"), 0),          # punctuation ends a word
    ("yes", ("Yes", "No"), None),                # case is exact
    (" Apple", (" A", " B"), None),              # word boundary: "Apple" does not answer "A"
    (" A) the first", (" A", " B"), 0),
    ("10 dollars", ("1", "10"), 1),              # "10" is not "1"; the longest that matches
    ("1", ("1", "10"), 0),
    ("not sure.", ("Yes", "No", "not sure"), 2),
    ("not surely", ("Yes", "No", "not sure"), None),
    ("No_way", ("No", "Yes"), None),             # underscore is a word character
    ("", ("Yes", "No"), None),
    ("  ", (" ", "No"), None),                   # an option that is only whitespace never matches
    ("$5 please", ("$5", "$50"), 0),
    ("$50", ("$5", "$50"), 1),
])
def test_matching_rule(text, options, want):
    assert match_option(text, options) == want


# A stream with every case of the rule; MoCa's sampled options.
STREAM = [" Yes", "yes", "Yesterday", " No.", "not sure", "Maybe", " Yes,", "\nNo", "Nope", " not sure!",
          "No", "Yes", " Yeah", "Yes"]
OPTIONS = ("Yes", "No", "not sure")


def test_protocol_counts_by_hand():
    # " Yes"=Y "yes"=- "Yesterday"=- " No."=N "not sure"=U "Maybe"=- " Yes,"=Y | "\nNo"=N "Nope"=-
    # " not sure!"=U "No"=N: the 7th valid answer is the 11th text
    proto = DrawUntilValid(ChoiceRequest("Q:", OPTIONS, n=7))
    assert proto.want() == 7
    proto.add(STREAM[:7])  # Y - - N U - Y: 4 valid of 7
    assert proto.counts == [2, 1, 1] and proto.valid == 4 and proto.draws == 7
    assert proto.want() == 6  # 3 more at the rate 4/7 seen: ceil(3 / (4/7)) = 6
    proto.add(STREAM[7:])  # N - U N: the 7th valid answer is STREAM[10]; the rest is not read
    assert proto.want() == 0
    r = proto.result()
    assert r.counts == [2, 3, 2] and r.n_samples == 7 and r.n_queries == 11
    assert r.validity == pytest.approx(7 / 11) and r.probs == pytest.approx([2 / 7, 3 / 7, 2 / 7])
    assert r.short is None


def test_protocol_stops_at_the_cap_and_says_so():
    r = sample_choice(ChoiceRequest("Q:", OPTIONS, n=2), lambda want, rnd, drawn: ["Maybe"] * want)
    assert r.counts == [0, 0, 0] and r.n_queries == 40 and "only 0 of 2 valid answers in 40 draws" in r.short


def _stream_draw(stream):
    it = iter(stream)
    return lambda want: [next(it) for _ in range(want)]


EXPECTED = {"counts": [2, 3, 2], "n_queries": 11, "n_samples": 7}


def _summary(r):
    return {"counts": r.counts, "n_queries": r.n_queries, "n_samples": r.n_samples}


def test_same_texts_same_counts_hf(smollm2, monkeypatch):
    draw = _stream_draw(STREAM + ["Maybe"] * 200)
    monkeypatch.setattr(smollm2, "_generate", lambda reqs: draw(sum(r.n for r in reqs)))
    (r,) = smollm2.choose([ChoiceRequest("Question: yes or no? Answer:", OPTIONS, n=7)], method="sampled")
    assert _summary(r) == EXPECTED


def test_same_texts_same_counts_openai(monkeypatch):
    from simsubjects.collect.models.openai_api import OpenAIModel

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAI(texts=STREAM, answers=["Maybe"]) as srv:
        with OpenAIModel("m", srv.url, concurrency=1, logprobs="off", max_retries=0, timeout=20) as m:
            (r,) = m.choose([ChoiceRequest("Question: yes or no? Answer:", OPTIONS, n=7)], method="sampled")
    assert r.failed is None, r.failed
    assert _summary(r) == EXPECTED


def test_same_texts_same_counts_directly():
    r = sample_choice(ChoiceRequest("Q:", OPTIONS, n=7), lambda want, rnd, drawn: STREAM[drawn:drawn + want])
    assert _summary(r) == EXPECTED
