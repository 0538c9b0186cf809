"""Capability probing for the `openai` backend: what the endpoint supports, found once.

A handful of tiny requests find the API (completions, else chat), the neutral sampler settings the
server accepts, and the exact path: next-token top log-probabilities (``top``), echoed prompt
log-probabilities (``echo``) or vLLM's ``prompt_logprobs``; else sampling (``sample``). Echoed
log-probabilities are only trusted after checking them against next-token log-probabilities,
because some servers misalign them (llama-cpp-python 0.3.x on models without a BOS token).

The probe retries little (PROBE_RETRIES): a URL where nothing listens, or a server that never
answers, stops the run at once with one line naming the (redacted) URL.

What the server says about itself (model ids, the answering model) is kept redacted and bounded
(simsubjects.redact.server_string); nothing else of its replies is kept.

The verdict is remembered for the life of the process, per endpoint (`endpoint_key`: the base URLs,
the model id, the api and logprobs settings and the API key), so a `replicate` of several studies,
or a second model object on the same server, probes once: on llama-cpp-python each log-probability
request costs 0.25-0.5 s of server CPU (a log-softmax over every prompt position), and the probe is
about six of them. Only the first contact (the model listing, one cheap GET) is repeated: it still
finds a server that went away at once. The key is a salted digest, so no URL credential or API key
is held by the cache; `forget_endpoints(url)` drops the verdicts for a URL (tests call it when a server
or proxy stops, since another one may later listen on the same port).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os

from ...redact import server_string
from .openai_scoring import (  # noqa: F401 (ECHO_TOLERANCE, Mode: re-exported)
    Mode,
    ECHO_TOLERANCE,
    EOS_REDRAWS,
    Inexact,
    _agrees,
    _chat_top,
    _completion_step,
    _completion_top,
    _echo_tokens,
    _prompt_logprob_tokens,
)
from .openai_transport import ClientError, Transport, is_openai_host

log = logging.getLogger(__name__)

# A probe whose greedy continuation is a short, cleanly tokenized word for almost any model.
PROBE_PROMPT = "The capital of France is"
PROBE_RETRIES = 1

# llama.cpp-family servers default to top_k=40, min_p=0.05, repeat_penalty=1.1, which would bias
# "temperature 1" sampling; these neutral values are tried first on non-OpenAI hosts.
_NEUTRAL_SAMPLERS = ({"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}, {"top_k": -1, "min_p": 0.0}, {})

# Verdicts found in this process, by endpoint_key (never written anywhere).
_VERDICTS: dict[tuple, Mode] = {}
_SALT = os.urandom(16)  # per process: a digest in memory cannot be matched against guessed secrets


def _digest(*parts) -> str:
    return hashlib.sha256(_SALT + json.dumps(parts).encode()).hexdigest()


def endpoint_key(base_urls, model: str, api: str, logprobs: str, api_key: str) -> tuple:
    """What decides a verdict, as salted digests (no URL credential, no API key): one per base URL
    (for forget_endpoints) and one of everything."""
    urls = [u.rstrip("/") for u in base_urls]
    return frozenset(_digest(u) for u in urls), _digest(urls, model, api, logprobs, api_key)


def forget_endpoints(base_url: str | None = None) -> None:
    """Drop the remembered verdicts that involve `base_url` (all of them without it): the next model
    object there probes again."""
    if base_url is None:
        _VERDICTS.clear()
        return
    d = _digest(base_url.rstrip("/"))
    for key in [k for k in _VERDICTS if d in k[0]]:
        del _VERDICTS[key]


async def detect(tr: Transport, api: str = "auto", logprobs: str = "auto", remember: tuple | None = None) -> Mode:
    """What the endpoint supports. With `remember` (an endpoint_key), a verdict found earlier in this
    process for the same key is reused after the model listing, and a new one is stored."""
    served = await tr.list_models()
    known = _VERDICTS.get(remember) if remember else None
    if known is not None:  # the warning below was given when it was found
        return dataclasses.replace(known, served_models=served, extras=dict(known.extras), n_ok=None)
    m = await _detect(tr, served, api, logprobs)
    if remember:
        _VERDICTS[remember] = dataclasses.replace(m, extras=dict(m.extras), n_ok=None)
    return m


async def _detect(tr: Transport, served: list, api: str, logprobs: str) -> Mode:
    m = Mode()
    m.served_models = served
    if m.served_models and not any(s == tr.model or s.split(":")[0] == tr.model for s in m.served_models):
        log.warning("openai: %s is not among the models the server lists (%s)", tr.model,
                    ", ".join(m.served_models[:10]))
    extras_options = [{}] if any(is_openai_host(u) for u in tr.base_urls) else list(_NEUTRAL_SAMPLERS)

    first_error: ClientError | None = None
    if api in ("auto", "completions"):
        for extras in extras_options:
            try:
                r = await tr.call("completions", prompt=PROBE_PROMPT, max_tokens=1, temperature=0.0,
                                  **({"extra_body": extras} if extras else {}))
                m.api, m.extras = "completions", extras
                _note_response(m, r)
                break
            except ClientError as exc:
                first_error = first_error or exc
        else:
            if api == "completions" or first_error.status in (401, 403):
                raise first_error
            m.api = "chat"
    else:
        m.api = "chat"
    if m.api == "chat":
        for extras in extras_options:
            try:
                r = await tr.call("chat", messages=[{"role": "user", "content": PROBE_PROMPT}], max_tokens=1,
                                  temperature=0.0, **({"extra_body": extras} if extras else {}))
                m.extras = extras
                _note_response(m, r)
                break
            except ClientError as exc:
                last = exc
        else:
            raise last
    if logprobs == "off":
        return m
    if m.api == "completions":
        await _detect_completion_logprobs(tr, m)
    else:
        await _detect_chat_logprobs(tr, m)
    return m


def _note_response(m: Mode, r) -> None:
    """Keep only the model id the server answered with (redacted): its fingerprint, ids and other
    fields are not needed, and a hostile server could put anything in them."""
    m.server_model = server_string(getattr(r, "model", ""))


async def _detect_completion_logprobs(tr: Transport, m: Mode) -> None:
    # Next-token top log-probabilities (OpenAI caps logprobs at 5 on this endpoint).
    steps = []  # greedy tokens after PROBE_PROMPT with their next-token log-probabilities
    for k in (20, 5):
        try:
            for i in range(EOS_REDRAWS + 1):  # greedy first; seeded draws if that was EOS
                r = await tr.call("completions", prompt=PROBE_PROMPT, max_tokens=1, logprobs=k,
                                  **({"temperature": 1.0, "seed": i} if i else {"temperature": 0.0}))
                if _completion_top(r):
                    break
        except ClientError:
            continue
        if _completion_top(r):
            m.logprobs, m.top_k = "top", k
            steps.append(_completion_step(r))
            break
    if m.logprobs != "top" or steps[0] is None:
        return
    # A second greedy step, so the echo check compares two positions.
    prompt2 = PROBE_PROMPT + steps[0][0]
    try:
        r = await tr.call("completions", prompt=prompt2, max_tokens=1, temperature=0.0, logprobs=1)
        steps.append(_completion_step(r))
    except ClientError:
        steps.append(None)
    if steps[1] is None:
        steps = steps[:1]
    text = PROBE_PROMPT + "".join(s[0] for s in steps)
    checks = []  # (offset of the token, its text, its next-token log-probability)
    off = len(PROBE_PROMPT)
    for tok, lp in steps:
        checks.append((off, tok, lp))
        off += len(tok)
    # Echo: trusted only when it agrees with the next-token log-probabilities above.
    try:
        r = await tr.call("completions", prompt=text, echo=True, logprobs=1, max_tokens=1, temperature=0.0)
        toks = _echo_tokens(r.choices[0], len(text))
        if _agrees(toks, checks):
            m.logprobs = "echo"
            return
        log.warning("openai: the server's echoed log-probabilities disagree with its next-token "
                    "log-probabilities; not using echo")
    except (ClientError, Inexact, AttributeError, TypeError, IndexError):
        pass
    # vLLM's prompt_logprobs extension.
    try:
        r = await tr.call("completions", prompt=text, max_tokens=1, temperature=0.0,
                          extra_body={"prompt_logprobs": 0})
        toks = _prompt_logprob_tokens(r.choices[0], text)
        if _agrees(toks, checks):
            m.logprobs = "prompt_logprobs"
    except (ClientError, Inexact, AttributeError, TypeError, IndexError, KeyError, ValueError):
        pass


async def _detect_chat_logprobs(tr: Transport, m: Mode) -> None:
    for k in (20, 5):
        try:
            for i in range(EOS_REDRAWS + 1):
                r = await tr.call("chat", messages=[{"role": "user", "content": PROBE_PROMPT}], max_tokens=1,
                                  logprobs=True, top_logprobs=k,
                                  **({"temperature": 1.0, "seed": i} if i else {"temperature": 0.0}))
                if _chat_top(r):
                    break
        except ClientError:
            continue
        if _chat_top(r):
            m.logprobs, m.top_k = "top", k
            return

