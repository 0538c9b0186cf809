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

A server's model is also gated call by call (CallGate): before each HTTP request is sent, its largest
price (prompt tokens counted locally, plus max_tokens x n completion tokens) is reserved, and a
request whose reservation would pass the cap is never sent. So the cap holds whatever the batch
estimate missed: sampling's redraws (up to 20 x --n draws), probe calls, retries of echo scoring.
After the answer, the reservation becomes the server's `usage` where it is plausible, else the
local count: a server that omits `usage`, or reports fewer than a quarter of the locally counted
prompt tokens, is charged by the local count (docs/robustness.md); a count below zero or not a
whole number stops the run (openai_transport.billed_usage). The manifest's "budget" says how many
calls each count priced.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence
from pathlib import Path

from ..errors import UserError


class BudgetReached(UserError):
    """The next batch would pass --max-cost: nothing more is sent, what is done is kept."""

    def __init__(self, message: str = "", price: float = 0.0):
        super().__init__(message)
        self.price = price  # the refused batch's or call's largest price


CHAT_TOKENS_PER_MESSAGE = 4  # role and separators around each chat message: OpenAI's cookbook estimate
SPECIAL_TOKENS_PER_CALL = 2  # a BOS/EOS token a server may add to the prompt it bills
DEFAULT_MAX_TOKENS = 16  # the completions endpoint's default when a request names none
PLAUSIBLE_SHARE = 0.25  # a server's prompt count below a quarter of ours is not believed (tokenizers differ less)


def check_budget(max_cost, price_in, price_out) -> None:
    from .dryrun import check_prices  # lazy: imports pandas, pyarrow

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
        from .dryrun import dry_model  # lazy: imports pandas, pyarrow

        return BudgetedModel(model, self, dry_model(spec, chat_template=chat_template, tokenizer=self.tokenizer),
                             remaining)


class CallGate:
    """--max-cost for each HTTP call of a server's model (Transport.gate): admit reserves a call's
    largest price before it is sent, settle replaces it by what the call used."""

    def __init__(self, budget: "Budget", encode: Callable[[str], list]):
        self.budget, self.encode = budget, encode
        self.charged, self.reserved = 0.0, 0.0  # USD of settled calls; USD held for calls in flight
        self.tokens = Counter()  # prompt_tokens, completion_tokens as charged
        self.counted_by = Counter()  # calls priced by the server's usage, by the local count
        self.reached: BudgetReached | None = None
        self._lock = threading.Lock()  # admit/settle run on the transport's loop; spent() on the caller's

    def _prompt_tokens(self, params: dict) -> int:
        """The prompt's tokens by the local tokenizer, with the allowances above: an estimate at or
        above what a server with the same tokenizer bills."""
        if "messages" in params:
            return SPECIAL_TOKENS_PER_CALL + sum(len(self.encode(str(m.get("content") or ""))) +
                                                 CHAT_TOKENS_PER_MESSAGE for m in params["messages"])
        return SPECIAL_TOKENS_PER_CALL + len(self.encode(str(params.get("prompt") or "")))

    def admit(self, kind: str, params: dict) -> tuple[int, int, float]:
        prompt = self._prompt_tokens(params)
        completion = int(params.get("max_tokens") or DEFAULT_MAX_TOKENS) * int(params.get("n") or 1)
        price = self.budget.price(prompt, completion)
        with self._lock:
            if self.reached is None and self.charged + self.reserved + price > self.budget.cap:
                self.reached = BudgetReached(
                    f"--max-cost {self.budget.cap:g}: stopped before a request (up to ${price:.6g}) would pass "
                    f"the cap; this command used ${self.charged + self.reserved:.6g}", price)
            if self.reached is not None:
                raise self.reached
            self.reserved += price
        return prompt, completion, price

    def settle(self, ticket: tuple[int, int, float], usage: tuple[int, int] | None, answered: bool) -> None:
        prompt, completion, price = ticket
        with self._lock:
            self.reserved -= price
            if not answered:  # no answer after the retries: nothing billed
                return
            plausible = usage is not None and usage[0] >= PLAUSIBLE_SHARE * prompt
            used = usage if plausible else (prompt, completion)
            self.counted_by["server" if plausible else "local"] += 1
            self.tokens["prompt_tokens"] += used[0]
            self.tokens["completion_tokens"] += used[1]
            self.charged += self.budget.price(*used)

    def spent(self) -> float:
        with self._lock:
            return self.charged + self.reserved


