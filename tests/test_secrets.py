"""No secret leaks, no unsafe deserialization, no remote code unless asked.

1. OPENAI_API_KEY is set to a unique marker; a collection runs through the openai backend against
   a real loopback server (llama-cpp-python, fixture from tests/llama_server.py), then analyze and
   export run on the folder. Every file under the test's folder, everything printed (in-process and
   by a subprocess) and every log record (all loggers at DEBUG, the openai and httpx libraries'
   included) is searched for the marker: zero hits. A hostile loopback server that echoes the
   Authorization header back in its error bodies must not get the key into messages, failure
   reasons, logs or files either.
2. A source scan: nothing in simsubjects/ unpickles (pickle/dill/joblib/read_pickle, numpy
   allow_pickle=True) or calls torch.load without weights_only=True.
3. trust_remote_code is False unless --trust-remote-code is passed (checked on the calls that
   reach transformers, with transformers' loaders replaced by recorders: no model is loaded).
"""

from __future__ import annotations

import ast
import inspect
import json
import logging
import os
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from simsubjects.cli.commands import main
from simsubjects.errors import UserError
from tests.llama_server import llama_server  # noqa: F401 (fixture; skips cleanly without llama_cpp)

MARKER = f"sk-simsubjects-leak-test-{uuid.uuid4().hex}"
PACKAGE = Path(__file__).resolve().parents[1] / "simsubjects"


def files_with(root: Path, needle: str) -> list[str]:
    """Files under root whose bytes contain needle (UTF-8, UTF-16 and its bytes without the 'sk-')."""
    forms = {needle.encode(), needle.encode("utf-16-le"), needle[3:].encode()}
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and any(f in p.read_bytes() for f in forms))


def log_text(caplog) -> str:
    parts = [caplog.text]
    for r in caplog.records:
        parts.append(r.getMessage())
        parts.append(repr(r.args))
        parts.append(repr(getattr(r, "__dict__", {})))
    return "\n".join(parts)


@pytest.fixture
def secret_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", MARKER)
    return MARKER


