"""Exact k-choice scoring of a session's growing prompts on a local model, without re-encoding.

A session's prompt at step k+1 is its prompt at step k, the answer drawn, the feedback and the next
question: it only grows. Scoring it from scratch costs a forward pass over the whole transcript,
so a step's cost grows with the round. Here each path's keys/values are kept, and a prompt is
encoded only from where it stops agreeing, token for token, with the path's previous prompt: a
step costs its new tokens.

Determinism: floats depend on how a sequence was cut into forward passes. So the cut is fixed by
the path's own history, never by what happens to be in memory: the keys/values of the prompt of
step k are those of step k-1's prompt (up to their common tokens) extended by one forward pass over
the rest. A run resumed after a kill rebuilds them along the same chain and gets the same numbers,
bit for bit. The probabilities are those of `HFModel.score` (the same token plan: p(c | s) =
p(tokens(s c)) / p(tokens(s))), computed in another order of float sums: they agree with the packed
scorer to about 1e-6, so a run records which scorer it used (part of its identity).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Sequence

import torch
from transformers import DynamicCache

from ..choice import exact_choice
from .base import ChoiceRequest, ChoiceResult
from .generation import _cache_kw, _kv_bytes, _prefill
from .packing import lcp

SCORER = "incremental-kv"


def supports(model) -> bool:
    """A local transformers model (the HF backend), which exposes its token plan."""
    return hasattr(model, "plan") and hasattr(model, "model") and hasattr(model, "prefix_store")


class PathScorer:
    """Keys/values of scored prompts, keyed by the chain of prompts that led to them (LRU, byte budget)."""

    def __init__(self, model, budget_bytes: int = 2 << 30):
        self.model, self.budget, self.used = model, budget_bytes, 0
        self.entries: OrderedDict[str, tuple] = OrderedDict()  # key -> (ctx, last logits, kv)
        # per request: its token plan and its chain key, computed once (a path's earlier prompts are
        # not tokenized again at every step: the cost of a step stays that of its new tokens)
        self.plans: dict[tuple, tuple] = {}
        self.keys: dict[tuple, str] = {}

    def choose(self, requests: Sequence[ChoiceRequest], chains: Sequence[Sequence[ChoiceRequest]]) -> list[ChoiceResult]:
        """Exact choices of `requests`; chains[i]: the earlier requests of request i's path, in order."""
        m = self.model
        m._count_requests(requests)
        out = []
        with torch.inference_mode():
            for r, chain in zip(requests, chains):
                ctx, stail, tails = self._plan(r)
                logits, kv = self._context([*chain, r])
                first = torch.log_softmax(logits, dim=-1)
                lps = [self._tail(kv, len(ctx), first, t) for t in [stail, *tails]]
                out.append(exact_choice([lp - lps[0] for lp in lps[1:]]))
        return out

    def _plan(self, r: ChoiceRequest) -> tuple:
        k = (r.prompt, r.completions, getattr(r, "messages", ()))  # chat turns: the prompt is empty
        if k not in self.plans:
            self.plans[k] = self.model.plan([r])[0]
        return self.plans[k]

    def _keys(self, chain: list[ChoiceRequest]) -> list[str]:
        """Chain keys: chain[i]'s is a hash of the contexts of chain[0..i] (the cut that built its kv)."""
        if len(self.keys) > 200_000:  # a bound on memory; the keys are recomputed as needed
            self.keys.clear()
            self.plans.clear()
        out, prev = [], ""
        for c in chain:
            k = (prev, c.prompt, c.completions, getattr(c, "messages", ()))
            if k not in self.keys:
                self.keys[k] = hashlib.sha256((prev + repr(self._plan(c)[0])).encode()).hexdigest()
            prev = self.keys[k]
            out.append(prev)
        return out

    def _context(self, chain: list[ChoiceRequest]):
        """(last logits, kv) of the context of chain[-1], built along the chain."""
        keys = self._keys(chain)
        start = len(keys) - 1
        while start > 0 and keys[start] not in self.entries:
            start -= 1
        prev = self.entries[keys[start]] if keys[start] in self.entries else None
        if prev is not None and start == len(keys) - 1:
            self.entries.move_to_end(keys[start])
            return prev[1], prev[2]
        first = start + 1 if prev is not None else 0
        for i in range(first, len(keys)):
            c = self._plan(chain[i])[0]
            if prev is None:
                logits, kv = _prefill(self.model.model, c, None, 0)
                fed = len(c)
            else:
                b = min(lcp(prev[0], c), len(c) - 1)  # the last token is always fed: its logits score
                logits, kv = _prefill(self.model.model, c[b:], [(k[:, :, :b], v[:, :, :b]) for k, v in prev[2]], b)
                fed = len(c) - b
            self.model.stats["forwards"] += 1
            self.model.stats["tokens"] += fed
            prev = (c, logits, kv)
            self._put(keys[i], prev)
        return prev[1], prev[2]

    def _put(self, key: str, entry) -> None:
        size = _kv_bytes(entry[2])
        while self.entries and self.used + size > self.budget:
            _, old = self.entries.popitem(last=False)
            self.used -= _kv_bytes(old[2])
        self.entries[key] = entry
        self.used += size

    def _tail(self, kv, start: int, first: torch.Tensor, tail: list[int]) -> float:
        """log p(tail | context): the first token from the context's last logits, the rest fed after it."""
        if not tail:
            return 0.0
        total = float(first[tail[0]])
        if len(tail) > 1:
            dev = self.model.model.device
            cache = DynamicCache(ddp_cache_data=kv)  # a forward appends to new tensors: `kv` stays the context's
            res = self.model.model(input_ids=torch.tensor([tail[:-1]], device=dev),
                                   position_ids=torch.arange(start, start + len(tail) - 1, device=dev)[None],
                                   use_cache=True, **{_cache_kw(self.model.model): cache})
            lp = torch.log_softmax(res.logits[0].float(), dim=-1)
            total += float(sum(lp[t, tok] for t, tok in enumerate(tail[1:])))
            self.model.stats["forwards"] += 1
        return total
