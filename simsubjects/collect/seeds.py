"""One way to derive a seed from text: sha256 of the parts' text joined by the unit separator.

Study files (conditions, sampled subjects, option orders of folders made before one option-order
module, generation seeds), sessions (block and item orders), survey_bias's perturbations, the
local backend's generation seeds and the OpenAI-compatible backends' request seeds
(`openai_scoring._stable_seed`: 4 bytes big-endian, cut to 30 bits) all derive their seeds here, so a draw depends on what it is
(seed, subject, item, ...) and never on the order in which rows are built.

Two older derivations stay where they are, because changing them would change the numbers of a
built-in study: `collect/option_order.py` seeds `random.Random` with the text of (seed, subject,
item) (the built-ins' option orders), and `studies/moca/analysis.py` seeds MoCa's AMCE bootstrap with crc32 of
the frame's key (its standard errors). tests/test_written_once.py reads every module's syntax tree
and fails on any other function that turns a hash into a seed.
"""

from __future__ import annotations

import hashlib


def seed_from_text(*parts, nbytes: int = 8, byteorder: str = "little") -> int:
    """An integer from the first `nbytes` bytes of sha256("\\x1f".join(str(p))). `byteorder`: survey_bias
    reads them big-endian (its perturbations were drawn so before this module; kept so, no number moves)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:nbytes], byteorder)


def rng_from_text(*parts):
    """A numpy Generator seeded by `seed_from_text(*parts)`: the same parts always give the same draws."""
    import numpy as np  # lazy: imports numpy

    return np.random.default_rng(seed_from_text(*parts))
