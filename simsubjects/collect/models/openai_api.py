"""The `openai` backend: the OpenAI API and OpenAI-compatible servers (vLLM, llama.cpp, Ollama, ...).

Three parts, one module each:

* openai_transport.py: one loop that sends every request (base URLs, concurrency, rate limits,
  one deadline per attempt, retries with backoff);
* openai_probe.py: what the endpoint supports, probed once (API, sampler settings, exact path);
* openai_scoring.py: log p(c | prompt) of given continuations (echo, prompt_logprobs, top list).

This module ties them into the `LanguageModel` interface. `choose` turns the raw material into
option probabilities through collect/choice.py, the one k-choice path shared by every backend:
`exact_choice` for log-probabilities, `sample_choice_async` (draw until n valid answers, one
matching rule) where the endpoint has none or a completion is not a listed token.

The API key comes only from the environment variable OPENAI_API_KEY; it, and any credential in a
base URL (user info, key/token query parameters), is registered with simsubjects.redact and so
kept out of reprs, logs, failure reasons, the fingerprint, tables and the manifest.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Sequence

from simsubjects.collect.models.base import (
    ChoiceRequest,
    ChoiceResult,
    CompletionRequest,
    CompletionResult,
    ImpossibleLogprobs,
    ModelInfo,
)
from simsubjects.errors import UserError
from simsubjects.redact import mask_secrets, redact, redact_url, register_secret, register_url

from .. import choice as _choice  # a module reference: collect/choice.py imports this package too
from .openai_probe import PROBE_PROMPT, Mode, detect, endpoint_key, forget_endpoints  # noqa: F401 (re-exported)
from .openai_scoring import (  # noqa: F401 (re-exported for tests and callers)
    Inexact,
    _prompt_logprob_tokens,
    _stable_seed,
    _suffix_logprob,
    _total_logprob,
    sampling_params,
    scored_logprobs,
    top_logprobs,
)
from .openai_transport import (  # noqa: F401
    DEFAULT_BASE_URL,
    ENV_KEY,
    NO_KEY,
    ClientError,
    Failure,
    NoAnswer,
    Transport,
    is_openai_host,
    retry_after as _retry_after,
)
from .openai_scoring import EOS_REDRAWS, _chat_top
from .registry import Backend, register
from .spec import check_url

log = logging.getLogger(__name__)

MAX_N_PER_REQUEST = 128  # OpenAI's limit on `n`

_Failure, _ClientError, _Inexact = Failure, ClientError, Inexact  # the names before the split


def _match(sample: str, completions: Sequence[str]) -> int | None:
    """The one matching rule (collect/choice.py); kept under its old name."""
    return _choice.match_option(sample, completions)


def _failed_choice(k: int, method: str, reason: str, n_queries: int) -> ChoiceResult:
    nan = float("nan")
    return ChoiceResult(probs=[nan] * k, validity=nan, method=method, n_queries=n_queries, failed=reason)


def openai_fingerprint(model: str, n_base_urls: int, logprobs: str = "auto", api: str = "auto") -> dict:
    """What enters an `openai` model's cache keys; also built without a model or a key, for the
    batch files of collect/batch.py, whose custom ids are these cache keys."""
    return {"backend": "openai", "model": model, "n_base_urls": n_base_urls, "logprobs": logprobs, "api": api}


class OpenAIModel:
    """A model behind the OpenAI API or an OpenAI-compatible server.

    Parameters
    ----------
    model: the API model id (``gpt-4o-mini``, the served name on vLLM/llama.cpp/Ollama).
    base_url: ``.../v1`` of the server, or a list of URLs serving the same model (load is spread
        over them); None means api.openai.com.
    concurrency: requests in flight per base URL.
    timeout: seconds one attempt of one request may take.
    max_retries: retries per request after the first attempt (429, 5xx, timeouts, dropped
        connections); after that the request's result has `failed` set.
    requests_per_second: optional rate limit per base URL.
    logprobs: "auto" (use log-probabilities where the endpoint returns them) or "off" (always sample).
    api: "auto" (completions endpoint where it exists, else chat), "completions" or "chat".
        With chat, the prompt is sent as one user message.
    backoff, max_backoff: first and largest wait (seconds) between retries, before jitter.
    spec: the model spec the user wrote (recorded in `info`, user info in URLs removed).
    """

    def __init__(
        self,
        model: str,
        base_url: str | list[str] | None = None,
        *,
        concurrency: int = 8,
        timeout: float = 60.0,
        max_retries: int = 6,
        requests_per_second: float | None = None,
        logprobs: str = "auto",
        api: str = "auto",
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        spec: str | None = None,
    ):
        if not model:
            raise UserError("openai backend: give a model id, e.g. openai:gpt-4o-mini")
        if logprobs not in ("auto", "off"):
            raise UserError(f"openai backend: logprobs must be 'auto' or 'off', not {logprobs!r}")
        if api not in ("auto", "completions", "chat"):
            raise UserError(f"openai backend: api must be 'auto', 'completions' or 'chat', not {api!r}")
        if concurrency < 1 or not timeout or timeout <= 0 or max_retries < 0:
            raise UserError("openai backend: concurrency >= 1, timeout > 0 and max_retries >= 0 are required")
        if requests_per_second is not None and requests_per_second <= 0:
            raise UserError("openai backend: requests_per_second must be positive (or None for no limit)")
        urls = [base_url] if isinstance(base_url, str) else list(base_url or [DEFAULT_BASE_URL])
        if not urls or not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in urls):
            raise UserError("openai backend: base_url must be http(s) URLs such as http://127.0.0.1:8000/v1")
        for u in urls:
            register_url(u)  # a password or key in a URL is masked wherever it would appear
        self.model = model
        self.spec = redact(spec) if spec else f"openai:{model}"
        self.base_urls = [u.rstrip("/") for u in urls]
        self.logprobs = logprobs
        self.api = api

        key = os.environ.get(ENV_KEY, "")
        if not key:
            if any(is_openai_host(u) for u in self.base_urls):
                raise UserError(f"{ENV_KEY} is not set: export your OpenAI API key to use openai:{model}")
            key = NO_KEY
        register_secret(key)
        # the probe's verdict is shared with other model objects on the same endpoint (openai_probe.py)
        self._endpoint = endpoint_key(self.base_urls, model, api, logprobs, key)
        self._transport = Transport(model, self.base_urls, key, concurrency=int(concurrency), timeout=float(timeout),
                                    max_retries=int(max_retries), requests_per_second=requests_per_second,
                                    backoff=float(backoff), max_backoff=float(max_backoff))
        self._mode: Mode | None = None
        self._detect_lock: asyncio.Lock | None = None

    # -- settings kept on the transport ------------------------------------------------------------
    concurrency = property(lambda self: self._transport.concurrency)
    timeout = property(lambda self: self._transport.timeout)
    max_retries = property(lambda self: self._transport.max_retries)
    requests_per_second = property(lambda self: self._transport.requests_per_second)
    stats = property(lambda self: self._transport.stats)

    # -- the interface ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"OpenAIModel(model={self.model!r}, base_urls={len(self.base_urls)})"

    @property
    def info(self) -> ModelInfo:
        m = self._mode
        server = m.server_model if m else ""
        details = {
            "api_model": self.model,
            "server_model": server,
            "base_urls": [redact_url(u) for u in self.base_urls],
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "requests_per_second": self.requests_per_second,
            "logprobs": self.logprobs,
            "stats": dict(self.stats),
        }
        if m:
            details.update(api=m.api, choice_method=m.logprobs, top_logprobs=m.top_k, sampler_params=m.extras,
                           n_supported=m.n_ok, served_models=m.served_models)
        revision = self.model if not server or server == self.model else f"{self.model} ({server})"
        return ModelInfo(spec=self.spec, backend="openai", name=redact(self.model),
                         revision=redact(revision), details=details)

    def fingerprint(self) -> dict:
        return openai_fingerprint(self.model, len(self.base_urls), self.logprobs, self.api)

    def choose(self, requests: Sequence[ChoiceRequest], method: str = "exact") -> list[ChoiceResult]:
        """method "exact": log-probabilities where the endpoint has them (else sampling);
        "sampled": always the sampling protocol (draw until `n` valid answers)."""
        requests = list(requests)
        self.stats["model_requests"] += len(requests)
        if not requests:
            return []
        one = self._choose_one if method == "exact" else self._choose_sampled_only
        return self._run(self._gather(one, requests))

    def complete(self, requests: Sequence[CompletionRequest]) -> list[CompletionResult]:
        requests = list(requests)
        self.stats["model_requests"] += len(requests)
        if not requests:
            return []
        return self._run(self._gather(self._complete_one, requests))

    def usage(self) -> dict:
        """Requests asked, HTTP calls made, and the tokens the server billed (its `usage` fields)."""
        return {"requests": self.stats["model_requests"], "calls": self.stats["requests"],
                "prompt_tokens": self.stats["prompt_tokens"], "completion_tokens": self.stats["completion_tokens"]}

    def meter(self, gate) -> None:
        """--max-cost: every HTTP call is admitted by `gate` before it is sent (collect/budget.py CallGate)."""
        self._transport.gate = gate

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> "OpenAIModel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- running on the transport's loop -----------------------------------------------------------
    def _run(self, coro):
        return self._transport.run(coro)

    async def _gather(self, one, requests):
        await self._transport.setup()
        await self._ensure_mode()
        return await asyncio.gather(*(one(r) for r in requests))

    async def _ensure_mode(self) -> None:
        if self._mode is not None:
            return
        if self._detect_lock is None:
            self._detect_lock = asyncio.Lock()
        async with self._detect_lock:
            if self._mode is None:
                self._mode = await self._probe()
                log.info("openai: %s at %d URL(s): api=%s, choose=%s", self.model, len(self.base_urls),
                         self._mode.api, self._mode.logprobs)

    async def _probe(self) -> Mode:
        """The probe; its failures become one line naming the (redacted) URL."""
        url = redact_url(self.base_urls[0])
        try:
            return await detect(self._transport, self.api, self.logprobs, remember=self._endpoint)
        except ClientError as exc:
            if exc.status in (401, 403):
                raise UserError(f"the server rejected the API key (HTTP {exc.status}): set {ENV_KEY} "
                                f"to a valid key for {url}") from None
            raise UserError(f"openai:{redact(self.model)}: {exc}") from None
        except Failure as exc:
            raise UserError(f"cannot use {url} ({exc}); check that the server is running and the URL ends in /v1") from None

    # -- choose: raw material from the server, probabilities from collect/choice.py ----------------
    async def _choose_one(self, req: ChoiceRequest) -> ChoiceResult:
        k = len(req.completions)
        mode = self._mode.logprobs
        method = "exact" if mode != "sample" else "sampled"
        counter = [0]
        try:
            if k == 0:
                raise Failure("no completions to choose from")
            if req.messages:  # chat turns (a session with a chat template): the chat endpoint
                return await self._choose_turns(req, counter)
            scorer = {"echo": scored_logprobs, "prompt_logprobs": scored_logprobs, "top": top_logprobs}.get(mode)
            if scorer is not None:
                try:
                    lps = await scorer(self._transport, self._mode, req.prompt, req.completions, counter)
                    # echoed tokens are checked one by one in scored_logprobs (a straddle's ratio may pass 0)
                    return _choice.exact_choice(lps, n_queries=counter[0], checked=scorer is scored_logprobs)
                except Inexact as exc:
                    log.debug("openai: exact scoring impossible (%s); sampling", exc)
            method = "sampled"
            counter = [0]
            return await self._choose_sampled(req, counter)
        except Failure as exc:
            return _failed_choice(k, method, str(exc), counter[0])
        except ImpossibleLogprobs as exc:  # a server that answers impossible numbers is not used (issue 42)
            raise UserError(f"{redact_url(self.base_urls[0])}: {exc}: not log-probabilities a model can give; "
                            "the server's answers cannot be used") from None
        except (AttributeError, TypeError, IndexError, KeyError, ValueError) as exc:
            return _failed_choice(k, method, f"unexpected response: {redact(repr(exc))[:300]}", counter[0])

    async def _choose_turns(self, req: ChoiceRequest, counter: list) -> ChoiceResult:
        """Chat turns as messages; the first token of the assistant's answer from the chat endpoint's
        top log-probabilities (exact when each completion, its leading space dropped as the start of
        a turn has none, is one token among them). No sampled fallback for turns yet: the decision
        fails with the reason instead."""
        messages = [{"role": role, "content": text} for role, text in req.messages]
        top, seed = {}, _stable_seed(*(t for _, t in req.messages))
        for i in range(EOS_REDRAWS + 1):  # no log-probabilities when EOS is drawn: redraw, seeded
            counter[0] += 1
            params = {"temperature": 0.0} if i == 0 else {**sampling_params(self._mode, 1.0), "seed": seed + i}
            r = await self._transport.call("chat", messages=messages, max_tokens=1, logprobs=True,
                                           top_logprobs=max(self._mode.top_k, 20), **params)
            top = _chat_top(r)
            if top:
                break
        lps = [top.get(c, top.get(c.lstrip())) for c in req.completions]
        if any(v is None for v in lps):
            raise Failure(f"{sum(v is None for v in lps)} option(s) not a token among the chat endpoint's top "
                          "log-probabilities: chat turns are exact only for one-token options")
        return _choice.exact_choice(lps, n_queries=counter[0])

    async def _choose_sampled_only(self, req: ChoiceRequest) -> ChoiceResult:
        counter = [0]
        if req.messages:
            return _failed_choice(len(req.completions), "sampled", "chat turns are scored exactly only "
                                  "(--method exact)", 0)
        try:
            return await self._choose_sampled(req, counter)
        except Failure as exc:
            return _failed_choice(len(req.completions), "sampled", str(exc), counter[0])

    async def _choose_sampled(self, req: ChoiceRequest, counter: list) -> ChoiceResult:
        """The protocol of collect/choice.py; draws seeded from the request and the draw count."""
        max_tokens = max(len(c.lstrip().encode("utf-8")) for c in req.completions) + 2  # +: the boundary
        base_seed = _stable_seed(req.prompt, *req.completions)

        async def draw(want: int, _round: int, drawn: int) -> list[str]:
            return await self._draw(req.prompt, want, max_tokens, base_seed + drawn, counter)

        proto = await _choice.sample_choice_async(req, draw, lambda: Failure("the server returned no samples"))
        return proto.result()  # n_queries = draws, as the protocol defines it

    async def _draw(self, prompt: str, want: int, max_tokens: int, seed: int, counter: list) -> list[str]:
        """`want` samples at temperature 1, several per request where the server honours `n`."""
        m = self._mode
        if m.n_ok is None and want > 1:  # learn whether `n` works from the first request
            first = await self._sample(prompt, min(want, MAX_N_PER_REQUEST), max_tokens, seed, counter)
            m.n_ok = len(first) >= min(want, MAX_N_PER_REQUEST)
            rest = want - len(first)
            return first + (await self._draw(prompt, rest, max_tokens, seed + len(first), counter) if rest > 0 else [])
        sizes = ([MAX_N_PER_REQUEST] * (want // MAX_N_PER_REQUEST) + [want % MAX_N_PER_REQUEST]) if m.n_ok else [1] * want
        sizes = [s for s in sizes if s > 0]
        seeds = [seed + sum(sizes[:i]) for i in range(len(sizes))]
        batches = await asyncio.gather(*(self._sample(prompt, s, max_tokens, sd, counter) for s, sd in zip(sizes, seeds)))
        return [t for b in batches for t in b]

    async def _sample(self, prompt: str, n: int, max_tokens: int, seed: int, counter: list,
                      temperature: float = 1.0, top_p: float = 1.0, stop: Sequence[str] = ()) -> list[str]:
        m = self._mode
        counter[0] += 1
        params = sampling_params(m, temperature, top_p)
        params.update(max_tokens=max_tokens, seed=seed % 2**31)
        if n > 1:
            params["n"] = n
        if stop:
            params["stop"] = list(stop)
        try:
            if m.api == "completions":
                r = await self._transport.call("completions", prompt=prompt, **params)
                return [c.text or "" for c in r.choices]
            r = await self._transport.call("chat", messages=[{"role": "user", "content": prompt}], **params)
            return [(c.message.content or "") for c in r.choices]
        except ClientError as exc:
            if n > 1 and exc.status in (400, 422):  # this server refuses n > 1: one sample per request
                m.n_ok = False
                counter[0] -= 1
                return await self._sample(prompt, 1, max_tokens, seed, counter, temperature, top_p, stop)
            raise

    # -- complete -----------------------------------------------------------------------------------
    async def _complete_one(self, req: CompletionRequest) -> CompletionResult:
        counter = [0]
        m = self._mode
        try:
            texts: list[str] = []
            while len(texts) < req.n:
                want = req.n - len(texts)
                if m.n_ok is False:
                    batches = await asyncio.gather(*(
                        self._sample(req.prompt, 1, req.max_tokens, req.seed + len(texts) + i, counter,
                                     req.temperature, req.top_p, req.stop) for i in range(want)))
                    got = [t for b in batches for t in b]
                else:
                    got = await self._sample(req.prompt, min(want, MAX_N_PER_REQUEST), req.max_tokens,
                                             req.seed + len(texts), counter, req.temperature, req.top_p, req.stop)
                    if want > 1 and m.n_ok is None:
                        m.n_ok = len(got) >= min(want, MAX_N_PER_REQUEST)
                if not got:
                    raise Failure("the server returned no choices")
                texts.extend(got)
            # a server's text is stored: a secret it echoes (the key, a URL password) is masked
            return CompletionResult(texts=[mask_secrets(t) for t in texts[: req.n]], n_queries=counter[0])
        except Failure as exc:
            return CompletionResult(texts=[], n_queries=counter[0], failed=str(exc))
        except (AttributeError, TypeError, IndexError, KeyError, ValueError) as exc:
            return CompletionResult(texts=[], n_queries=counter[0],
                                    failed=f"unexpected response: {redact(repr(exc))[:300]}")





# -- registration: openai:MODEL and openai:MODEL@URL1,URL2 ---------------------------------------------
def _parse_openai(rest: str, spec: str) -> tuple[str, list[str]]:
    shown = redact(spec)
    if not rest:
        raise UserError(f"model spec {shown!r} names no model; write openai:MODEL or openai:MODEL@URL")
    # the model id cannot hold '@'; the first '@' ends it (a URL's user info has its own '@')
    name, _, urls = rest.partition("@")
    if not name:
        raise UserError(f"model spec {shown!r} names no model; write openai:MODEL or openai:MODEL@URL")
    urls = [u for u in urls.split(",") if u]
    for u in urls:
        check_url(u, f"model spec {shown!r}")
    return name, urls


def _load_openai(name: str, urls: list[str], spec: str, **options) -> OpenAIModel:
    return OpenAIModel(name, base_url=urls or None, spec=spec, **options)


def _register() -> None:
    register(Backend("openai", parse=_parse_openai, load=_load_openai, server=True))


_register()
