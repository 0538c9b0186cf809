"""The fast scoring and generation paths against the plain ones (issue 17, part 4).

Trie packing (option orderings that start with the same options share those tokens) must give
what each prompt gets scored alone; the trie itself must hold each member's sequence exactly,
each token seeing its own prefix and nothing else.
"""

import itertools
import random

import numpy as np
import pytest

from simsubjects.collect.models import ChoiceRequest
from simsubjects.collect.models.packing import lcp, pack


def _orderings(options, k):
    from simsubjects.studies.survey_bias.design import LETTERS, format_prompt

    question = "How much do you trust the national government to do what is right?"
    letters = tuple(f" {LETTERS[i]}" for i in range(k))
    return [ChoiceRequest(format_prompt(question, p), letters) for p in itertools.permutations(options[:k])]


def test_trie_rows_hold_each_sequence_and_only_its_prefix():
    """Each member's tokens are read back along its path, and a token's mask row is exactly the
    positions of its own prefix (checked against the sequence, not against the trie code)."""
    rng = random.Random(1)
    for _ in range(100):
        stems = [tuple(rng.randrange(4) for _ in range(rng.randrange(1, 12))) for _ in range(3)]
        seqs = sorted({rng.choice(stems) + tuple(rng.randrange(3) for _ in range(rng.randrange(1, 9)))
                       for _ in range(rng.randrange(1, 30))})
        rng.shuffle(seqs)
        rows = pack(seqs, max_len=64, min_shared=1)
        assert sorted(m for r in rows for m in r.members) == list(range(len(seqs)))
        for r in rows:
            anc = r.ancestors()
            assert len(r.tokens) <= max(64, max(len(seqs[m]) for m in r.members))
            for k, m in enumerate(r.members):
                path = [r.where(k, p) for p in range(len(seqs[m]))]
                assert [r.tokens[i] for i in path] == list(seqs[m])
                assert [r.positions[i] for i in path] == list(range(len(seqs[m])))
                for p, i in enumerate(path):
                    assert set(np.flatnonzero(anc[i])) == set(path[: p + 1])


def test_trie_shares_option_lines_of_orderings(smollm2):
    """The 24 orderings of a 4-option question: orderings with the same first options share them,
    so the trie encodes fewer tokens than prefix-only packing (prompt + each ordering's own rest)."""
    reqs = _orderings(["Always", "Most of the time", "Some of the time", "Never"], 4)
    seqs = [tuple(smollm2.tokenizer(r.prompt).input_ids) for r in reqs]
    rows = pack(seqs, max_len=4096)
    prefix = min(lcp(seqs[0], t) for t in seqs)
    prefix_only = prefix + sum(len(s) - prefix for s in seqs)
    assert len(rows) == 1
    assert len(rows[0].tokens) < 0.85 * prefix_only


@pytest.fixture(scope="module")
def smollm2_f64(smollm2):
    """The embedded model in float64: packed and unpacked passes then agree to ~1e-7 (Llama's
    rotary cos/sin stay float32 whatever the dtype), far below float32 rounding (~1e-5 here), so
    a masking or position error cannot hide in the tolerance."""
    import copy

    m = copy.copy(smollm2)
    m.model = copy.deepcopy(smollm2.model).double()
    return m


@pytest.mark.parametrize("k", [4])
def test_orderings_scored_together_equal_each_alone(smollm2_f64, smollm2, k):
    """All k! orderings in one trie-packed pass give the log-probabilities each ordering gets alone:
    to 1e-6 in float64, and to float32 rounding with the model as loaded. Alone: every fourth ordering
    and the last (7 of 24, each option first in some of them; a float64 forward each)."""
    reqs = _orderings(["Always", "Most of the time", "Some of the time", "Never"], k)
    smollm2_f64.stats = dict.fromkeys(smollm2_f64.stats, 0)
    together = smollm2_f64.score(reqs)
    assert smollm2_f64.stats["forwards"] == 1  # one pass for all orderings
    picked = sorted({*range(0, len(reqs), 4), len(reqs) - 1})
    alone = np.array([smollm2_f64.score([reqs[i]])[0] for i in picked])
    d64 = np.max(np.abs(np.array(together)[picked] - alone))
    assert d64 < 1e-6, d64
    d32 = np.max(np.abs(np.array(smollm2.score(reqs))[picked] - alone))
    assert d32 < 1e-4, d32
