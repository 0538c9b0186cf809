"""Transport for the `openai` backend: one loop that sends every request, in the spirit of
inspect_ai's `ModelAPI` + `generate_loop`.

Requests run on an asyncio loop in a private thread, spread over one or more base URLs (least busy
first) with `concurrency` requests in flight per URL and an optional rate limit per URL. 429, 5xx,
timeouts and dropped connections are retried with exponential backoff and jitter (429 honours
Retry-After); a request that still fails raises `Failure` with a redacted reason.

One deadline per attempt covers connecting, sending, reading and the total (`timeout` seconds):
httpx's connect/read/write/pool timeouts and an asyncio deadline around the whole call. A server
that accepts the connection and never answers fails the attempt at the deadline.

The API key is held only in a closure (not an attribute: not in vars(), reprs or pickles) and is
registered with simsubjects.redact, so no message, log record or file can carry it.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ...errors import UserError
from ...redact import redact, redact_url, server_string

log = logging.getLogger(__name__)

ENV_KEY = "OPENAI_API_KEY"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "sk-no-key"  # self-hosted servers without auth still want some bearer token
MAX_RETRY_AFTER = 120.0


class Failure(Exception):
    """A request that did not succeed; its message is the (redacted) reason."""


class ClientError(Failure):
    """A 4xx answer other than 429: retrying will not help (unsupported parameter, bad model, ...)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class NoAnswer(Failure):
    """Every attempt timed out or could not connect."""


@dataclass(eq=False)
class Endpoint:
    url: str
    client: Any
    inflight: int = 0
    sent: int = 0
    next_slot: float = 0.0
    penalty_until: float = 0.0

    @property
    def public(self) -> str:
        return redact_url(self.url)


