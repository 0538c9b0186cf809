"""The `openai` backend: the OpenAI API and OpenAI-compatible servers (vLLM, llama.cpp, Ollama, ...).

`choose` is exact where the endpoint returns the needed log-probabilities and sampled otherwise:

* ``echo``: legacy /v1/completions with ``echo=True, logprobs`` scores prompt+completion; the
  completion's log-probability is the sum over its tokens (text offsets find the boundary). When a
  token straddles the boundary (prompt "Answer: " + "Yes" is tokenized "Answer", ":", " Yes"), the
  prompt is scored alone too and log p(c | s) = log p(s·c) - log p(s).
* ``prompt_logprobs``: the same from vLLM's ``prompt_logprobs`` extension.
* ``top``: only the next token's top log-probabilities (completions ``logprobs=K`` or chat
  ``top_logprobs``): exact when every completion is one token found in the top list; otherwise
  that request is sampled.
* ``sample``: draw at temperature 1 until ``request.n`` answers start with one of the completions.

Which one the endpoint supports is probed once (a handful of tiny requests) and cached. Echoed
log-probabilities are only trusted after checking them against next-token log-probabilities,
because some servers misalign them (llama-cpp-python 0.3.x on models without a BOS token).

Requests run on an asyncio loop in a private thread, spread over one or more base URLs (least busy
first) with `concurrency` requests in flight per URL and an optional rate limit per URL. 429, 5xx,
timeouts and dropped connections are retried with exponential backoff and jitter (429 honours
Retry-After); a request that still fails returns a result with `failed` set instead of raising.

The API key comes only from the environment variable OPENAI_API_KEY and is kept out of reprs,
logs, failure reasons and the fingerprint.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import logging
import math
import os
import random
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit, urlunsplit

from simsubjects.collect.models.base import (
    ChoiceRequest,
    ChoiceResult,
    CompletionRequest,
    CompletionResult,
    ModelInfo,
)
from simsubjects.errors import UserError

log = logging.getLogger(__name__)

ENV_KEY = "OPENAI_API_KEY"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "sk-no-key"  # self-hosted servers without auth still want some bearer token

# A probe whose greedy continuation is a short, cleanly tokenized word for almost any model.
PROBE_PROMPT = "The capital of France is"
ECHO_TOLERANCE = 0.05  # nats; echo vs next-token log-probabilities of the same token
MAX_N_PER_REQUEST = 128  # OpenAI's limit on `n`
MAX_RETRY_AFTER = 120.0
EOS_REDRAWS = 4  # seeded redraws when the next-token answer came back without log-probabilities

# llama.cpp-family servers default to top_k=40, min_p=0.05, repeat_penalty=1.1, which would bias
# "temperature 1" sampling; these neutral values are tried first on non-OpenAI hosts.
_NEUTRAL_SAMPLERS = ({"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}, {"top_k": -1, "min_p": 0.0}, {})


class _Failure(Exception):
    """A request that did not succeed; its message is the (redacted) reason."""


class _ClientError(_Failure):
    """A 4xx answer other than 429: retrying will not help (unsupported parameter, bad model, ...)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class _Inexact(Exception):
    """The exact path cannot score this request; fall back to sampling."""


@dataclass(eq=False)
class _Endpoint:
    url: str
    client: Any
    inflight: int = 0
    sent: int = 0
    next_slot: float = 0.0
    penalty_until: float = 0.0


@dataclass
class _Mode:
    """What the endpoint supports, found by `_detect`."""

    api: str = "completions"  # "completions" | "chat": used for sampling and `complete`
    logprobs: str = "sample"  # "echo" | "prompt_logprobs" | "top" | "sample"
    top_k: int = 0  # how many top log-probabilities one request returns
    extras: dict = field(default_factory=dict)  # neutral sampler settings the server accepted
    n_ok: bool | None = None  # does the server honour `n` > 1? (None: not known yet)
    served_models: list = field(default_factory=list)
    server_model: str = ""
    system_fingerprint: str = ""


