"""Network and credentials (issue 18): nothing leaks, nothing hangs, bad URLs are one line.

* A hostile loopback server echoes the Authorization header and the request's path and query into
  every field it returns. collect, analyze, export, report and replicate run against it with a
  key, a URL password and a query secret; every file they write, stdout, stderr and every log
  record are searched for the three: zero hits.
* A server that accepts and never answers: the run stops within the deadline with one line naming
  the (redacted) URL; a request to it fails within the deadline. A closed port fails in seconds.
* Model specs and option combinations that used to end in tracebacks are one line, exit 2, and
  leave nothing behind.
* Run identity: a local run is never resumed with another --batch-size.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from pathlib import Path

import pytest

from simsubjects.cli.commands import main
from tests.fake_openai import FakeOpenAI
from tests.llama_server import free_port

KEY = f"sk-netkey-{uuid.uuid4().hex}"
PASSWORD = f"pw{uuid.uuid4().hex[:16]}"
QUERY_SECRET = f"qs{uuid.uuid4().hex[:16]}"
BASIC = __import__("base64").b64encode(f"user:{PASSWORD}".encode()).decode()  # httpx sends user info so
SECRETS = (KEY, PASSWORD, QUERY_SECRET, BASIC)


def _hits(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _files_with_secrets(root: Path) -> dict[str, list[str]]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            found = [s for s in SECRETS if s.encode() in data or s.encode("utf-16-le") in data]
            if found:
                out[str(p.relative_to(root))] = found
    return out


def _one_line_error(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


# -- secrets ----------------------------------------------------------------------------------------

def test_echoing_server_leaks_nothing_through_every_command(key_env, tmp_path, capfd, caplog):
    caplog.set_level(logging.DEBUG)  # every logger: openai's and httpx's request logs included
    with FakeOpenAI(echo_auth=True, answers=[" accept", " reject", " maybe"]) as srv:
        # user info replaces the bearer key with HTTP Basic auth (httpx): one URL with it, one without
        url = f"http://user:{PASSWORD}@127.0.0.1:{srv.port}/v1?api-key={QUERY_SECRET}&x=1"
        spec = f"openai:m@http://127.0.0.1:{srv.port}/v1?api-key={QUERY_SECRET}&x=1"
        run = tmp_path / "run"
        assert main(["collect", "ultimatum", "--pairs", "1", "--model", spec, "--out", str(run), "--n", "5"]) == 0
        assert main(["analyze", str(run)]) == 0
        assert main(["export", str(run), "--to", "csv,parquet,rds,dta"]) == 0
        assert main(["report", str(run)]) == 0
        # the same server through --base-url, with the wisdom study (free text stored verbatim)
        assert main(["collect", "wisdom", "--participants", "1", "--questions", "1", "--model", "openai:m",
                     "--base-url", url, "--out", str(tmp_path / "wisdom")]) == 0
        # --n 1: one valid draw a trial (not the paper's scaled n) over the 220 trials: the same commands,
        # files and secrets, ~150 fewer requests to serve
        assert main(["replicate", "aher2023", "--only", "ultimatum", "--scale", "0.002", "--n", "1", "--model", spec,
                     "--out", str(tmp_path / "package")]) == 0
    out, err = capfd.readouterr()
    # the server saw (and echoed) every secret: the test proves something
    assert any(KEY in a for a in srv.auth_seen) and any(BASIC in a for a in srv.auth_seen), set(srv.auth_seen)
    assert any(QUERY_SECRET in p for p in srv.paths), srv.paths[:3]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["model"]["backend"] == "openai"
    assert manifest["model"]["served_models"] and manifest["model"]["server_model"]  # kept, but scrubbed
    logs = caplog.text + "\n".join(r.getMessage() for r in caplog.records)
    n_files = sum(1 for p in tmp_path.rglob("*") if p.is_file())
    assert (_files_with_secrets(tmp_path), _hits(out), _hits(err), _hits(logs)) == ({}, [], [], [])
    assert n_files >= 30 and "ultimatum" in err  # the scan looked at something: files, the progress bar
    assert (tmp_path / "package" / "README.md").exists() and (tmp_path / "package" / "report.html").exists()


@pytest.mark.parametrize("status", [400, 401, 404])  # 500 is retried: tests/test_secrets.py
def test_echoed_errors_are_one_line_without_secrets(status, key_env, tmp_path, capfd):
    with FakeOpenAI(echo_auth=True, status=status) as srv:
        url = f"http://user:{PASSWORD}@127.0.0.1:{srv.port}/v1?token={QUERY_SECRET}"
        rc = main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--model", f"openai:m@{url}",
                   "--timeout", "5", "--out", str(tmp_path / "run")])
    out, err = capfd.readouterr()
    assert rc == 2
    line = _one_line_error(err)
    assert _hits(out + err) == [] and f"127.0.0.1:{srv.port}" in line
    assert not (tmp_path / "run").exists()


def test_redaction_rules():
    from simsubjects.redact import redact, redact_url, register_url

    assert redact_url("https://u:p@h:8/v1?api-key=1&sig=2&access_token=3&model=x#frag") == "https://h:8/v1?model=x"
    assert redact_url("http://[::1]:8000/v1?key=s") == "http://[::1]:8000/v1"
    assert redact_url("http://u:p@127.0.0.1:99999/v1?key=s") == "http://127.0.0.1:99999/v1"
    register_url("http://me:hunter2hunter2@h/v1?Api_Key=abcdef123")
    text = redact("openai:m@http://me:hunter2hunter2@h/v1?Api_Key=abcdef123,http://h2/v1 said hunter2hunter2 abcdef123")
    assert text == "openai:m@http://h/v1,http://h2/v1 said [REDACTED] [REDACTED]"


# -- deadlines --------------------------------------------------------------------------------------

def test_never_answering_server_stops_the_run_within_the_deadline(key_env, tmp_path, capfd):
    with FakeOpenAI(hang=True) as srv:
        t0 = time.monotonic()
        rc = main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--timeout", "2",
                   "--model", f"openai:m@http://u:{PASSWORD}@127.0.0.1:{srv.port}/v1", "--out", str(tmp_path / "run")])
        elapsed = time.monotonic() - t0
    err = capfd.readouterr().err
    assert rc == 2 and elapsed < 30, (rc, elapsed)
    line = _one_line_error(err)
    assert f"http://127.0.0.1:{srv.port}/v1" in line and "within 2s" in line and PASSWORD not in line
    assert not (tmp_path / "run").exists()


def test_request_to_a_server_that_stops_answering_fails_within_the_deadline(monkeypatch):
    from simsubjects.collect.models.base import ChoiceRequest, CompletionRequest
    from simsubjects.collect.models.openai_api import OpenAIModel

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAI(hang_marker="STALL") as srv:
        with OpenAIModel("m", srv.url, timeout=1.5, max_retries=1, backoff=0.05, logprobs="off") as m:
            t0 = time.monotonic()
            ok, stalled = m.choose([ChoiceRequest("Fine? Answer:", (" accept", " reject"), n=2),
                                    ChoiceRequest("STALL? Answer:", (" accept", " reject"), n=2)])
            (text,) = m.complete([CompletionRequest("STALL here", max_tokens=3)])
            elapsed = time.monotonic() - t0
    assert ok.failed is None and ok.counts == [1, 1]
    assert stalled.failed and "within 1.5s" in stalled.failed and "2 attempts" in stalled.failed
    assert text.failed and text.texts == []
    assert elapsed < 15  # two requests, each 2 attempts of 1.5 s, in parallel


def test_closed_port_fails_in_seconds(key_env, tmp_path, capfd):
    t0 = time.monotonic()
    rc = main(["collect", "ultimatum", "--pairs", "1", "--quiet",
               "--model", f"openai:m@http://127.0.0.1:{free_port()}/v1", "--out", str(tmp_path / "run")])
    elapsed = time.monotonic() - t0
    line = _one_line_error(capfd.readouterr().err)
    assert rc == 2 and elapsed < 10, elapsed
    assert "cannot connect" in line and "check that the server is running" in line
    assert not (tmp_path / "run").exists()


# -- one line, exit 2, nothing written ----------------------------------------------------------------

@pytest.mark.parametrize("args, says", [
    (["--model", "openai:m@http://[::1"], "not a valid URL"),
    (["--model", "openai:m@http://127.0.0.1:99999/v1"], "Port out of range"),
    (["--model", f"openai:m@http://u:{PASSWORD}@127.0.0.1:99999/v1?key={QUERY_SECRET}"], "Port out of range"),
    (["--model", "openai:m@http:///v1"], "names no host"),
    (["--model", "smollm2", "--base-url", "http://127.0.0.1:8000/v1"], "--base-url applies to openai"),
    (["--model", "smollm2", "--timeout", "5"], "--timeout applies to openai"),
    (["--model", "openai:m", "--base-url", "http://127.0.0.1:0/v1"], "port 0"),
    (["--model", "openai:m@http://127.0.0.1:8000/v1", "--timeout", "0"], "--timeout 0"),
    (["--model", ""], "--model is empty"),
    (["--model", "   "], "--model is empty"),
])
def test_bad_model_options_are_one_line(args, says, tmp_path, capfd):
    out = tmp_path / "run"
    rc = main(["collect", "ultimatum", "--pairs", "1", "--quiet", *args, "--out", str(out)])
    line = _one_line_error(capfd.readouterr().err)
    assert rc == 2 and says in line, line
    assert _hits(line) == []
    assert not out.exists()  # no "running" manifest, no cache


# -- run identity -------------------------------------------------------------------------------------

class _FixedModel:
    """Stands in for the loaded local model: the identity check runs before any model loads, so
    what the first run's numbers are does not matter here, only that its folder is complete."""

    def __init__(self):
        from simsubjects.collect.models.base import ModelInfo

        self.info = ModelInfo(spec="smollm2", backend="hf", name="fixed", revision="sha256:0")

    def fingerprint(self):
        return {"backend": "hf", "revision": "sha256:0"}

    def choose(self, requests, method="exact"):
        from simsubjects.collect.choice import exact_choice

        return [exact_choice([-1.0] * len(r.completions)) for r in requests]


def test_a_local_run_is_not_resumed_with_another_batch_size(tmp_path, capfd):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.collect.studies.registry import get_study

    out = tmp_path / "run"
    _, man = run_study(get_study("ultimatum"), "smollm2", out, params={"pairs": 1, "seed": 0, "chat_template": False},
                       model=_FixedModel(), batch_size=2, show_progress=False)
    assert man["identity"]["numerics"] == {"batch_size": 2}
    before = (out / "responses.parquet").read_bytes()
    t0 = time.monotonic()
    rc = main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--batch-size", "1", "--out", str(out)])
    line = _one_line_error(capfd.readouterr().err)
    assert rc == 2 and "holds a run with other parameters" in line
    assert time.monotonic() - t0 < 30  # refused before the model loads
    assert (out / "responses.parquet").read_bytes() == before
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


def test_a_server_run_does_not_pin_the_batch_size():
    from simsubjects.collect.pipeline import numeric_identity

    assert numeric_identity("openai", 7) == {}
    assert numeric_identity("hf", 7) == numeric_identity("embedded", 7) == {"numerics": {"batch_size": 7}}
