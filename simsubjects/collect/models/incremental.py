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

import contextlib

import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right
from transformers import AttentionInterface, DynamicCache

from ..choice import exact_choice
from .base import ChoiceRequest, ChoiceResult
from .generation import _BufferedLayer, _cache_kw, _kv_bytes
from .packing import lcp

SCORER = "incremental-kv"


def supports(model) -> bool:
    """A local transformers model (the HF backend), which exposes its token plan."""
    return hasattr(model, "plan") and hasattr(model, "model") and hasattr(model, "prefix_store")


class PathScorer:
    """Keys/values of scored prompts, keyed by the chain of prompts that led to them (LRU, byte budget)."""

    def __init__(self, model, budget_bytes: int = 2 << 30):
        self.model, self.budget, self.used = model, budget_bytes, 0
        self.entries: OrderedDict[str, tuple] = OrderedDict()  # key -> (ctx, last logits, _View)
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
            b = 0 if prev is None else min(lcp(prev[0], c), len(c) - 1)  # the last token is always fed: its logits score
            buf = _Buffers.extend(self.model.model, None if prev is None else prev[2], b, len(c))
            logits = buf.feed(self.model.model, c[b:], b)
            self.model.stats["forwards"] += 1
            self.model.stats["tokens"] += len(c) - b
            prev = (c, logits, _View(buf, len(c)))
            self._put(keys[i], prev)
        return prev[1], prev[2]

    def _put(self, key: str, entry) -> None:
        # entries along one path share its buffers: a buffer is counted once, while any entry holds it
        view = entry[2]
        size = view.buf.nbytes() if view.buf.refs == 0 else 0  # a shared buffer is counted already
        while self.entries and self.used + size > self.budget:
            _, old = self.entries.popitem(last=False)
            old[2].buf.refs -= 1
            if old[2].buf.refs == 0:
                self.used -= old[2].buf.nbytes()
        if view.buf.refs == 0:
            self.used += view.buf.nbytes()
        view.buf.refs += 1
        self.entries[key] = entry

    def _tail(self, view: "_View", start: int, first: torch.Tensor, tail: list[int]) -> float:
        """log p(tail | context): the first token from the context's last logits, the rest fed after it."""
        if not tail:
            return 0.0
        total = float(first[tail[0]])
        if len(tail) > 1:
            # the tail's keys/values go to the buffer's free room after the context (scratch: the
            # context's view stays [:start]); where the room is taken, to a copy of the context
            need = start + len(tail) - 1
            buf = view.buf if view.buf.used == start and view.buf.capacity >= need else \
                _Buffers.extend(self.model.model, view, start, need)
            logits = buf.feed(self.model.model, tail[:-1], start, all_logits=True, scratch=True)
            lp = torch.log_softmax(logits, dim=-1)
            total += float(sum(lp[t, tok] for t, tok in enumerate(tail[1:])))
            self.model.stats["forwards"] += 1
        return total


class _Buffers:
    """One path's keys/values per layer, in buffers with room to grow (the cause of the growing step cost).

    A DynamicCache built from a path's tensors concatenates each forward's new keys/values onto them:
    every step copied the whole transcript's cache (30 layers x keys and values), and every multi-token
    completion copied it again (the attention's own copy is _path_attention's). Here a step writes only its new positions (generation's _BufferedLayer);
    the buffer grows by doubling, so the copies left are O(log length) per path. `used` is how far the
    buffer holds a path's tokens: an entry whose view ends there may be extended in place; an earlier
    entry (a branch of an enumerated tree, a chain rebuilt after eviction) gets a copy of its prefix.
    """

    ROOM = 64  # free positions kept after a context: a step's new tokens and a completion's tail

    def __init__(self, layers: list, used: int):
        self.layers, self.used, self.refs = layers, used, 0

    @classmethod
    def extend(cls, model, view: "_View | None", b: int, length: int) -> "_Buffers":
        """Buffers holding view's first b positions with room for `length` (+ROOM): in place where possible."""
        need = length + cls.ROOM
        if view is not None and view.buf.used == b == view.n and view.buf.capacity >= need:
            return view.buf
        cap = max(need, 2 * (view.buf.capacity if view is not None else 0), 2 * length)
        if view is None:
            cfg = model.config
            heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
            dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
            shape, dtype, dev = (1, heads, cap, dim), model.dtype, model.device
            layers = [(torch.empty(shape, dtype=dtype, device=dev), torch.empty(shape, dtype=dtype, device=dev))
                      for _ in range(cfg.num_hidden_layers)]
        else:
            layers = []
            for k, v in view.buf.layers:
                nk = k.new_empty((*k.shape[:2], cap, k.shape[3]))
                nv = v.new_empty((*v.shape[:2], cap, v.shape[3]))
                nk[:, :, :b], nv[:, :, :b] = k[:, :, :b], v[:, :, :b]
                layers.append((nk, nv))
        return cls(layers, b)

    @property
    def capacity(self) -> int:
        return self.layers[0][0].shape[2]

    def nbytes(self) -> int:
        return _kv_bytes(self.layers)

    def feed(self, model, ids: list[int], start: int, all_logits: bool = False, scratch: bool = False):
        """Encode `ids` at positions start.. after the first `start` buffered positions; their logits."""
        cache = DynamicCache()
        cache.layers = [_BufferedLayer(k, v, start) for k, v in self.layers]
        dev = model.device
        kw = {} if all_logits else {"logits_to_keep": 1}
        with _attention(model):
            out = model(input_ids=torch.tensor([ids], device=dev),
                        position_ids=torch.arange(start, start + len(ids), device=dev)[None],
                        use_cache=True, **kw, **{_cache_kw(model): cache})
        if not scratch:
            self.used = start + len(ids)
        return out.logits[0].float() if all_logits else out.logits[0, -1].float().cpu()


ATTENTION = "simsubjects_path"


def _path_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """SDPA for one path's step: its n new queries are the last n of the L keys (one sequence, no padding).

    transformers' sdpa path hands SDPA an explicit mask, and with a mask it repeats each key/value head
    for its query heads (repeat_kv): a copy of the whole cache per layer and step, which grows with the
    transcript. Here the causal mask is SDPA's own lower-right one and the heads are shared
    (enable_gqa): no copy. The numbers are bit for bit those of the sdpa path (tests/test_sessions.py).
    """
    n, length = query.shape[2], key.shape[2]
    mask = causal_lower_right(n, length) if n > 1 else None
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scaling, enable_gqa=True)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(ATTENTION, _path_attention)


@contextlib.contextmanager
def _attention(model):
    """Use _path_attention for this forward where the model's attention is plain sdpa (no sliding window or
    soft-capping, which it does not apply); other models keep their own. It sets the model's config for the
    duration of one forward: a model serves one thread (runs are processes: preload forks, Ray actors)."""
    cfg = model.config
    # CPU only: on CUDA, SDPA's lower-right mask goes to flash/efficient kernels whose key/value-head
    # sharing was not tried here (no GPU); the plain sdpa path stays there
    plain = getattr(cfg, "_attn_implementation", None) == "sdpa" and not getattr(cfg, "sliding_window", None) \
        and not getattr(cfg, "attn_logit_softcapping", None) and model.device.type == "cpu"
    if not plain:
        yield
        return
    cfg._attn_implementation = ATTENTION
    try:
        yield
    finally:
        cfg._attn_implementation = "sdpa"


class _View:
    """An entry's keys/values: the first n positions of a path's buffers."""

    def __init__(self, buf: _Buffers, n: int):
        self.buf, self.n = buf, n