def test_the_scanner_finds_the_marker(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.bin").write_bytes(b"\x00" + MARKER.encode("utf-16-le"))
    assert files_with(tmp_path, MARKER) == [str(tmp_path / "a" / "x.bin")]


# --- 1. the key through collect, analyze and export ----------------------------------------------

@pytest.mark.server
def test_api_key_never_written_or_printed(llama_server, secret_key, tmp_path, capsys, caplog):  # noqa: F811
    caplog.set_level(logging.DEBUG)  # every logger, including openai's and httpx's request logs
    spec = f"openai:smollm2@{llama_server}"
    run = tmp_path / "run"
    # Two offers (2 trials a run, not 11): every request carries the key all the same, and the files,
    # logs and output scanned are the same kinds; only the server's work shrinks.
    design = ["--pairs", "1", "--offers", "3,5"]
    # The same collection as a user runs it: a separate process, its raw stdout and stderr. Started
    # first, so its start-up (imports, its own probe) overlaps the in-process commands below.
    env = {**os.environ, "OPENAI_API_KEY": secret_key}
    proc = subprocess.Popen([sys.executable, "-m", "simsubjects.cli", "collect", "ultimatum", *design,
                             "--model", spec, "--out", str(tmp_path / "run2")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert main(["collect", "ultimatum", *design, "--model", spec, "--out", str(run)]) == 0
        assert main(["collect", "ultimatum", *design, "--model", spec, "--out", str(run), "--validate"]) == 0
        assert main(["analyze", str(run)]) == 0
        assert main(["export", str(run), "--to", "csv,parquet,rds,dta,sav"]) == 0
        proc_out, proc_err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:  # a failed step above: the child is not left behind
            proc.kill()
            proc.communicate()
    out, err = capsys.readouterr()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["model"]["backend"] == "openai" and manifest["status"] == "complete"
    proc = subprocess.CompletedProcess(proc.args, proc.returncode, proc_out, proc_err)
    assert proc.returncode == 0, proc.stderr[-2000:]

    hits = {
        "files": files_with(tmp_path, secret_key),
        "stdout/stderr": [s for s in (out, err, proc.stdout, proc.stderr) if secret_key in s or secret_key[3:] in s],
        "logs": secret_key in log_text(caplog) or secret_key[3:] in log_text(caplog),
    }
    n_files = sum(1 for p in tmp_path.rglob("*") if p.is_file())
    print(f"\nsecret scan: {n_files} files, {len(caplog.records)} log records, "
          f"{len(out) + len(err) + len(proc.stdout) + len(proc.stderr)} characters of output: hits {hits}")
    assert hits == {"files": [], "stdout/stderr": [], "logs": False}
    assert n_files >= 20 and caplog.records  # the scan looked at something


# --- a hostile server that echoes the key ------------------------------------------------------

class EchoKeyServer:
    """Answers every request with `status` and an error body that quotes the Authorization header."""

    def __init__(self, status: int):
        self.status = status
        self.saw_key = False
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                auth = self.headers.get("Authorization", "")
                owner.saw_key = owner.saw_key or auth == f"Bearer {MARKER}"
                body = json.dumps({"error": {"message": f"invalid key {auth} (key={auth[7:]})",
                                             "type": "invalid_request_error", "code": auth[7:]}}).encode()
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("status", [401, 400, 404])
def test_echoed_key_stays_out_of_errors(status, secret_key, tmp_path, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    with EchoKeyServer(status) as srv:
        rc = main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--model", f"openai:m@{srv.url}",
                   "--out", str(tmp_path / "run")])
    out, err = capsys.readouterr()
    assert srv.saw_key, "the backend did not send the key: the test would prove nothing"
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert secret_key not in out + err and secret_key[3:] not in out + err, err
    assert secret_key[3:] not in log_text(caplog)
    assert not (tmp_path / "run").exists()  # a run that could not start leaves no folder
    assert files_with(tmp_path, secret_key) == []


def test_echoed_key_stays_out_of_failure_reasons(secret_key, caplog):
    """A 500 that quotes the key, retried and given up on: the failure reason is redacted."""
    from simsubjects.collect.models.base import ChoiceRequest
    from simsubjects.collect.models.openai_api import OpenAIModel

    caplog.set_level(logging.DEBUG)
    with EchoKeyServer(500) as srv:
        model = OpenAIModel("m", srv.url, max_retries=1, backoff=0.01, timeout=10)
        with pytest.raises(UserError) as e:
            model.choose([ChoiceRequest("Q:", (" a", " b"))])
        text = f"{e.value}\n{model!r}\n{vars(model)!r}\n{model.info!r}\n{model.fingerprint()!r}\n{log_text(caplog)}"
    assert srv.saw_key
    assert secret_key not in text and secret_key[3:] not in text


# --- 2. unsafe deserialization: a source scan ----------------------------------------------------

UNSAFE_CALLS = {("pickle", "load"), ("pickle", "loads"), ("pickle", "Unpickler"), ("cPickle", "load"),
                ("cPickle", "loads"), ("dill", "load"), ("dill", "loads"), ("cloudpickle", "load"),
                ("cloudpickle", "loads"), ("joblib", "load"), ("pd", "read_pickle"), ("pandas", "read_pickle"),
                ("shelve", "open"), ("marshal", "load"), ("marshal", "loads")}


def unsafe_calls(source: str, name: str) -> list[str]:
    found = []
    tree = ast.parse(source, filename=name)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            if any(m and m.split(".")[0] in ("pickle", "cPickle", "dill", "cloudpickle", "shelve", "marshal") for m in mods):
                found.append(f"{name}:{node.lineno}: imports {', '.join(m for m in mods if m)}")
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        attr = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        base = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
        kw = {k.arg: k.value for k in node.keywords}
        if (base, attr) in UNSAFE_CALLS or attr == "read_pickle":
            found.append(f"{name}:{node.lineno}: {base + '.' if base else ''}{attr}")
        elif attr == "load" and base == "torch":
            w = kw.get("weights_only")
            if not (isinstance(w, ast.Constant) and w.value is True):
                found.append(f"{name}:{node.lineno}: torch.load without weights_only=True")
        elif attr in ("load", "loadtxt") and base in ("np", "numpy"):
            a = kw.get("allow_pickle")
            if a is not None and not (isinstance(a, ast.Constant) and a.value is False):
                found.append(f"{name}:{node.lineno}: {base}.{attr} with allow_pickle")
        elif attr == "load" and base == "yaml":
            loader = kw.get("Loader")
            if not (isinstance(loader, ast.Attribute) and loader.attr in ("SafeLoader", "CSafeLoader")):
                found.append(f"{name}:{node.lineno}: yaml.load without SafeLoader")
    return found


def test_scanner_catches_unsafe_calls():
    src = ("import pickle\nimport torch, numpy as np\npickle.loads(b'')\ntorch.load('x')\ntorch.load('x', weights_only=False)\n"
           "torch.load('x', weights_only=True)\nnp.load('x', allow_pickle=True)\nimport pandas as pd\npd.read_pickle('x')\n")
    found = unsafe_calls(src, "t.py")
    assert [f.split(":")[1] for f in found] == ["1", "3", "4", "5", "7", "9"], found


def test_no_unsafe_deserialization_in_the_package():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 20
    found = [f for p in files for f in unsafe_calls(p.read_text(encoding="utf-8"), str(p.relative_to(PACKAGE.parent)))]
    assert found == [], "unsafe deserialization:\n" + "\n".join(found)


# --- 3. trust_remote_code ------------------------------------------------------------------------

def test_trust_remote_code_defaults_are_false():
    from simsubjects.collect.models import load_model
    from simsubjects.collect.models.hf import HFModel

    assert inspect.signature(HFModel.__init__).parameters["trust_remote_code"].default is False
    assert inspect.signature(load_model).parameters["trust_remote_code"].default is False
    hf_src = inspect.getsource(HFModel.__init__)
    assert "trust_remote_code=True" not in hf_src.replace(" ", "")
    for p in PACKAGE.rglob("*.py"):
        assert "trust_remote_code=True" not in p.read_text(encoding="utf-8").replace(" ", ""), p


class _Stop(Exception):
    pass


@pytest.fixture
def recorded_loads(monkeypatch):
    """transformers' AutoTokenizer/AutoModelForCausalLM replaced by recorders that stop the load."""
    transformers = pytest.importorskip("transformers")
    calls = []

    class Recorder:
        @classmethod
        def from_pretrained(cls, *args, **kwargs):
            calls.append(kwargs)
            raise OSError("stopped by the test before loading anything")

    monkeypatch.setattr(transformers, "AutoTokenizer", Recorder)
    monkeypatch.setattr(transformers, "AutoModelForCausalLM", Recorder)
    return calls


@pytest.mark.parametrize("flag, expected", [([], False), (["--trust-remote-code"], True)])
def test_trust_remote_code_only_with_the_flag(flag, expected, recorded_loads, tmp_path, capsys):
    model_dir = tmp_path / "remote-code-model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps({"auto_map": {"AutoModelForCausalLM": "evil.Model"}}))
    rc = main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--model", f"hf:{model_dir}",
               "--out", str(tmp_path / "run"), *flag])
    err = capsys.readouterr().err
    assert rc == 2 and "stopped by the test" in err  # the recorder's OSError, turned into one line by HFModel
    assert recorded_loads and all(kw.get("trust_remote_code") is expected for kw in recorded_loads), recorded_loads
    assert not (tmp_path / "run").exists()


def test_embedded_model_never_trusts_remote_code(recorded_loads, tmp_path, capsys):
    rc = main(["collect", "ultimatum", "--pairs", "1", "--model", "smollm2", "--trust-remote-code",
               "--out", str(tmp_path / "run")])
    assert rc == 2, capsys.readouterr().err
    assert recorded_loads and all(kw.get("trust_remote_code") is not True for kw in recorded_loads), recorded_loads
