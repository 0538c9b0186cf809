"""The one k-choice path: raw backend material -> option probabilities, validity, and sampling.

Backends return raw material only:

* **exact**: log p(c_i | prompt) of each given continuation -> `exact_choice` (probabilities
  normalized over the k options, validity Z = the probability mass on the options; Tjuatja et al.
  2024 §3 call it the rate of valid answers);
* **sampled**: texts drawn at temperature 1 -> `match_option` decides which option each text
  answers, and `DrawUntilValid` runs the protocol "draw until n valid answers" (Aher et al. 2023
  and Tjuatja et al. 2024 sample 50 valid answers per prompt), capped at `CAP_FACTOR * n` draws.

Every backend uses these functions, so the same texts give the same counts whatever produced them
(tests/test_choice.py). The matching rule is documented in docs/conventions.md.
"""

from __future__ import annotations

import math
from typing import Awaitable, Callable, Sequence

from .models.base import ChoiceRequest, ChoiceResult

# Version of the sampling protocol and matching rule, part of sampled answers' cache keys: answers
# drawn under an older rule are asked again, not mixed in (2: one rule for every backend).
PROTOCOL = 2
CAP_FACTOR = 20  # draws per wanted valid answer before a trial stops short (and says so)
MIN_RATE = 0.25  # the lowest validity rate assumed when sizing the next round of draws

__all__ = ["CAP_FACTOR", "PROTOCOL", "DrawUntilValid", "exact_choice", "match_option", "sample_choice",
           "sample_choice_async"]


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def match_option(text: str, options: Sequence[str]) -> int | None:
    """Index of the option that the sampled `text` answers, or None (an invalid answer).

    The rule, for every backend:
      1. leading whitespace is ignored, in the text and in each option (" Yes" and "Yes" are the
         same answer: options are written with the space that a prompt ending in ":" needs, and
         chat endpoints answer without it);
      2. the text must start with the option, case and inner spacing exact ("yes" is not "Yes");
      3. an option that ends in a letter, digit or underscore must end at a word boundary: the
         next character, if any, is not one of those (" Apple" does not answer "A", "10" does not
         answer "1"; "Yes," and "No." do answer);
      4. of several options that match, the longest wins ("not sure" over "not").
    An option that is empty after stripping never matches.
    """
    s = text.lstrip()
    best = None
    for i, option in enumerate(options):
        o = option.lstrip()
        if not o or not s.startswith(o):
            continue
        rest = s[len(o):]
        if rest and _word_char(o[-1]) and _word_char(rest[0]):
            continue
        if best is None or len(o) > len(options[best].lstrip()):
            best = i
    return best


def exact_choice(logprobs: Sequence[float], n_queries: int = 1, checked: bool = False) -> ChoiceResult:
    """Option probabilities and validity from log p(c_i | prompt) of the k options (`checked`:
    ChoiceResult.from_logprobs)."""
    return ChoiceResult.from_logprobs(logprobs, n_queries=n_queries, checked=checked)


class DrawUntilValid:
    """The sampling protocol as a state machine, so that a synchronous backend (a local model) and
    an asynchronous one (an API) run the very same counting: ask `want()` texts, give them to
    `add`, until `want()` is 0; then `result()`.

    Each round asks for the draws expected to complete the n valid answers at the validity rate
    seen so far (at least MIN_RATE), never beyond the cap. Draws past the n-th valid answer are
    not counted, so the result does not depend on how a backend batches its draws.
    """

    def __init__(self, request: ChoiceRequest, cap_factor: int = CAP_FACTOR):
        self.request = request
        self.n = max(int(request.n), 1)
        self.cap = cap_factor * self.n
        self.counts = [0] * len(request.completions)
        self.valid = self.draws = 0
        self.rounds = 0

    def want(self) -> int:
        if self.valid >= self.n or self.draws >= self.cap:
            return 0
        rate = max(self.valid / self.draws, MIN_RATE) if self.draws else 1.0
        return min(self.cap - self.draws, math.ceil((self.n - self.valid) / rate))

    def add(self, texts: Sequence[str]) -> None:
        self.rounds += 1
        for text in texts:
            if self.valid >= self.n or self.draws >= self.cap:
                break
            self.draws += 1
            i = match_option(text, self.request.completions)
            if i is not None:
                self.counts[i] += 1
                self.valid += 1

    def result(self, n_queries: int | None = None) -> ChoiceResult:
        """`n_queries`: the backend's count of requests, where it differs from the draws."""
        res = ChoiceResult.from_counts(self.counts, self.draws)
        if n_queries is not None:
            res.n_queries = n_queries
        if self.valid < self.n:
            res.short = f"only {self.valid} of {self.n} valid answers in {self.draws} draws (cap {self.cap})"
        return res


# draw(want, round, drawn): `want` texts; `round` counts earlier calls, `drawn` earlier texts (for seeds)
Draw = Callable[[int, int, int], Sequence[str]]


def sample_choice(request: ChoiceRequest, draw: Draw, cap_factor: int = CAP_FACTOR) -> ChoiceResult:
    """The protocol with a synchronous `draw`."""
    proto = DrawUntilValid(request, cap_factor)
    while (want := proto.want()) > 0:
        texts = list(draw(want, proto.rounds, proto.draws))
        if not texts:
            raise RuntimeError("the backend returned no samples")
        proto.add(texts)
    return proto.result()


async def sample_choice_async(request: ChoiceRequest, draw: Callable[[int, int, int], Awaitable[Sequence[str]]],
                              on_empty: Callable[[], Exception], cap_factor: int = CAP_FACTOR) -> DrawUntilValid:
    """The protocol with an asynchronous `draw`; returns the finished state (the caller adds its
    own query count to the result)."""
    proto = DrawUntilValid(request, cap_factor)
    while (want := proto.want()) > 0:
        texts = list(await draw(want, proto.rounds, proto.draws))
        if not texts:
            raise on_empty()
        proto.add(texts)
    return proto
