"""Free-text generation that reuses the keys/values of a growing prompt.

A Milgram record grows by a stage text and one completion at a time; re-encoding the whole
record at every stage makes its cost grow with the record's length. `PrefixStore` keeps the
keys/values of recently generated sequences, and a new prompt is encoded only from where it
stops agreeing (token for token) with the longest stored sequence.

Sampling uses one seeded generator per request, so a request's text does not depend on which
other requests it was batched or cached with.
"""

from __future__ import annotations

from collections import OrderedDict

import torch

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


def _forward(model, ids: list[int], kv, start: int):
    """Encode `ids` after a cache of `start` tokens; returns (last logits, new cache tensors)."""
    from transformers import DynamicCache

    cache = DynamicCache(ddp_cache_data=kv) if kv else DynamicCache()
    x = torch.tensor([ids])
    pos = torch.arange(start, start + len(ids))[None]
    out = model(input_ids=x, position_ids=pos, past_key_values=cache, use_cache=True, logits_to_keep=1)
    layers = out.past_key_values.layers
    return out.logits[0, -1].float(), [(layer.keys, layer.values) for layer in layers]


def sample_next(logits: torch.Tensor, temperature: float, top_p: float, gen: torch.Generator) -> int:
    if temperature <= 0:
        return int(logits.argmax())
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, order = probs.sort(descending=True)
        keep = sorted_p.cumsum(0) - sorted_p < top_p  # smallest set whose mass reaches top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
    return int(torch.multinomial(probs, 1, generator=gen))


def generate(model, tokenizer, prompt_ids: list[int], *, max_tokens: int, temperature: float, top_p: float,
             stop: tuple[str, ...], seed: int, store: PrefixStore | None) -> str:
    """One sampled continuation of `prompt_ids`, stopping at EOS, a stop string or max_tokens."""
    n, kv = store.lookup(prompt_ids) if store is not None else (0, None)
    gen = torch.Generator().manual_seed(seed)
    e = getattr(model.generation_config, "eos_token_id", None)
    eos = {tokenizer.eos_token_id, *(e if isinstance(e, (list, tuple)) else [e])} - {None}
    with torch.inference_mode():
        logits, kv = _forward(model, prompt_ids[n:], kv, n)
        out: list[int] = []
        text = ""
        for _ in range(max_tokens):
            tok = sample_next(logits, temperature, top_p, gen)
            if tok in eos:
                break
            out.append(tok)
            text = tokenizer.decode(out, skip_special_tokens=True)
            if stop and any(s in text for s in stop):
                break
            logits, kv = _forward(model, [tok], kv, len(prompt_ids) + len(out) - 1)
    if store is not None:
        # kv now holds prompt + all but the last sampled token: exactly the tokens it encoded.
        store.put(tuple(prompt_ids + out[: kv[0][0].shape[2] - len(prompt_ids)]), kv)
    return text