def _redactor(secret: str) -> Callable[[str], str]:
    pattern = re.compile(r"(sk-[A-Za-z0-9_\-]{3})[A-Za-z0-9_\-]{6,}")

    def redact(text: str) -> str:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[REDACTED]")
        return pattern.sub(r"\1[REDACTED]", text)

    return redact


def _public_url(url: str) -> str:
    """The URL without user info, query or fragment (which may carry credentials)."""
    p = urlsplit(url)
    host = p.hostname or ""
    netloc = host + (f":{p.port}" if p.port else "")
    return urlunsplit((p.scheme, netloc, p.path, "", ""))


def _is_openai_host(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith(".openai.com")


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
        if concurrency < 1 or timeout <= 0 or max_retries < 0:
            raise UserError("openai backend: concurrency >= 1, timeout > 0 and max_retries >= 0 are required")
        if requests_per_second is not None and requests_per_second <= 0:
            raise UserError("openai backend: requests_per_second must be positive (or None for no limit)")
        urls = [base_url] if isinstance(base_url, str) else list(base_url or [DEFAULT_BASE_URL])
        if not urls or not all(isinstance(u, str) and u.startswith(("http://", "https://")) for u in urls):
            raise UserError("openai backend: base_url must be http(s) URLs such as http://127.0.0.1:8000/v1")
        self.model = model
        self.spec = re.sub(r"//[^/@\s]*@", "//", spec) if spec else f"openai:{model}"
        self.base_urls = [u.rstrip("/") for u in urls]
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.requests_per_second = requests_per_second
        self.logprobs = logprobs
        self.api = api
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.stats: Counter = Counter()  # requests, retries, faults seen, failures

        key = os.environ.get(ENV_KEY, "")
        if not key:
            if any(_is_openai_host(u) for u in self.base_urls):
                raise UserError(f"{ENV_KEY} is not set: export your OpenAI API key to use openai:{model}")
            key = NO_KEY
        # Held only inside closures: not an attribute, so not in vars(), reprs or pickles.
        self._api_key = lambda: key
        self._redact = _redactor(key)

        self._mode: _Mode | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._endpoints: list[_Endpoint] = []
        self._slots: asyncio.Semaphore | None = None
        self._detect_lock: asyncio.Lock | None = None
        self._closed = False

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
            "base_urls": [_public_url(u) for u in self.base_urls],
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "requests_per_second": self.requests_per_second,
            "logprobs": self.logprobs,
            "stats": dict(self.stats),
        }
        if m:
            details.update(
                api=m.api, choice_method=m.logprobs, top_logprobs=m.top_k, sampler_params=m.extras,
                n_supported=m.n_ok, served_models=m.served_models, system_fingerprint=m.system_fingerprint,
            )
        revision = self.model if not server or server == self.model else f"{self.model} ({server})"
        return ModelInfo(spec=self.spec, backend="openai", name=self.model,
                         revision=revision, details=details)

    def fingerprint(self) -> dict:
        return {
            "backend": "openai", "model": self.model, "n_base_urls": len(self.base_urls),
            "logprobs": self.logprobs, "api": self.api,
        }

    def choose(self, requests: Sequence[ChoiceRequest], method: str = "exact") -> list[ChoiceResult]:
        """method "exact": log-probabilities where the endpoint has them (else sampling);
        "sampled": always the sampling protocol (draw until `n` valid answers)."""
        requests = list(requests)
        self.stats["model_requests"] += len(requests)
        if not requests:
            return []
        one = self._choose_one if method == "exact" else self._choose_sampled_only
        return self._run(self._gather(one, requests))

    async def _choose_sampled_only(self, req: ChoiceRequest) -> ChoiceResult:
        counter = [0]
        try:
            return await self._choose_sampled(req, counter)
        except _Failure as exc:
            return _failed_choice(len(req.completions), "sampled", str(exc), counter[0])

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

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        loop, thread = self._loop, self._thread
        if loop is None:
            return

        async def shutdown():
            for ep in self._endpoints:
                await ep.client.close()

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        except Exception:  # closing is best effort
            pass
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)
        if not loop.is_running():
            loop.close()
        self._loop = self._thread = None

    def __enter__(self) -> "OpenAIModel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the private event loop -------------------------------------------------------------------
    def _run(self, coro):
        """Run `coro` on this model's loop thread (works inside Jupyter's running loop too)."""
        if self._closed:
            coro.close()
            raise RuntimeError("OpenAIModel is closed")
        with self._start_lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="simsubjects-openai", daemon=True)
                self._thread.start()
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    async def _setup(self) -> None:
        if self._endpoints:
            return
        from openai import AsyncOpenAI

        key = self._api_key()
        self._endpoints = [
            _Endpoint(url=u, client=AsyncOpenAI(api_key=key, base_url=u, timeout=self.timeout, max_retries=0))
            for u in self.base_urls
        ]
        self._slots = asyncio.Semaphore(self.concurrency * len(self._endpoints))
        self._detect_lock = asyncio.Lock()

    async def _gather(self, one, requests):
        await self._setup()
        await self._ensure_mode()
        return await asyncio.gather(*(one(r) for r in requests))

    # -- one HTTP request, with endpoint choice, rate limit, timeout and retries -------------------
    async def _acquire(self) -> _Endpoint:
        await self._slots.acquire()
        now = time.monotonic()
        ep = min(self._endpoints,
                 key=lambda e: (e.inflight >= self.concurrency, e.penalty_until > now, e.inflight, e.sent))
        ep.inflight += 1
        ep.sent += 1
        if self.requests_per_second:
            slot = max(now, ep.next_slot)
            ep.next_slot = slot + 1.0 / self.requests_per_second
            if slot > now:
                await asyncio.sleep(slot - now)
        return ep

    def _release(self, ep: _Endpoint) -> None:
        ep.inflight -= 1
        self._slots.release()

    def _backoff(self, attempt: int) -> float:
        base = min(self.max_backoff, self.backoff * 2 ** attempt)
        return base * random.uniform(0.5, 1.0)

    async def _call(self, kind: str, **params):
        """POST one completions/chat request; retry transient failures; raise _Failure at the end."""
        import openai

        reason = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.stats["retries"] += 1
            ep = await self._acquire()
            wait = None
            try:
                self.stats["requests"] += 1
                create = ep.client.completions.create if kind == "completions" else ep.client.chat.completions.create
                r = await asyncio.wait_for(create(model=self.model, **params), self.timeout)
                u = getattr(r, "usage", None)  # what the server bills; absent on some servers
                self.stats["prompt_tokens"] += int(getattr(u, "prompt_tokens", 0) or 0)
                self.stats["completion_tokens"] += int(getattr(u, "completion_tokens", 0) or 0)
                return r
            except openai.APIStatusError as exc:
                status = exc.status_code
                # 429 "insufficient_quota" means no credit left: waiting will not bring it back.
                if (status < 500 and status not in (408, 409, 429)) or getattr(exc, "code", None) == "insufficient_quota":
                    message = self._redact(_error_message(exc))
                    raise _ClientError(status, f"HTTP {status} from {_public_url(ep.url)}: {message}") from None
                self.stats[f"http_{status}"] += 1
                wait = _retry_after(exc.response)  # 429, and some 503s, say how long to wait
                reason = "rate limited (429)" if status == 429 else \
                    f"server error {status}: {self._redact(_error_message(exc))}"
            except (openai.APITimeoutError, asyncio.TimeoutError):
                self.stats["timeouts"] += 1
                reason = f"timed out after {self.timeout:g}s"
            except openai.APIConnectionError as exc:
                self.stats["connection_errors"] += 1
                cause = exc.__cause__ or exc
                reason = f"connection error ({type(cause).__name__})"
                ep.penalty_until = time.monotonic() + self._backoff(attempt)
            except openai.APIError as exc:  # e.g. a body that is not the expected JSON
                raise _Failure(f"bad response from {_public_url(ep.url)}: {self._redact(str(exc))[:300]}") from None
            finally:
                self._release(ep)
            if attempt < self.max_retries:
                delay = min(wait, MAX_RETRY_AFTER) * random.uniform(1.0, 1.1) if wait is not None else self._backoff(attempt)
                log.debug("openai: retry %d/%d in %.2fs: %s", attempt + 1, self.max_retries, delay, reason)
                await asyncio.sleep(delay)
        self.stats["failed_requests"] += 1
        raise _Failure(f"gave up after {self.max_retries + 1} attempts: {reason}")

    def _sampling_params(self, temperature: float, top_p: float = 1.0) -> dict:
        m = self._mode
        params = {"temperature": temperature, "top_p": top_p}
        if m.extras:
            params["extra_body"] = dict(m.extras)
        return params

    # -- probing what the endpoint supports (once) ------------------------------------------------
    async def _ensure_mode(self) -> None:
        if self._mode is not None:
            return
        async with self._detect_lock:
            if self._mode is None:
                try:
                    self._mode = await self._detect()
                except _ClientError as exc:
                    if exc.status in (401, 403):
                        raise UserError(f"the server rejected the API key (HTTP {exc.status}): set {ENV_KEY} "
                                        f"to a valid key for {_public_url(self.base_urls[0])}") from None
                    raise UserError(f"openai:{self.model}: {exc}") from None
                except _Failure as exc:
                    raise UserError(f"cannot use {_public_url(self.base_urls[0])} ({exc}); "
                                    "check that the server is running and the URL ends in /v1") from None
                log.info("openai: %s at %d URL(s): api=%s, choose=%s", self.model, len(self.base_urls),
                         self._mode.api, self._mode.logprobs)

    async def _detect(self) -> _Mode:
        m = _Mode()
        m.served_models = await self._list_models()
        if m.served_models and not any(s == self.model or s.split(":")[0] == self.model for s in m.served_models):
            log.warning("openai: %s is not among the models the server lists (%s)", self.model,
                        ", ".join(m.served_models[:10]))
        extras_options = [{}] if any(_is_openai_host(u) for u in self.base_urls) else list(_NEUTRAL_SAMPLERS)

        first_error: _ClientError | None = None
        if self.api in ("auto", "completions"):
            for extras in extras_options:
                try:
                    r = await self._call("completions", prompt=PROBE_PROMPT, max_tokens=1, temperature=0.0,
                                         **({"extra_body": extras} if extras else {}))
                    m.api, m.extras = "completions", extras
                    self._note_response(m, r)
                    break
                except _ClientError as exc:
                    first_error = first_error or exc
            else:
                if self.api == "completions" or first_error.status in (401, 403):
                    raise first_error
                m.api = "chat"
        else:
            m.api = "chat"
        if m.api == "chat":
            for extras in extras_options:
                try:
                    r = await self._call("chat", messages=[{"role": "user", "content": PROBE_PROMPT}], max_tokens=1,
                                         temperature=0.0, **({"extra_body": extras} if extras else {}))
                    m.extras = extras
                    self._note_response(m, r)
                    break
                except _ClientError as exc:
                    last = exc
            else:
                raise last
        if self.logprobs == "off":
            return m
        if m.api == "completions":
            await self._detect_completion_logprobs(m)
        else:
            await self._detect_chat_logprobs(m)
        return m

    def _note_response(self, m: _Mode, r) -> None:
        m.server_model = str(getattr(r, "model", "") or "")
        m.system_fingerprint = str(getattr(r, "system_fingerprint", "") or "")

    async def _list_models(self) -> list[str]:
        ep = self._endpoints[0]
        try:
            page = await asyncio.wait_for(ep.client.models.list(), self.timeout)
            return [str(x.id) for x in page.data]
        except asyncio.TimeoutError:
            return []
        except Exception as exc:  # many servers lack /models; a bad key shows up in the next probe
            log.debug("openai: listing models failed: %s", self._redact(type(exc).__name__))
            return []

    async def _detect_completion_logprobs(self, m: _Mode) -> None:
        # Next-token top log-probabilities (OpenAI caps logprobs at 5 on this endpoint).
        steps = []  # greedy tokens after PROBE_PROMPT with their next-token log-probabilities
        for k in (20, 5):
            try:
                for i in range(EOS_REDRAWS + 1):  # greedy first; seeded draws if that was EOS
                    r = await self._call("completions", prompt=PROBE_PROMPT, max_tokens=1, logprobs=k,
                                         **({"temperature": 1.0, "seed": i} if i else {"temperature": 0.0}))
                    if _completion_top(r):
                        break
            except _ClientError:
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
            r = await self._call("completions", prompt=prompt2, max_tokens=1, temperature=0.0, logprobs=1)
            steps.append(_completion_step(r))
        except _ClientError:
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
            r = await self._call("completions", prompt=text, echo=True, logprobs=1, max_tokens=1, temperature=0.0)
            toks = _echo_tokens(r.choices[0], len(text))
            if _agrees(toks, checks):
                m.logprobs = "echo"
                return
            log.warning("openai: the server's echoed log-probabilities disagree with its next-token "
                        "log-probabilities; not using echo")
        except (_ClientError, _Inexact, AttributeError, TypeError, IndexError):
            pass
        # vLLM's prompt_logprobs extension.
        try:
            r = await self._call("completions", prompt=text, max_tokens=1, temperature=0.0,
                                 extra_body={"prompt_logprobs": 0})
            toks = _prompt_logprob_tokens(r.choices[0], text)
            if _agrees(toks, checks):
                m.logprobs = "prompt_logprobs"
        except (_ClientError, _Inexact, AttributeError, TypeError, IndexError, KeyError, ValueError):
            pass

    async def _detect_chat_logprobs(self, m: _Mode) -> None:
        for k in (20, 5):
            try:
                for i in range(EOS_REDRAWS + 1):
                    r = await self._call("chat", messages=[{"role": "user", "content": PROBE_PROMPT}], max_tokens=1,
                                         logprobs=True, top_logprobs=k,
                                         **({"temperature": 1.0, "seed": i} if i else {"temperature": 0.0}))
                    if _chat_top(r):
                        break
            except _ClientError:
                continue
            if _chat_top(r):
                m.logprobs, m.top_k = "top", k
                return

    # -- choose -------------------------------------------------------------------------------------
    async def _choose_one(self, req: ChoiceRequest) -> ChoiceResult:
        k = len(req.completions)
        mode = self._mode.logprobs
        method = "exact" if mode != "sample" else "sampled"
        counter = [0]
        try:
            if k == 0:
                raise _Failure("no completions to choose from")
            if mode in ("echo", "prompt_logprobs"):
                try:
                    return await self._choose_scored(req, counter)
                except _Inexact as exc:
                    log.debug("openai: exact scoring impossible (%s); sampling", exc)
            elif mode == "top":
                try:
                    return await self._choose_top(req, counter)
                except _Inexact as exc:
                    log.debug("openai: %s; sampling", exc)
            method = "sampled"
            counter = [0]
            return await self._choose_sampled(req, counter)
        except _Failure as exc:
            return _failed_choice(k, method, str(exc), counter[0])
        except (AttributeError, TypeError, IndexError, KeyError, ValueError) as exc:
            return _failed_choice(k, method, f"unexpected response: {self._redact(repr(exc))[:300]}", counter[0])

    async def _score(self, text: str, counter: list) -> list[tuple[int, str, float | None]]:
        counter[0] += 1
        if self._mode.logprobs == "echo":
            r = await self._call("completions", prompt=text, echo=True, logprobs=1, max_tokens=1, temperature=0.0)
            return _echo_tokens(r.choices[0], len(text))
        r = await self._call("completions", prompt=text, max_tokens=1, temperature=0.0,
                             extra_body={"prompt_logprobs": 0})
        return _prompt_logprob_tokens(r.choices[0], text)

    async def _choose_scored(self, req: ChoiceRequest, counter: list) -> ChoiceResult:
        s = req.prompt
        if not s:
            raise _Inexact("empty prompt")
        scored = await asyncio.gather(*(self._score(s + c, counter) for c in req.completions))
        prompt_alone = None
        logprobs = []
        for toks in scored:
            lp = _suffix_logprob(toks, len(s))
            if lp is None:  # a token straddles the boundary: log p(s·c) - log p(s)
                if prompt_alone is None:
                    prompt_alone = await self._score(s, counter)
                lp = _total_logprob(toks, prompt_alone)
            logprobs.append(lp)
        return ChoiceResult.from_logprobs(logprobs, n_queries=counter[0])

    async def _choose_top(self, req: ChoiceRequest, counter: list) -> ChoiceResult:
        top = await self._next_token_top(req.prompt, 0.0, 0, counter)
        # llama-cpp-python returns no log-probabilities when the token it generates is EOS; the
        # returned log-probabilities do not depend on temperature, so draw (seeded) until it is not.
        seed = _stable_seed(req.prompt)
        for i in range(EOS_REDRAWS):
            if top:
                break
            top = await self._next_token_top(req.prompt, 1.0, seed + i, counter)
        missing = [c for c in req.completions if c not in top]
        if missing:
            raise _Inexact(f"{len(missing)} completion(s) not a token among the top {self._mode.top_k}")
        return ChoiceResult.from_logprobs([top[c] for c in req.completions], n_queries=counter[0])

    async def _next_token_top(self, prompt: str, temperature: float, seed: int, counter: list) -> dict[str, float]:
        counter[0] += 1
        k = self._mode.top_k
        params = self._sampling_params(temperature) if temperature else {"temperature": 0.0}
        if temperature:
            params["seed"] = seed
        if self._mode.api == "completions":
            r = await self._call("completions", prompt=prompt, max_tokens=1, logprobs=k, **params)
            return _completion_top(r)
        r = await self._call("chat", messages=[{"role": "user", "content": prompt}], max_tokens=1,
                             logprobs=True, top_logprobs=k, **params)
        return _chat_top(r)

    async def _choose_sampled(self, req: ChoiceRequest, counter: list) -> ChoiceResult:
        k = len(req.completions)
        stripped = [c.lstrip() for c in req.completions]
        max_tokens = max(len(c.encode("utf-8")) for c in stripped) + 2
        base_seed = _stable_seed(req.prompt, *req.completions)
        cap = 20 * max(req.n, 1)
        counts = [0] * k
        valid = draws = 0
        while valid < req.n and draws < cap:
            rate = max(valid / draws, 0.25) if draws else 1.0
            want = min(cap - draws, math.ceil((req.n - valid) / rate))
            texts = await self._draw(req.prompt, want, max_tokens, base_seed + draws, counter)
            if not texts:
                raise _Failure("the server returned no samples")
            for t in texts:
                if valid >= req.n or draws >= cap:
                    break
                draws += 1
                i = _match(t, stripped)
                if i is not None:
                    counts[i] += 1
                    valid += 1
        result = ChoiceResult.from_counts(counts, draws)
        if valid < req.n:
            result.short = f"only {valid} of {req.n} valid answers in {draws} draws (cap {cap})"
        return result

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
        params = self._sampling_params(temperature, top_p)
        params.update(max_tokens=max_tokens, seed=seed % 2**31)
        if n > 1:
            params["n"] = n
        if stop:
            params["stop"] = list(stop)
        try:
            if m.api == "completions":
                r = await self._call("completions", prompt=prompt, **params)
                return [c.text or "" for c in r.choices]
            r = await self._call("chat", messages=[{"role": "user", "content": prompt}], **params)
            return [(c.message.content or "") for c in r.choices]
        except _ClientError as exc:
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
                    raise _Failure("the server returned no choices")
                texts.extend(got)
            return CompletionResult(texts=texts[: req.n], n_queries=counter[0])
        except _Failure as exc:
            return CompletionResult(texts=[], n_queries=counter[0], failed=str(exc))
        except (AttributeError, TypeError, IndexError, KeyError, ValueError) as exc:
            return CompletionResult(texts=[], n_queries=counter[0],
                                    failed=f"unexpected response: {self._redact(repr(exc))[:300]}")