@dataclass
class BudgetedModel:
    """The model, with every batch priced before it is sent, and a server's every call (CallGate)."""

    inner: object
    budget: Budget
    counter: object  # a DryModel: counts a batch's tokens without answering it
    remaining: Callable | None = None  # () -> (requests, estimated price) still uncached
    start: dict = field(default_factory=dict)
    gate: CallGate | None = None

    def __post_init__(self):
        self.start = dict(self._usage())
        if hasattr(self.inner, "meter"):  # a server's model: each HTTP call admitted and settled
            self.gate = CallGate(self.budget, self.counter.counter._encode)
            self.inner.meter(self.gate)

    def __getattr__(self, name):  # info, format_prompt, close, ... are the model's own
        return getattr(self.inner, name)

    def fingerprint(self) -> dict:
        return self.inner.fingerprint()

    def _usage(self) -> dict:
        return self.inner.usage() if hasattr(self.inner, "usage") else {}

    def usage(self) -> dict:
        return self._usage()

    def spent(self) -> float:
        if self.gate is not None:
            return self.gate.spent()
        now = self._usage()
        return self.budget.price(now.get("prompt_tokens", 0) - self.start.get("prompt_tokens", 0),
                                 now.get("completion_tokens", 0) - self.start.get("completion_tokens", 0))

    def record(self) -> dict:
        """The manifest's "budget": the cap, the prices, what was charged and which count priced it."""
        out = {"max_cost": self.budget.cap, "price_in": self.budget.price_in, "price_out": self.budget.price_out,
               "spent": round(self.spent(), 12)}
        if self.gate is not None:
            out.update(tokens=dict(self.gate.tokens), counted_by=dict(self.gate.counted_by),
                       local_tokenizer=self.counter.counter.info.spec)
        else:  # a local model counts its own tokens: every request by its own tokenizer
            out["counted_by"] = {"model": int(self._usage().get("requests", 0) - self.start.get("requests", 0))}
        return out

    def _estimate(self, ask: Callable, sampled_bound: int = 0) -> float:
        before = self.counter.usage()
        ask(self.counter)
        after = self.counter.usage()
        prompt = after["prompt_tokens"] - before["prompt_tokens"]
        completion = after["completion_tokens_max"] - before["completion_tokens_max"]
        if sampled_bound:  # a local model draws up to CAP_FACTOR x n times, each round resending the prompt
            from .choice import CAP_FACTOR  # lazy: imports numpy

            prompt, completion = prompt * CAP_FACTOR * sampled_bound, completion * CAP_FACTOR
        return self.budget.price(prompt, completion)

    def _reached(self, next_price: float, n: int) -> BudgetReached:
        spent = self.spent()
        rest = ""
        if self.remaining is not None:
            requests, price = self.remaining()
            rest = (f"; {requests} requests remain, estimated at up to ${price:.6g}: run the same command with "
                    f"--max-cost {price:.6g} or more to finish (the cached answers cost nothing again)")
        return BudgetReached(f"--max-cost {self.budget.cap:g}: stopped before the next {n} requests (up to "
                             f"${next_price:.6g}) would pass the cap; this command used ${spent:.6g}, and the "
                             f"answers so far are kept in the run's cache{rest}", next_price)

    def _check(self, ask: Callable, n: int, sampled_bound: int = 0) -> None:
        if self.gate is not None and self.gate.reached is not None:
            raise self._reached(self.gate.reached.price, n)
        next_price = self._estimate(ask, 0 if self.gate is not None else sampled_bound)
        if self.spent() + next_price > self.budget.cap:
            raise self._reached(next_price, n)

    def _send(self, ask: Callable, n: int):
        try:
            return ask()
        except BudgetReached as e:  # the gate refused a call inside the batch
            raise self._reached(e.price, n) from None

    def check_choose(self, requests: Sequence, method: str = "exact") -> None:
        """Raise BudgetReached when choosing `requests` could pass the cap (a session scores a local
        model's steps itself, and asks this first)."""
        requests = list(requests)
        bound = max((r.n for r in requests), default=0) if method == "sampled" else 0
        self._check(lambda m: m.choose(requests, method=method), len(requests), bound)

    def choose(self, requests: Sequence, method: str = "exact"):
        requests = list(requests)
        self.check_choose(requests, method)
        return self._send(lambda: self.inner.choose(requests, method=method), len(requests))

    def complete(self, requests: Sequence):
        requests = list(requests)
        self._check(lambda m: m.complete(requests), len(requests))
        return self._send(lambda: self.inner.complete(requests), len(requests))


def remaining_estimate(study, model, out, trials, params: dict, *, method: str, n: int, batch_size: int,
                       budget: Budget, counter) -> tuple[int, float]:
    """(requests, estimated price) of what the run folder's cache still lacks: the study's collection
    against the dry counter, keyed like the real model, through the cache read-only."""
    from .store import OverlayCache  # lazy: imports pandas, numpy
    from .runner import collect_trials  # lazy: imports pandas, numpy
    from .store import RunStore  # lazy: imports pandas, numpy

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
