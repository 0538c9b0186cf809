"""Batched generation on the bundled model: rows decoded together give the texts each row gives
alone, cached keys/values change nothing, and Milgram's early stop keeps every first sentence.

Decoding SmolLM2-135M on one core is bound by reading the weights (~0.12 s a step for one row, not
much more for four), so the rows are short (8 tokens: the first from the prompt's prefill, then 7
decoding steps into the batch's buffers) and the texts the tests share are computed once (`decoded`).
"""

import pytest

from simsubjects.collect.models import CompletionRequest
from simsubjects.collect.models.generation import PrefixStore, Row, generate
from simsubjects.studies.milgram.design import SETTLED, first_sentence

PROMPTS = [
    "The experimenter told Mr. Smith to continue.",
    "Once upon a time there was a",
    "Answer: the capital of France is",
    "This document contains a record of Ms. Lee's actions during her participation in a study on memory "
    "and learning. The learner gave a wrong answer. The experimenter instructs Ms. Lee to administer a "
    "shock of 75 volts.\n\nMs. Lee",
]


def rows_for(tok, prompts, **kw):
    return [Row(tok(p).input_ids, seed=k, **{"max_tokens": 8, **kw}) for k, p in enumerate(prompts)]


@pytest.fixture(scope="module")
def decoded(smollm2):
    """For greedy (0.0) and sampled (1.0) decoding: the PROMPTS' texts each row gives alone, and
    the four rows decoded together (four prompt lengths: left padding). The sampled rows are decoded
    together as a Milgram run decodes them, into an empty PrefixStore (`store`, which the stored
    keys/values test goes on with): a store filled during the call is looked up only before it."""
    model, tok = smollm2.model, smollm2.tokenizer
    out = {"store": PrefixStore()}
    for temperature, store in ((0.0, None), (1.0, out["store"])):
        rows = rows_for(tok, PROMPTS, temperature=temperature)
        out[temperature] = {"alone": [generate(model, tok, [r])[0] for r in rows],
                            "together": generate(model, tok, rows, store=store)}
    return out


def test_rows_decoded_together_equal_rows_alone(decoded):
    for temperature in (0.0, 1.0):
        alone = decoded[temperature]["alone"]
        assert decoded[temperature]["together"] == alone
        assert all(alone) and len(set(alone)) == len(alone)


def test_rows_that_stop_early_leave_the_others_unchanged(smollm2, decoded):
    model, tok = smollm2.model, smollm2.tokenizer
    rows = rows_for(tok, PROMPTS)  # sampled, as decoded[1.0]
    short = Row(rows[1].ids, seed=rows[1].seed, max_tokens=3)
    texts = generate(model, tok, [rows[0], short, rows[2], rows[3]])
    full = decoded[1.0]["together"]  # the same four rows decoded together, none cut short
    assert texts[0] == full[0] and texts[2:] == full[2:]
    assert full[1].startswith(texts[1]) and len(texts[1]) < len(full[1])


def test_stored_keys_values_change_nothing(smollm2, decoded):
    model, tok = smollm2.model, smollm2.tokenizer
    store, first = decoded["store"], decoded[1.0]["together"]  # the PROMPTS' rows, stored when they ended
    assert len(store.entries) == len(PROMPTS)
    # The next prompts extend the generated texts, as a Milgram record grows by its completion.
    grown = [p + t + "\n\nThen" for p, t in zip(PROMPTS, first)]
    with_store = generate(model, tok, rows_for(tok, grown), store=store)
    assert with_store == generate(model, tok, rows_for(tok, grown))


def test_milgram_settled_stop_keeps_the_first_sentence(smollm2):
    """With and without the early stop: same draws, so the same first sentence. The rows are decoded
    together (rows together equal rows alone, tested above), a batch with and one without the stop."""
    model, tok = smollm2.model, smollm2.tokenizer
    prompts = [PROMPTS[3].replace("Ms. Lee", name) for name in ("Mr. Smith", "Ms. Garcia", "Mr. Nguyen", "Ms. Begay")]
    # with these seeds three rows settle early, at different steps (Ms. Garcia after ~7 tokens, Mr. Nguyen
    # ~9: half the batch is done and leaves it; Mr. Smith ~12), and the fourth (Ms. Begay) has no sentence
    # end within 16 tokens, so the cut row must equal the full one
    full = [Row(tok(p).input_ids, seed=seed, max_tokens=16) for p, seed in zip(prompts, (7, 6, 3, 0))]
    cut = [Row(r.ids, seed=r.seed, max_tokens=16, settled=SETTLED) for r in full]
    shorter = []
    for a, b in zip(generate(model, tok, full), generate(model, tok, cut)):
        assert first_sentence(b) == first_sentence(a), (a, b)
        assert a.startswith(b)
        shorter.append(len(b) < len(a))
    assert any(shorter) and not all(shorter)  # early stops, and a row that never settled ran to its end


def test_complete_returns_n_texts_per_request_cut_at_stop(smollm2):
    reqs = [CompletionRequest(PROMPTS[1], n=3, max_tokens=12, seed=1),
            CompletionRequest(PROMPTS[2], n=2, max_tokens=12, seed=2, stop=(".",))]
    res = smollm2.complete(reqs)
    assert [len(r.texts) for r in res] == [3, 2]
    assert len(set(res[0].texts)) == 3  # n draws, not one draw repeated
    assert all("." not in t for t in res[1].texts)
    assert smollm2.complete(reqs[1:])[0].texts == res[1].texts  # batch composition does not matter


def test_generation_with_stored_keys_values_raises_no_warning(smollm2):
    """Issue 27: transformers 5.2x warns (FutureWarning, removal in 5.40) when the cache is passed as
    `past_key_values`; generation passes it under the name the model's forward takes, so a Milgram run
    prints no warning and keeps working when the old name is removed. Any warning fails here."""
    import warnings

    from simsubjects.collect.models.generation import _cache_kw

    model, tok = smollm2.model, smollm2.tokenizer
    store = PrefixStore()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = generate(model, tok, rows_for(tok, PROMPTS[:2], max_tokens=4), store=store)
        grown = [p + t + " Then" for p, t in zip(PROMPTS[:2], first)]
        generate(model, tok, rows_for(tok, grown, max_tokens=4), store=store)  # prefill after stored keys
    import inspect

    assert _cache_kw(model) in inspect.signature(model.forward).parameters
