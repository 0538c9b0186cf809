"""A fault-injecting HTTP proxy on 127.0.0.1 for testing the OpenAI backend's retries.

It forwards every request to an upstream server (llama-cpp-python's OpenAI-compatible server) and,
at configured rates drawn from a seeded RNG, instead answers 429 (with Retry-After), answers 500,
stalls past the client's timeout, or cuts the connection without a response. `counts` says what it
injected and, under keys such as "GET /v1/models" and "POST /v1/completions", how many requests each
route received (faults included). Requests whose body contains `always_fail` (a marker string)
always get a 500, to test a request that never succeeds. With `emulate_n`, a request for n > 1
choices (which llama-cpp-python ignores) is forwarded n times with seeds seed..seed+n-1 and answered
with n choices, as OpenAI and vLLM would. With `rewrite` (a function of the decoded JSON body), every
200 answer to a POST is rewritten before it reaches the client (a server that lies about `usage` or
log-probabilities); the upstream's own `usage` is summed first, under "upstream_prompt_tokens" and
"upstream_completion_tokens". Headers are forwarded but never recorded (they carry the API key).

    with FaultProxy("http://127.0.0.1:8000", rate_429=0.05, rate_500=0.05, seed=1) as proxy:
        OpenAIModel("smollm2", proxy.base_url)  # proxy.base_url ends in /v1
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import struct
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
    "transfer-encoding", "upgrade", "host", "content-length",
}


class FaultProxy:
    def __init__(
        self,
        upstream: str,
        *,
        rate_429: float = 0.0,
        rate_500: float = 0.0,
        rate_delay: float = 0.0,
        rate_cut: float = 0.0,
        delay: float = 5.0,
        retry_after: str = "1",
        seed: int = 0,
        always_fail: str | None = None,
        emulate_n: bool = False,
        rewrite=None,
    ):
        parts = urlsplit(upstream if "://" in upstream else "http://" + upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.rates = [("429", rate_429), ("500", rate_500), ("delay", rate_delay), ("cut", rate_cut)]
        if sum(r for _, r in self.rates) > 1:
            raise ValueError("fault rates add up to more than 1")
        self.delay = delay
        self.retry_after = retry_after
        self.always_fail = always_fail.encode() if always_fail else None
        self.emulate_n = emulate_n
        self.rewrite = rewrite
        self.counts: Counter = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "FaultProxy":
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers stalled in a delay fault
        if self._server is not None:
            from simsubjects.collect.models.openai_probe import forget_endpoints

            forget_endpoints(self.base_url)  # a later proxy on this port may forward elsewhere
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "proxy not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def injected(self) -> int:
        """Number of faults injected (always_fail answers included)."""
        return sum(self.counts[k] for k in ("429", "500", "delay", "cut", "always_fail"))

    # -- decisions ----------------------------------------------------------------------------------
    def _decide(self, body: bytes, route: str = "") -> str:
        with self._lock:
            self.counts["requests"] += 1
            if route:
                self.counts[route] += 1
            if self.always_fail and self.always_fail in body:
                self.counts["always_fail"] += 1
                return "always_fail"
            u = self._rng.random()
            acc = 0.0
            for kind, rate in self.rates:
                acc += rate
                if u < acc:
                    self.counts[kind] += 1
                    return kind
            self.counts["forwarded"] += 1
            return "forward"


class _Handler(BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"  # keep-alive, like a real server

    def log_message(self, format, *args):  # quiet: the test output stays readable
        pass

    def do_GET(self):
        self._handle()

    def do_POST(self):
        self._handle()

    def _handle(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        kind = self.owner._decide(body, f"{self.command} {self.path.split('?')[0]}")
        if kind == "429":
            self._reply(429, {"error": {"message": "injected rate limit", "type": "rate_limit"}},
                        {"Retry-After": self.owner.retry_after})
        elif kind in ("500", "always_fail"):
            self._reply(500, {"error": {"message": f"injected {kind}", "type": "server_error"}})
        elif kind == "delay":
            # Stall past the client's timeout, then drop the connection without answering.
            self.owner._stopping.wait(self.owner.delay)
            self._cut()
        elif kind == "cut":
            self._cut()
        else:
            self._forward(body)

    def _reply(self, status: int, payload: dict, headers: dict | None = None):
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _cut(self):
        # RST instead of FIN: the client sees a dropped connection, not an empty answer.
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

    def _upstream(self, body: bytes):
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        conn = http.client.HTTPConnection(self.owner.upstream_host, self.owner.upstream_port, timeout=300)
        try:
            conn.request(self.command, self.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()

    def _forward(self, body: bytes):
        try:
            request = json.loads(body) if self.owner.emulate_n and body else {}
        except ValueError:
            request = {}
        n = (request.get("n") or 1) if isinstance(request, dict) else 1
        try:
            if n > 1:
                status, resp_headers, data = self._fan_out(request, n)
            else:
                status, resp_headers, data = self._upstream(body)
        except OSError as exc:
            self._reply(502, {"error": {"message": f"proxy: upstream unreachable ({type(exc).__name__})"}})
            return
        if self.command == "POST" and status == 200:
            data = self._rewritten(data)
        try:
            self.send_response(status)
            for k, v in resp_headers:
                if k.lower() not in _HOP_BY_HOP:
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout) meanwhile
            self.close_connection = True

    def _rewritten(self, data: bytes) -> bytes:
        """The upstream's usage counted, then the body as `rewrite` makes it (unchanged without one)."""
        try:
            answer = json.loads(data)
        except ValueError:
            return data
        usage = answer.get("usage") if isinstance(answer, dict) else None
        with self.owner._lock:
            for k in ("prompt_tokens", "completion_tokens"):
                self.owner.counts[f"upstream_{k}"] += int((usage or {}).get(k) or 0)
        if self.owner.rewrite is None:
            return data
        return json.dumps(self.owner.rewrite(answer)).encode()

    def _fan_out(self, request: dict, n: int):
        """n single-choice upstream requests merged into one answer with n choices."""
        seed = request.get("seed") or 0
        merged, choices = None, []
        for i in range(n):
            one = dict(request, n=1, seed=seed + i)
            status, headers, data = self._upstream(json.dumps(one).encode())
            if status != 200:
                return status, headers, data
            answer = json.loads(data)
            merged = merged or answer
            for c in answer["choices"]:
                choices.append(dict(c, index=len(choices)))
        with self.owner._lock:
            self.owner.counts["fanned_out"] += 1
        merged["choices"] = choices
        return 200, [("Content-Type", "application/json")], json.dumps(merged).encode()
