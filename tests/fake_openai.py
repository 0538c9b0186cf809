"""A small OpenAI-compatible server on 127.0.0.1 for tests that need no model: scripted texts,
hostile replies, and a server that never answers.

* Sampled texts: `texts` is a list consumed in arrival order (then `answers` cycles); a request
  for n choices gets n of them, as OpenAI and vLLM honour `n`. With one request in flight at a
  time the backend therefore sees exactly this stream of texts.
* No log-probabilities are returned, so the backend's probe settles on sampling.
* `echo_auth=True`: the request's Authorization header (and the request path with its query) is
  echoed into every string field it returns: /v1/models ids and owners, `id`, `model`,
  `system_fingerprint`, the texts (after the answer), and error bodies.
* `hang=True`: accepts every connection, reads the request and never answers.
* `hang_marker`: a request whose body contains it is never answered (the others are).
* `status`: answer every POST with this HTTP error status (the body quotes the header).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    def __init__(self, *, texts=(), answers=(" accept", " reject"), echo_auth: bool = False, hang: bool = False,
                 hang_marker: str | None = None, status: int | None = None, model: str = "m"):
        self.texts = list(texts)
        self.answers = list(answers)
        self.echo_auth = echo_auth
        self.hang = hang
        self.hang_marker = hang_marker.encode() if hang_marker else None
        self.status = status
        self.model = model
        self.auth_seen: list[str] = []
        self.paths: list[str] = []
        self.requests = 0
        self._i = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                owner._handle(self, b"")

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                owner._handle(self, self.rfile.read(n) if n else b"")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "FakeOpenAI":
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()

    # -- answering ----------------------------------------------------------------------------------
    def _next_texts(self, n: int) -> list[str]:
        with self._lock:
            out = []
            for _ in range(n):
                if self.texts:
                    out.append(self.texts.pop(0))
                else:
                    out.append(self.answers[self._i % len(self.answers)])
                    self._i += 1
            return out

    def _handle(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        auth = h.headers.get("Authorization", "")
        with self._lock:
            self.requests += 1
            self.auth_seen.append(auth)
            self.paths.append(h.path)
        if self.hang or (self.hang_marker and self.hang_marker in body):
            self._stop.wait(300)  # never answers (until the test ends)
            return
        echo = f" {auth} {h.path}" if self.echo_auth else ""
        if self.status and h.command == "POST":
            return self._send(h, self.status, {"error": {"message": f"refused{echo}", "type": "invalid_request_error",
                                                         "code": echo.strip() or None}})
        if "models" in h.path:
            return self._send(h, 200, {"object": "list", "data": [
                {"id": self.model + echo, "object": "model", "owned_by": "test" + echo, "created": 0}]})
        try:
            req = json.loads(body or b"{}")
        except json.JSONDecodeError:
            return self._send(h, 400, {"error": {"message": "bad json" + echo}})
        n = int(req.get("n") or 1)
        chat = "chat/completions" in h.path
        sampled = req.get("temperature", 1.0) and not req.get("logprobs") and not req.get("echo")
        texts = self._next_texts(n) if sampled else [self.answers[0]] * n  # probes do not consume the stream
        choices = []
        for i, t in enumerate(texts):
            t = t + echo
            if chat:
                choices.append({"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "length",
                                "logprobs": None})
            else:
                choices.append({"index": i, "text": t, "finish_reason": "length", "logprobs": None})
        self._send(h, 200, {"id": "cmpl-1" + echo, "object": "chat.completion" if chat else "text_completion",
                            "created": int(time.time()), "model": (req.get("model") or self.model) + echo,
                            "system_fingerprint": "fp" + echo, "choices": choices,
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except OSError:
            pass
