"""Exact k-choice scoring on the real bundled model, against an independent transformers computation."""

import math

import pytest
import torch

from simsubjects.collect.models import ChoiceRequest


def reference_logprob(model, prompt: str, completion: str) -> float:
    """log p(completion | prompt): one unbatched forward pass over the full string's own tokens."""
    tok, lm = model.tokenizer, model.model
    full = tok(prompt + completion).input_ids
    ctx = tok(prompt).input_ids
    # The independent path: require a clean boundary, then read the tail tokens off the logits.
    assert full[: len(ctx)] == ctx
    with torch.no_grad():
        logits = lm(torch.tensor([full])).logits[0]
    lp = torch.log_softmax(logits.double(), dim=-1)
    return sum(lp[i - 1, full[i]].item() for i in range(len(ctx), len(full)))


PROMPTS = [
    ("In the following scenario, Ms. Huang had to decide whether to accept or reject the proposal.\n\n"
     "Answer: Ms. Huang decides to", (" accept", " reject")),
    ("Ms. Olson was asked to indicate whether the following sentence was grammatical or ungrammatical.\n\n"
     "Sentence: While the student read the notes that were long and boring blew off the desk.\n\n"
     "Answer: Ms. Olson indicated that the sentence was", (" grammatical", " ungrammatical")),
    ("Question: Which is larger?\nAnswer:", (" A", " B", " C", " D")),
]


def test_choose_matches_independent_log_softmax(smollm2):
    results = smollm2.choose([ChoiceRequest(p, c) for p, c in PROMPTS])
    for (prompt, comps), res in zip(PROMPTS, results):
        ref = [reference_logprob(smollm2, prompt, c) for c in comps]
        z = sum(math.exp(x) for x in ref)
        for got, want in zip(res.probs, ref):
            assert abs(got - math.exp(want) / z) < 1e-5
        assert abs(res.validity - z) < 1e-5 * max(1.0, z)
        assert abs(sum(res.probs) - 1) < 1e-12
        assert 0 < res.validity <= 1
        assert res.method == "exact"


def test_multi_token_completion_is_a_product_of_token_probabilities(smollm2):
    prompt, comps = PROMPTS[1]
    assert len(smollm2.tokenizer(comps[1]).input_ids) > 1  # " ungrammatical" spans several tokens
    (lp,) = smollm2.score([ChoiceRequest(prompt, comps)])
    assert lp[1] == pytest.approx(reference_logprob(smollm2, prompt, comps[1]), abs=1e-4)
    # and differs from the first token alone, so the later tokens were really scored
    first = smollm2.tokenizer(comps[1]).input_ids[:1]
    assert abs(lp[1] - reference_logprob(smollm2, prompt, smollm2.tokenizer.decode(first))) > 1e-3


def test_boundary_straddling_token(smollm2):
    """A prompt ending in a space: ' accept' is one token that straddles the boundary."""
    prompt = "Answer: Ms. Huang decides to "
    (lp,) = smollm2.score([ChoiceRequest(prompt, ("accept", "reject"))])
    tok = smollm2.tokenizer
    ids_s, ids_c = tok(prompt).input_ids, tok(prompt + "accept").input_ids
    assert ids_c[: len(ids_s)] != ids_s  # the joint tokenization really merges the space
    # p(s c)/p(s) computed from two independent full-sequence passes over canonical tokenizations
    def seq_lp(ids):
        with torch.no_grad():
            lp_ = torch.log_softmax(smollm2.model(torch.tensor([ids])).logits[0].double(), -1)
        return sum(lp_[i - 1, ids[i]].item() for i in range(1, len(ids)))
    assert lp[0] == pytest.approx(seq_lp(ids_c) - seq_lp(ids_s), abs=1e-4)


def test_batching_does_not_change_results(smollm2):
    reqs = [ChoiceRequest(p, c) for p, c in PROMPTS]
    together = smollm2.score(reqs)
    alone = [smollm2.score([r])[0] for r in reqs]
    for a, b in zip(together, alone):
        assert a == pytest.approx(b, abs=1e-5)


def test_sampled_choice_counts_valid_answers(smollm2):
    prompt = "Reply with yes or no. Is water wet?\nAnswer:"
    (res,) = smollm2.choose([ChoiceRequest(prompt, (" yes", " no", " Yes", " No"), n=5)], method="sampled")
    assert res.method == "sampled"
    assert res.n_queries >= res.n_samples
    assert res.failed is None
    if res.short is None:
        assert sum(res.counts) == 5 and res.n_samples == 5
        assert abs(sum(res.probs) - 1) < 1e-12
    assert 0 <= res.validity <= 1


def test_sampling_budget_ends_in_a_short_answer_not_a_failure(smollm2, tmp_path):
    """A completion the model never gives: 20 x n draws, then the valid answers found (none)."""
    (res,) = smollm2.choose([ChoiceRequest("Is water wet?\nAnswer:", (" zqxj", " xqzv"), n=2)], method="sampled")
    assert res.failed is None and res.short == "only 0 of 2 valid answers in 40 draws (cap 40)"
    assert res.n_queries == 40 and res.n_samples == 0 and res.validity == 0


def test_packed_lines_match_scoring_each_prompt_alone(smollm2):
    """Prompts sharing a short instruction, prompts sharing a long scenario, and unrelated ones,
    of many lengths: packed into rows, short rows side by side in one line under a block mask,
    they get the log-probabilities each prompt gets alone."""
    from simsubjects.collect.models.packing import fill, pack

    instr = "Please answer the following question with one of the alphabetical options provided.\nQuestion: "
    questions = ["Is it raining?", "Do you prefer tea or coffee in the morning, before work?",
                 "Should the city build more bike lanes?", "How often do you read the news?"]
    reqs = [ChoiceRequest(instr + q + "\nA. Yes\nB. No\nAnswer:", (" A", " B")) for q in questions]
    offer = PROMPTS[0][0].replace("decide whether", "decide, after an offer of ${}, whether")
    reqs += [ChoiceRequest(offer.format(d), PROMPTS[0][1]) for d in (0, 3, 5, 10)]
    reqs += [ChoiceRequest(p, c) for p, c in PROMPTS[1:]]
    seqs = [tuple(smollm2.tokenizer(r.prompt).input_ids) for r in reqs]
    rows = pack(seqs, max_len=512)
    assert len(rows) < len(seqs) and len(fill(rows, 512)) < len(rows)  # both kinds of sharing happen
    together = smollm2.score(reqs)
    for r, got in zip(reqs, together):
        assert got == pytest.approx(smollm2.score([r])[0], abs=1e-4)


def test_packing_never_encodes_more_tokens():
    import random

    from simsubjects.collect.models.packing import pack

    rng = random.Random(0)
    for _ in range(200):
        stems = [tuple(rng.randrange(5) for _ in range(rng.randrange(1, 40))) for _ in range(3)]
        seqs = [rng.choice(stems) + tuple(rng.randrange(5) for _ in range(rng.randrange(1, 30)))
                for _ in range(rng.randrange(1, 25))]
        rows = pack(seqs, max_len=256, min_shared=2)
        assert sum(len(r.tokens) for r in rows) <= sum(map(len, seqs))
        assert sorted(m for r in rows for m in r.members) == list(range(len(seqs)))
        for r in rows:  # every member's own sequence is recoverable from the row
            for k, m in enumerate(r.members):
                assert [r.tokens[r.where(k, p)] for p in range(len(seqs[m]))] == list(seqs[m])
