"""The language-model interface: two batched questions, `choose` and `complete`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol, Sequence

from ...errors import UserError

# log p <= 0 for any probability, and the k options' mass Z <= 1. Float rounding may pass either by a
# hair (a float32 server's log-softmax, log p(s.c) - log p(s) in float64); beyond this many nats the
# numbers are impossible, and are refused rather than clamped (issue 42).
LOGPROB_TOLERANCE = 1e-3


class ImpossibleLogprobs(UserError):
    """Log-probabilities no model can give (above 0, an option mass above 1, not finite)."""


def check_logprobs(logprobs: Sequence[float]) -> None:
    """Raise ImpossibleLogprobs unless `logprobs` are numbers (or -inf), at most 0 and their mass at most 1
    (each within LOGPROB_TOLERANCE nats)."""
    bad = [x for x in logprobs if not isinstance(x, (int, float)) or math.isnan(x) or x == math.inf]
    if bad:  # -inf is a probability of 0; NaN and +inf are none
        raise ImpossibleLogprobs(f"log-probability {bad[0]!r} is not a number at most 0")
    top = max(logprobs)
    if top > LOGPROB_TOLERANCE:
        raise ImpossibleLogprobs(f"log-probability {top:.6g} is above 0 (a probability above 1; tolerance "
                                 f"{LOGPROB_TOLERANCE:g} nats)")
    mass = sum(math.exp(x) for x in logprobs)
    if mass > math.exp(LOGPROB_TOLERANCE):
        raise ImpossibleLogprobs(f"the options' probabilities add up to {mass:.6g}, above 1 (tolerance "
                                 f"{LOGPROB_TOLERANCE:g} nats)")


def check_token_logprobs(values) -> None:
    """Raise ImpossibleLogprobs unless each token log-probability a server reported is a number at most 0
    (within LOGPROB_TOLERANCE), or -inf, or None (a first token scored unconditionally)."""
    for x in values:
        if x is not None and (not isinstance(x, (int, float)) or math.isnan(x) or x > LOGPROB_TOLERANCE):
            raise ImpossibleLogprobs(f"token log-probability {x!r} is not a number at most 0 (tolerance "
                                     f"{LOGPROB_TOLERANCE:g} nats)")


@dataclass(frozen=True)
class ChoiceRequest:
    """A k-choice prompt: which of `completions` follows `prompt`?

    `n` is the number of valid answers a sampling backend draws (ignored by exact backends).
    """

    prompt: str
    completions: tuple[str, ...]
    n: int = 50
    # chat turns before the completion: ((role, content), ...), the last a user turn; set, `prompt`
    # is empty and a chat model's template renders them (a session's memory as chat turns)
    messages: tuple = ()

    def key(self) -> dict:
        k = {"op": "choose", "prompt": self.prompt, "completions": list(self.completions), "n": self.n}
        if self.messages:  # absent otherwise: the keys of earlier runs stay what they were
            k["messages"] = [list(m) for m in self.messages]
        return k


@dataclass
class ChoiceResult:
    """Probabilities normalized over the k completions, and the validity rate Z.

    exact:   logprobs[i] = log p(c_i | prompt); Z = sum_i p(c_i | prompt).
    sampled: counts[i] valid samples of completion i out of n_queries draws; Z = valid share.
    """

    probs: list[float]
    validity: float
    method: str  # "exact" | "sampled"
    logprobs: list[float] | None = None
    counts: list[int] | None = None
    n_samples: int = 0
    n_queries: int = 1
    failed: str | None = None  # no answer (server errors after retries): not cached, a re-run asks again
    # the sampling protocol reached its draw budget with fewer than n valid answers: a finished
    # answer (the same seeds would draw the same again), kept with the valid answers it found
    short: str | None = None

    @classmethod
    def from_logprobs(cls, logprobs: Sequence[float], n_queries: int = 1, checked: bool = False) -> "ChoiceResult":
        """`checked`: the caller checked the tokens' log-probabilities these were summed from, and a value may
        be a ratio of two tokenizations, log p(s.c) - log p(s) where a token straddles the prompt's end,
        which can pass 0 (openai_scoring.scored_logprobs); Z is clamped to 1 then as before."""
        if not checked:
            check_logprobs(logprobs)  # within the tolerance only is Z clamped to 1 below
        m = max(logprobs)
        w = [math.exp(lp - m) for lp in logprobs]
        s = sum(w)
        return cls(
            probs=[x / s for x in w],
            validity=min(1.0, math.exp(m) * s),
            method="exact",
            logprobs=list(map(float, logprobs)),
            n_queries=n_queries,
        )

    @classmethod
    def from_counts(cls, counts: Sequence[int], n_queries: int) -> "ChoiceResult":
        total = sum(counts)
        return cls(
            probs=[c / total if total else float("nan") for c in counts],
            validity=total / n_queries if n_queries else float("nan"),
            method="sampled",
            counts=list(counts),
            n_samples=total,
            n_queries=n_queries,
        )


@dataclass(frozen=True)
class CompletionRequest:
    """Free text after `prompt`: n samples at the given temperature/top_p.

    `stop` strings end the text and are cut from it. `settled` is a regular expression telling a
    backend that the caller has all it will read once the text matches it (e.g. its first sentence
    is complete); a backend that decodes locally stops there, one that cannot (an API) returns the
    longer text. What the caller extracts is the same either way.
    """

    prompt: str
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 64
    stop: tuple[str, ...] = ()
    seed: int = 0
    settled: str = ""

    def key(self) -> dict:
        return {
            "op": "complete", "prompt": self.prompt, "n": self.n, "temperature": self.temperature,
            "top_p": self.top_p, "max_tokens": self.max_tokens, "stop": list(self.stop), "seed": self.seed,
            **({"settled": self.settled} if self.settled else {}),
        }


@dataclass
class CompletionResult:
    texts: list[str]
    n_queries: int = 1
    failed: str | None = None


@dataclass
class ModelInfo:
    """What the manifest records about a model (never a secret)."""

    spec: str
    backend: str
    name: str
    revision: str = ""  # file hash or API model id
    details: dict = field(default_factory=dict)


class LanguageModel(Protocol):
    info: ModelInfo

    def choose(self, requests: Sequence[ChoiceRequest], method: str = "exact") -> list[ChoiceResult]:
        """method "exact": log-probabilities where available; "sampled": draw until each request's n valid answers."""
        ...

    def complete(self, requests: Sequence[CompletionRequest]) -> list[CompletionResult]: ...

    def fingerprint(self) -> dict:
        """Everything that changes the answers: goes into every cache key."""
        ...