# -- parsing helpers (pure functions, unit-testable) ------------------------------------------------

def _error_message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
        if msg:
            return str(msg)[:300]
        if "detail" in body:
            return str(body["detail"])[:300]
    return str(getattr(exc, "message", "") or type(exc).__name__)[:300]


def _retry_after(response) -> float | None:
    headers = getattr(response, "headers", None) or {}
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        ra = headers.get("retry-after")
        if ra is None:
            return None
        try:
            return max(0.0, float(ra))
        except ValueError:
            when = email.utils.parsedate_to_datetime(ra)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _stable_seed(*parts: str) -> int:
    h = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(h[:4], "big") & 0x3FFFFFFF


def _match(sample: str, stripped: Sequence[str]) -> int | None:
    """Index of the (longest) completion the sample starts with, leading whitespace ignored."""
    s = sample.lstrip()
    best = None
    for i, c in enumerate(stripped):
        if c and s.startswith(c) and (best is None or len(c) > len(stripped[best])):
            best = i
    return best


def _failed_choice(k: int, method: str, reason: str, n_queries: int) -> ChoiceResult:
    nan = float("nan")
    return ChoiceResult(probs=[nan] * k, validity=nan, method=method, n_queries=n_queries, failed=reason)


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
        raise _Inexact("no echoed log-probabilities")
    out = []
    for off, tok, v in zip(lp.text_offset, lp.tokens, lp.token_logprobs):
        if off >= text_len:
            break  # the generated token
        out.append((int(off), tok, None if v is None else float(v)))
    if not out or any(b[0] < a[0] for a, b in zip(out, out[1:])):
        raise _Inexact("echoed text offsets are not increasing")
    return out