def is_openai_host(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith(".openai.com")


class Transport:
    """Sends completions/chat requests to the base URLs with retries, rate limits and deadlines."""

    def __init__(self, model: str, base_urls: list[str], api_key: str, *, concurrency: int, timeout: float,
                 max_retries: int, requests_per_second: float | None, backoff: float, max_backoff: float):
        self.model = model
        self.base_urls = base_urls
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.requests_per_second = requests_per_second
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.stats: Counter = Counter()  # requests, retries, faults seen, failures
        self._api_key = lambda: api_key
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.endpoints: list[Endpoint] = []
        self._slots: asyncio.Semaphore | None = None
        self.closed = False
        # --max-cost's per-call gate (collect/budget.py CallGate): admit(kind, params) before a call is
        # sent (raises when its largest price would pass the cap), settle(ticket, usage) after it
        self.gate = None

    def __repr__(self) -> str:
        return f"Transport(model={self.model!r}, base_urls={len(self.base_urls)})"

    # -- the private event loop -------------------------------------------------------------------
    def run(self, coro):
        """Run `coro` on the loop thread (works inside Jupyter's running loop too)."""
        if self.closed:
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

    async def setup(self) -> None:
        if self.endpoints:
            return
        import httpx  # lazy: imports rich, httpx
        from openai import AsyncOpenAI  # lazy: imports openai, pydantic

        key = self._api_key()
        deadline = httpx.Timeout(self.timeout)  # connect, read, write and pool: the same deadline
        self.endpoints = [Endpoint(url=u, client=AsyncOpenAI(api_key=key, base_url=u, timeout=deadline, max_retries=0))
                          for u in self.base_urls]
        self._slots = asyncio.Semaphore(self.concurrency * len(self.endpoints))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        loop, thread = self._loop, self._thread
        if loop is None:
            return

        async def shutdown():
            for ep in self.endpoints:
                await ep.client.close()

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)
        if not loop.is_running():
            loop.close()
        self._loop = self._thread = None

    # -- one HTTP request, with endpoint choice, rate limit, deadline and retries ------------------
    async def _acquire(self) -> Endpoint:
        await self._slots.acquire()
        now = time.monotonic()
        ep = min(self.endpoints,
                 key=lambda e: (e.inflight >= self.concurrency, e.penalty_until > now, e.inflight, e.sent))
        ep.inflight += 1
        ep.sent += 1
        if self.requests_per_second:
            slot = max(now, ep.next_slot)
            ep.next_slot = slot + 1.0 / self.requests_per_second
            if slot > now:
                await asyncio.sleep(slot - now)
        return ep

    def _release(self, ep: Endpoint) -> None:
        ep.inflight -= 1
        self._slots.release()

    def _backoff(self, attempt: int) -> float:
        base = min(self.max_backoff, self.backoff * 2 ** attempt)
        return base * random.uniform(0.5, 1.0)

    async def call(self, kind: str, *, retries: int | None = None, **params):
        """POST one completions/chat request; retry transient failures; raise Failure at the end.
        `retries` overrides max_retries (the probe retries little: a dead URL must fail fast).
        With a gate (--max-cost), the call is admitted before it is sent and settled after."""
        retries = self.max_retries if retries is None else retries
        if self.gate is None:
            return await self._attempts(kind, retries, params)
        ticket = self.gate.admit(kind, params)  # raises before sending when the cap would be passed
        answered, usage = False, None
        try:
            r = await self._attempts(kind, retries, params)
            answered, usage = True, billed_usage(getattr(r, "usage", None), "")
            return r
        finally:
            self.gate.settle(ticket, usage, answered)

    async def _attempts(self, kind: str, retries: int, params: dict):
        import openai  # lazy: imports openai, pydantic

        reason, answered = "", False
        for attempt in range(retries + 1):
            if attempt:
                self.stats["retries"] += 1
            ep = await self._acquire()
            wait = None
            try:
                self.stats["requests"] += 1
                create = ep.client.completions.create if kind == "completions" else ep.client.chat.completions.create
                r = await asyncio.wait_for(create(model=self.model, **params), self.timeout)
                # what the server bills (absent on some servers); a negative or non-numeric count is refused
                p, c = billed_usage(getattr(r, "usage", None), ep.public) or (0, 0)
                self.stats["prompt_tokens"] += p
                self.stats["completion_tokens"] += c
                return r
            except openai.APIStatusError as exc:
                answered = True
                status = exc.status_code
                # 429 "insufficient_quota" means no credit left: waiting will not bring it back.
                if (status < 500 and status not in (408, 409, 429)) or getattr(exc, "code", None) == "insufficient_quota":
                    raise ClientError(status, f"HTTP {status} from {ep.public}: {redact(error_message(exc))}") from None
                self.stats[f"http_{status}"] += 1
                wait = retry_after(exc.response)  # 429, and some 503s, say how long to wait
                reason = "rate limited (429)" if status == 429 else f"server error {status}: {redact(error_message(exc))}"
            except (openai.APITimeoutError, asyncio.TimeoutError):
                self.stats["timeouts"] += 1
                reason = f"no answer from {ep.public} within {self.timeout:g}s"
            except openai.APIConnectionError as exc:
                self.stats["connection_errors"] += 1
                cause = exc.__cause__ or exc
                reason = f"cannot connect to {ep.public} ({type(cause).__name__})"
                ep.penalty_until = time.monotonic() + self._backoff(attempt)
            except openai.APIError as exc:  # e.g. a body that is not the expected JSON
                raise Failure(f"bad response from {ep.public}: {redact(str(exc))[:300]}") from None
            finally:
                self._release(ep)
            if attempt < retries:
                delay = min(wait, MAX_RETRY_AFTER) * random.uniform(1.0, 1.1) if wait is not None else self._backoff(attempt)
                log.debug("openai: retry %d/%d in %.2fs: %s", attempt + 1, retries, delay, reason)
                await asyncio.sleep(delay)
        self.stats["failed_requests"] += 1
        error = Failure if answered else NoAnswer
        raise error(f"gave up after {retries + 1} attempts: {reason}")

    async def list_models(self, retries: int = 1) -> list[str]:
        """The model ids the first URL lists (redacted, at most 50); [] where there is no /models.

        This is the run's first contact with the server, so it decides whether anything answers:
        a timeout or a refused connection is retried `retries` times only, then NoAnswer (a closed
        port fails in about a second, a server that never answers after (retries+1) deadlines)."""
        import openai  # lazy: imports openai, pydantic

        ep = self.endpoints[0]
        reason = ""
        for attempt in range(retries + 1):
            if attempt:
                await asyncio.sleep(self._backoff(0))
            try:
                self.stats["requests"] += 1
                page = await asyncio.wait_for(ep.client.models.list(), self.timeout)
                return [server_string(x.id) for x in list(page.data)[:50]]
            except (asyncio.TimeoutError, openai.APITimeoutError):
                self.stats["timeouts"] += 1
                reason = f"no answer from {ep.public} within {self.timeout:g}s"
            except openai.APIConnectionError as exc:
                self.stats["connection_errors"] += 1
                reason = f"cannot connect to {ep.public} ({type(exc.__cause__ or exc).__name__})"
            except Exception as exc:  # noqa: BLE001 - many servers lack /models; a bad key shows up in the next probe
                log.debug("openai: listing models failed: %s", type(exc).__name__)
                return []
        raise NoAnswer(reason)


# -- parsing the transport's answers -----------------------------------------------------------------

def billed_usage(u, where: str) -> tuple[int, int] | None:
    """(prompt_tokens, completion_tokens) of a response's `usage`; None where it reports none.

    A count below zero or not a whole number ("lots", 1.5, NaN) is a server that cannot be trusted
    with a budget: a UserError (one line, exit 2), never a count that turns --max-cost off."""
    if u is None:
        return None
    out = []
    for name in ("prompt_tokens", "completion_tokens"):
        v = getattr(u, name, None) if not isinstance(u, dict) else u.get(name)
        if v is None:
            return None
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v == int(v)
        if not ok or v < 0:
            raise UserError(f"{where}: the server reported usage.{name} = {redact(repr(v))[:40]}, not a count of "
                            "tokens (a whole number, 0 or more); a server whose usage cannot be trusted is not used")
        out.append(int(v))
    return out[0], out[1]


def error_message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
        if msg:
            return str(msg)[:300]
        if "detail" in body:
            return str(body["detail"])[:300]
    return str(getattr(exc, "message", "") or type(exc).__name__)[:300]


def retry_after(response) -> float | None:
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
