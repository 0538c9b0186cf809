"""--max-cost: a collection stops before its usage, priced by --price-in/--price-out, would pass a cap.

Before each batch is sent, its price is estimated the way --dry-run counts (collect/dryrun.py:
prompt tokens by the model's own tokenizer, or --tokenizer's for an API model, and each request's
largest possible completion), and added to what this command has already used (the model's own
`usage()`: the server's billed tokens for an API model, the counted tokens of a local one). When
the sum would pass the cap the batch is not sent: the batches already answered stay in the run's
cache, and the message says what remains and its estimated price; the same command with a larger
cap resumes and pays only for the rest. The cap is for one command: answers already cached cost
nothing again.

Prices are per million tokens, as in --dry-run; none are built in (prices change).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..errors import UserError


class BudgetReached(UserError):
    """The next batch would pass --max-cost: nothing more is sent, what is done is kept."""


def check_budget(max_cost, price_in, price_out) -> None:
    from .dryrun import check_prices

    check_prices(price_in, price_out)
    if max_cost is None:
        return
    if not (max_cost >= 0):
        raise UserError(f"--max-cost {max_cost}: a price in USD, 0 or more")
    if price_in is None and price_out is None:
        raise UserError("--max-cost needs --price-in and/or --price-out (USD per million tokens): no prices are built in")


@dataclass
class Budget:
    cap: float
    price_in: float = 0.0
    price_out: float = 0.0
    tokenizer: object = None  # a parsed ModelSpec (--tokenizer), or None

    def price(self, prompt_tokens: float, completion_tokens: float) -> float:
        return (prompt_tokens * (self.price_in or 0.0) + completion_tokens * (self.price_out or 0.0)) / 1e6

    def wrap(self, model, spec, chat_template: bool = False, remaining: Callable | None = None):
        from .dryrun import dry_model

        return BudgetedModel(model, self, dry_model(spec, chat_template=chat_template, tokenizer=self.tokenizer),
                             remaining)


@dataclass
class BudgetedModel:
    """The model, with every batch priced before it is sent."""

    inner: object
    budget: Budget
    counter: object  # a DryModel: counts a batch's tokens without answering it
    remaining: Callable | None = None  # () -> (requests, estimated price) still uncached
    start: dict = field(default_factory=dict)

    def __post_init__(self):
        self.start = dict(self._usage())

    def __getattr__(self, name):  # info, format_prompt, close, ... are the model's own
        return getattr(self.inner, name)

    def fingerprint(self) -> dict:
        return self.inner.fingerprint()

    def _usage(self) -> dict:
        return self.inner.usage() if hasattr(self.inner, "usage") else {}

    def usage(self) -> dict:
        return self._usage()

    def spent(self) -> float:
        now = self._usage()
        return self.budget.price(now.get("prompt_tokens", 0) - self.start.get("prompt_tokens", 0),
                                 now.get("completion_tokens", 0) - self.start.get("completion_tokens", 0))

    def _estimate(self, ask: Callable) -> float:
        before = self.counter.usage()
        ask(self.counter)
        after = self.counter.usage()
        return self.budget.price(after["prompt_tokens"] - before["prompt_tokens"],
                                 after["completion_tokens_max"] - before["completion_tokens_max"])

    def _check(self, ask: Callable, n: int) -> None:
        spent, next_price = self.spent(), self._estimate(ask)
        if spent + next_price <= self.budget.cap:
            return
        rest = ""
        if self.remaining is not None:
            requests, price = self.remaining()
            rest = (f"; {requests} requests remain, estimated at up to ${price:.6g}: run the same command with "
                    f"--max-cost {price:.6g} or more to finish (the cached answers cost nothing again)")
        raise BudgetReached(f"--max-cost {self.budget.cap:g}: stopped before the next {n} requests (up to "
                            f"${next_price:.6g}) would pass the cap; this command used ${spent:.6g}, and the answers "
                            f"so far are kept in the run's cache{rest}")

    def choose(self, requests: Sequence, method: str = "exact"):
        requests = list(requests)
        self._check(lambda m: m.choose(requests, method=method), len(requests))
        return self.inner.choose(requests, method=method)

    def complete(self, requests: Sequence):
        requests = list(requests)
        self._check(lambda m: m.complete(requests), len(requests))
        return self.inner.complete(requests)


def remaining_estimate(study, model, out, trials, params: dict, *, method: str, n: int, batch_size: int,
                       budget: Budget, counter) -> tuple[int, float]:
    """(requests, estimated price) of what the run folder's cache still lacks: the study's collection
    against the dry counter, keyed like the real model, through the cache read-only."""
    from pathlib import Path

    from .store import OverlayCache
    from .runner import collect_trials
    from .store import RunStore

    fp = model.fingerprint()
    counter.fingerprint = lambda: fp  # the real keys, so the cache's answers count as done
    before = counter.usage()
    cache = RunStore(Path(out)).cache()
    try:
        overlay = OverlayCache(cache)
        collect_trials(study, counter, overlay, trials, params, method=method, n=n, chunk=batch_size)
    finally:
        cache.close()
    after = counter.usage()
    return (after["requests"] - before["requests"],
            budget.price(after["prompt_tokens"] - before["prompt_tokens"],
                         after["completion_tokens_max"] - before["completion_tokens_max"]))
