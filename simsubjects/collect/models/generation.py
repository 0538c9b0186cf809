"""Free-text generation: many sequences decoded together, growing prompts encoded once.

Decoding one token is bound by reading the weights (and the keys/values) from memory, so rows are
decoded as one batch: the weights are read once per step for all of them. Each row's keys/values
live in preallocated buffers that a step writes into, not in tensors that are concatenated (and
copied) at every step. Rows that finish leave the batch.

A Milgram record grows by a stage text and one completion at a time; re-encoding the whole record
at every stage makes its cost grow with the record's length. `PrefixStore` keeps the keys/values
of recently generated sequences, and a new prompt is encoded only from where it stops agreeing
(token for token) with the longest stored sequence.

Sampling uses one seeded generator per row, so a row's text does not depend on which other rows
it was batched or cached with, up to float rounding (batched matmuls add in another order; a
sampled token can change only where the draw falls within ~1e-6 of a boundary between tokens).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
import inspect

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from .packing import lcp


def _kv_bytes(kv) -> int:
    return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)


class PrefixStore:
    """Keys/values of encoded token sequences, looked up by longest common token prefix."""

    def __init__(self, budget_bytes: int = 4 << 30):
        self.budget = budget_bytes
        self.entries: OrderedDict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = OrderedDict()
        self.used = 0

    def lookup(self, ids: list[int]) -> tuple[int, list | None]:
        """(n, kv of ids[:n]) for the stored sequence sharing the longest prefix with `ids`."""
        best, best_key = 0, None
        for key in self.entries:
            n = lcp(key, ids)
            if n > best:
                best, best_key = n, key
        best = min(best, len(ids) - 1)  # the last prompt token is always fed: its logits start sampling
        if best_key is None or best <= 0:
            return 0, None
        self.entries.move_to_end(best_key)
        return best, [(k[:, :, :best], v[:, :, :best]) for k, v in self.entries[best_key]]

    def put(self, ids: tuple[int, ...], kv) -> None:
        # A sequence that extends a stored one supersedes it (a subject's record only grows).
        for key in [k for k in self.entries if len(k) <= len(ids) and ids[: len(k)] == k]:
            self.used -= _kv_bytes(self.entries.pop(key))
        size = _kv_bytes(kv)
        if self.used + size > self.budget:
            return  # full: keep what is there rather than thrash under round-robin access
        self.entries[ids] = kv
        self.used += size

    def clear(self) -> None:
        self.entries.clear()
        self.used = 0


class _BufferedLayer(DynamicLayer):
    """A DynamicLayer that appends into spare capacity instead of concatenating.

    `keys`/`values` are views of the first `n` positions of the buffers, so the attention reads
    exactly the positions written so far, as with DynamicLayer.
    """

    def __init__(self, kbuf: torch.Tensor, vbuf: torch.Tensor, n: int):
        super().__init__()
        self.dtype, self.device, self.is_initialized = kbuf.dtype, kbuf.device, True
        self.kbuf, self.vbuf = kbuf, vbuf
        self.keys, self.values = kbuf[:, :, :n], vbuf[:, :, :n]

    def update(self, key_states, value_states, *args, **kwargs):
        n, m = self.keys.shape[-2], key_states.shape[-2]
        self.kbuf[:, :, n : n + m] = key_states
        self.vbuf[:, :, n : n + m] = value_states
        self.keys, self.values = self.kbuf[:, :, : n + m], self.vbuf[:, :, : n + m]
        return self.keys, self.values

    def keep(self, rows: torch.Tensor) -> None:
        """Drop the rows that are not in `rows` (finished sequences leave the batch)."""
        n = self.keys.shape[-2]
        self.kbuf, self.vbuf = self.kbuf.index_select(0, rows), self.vbuf.index_select(0, rows)
        self.keys, self.values = self.kbuf[:, :, :n], self.vbuf[:, :, :n]


def _cache_kw(model) -> str:
    """The name `forward` takes the keys/values cache under: `cache` from transformers 5.2x on, where
    `past_key_values` still works but warns (FutureWarning: removed in 5.40); older 5.x only know
    `past_key_values`. Asked of the signature, so neither release warns nor breaks."""
    key = type(model)
    if key not in _CACHE_KW:
        params = inspect.signature(model.forward).parameters
        _CACHE_KW[key] = "cache" if "cache" in params else "past_key_values"
    return _CACHE_KW[key]


_CACHE_KW: dict[type, str] = {}


def _out_cache(out):
    """The cache a forward pass returns (`cache` in newer transformers, `past_key_values` before)."""
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def _prefill(model, ids: list[int], kv, start: int):
    """Encode `ids` after a cache of `start` tokens; returns (last logits, cache tensors per layer)."""
    cache = DynamicCache(ddp_cache_data=kv) if kv else DynamicCache()
    dev = model.device
    out = model(input_ids=torch.tensor([ids], device=dev), position_ids=torch.arange(start, start + len(ids), device=dev)[None],
                use_cache=True, logits_to_keep=1, **{_cache_kw(model): cache})
    # sampling runs on the CPU with each row's own seeded generator: the same text on any device
    return out.logits[0, -1].float().cpu(), [(layer.keys, layer.values) for layer in _out_cache(out).layers]


def sample_next(logits: torch.Tensor, temperature: float, top_p: float, gen: torch.Generator) -> int:
    if temperature <= 0:
        return int(logits.argmax())
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, order = probs.sort(descending=True)
        keep = sorted_p.cumsum(0) - sorted_p < top_p  # smallest set whose mass reaches top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
    return int(torch.multinomial(probs, 1, generator=gen))


@dataclass
class Row:
    """One sequence to generate. `settled` (a regular expression) ends generation once it matches
    the text: the caller has everything it will read (e.g. the first sentence is complete)."""

    ids: list[int]
    seed: int
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    settled: str = ""


class _Running:
    def __init__(self, row: Row, logits: torch.Tensor, kv):
        self.row, self.logits, self.kv = row, logits, kv
        self.gen = torch.Generator().manual_seed(row.seed)
        self.out: list[int] = []
        self.text = ""
        self.done = False
        self.settled = re.compile(row.settled) if row.settled else None

    def step(self, eos: set[int], tokenizer) -> None:
        """Sample the next token; mark the row done at EOS, a stop string, `settled` or max_tokens."""
        tok = sample_next(self.logits, self.row.temperature, self.row.top_p, self.gen)
        if tok in eos:
            self.done = True  # EOS is not part of the text
            return
        self.out.append(tok)
        self.text = tokenizer.decode(self.out, skip_special_tokens=True)
        self.done = (len(self.out) >= self.row.max_tokens or any(s in self.text for s in self.row.stop)
                     or (self.settled is not None and self.settled.search(self.text) is not None))


def generate(model, tokenizer, rows: list[Row], *, store: PrefixStore | None = None) -> list[str]:
    """Sampled continuations of every row, each ending at EOS, a stop string, `settled` or its
    max_tokens; rows are decoded together. Stop strings are not cut here."""
    e = getattr(model.generation_config, "eos_token_id", None)
    eos = {tokenizer.eos_token_id, *(e if isinstance(e, (list, tuple)) else [e])} - {None}
    with torch.inference_mode():
        # Prefill one row at a time (long prompts keep the matmuls large); identical prompts once.
        running, prefilled = [], {}
        for row in rows:
            key = tuple(row.ids)
            if key not in prefilled:
                n, kv = store.lookup(row.ids) if store is not None else (0, None)
                prefilled[key] = _prefill(model, row.ids[n:], kv, n)
            running.append(_Running(row, *prefilled[key]))
        del prefilled
        length = max((len(r.ids) for r in rows), default=0)
        batch: list[_Running] = []  # the rows in the cache, in cache order
        cache = mask = None
        for step in range(max((r.max_tokens for r in rows), default=0)):
            live = [r for r in (running if cache is None else batch) if not r.done]
            for r in live:
                r.step(eos, tokenizer)
            if cache is None:  # the first token came from the prefill: now build the batch
                batch = [r for r in running if not r.done]
                cache, mask = _batch_cache(batch, length, max(r.max_tokens for r in rows))
                for r in running:
                    if r.done and store is not None:
                        store.put(tuple(r.row.ids), r.kv)
                    r.kv = None
            elif store is not None:
                _store_finished(store, batch, [r for r in live if r.done], cache, length)
            n_done = sum(r.done for r in batch)
            if n_done == len(batch):
                break
            # Finished rows leave the batch once they are half of it: copying the buffers at every
            # finish would cost more than carrying a few idle rows.
            if 2 * n_done >= len(batch):
                keep = torch.tensor([j for j, r in enumerate(batch) if not r.done], dtype=torch.long, device=mask.device)
                for layer in cache.layers:
                    layer.keep(keep)
                mask, batch = mask.index_select(0, keep), [r for r in batch if not r.done]
            mask = torch.cat([mask, mask.new_ones(len(batch), 1)], dim=1)
            out = model(input_ids=torch.tensor([[r.out[-1] if r.out else 0] for r in batch], device=mask.device),
                        position_ids=torch.tensor([[len(r.row.ids) + step] for r in batch], device=mask.device),
                        attention_mask=mask, use_cache=True, **{_cache_kw(model): cache})
            logits = out.logits[:, -1].float().cpu()
            for j, r in enumerate(batch):
                r.logits = logits[j]
    return [r.text for r in running]


def _batch_cache(batch: list[_Running], length: int, room: int):
    """Buffers for the running rows: prompts right-aligned at `length` (the left padding masked),
    with room for `room` more tokens."""
    if not batch:
        return DynamicCache(), None
    layers = []
    for li, (k0, v0) in enumerate(batch[0].kv):
        kbuf = k0.new_zeros(len(batch), k0.shape[1], length + room, k0.shape[-1])
        vbuf = v0.new_zeros(len(batch), v0.shape[1], length + room, v0.shape[-1])
        for j, r in enumerate(batch):
            k, v = r.kv[li]
            kbuf[j, :, length - k.shape[-2] : length] = k[0]
            vbuf[j, :, length - v.shape[-2] : length] = v[0]
        layers.append(_BufferedLayer(kbuf, vbuf, length))
    cache = DynamicCache()
    cache.layers = layers
    mask = torch.zeros(len(batch), length, dtype=torch.long)
    for j, r in enumerate(batch):
        mask[j, length - len(r.row.ids) :] = 1
    return cache, mask.to(batch[0].kv[0][0].device)


def _store_finished(store: PrefixStore, batch: list[_Running], finished: list[_Running], cache, length: int):
    """Keep the keys/values of rows that just finished: their prompt and the tokens fed after it."""
    n = cache.layers[0].keys.shape[-2]
    for r in finished:
        j, first = batch.index(r), length - len(r.row.ids)
        kv = [(layer.kbuf[j : j + 1, :, first:n].clone(), layer.vbuf[j : j + 1, :, first:n].clone())
              for layer in cache.layers]
        store.put(tuple(r.row.ids + r.out[: n - length]), kv)