def _prompt_logprob_tokens(choice, text: str) -> list[tuple[int, str, float | None]]:
    """vLLM `prompt_logprobs` as (offset, token, logprob); offsets from the decoded tokens."""
    plp = getattr(choice, "prompt_logprobs", None)
    if plp is None:
        plp = (getattr(choice, "model_extra", None) or {}).get("prompt_logprobs")
    if not plp:
        raise _Inexact("no prompt_logprobs in the response")
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
            raise _Inexact("cannot tell the prompt token among several prompt_logprobs")
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
        raise _Inexact("decoded prompt tokens do not spell the text")
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
        raise _Inexact("a completion token has no log-probability")
    return float(sum(lps))


def _total_logprob(full, prompt) -> float:
    """log p(s·c) - log p(s) from the token log-probabilities of s·c and of s alone."""
    if not prompt:
        raise _Inexact("empty prompt")
    for toks in (full, prompt):
        if any(v is None for _, _, v in toks[1:]):
            raise _Inexact("a token has no log-probability")
    # The first token is scored unconditionally (None) or conditioned on BOS in both.
    if (full[0][0], full[0][1]) != (prompt[0][0], prompt[0][1]) or (full[0][2] is None) != (prompt[0][2] is None):
        raise _Inexact("the prompt's first token changes with the completion")
    total = lambda toks: sum(v for _, _, v in toks if v is not None)  # noqa: E731
    return float(total(full) - total(prompt))
