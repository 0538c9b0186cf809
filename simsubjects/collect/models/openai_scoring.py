"""Exact scoring for the `openai` backend: log p(c | prompt) of given continuations.

* ``echo``: legacy /v1/completions with ``echo=True, logprobs`` scores prompt+completion; the
  completion's log-probability is the sum over its tokens (text offsets find the boundary). When a
  token straddles the boundary (prompt "Answer: " + "Yes" is tokenized "Answer", ":", " Yes"), the
  prompt is scored alone too and log p(c | s) = log p(s·c) - log p(s).
* ``prompt_logprobs``: the same from vLLM's ``prompt_logprobs`` extension.
* ``top``: only the next token's top log-probabilities (completions ``logprobs=K`` or chat
  ``top_logprobs``): exact when every completion is one token found in the top list; otherwise
  `Inexact` is raised and the caller samples.

The functions here return log-probabilities only; collect/choice.py turns them into option
probabilities and validity, as for every backend.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from ..seeds import seed_from_text
from .base import check_token_logprobs
from .openai_transport import Transport


# What the endpoint supports; found by openai_probe.detect, read by every scoring call (here so that
# scoring needs nothing from the probe, which builds on scoring).
@dataclass
class Mode:
    """What the endpoint supports, found by `detect`."""

    api: str = "completions"  # "completions" | "chat": used for sampling and `complete`
    logprobs: str = "sample"  # "echo" | "prompt_logprobs" | "top" | "sample"
    top_k: int = 0  # how many top log-probabilities one request returns
    extras: dict = field(default_factory=dict)  # neutral sampler settings the server accepted
    n_ok: bool | None = None  # does the server honour `n` > 1? (None: not known yet)
    served_models: list = field(default_factory=list)  # redacted ids
    server_model: str = ""  # the model id the server answered with, redacted


ECHO_TOLERANCE = 0.05  # nats; echo vs next-token log-probabilities of the same token
EOS_REDRAWS = 4  # seeded redraws when the next-token answer came back without log-probabilities


def sampling_params(mode: "Mode", temperature: float, top_p: float = 1.0) -> dict:
    """Temperature and top_p, with the neutral sampler settings the server accepted at probing."""
    params = {"temperature": temperature, "top_p": top_p}
    if mode.extras:
        params["extra_body"] = dict(mode.extras)
    return params


class Inexact(Exception):
    """The exact path cannot score this request; fall back to sampling."""


async def score_text(tr: Transport, mode: Mode, text: str, counter: list) -> list[tuple[int, str, float | None]]:
    """(offset, token, logprob) of every token of `text`, by echo or by prompt_logprobs."""
    counter[0] += 1
    if mode.logprobs == "echo":
        r = await tr.call("completions", prompt=text, echo=True, logprobs=1, max_tokens=1, temperature=0.0)
        return _echo_tokens(r.choices[0], len(text))
    r = await tr.call("completions", prompt=text, max_tokens=1, temperature=0.0, extra_body={"prompt_logprobs": 0})
    return _prompt_logprob_tokens(r.choices[0], text)


async def scored_logprobs(tr: Transport, mode: Mode, prompt: str, completions, counter: list) -> list[float]:
    """log p(c_i | prompt) from echoed (or vLLM prompt) log-probabilities."""
    if not prompt:
        raise Inexact("empty prompt")
    scored = await asyncio.gather(*(score_text(tr, mode, prompt + c, counter) for c in completions))
    prompt_alone = None
    logprobs = []
    for toks in scored:
        check_token_logprobs(v for _, _, v in toks)  # the server's numbers: the sums below may pass 0
        lp = _suffix_logprob(toks, len(prompt))
        if lp is None:  # a token straddles the boundary: log p(s·c) - log p(s)
            if prompt_alone is None:
                prompt_alone = await score_text(tr, mode, prompt, counter)
                check_token_logprobs(v for _, _, v in prompt_alone)
            lp = _total_logprob(toks, prompt_alone)
        logprobs.append(lp)
    return logprobs


async def top_logprobs(tr: Transport, mode: Mode, prompt: str, completions, counter: list) -> list[float]:
    """log p(c_i | prompt) from the next token's top list: every completion must be one listed token."""
    top = await next_token_top(tr, mode, prompt, 0.0, 0, counter)
    # llama-cpp-python returns no log-probabilities when the token it generates is EOS; the
    # returned log-probabilities do not depend on temperature, so draw (seeded) until it is not.
    seed = _stable_seed(prompt)
    for i in range(EOS_REDRAWS):
        if top:
            break
        top = await next_token_top(tr, mode, prompt, 1.0, seed + i, counter)
    missing = [c for c in completions if c not in top]
    if missing:
        raise Inexact(f"{len(missing)} completion(s) not a token among the top {mode.top_k}")
    return [top[c] for c in completions]


async def next_token_top(tr: Transport, mode: Mode, prompt: str, temperature: float, seed: int,
                         counter: list) -> dict[str, float]:
    counter[0] += 1
    k = mode.top_k
    params = sampling_params(mode, temperature) if temperature else {"temperature": 0.0}
    if temperature:
        params["seed"] = seed
    if mode.api == "completions":
        r = await tr.call("completions", prompt=prompt, max_tokens=1, logprobs=k, **params)
        return _completion_top(r)
    r = await tr.call("chat", messages=[{"role": "user", "content": prompt}], max_tokens=1,
                      logprobs=True, top_logprobs=k, **params)
    return _chat_top(r)


# -- parsing helpers (pure functions, unit-testable) ------------------------------------------------

def _stable_seed(*parts: str) -> int:
    """The request's seed for an OpenAI-compatible server: collect/seeds.py's derivation, 4 bytes read
    big-endian and cut to 30 bits (as drawn before seeds.py, so a cached or resumed run asks the same)."""
    return seed_from_text(*parts, nbytes=4, byteorder="big") & 0x3FFFFFFF


def _logsumexp_into(d: dict, key: str, lp: float) -> None:
    if key in d:
        a, b = max(d[key], lp), min(d[key], lp)
        d[key] = a + math.log1p(math.exp(b - a))
    else:
        d[key] = lp


def _completion_top(r) -> dict[str, float]:
    """Next-token top log-probabilities from a completions response (token text -> logprob)."""
    lp = r.choices[0].logprobs
    if lp is None or not lp.top_logprobs or not lp.top_logprobs[0]:
        return {}
    out: dict[str, float] = {}
    for tok, v in lp.top_logprobs[0].items():
        if v is not None:
            _logsumexp_into(out, tok, float(v))  # two token ids with one string: one answer
    return out


def _completion_step(r) -> tuple[str, float] | None:
    """The generated token and its log-probability, from a non-echo completions response."""
    lp = r.choices[0].logprobs
    if lp is None or not lp.tokens or not lp.token_logprobs or lp.token_logprobs[0] is None:
        return None
    tok = lp.tokens[0]
    if not tok or tok.startswith("bytes:"):
        return None
    return tok, float(lp.token_logprobs[0])


def _chat_top(r) -> dict[str, float]:
    lp = r.choices[0].logprobs
    content = getattr(lp, "content", None) if lp is not None else None
    if not content:
        return {}
    out: dict[str, float] = {}
    for t in content[0].top_logprobs or []:
        _logsumexp_into(out, t.token, float(t.logprob))
    return out


def _echo_tokens(choice, text_len: int) -> list[tuple[int, str, float | None]]:
    """(offset, token, logprob) of the echoed tokens that lie inside the scored text."""
    lp = choice.logprobs
    if lp is None or not lp.tokens or lp.text_offset is None or lp.token_logprobs is None:
        raise Inexact("no echoed log-probabilities")
    out = []
    for off, tok, v in zip(lp.text_offset, lp.tokens, lp.token_logprobs):
        if off >= text_len:
            break  # the generated token
        out.append((int(off), tok, None if v is None else float(v)))
    if not out or any(b[0] < a[0] for a, b in zip(out, out[1:])):
        raise Inexact("echoed text offsets are not increasing")
    return out


def _prompt_logprob_tokens(choice, text: str) -> list[tuple[int, str, float | None]]:
    """vLLM `prompt_logprobs` as (offset, token, logprob); offsets from the decoded tokens."""
    plp = getattr(choice, "prompt_logprobs", None)
    if plp is None:
        plp = (getattr(choice, "model_extra", None) or {}).get("prompt_logprobs")
    if not plp:
        raise Inexact("no prompt_logprobs in the response")
    ids = getattr(choice, "prompt_token_ids", None) or (getattr(choice, "model_extra", None) or {}).get("prompt_token_ids")
    entries = []
    for i, pos in enumerate(plp):
        if pos is None:
            entries.append((None, None))
            continue
        if len(pos) == 1:
            (entry,) = pos.values()
        elif ids is not None and str(ids[i]) in pos:
            entry = pos[str(ids[i])]
        else:
            raise Inexact("cannot tell the prompt token among several prompt_logprobs")
        tok = entry.get("decoded_token") if isinstance(entry, dict) else getattr(entry, "decoded_token", None)
        v = entry.get("logprob") if isinstance(entry, dict) else getattr(entry, "logprob", None)
        entries.append((tok, None if v is None else float(v)))
    # Position 0 has no log-probability and vLLM gives no text for it: it is the BOS token on models
    # that add one (the rest then spells the text), else the text's first token (the rest spells
    # the text after it).
    joined = "".join(t or "" for t, _ in entries[1:])
    if joined == text:
        out, off = [], 0
    elif text.endswith(joined) and len(joined) < len(text):
        off = len(text) - len(joined)
        out = [(0, text[:off], None)]
    else:
        raise Inexact("decoded prompt tokens do not spell the text")
    for tok, v in entries[1:]:
        out.append((off, tok or "", v))
        off += len(tok or "")
    return out


def _agrees(toks, checks) -> bool:
    """Do echoed log-probabilities match next-token log-probabilities of the same tokens?"""
    by_off = {off: (tok, v) for off, tok, v in toks}
    for off, tok, lp in checks:
        got = by_off.get(off)
        if got is None or got[1] is None or got[0] != tok:
            return False
        if abs(got[1] - lp) > ECHO_TOLERANCE + 0.02 * abs(lp):
            return False
    return True


def _suffix_logprob(toks, boundary: int) -> float | None:
    """Sum of the log-probabilities of tokens from `boundary` on, or None if a token straddles it."""
    if boundary == 0 or not any(off == boundary for off, _, _ in toks):
        return None
    lps = [v for off, _, v in toks if off >= boundary]
    if any(v is None for v in lps):
        raise Inexact("a completion token has no log-probability")
    return float(sum(lps))


def _total_logprob(full, prompt) -> float:
    """log p(s·c) - log p(s) from the token log-probabilities of s·c and of s alone."""
    if not prompt:
        raise Inexact("empty prompt")
    for toks in (full, prompt):
        if any(v is None for _, _, v in toks[1:]):
            raise Inexact("a token has no log-probability")
    # The first token is scored unconditionally (None) or conditioned on BOS in both.
    if (full[0][0], full[0][1]) != (prompt[0][0], prompt[0][1]) or (full[0][2] is None) != (prompt[0][2] is None):
        raise Inexact("the prompt's first token changes with the completion")
    total = lambda toks: sum(v for _, _, v in toks if v is not None)  # noqa: E731
    return float(total(full) - total(prompt))
