"""Batch files (collect --batch-export / --batch-import) executed by a real server: llama-cpp-python on
127.0.0.1 answers each exported body, posted unchanged by the small runner below (what the OpenAI Batch
API or `vllm run-batch` does with the file), and the imported results give the direct API path's rows.

The unit of every comparison is the trial (one k-choice request of the ultimatum study).
"""

from __future__ import annotations

import json
import sqlite3

import httpx
import pytest

from simsubjects.cli.commands import main
from tests.llama_server import llama_server  # noqa: F401 (fixture)

pytestmark = pytest.mark.server

MODEL = "smollm2"


@pytest.fixture(autouse=True)
def _no_real_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # never send a real key to loopback servers


def run_batch(url: str, requests_file, results_file) -> int:
    """Execute a batch input file line by line, as the OpenAI Batch API does: each body is POSTed
    unchanged to the line's url; the answers are written in the Batch output format. Bounded: one
    request per line, a 60 s deadline each."""
    base = url.removesuffix("/v1")
    out = []
    with httpx.Client(timeout=60.0) as client:
        for i, text in enumerate(requests_file.read_text().splitlines()):
            line = json.loads(text)
            assert line["method"] == "POST" and line["url"].startswith("/v1/")
            r = client.post(base + line["url"], json=line["body"])
            out.append({"id": f"batch_req_{i}", "custom_id": line["custom_id"],
                        "response": {"status_code": r.status_code, "request_id": f"req_{i}", "body": r.json()},
                        "error": None})
    results_file.write_text("".join(json.dumps(o) + "\n" for o in out))
    return len(out)


def collect(url, out, *extra, pairs="1", seed="0"):
    return main(["collect", "ultimatum", "--model", f"openai:{MODEL}@{url}", "--pairs", pairs, "--seed", seed,
                 "--quiet", "--out", str(out), *extra])


def table(out):
    import pandas as pd

    df = pd.read_parquet(out / "responses.parquet").drop(columns=["model"])
    return df.sort_values(["trial", "response"]).reset_index(drop=True)


def cache_rows(out) -> list:
    db = sqlite3.connect(out / "cache.sqlite")
    try:
        return sorted(db.execute("SELECT key, value FROM answers"))
    finally:
        db.close()


@pytest.fixture(scope="module")
def exported(llama_server, tmp_path_factory):  # noqa: F811
    """The study exported (no server contact), executed by the runner, and the direct path's run."""
    d = tmp_path_factory.mktemp("batch")
    dead = "http://127.0.0.1:9/v1"  # export sends nothing: a URL where nothing listens is fine
    assert collect(dead, d / "unused", "--batch-export", str(d / "requests.jsonl")) == 0
    assert not (d / "unused").exists()  # nothing written into --out
    lines = [json.loads(x) for x in (d / "requests.jsonl").read_text().splitlines()]
    assert collect(llama_server, d / "direct") == 0
    run_batch(llama_server, d / "requests.jsonl", d / "results.jsonl")
    return d, lines


def test_export_lines_are_batch_requests_keyed_by_cache_key(exported):
    d, lines = exported
    assert len(lines) == 11  # 1 name pair x 11 offers: one line per trial
    assert len({x["custom_id"] for x in lines}) == 11
    assert all(len(x["custom_id"]) == 64 for x in lines)  # the sha256 cache key
    body = lines[0]["body"]
    assert lines[0]["url"] == "/v1/completions"
    assert body["model"] == MODEL and body["max_tokens"] == 1 and body["logprobs"] == 20 and body["temperature"] == 0


def test_round_trip_gives_the_direct_paths_rows(exported, llama_server, tmp_path):  # noqa: F811
    d, _ = exported
    run = tmp_path / "run"
    # the export of the same run folder names the same requests
    assert collect(llama_server, run, "--batch-export", str(tmp_path / "again.jsonl")) == 0
    assert (tmp_path / "again.jsonl").read_bytes() == (d / "requests.jsonl").read_bytes()
    assert collect(llama_server, run, "--batch-import", str(d / "results.jsonl")) == 0
    assert len(cache_rows(run)) == 11
    # the same command finishes from the cache: no request reaches a server
    assert collect("http://127.0.0.1:9/v1", run) == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["usage"]["calls"] == 0 and manifest["failures"] == []
    a, b = table(d / "direct"), table(run)
    import pandas as pd

    floats = [c for c in a.columns if a[c].dtype.kind == "f"]
    pd.testing.assert_frame_equal(a.drop(columns=floats), b.drop(columns=floats))
    # llama.cpp may reuse a cached prompt prefix, which changes float rounding slightly
    pd.testing.assert_frame_equal(a[floats], b[floats], check_exact=False, atol=1e-4, rtol=0)
    # nothing is left to export
    assert collect(llama_server, run, "--batch-export", str(tmp_path / "none.jsonl")) == 0
    assert not (tmp_path / "none.jsonl").exists()


def test_split_files_and_partial_import_then_the_rest(exported, llama_server, tmp_path, capsys):  # noqa: F811
    d, _ = exported
    run = tmp_path / "run"
    assert collect(llama_server, run, "--batch-export", str(tmp_path / "part.jsonl"), "--batch-max-requests", "4") == 0
    parts = sorted(tmp_path.glob("part-*.jsonl"))
    assert [len(p.read_text().splitlines()) for p in parts] == [4, 4, 3]
    results = d / "results.jsonl"
    half = tmp_path / "half.jsonl"
    half.write_text("".join(results.read_text().splitlines(keepends=True)[:8]))
    capsys.readouterr()
    assert collect(llama_server, run, "--batch-import", str(half)) == 0
    assert "3 requests missing" in capsys.readouterr().err
    assert len(cache_rows(run)) == 8
    # a new export asks for the 3 that are missing only
    assert collect(llama_server, run, "--batch-export", str(tmp_path / "rest.jsonl")) == 0
    assert len((tmp_path / "rest.jsonl").read_text().splitlines()) == 3
    # the same command finishes: the server is asked for the 3 missing trials only
    assert collect(llama_server, run) == 0
    assert json.loads((run / "manifest.json").read_text())["usage"]["requests"] == 3


def _other_run_ids(tmp_path) -> list[str]:
    assert collect("http://127.0.0.1:9/v1", tmp_path / "o", "--seed", "1",
                   "--batch-export", str(tmp_path / "other.jsonl")) == 0
    return [json.loads(x)["custom_id"] for x in (tmp_path / "other.jsonl").read_text().splitlines()]


def test_bad_results_files_one_line_exit_2_cache_untouched(exported, llama_server, tmp_path, capsys):  # noqa: F811
    d, _ = exported
    run = tmp_path / "run"
    good = d / "results.jsonl"
    lines = good.read_text().splitlines(keepends=True)
    first = tmp_path / "first.jsonl"
    first.write_text("".join(lines[:5]))
    assert collect(llama_server, run, "--batch-import", str(first)) == 0
    before = cache_rows(run)
    assert len(before) == 5
    manifest_before = (run / "manifest.json").read_bytes()

    other = _other_run_ids(tmp_path)
    as_other = json.loads(lines[6])
    as_other["custom_id"] = other[0]
    unknown = json.loads(lines[6])
    unknown["custom_id"] = "0" * 64
    error = json.loads(lines[7])
    error["response"] = None
    error["error"] = {"code": "server_error", "message": "the model crashed"}
    # a changed answer for an already imported id: must not overwrite the cached one
    changed = json.loads(lines[0])
    changed["response"]["body"]["choices"][0]["logprobs"]["top_logprobs"][0] = {" Yes": -0.01}
    bad = {
        "unknown custom id": [*lines[5:], json.dumps(unknown) + "\n"],
        "another run's line": [json.dumps(as_other) + "\n", *lines[5:]],
        "no custom_id": ['{"response": {}}\n', *lines[5:]],
        "truncated": [*lines[5:-1], lines[-1][: len(lines[-1]) // 2]],
        "truncated mid-file": [lines[5][:40] + "\n", *lines[6:]],
        "error object": [*lines[5:7], json.dumps(error) + "\n"],
        "duplicated id": [*lines[5:], lines[9]],
        "duplicate of a cached id": [json.dumps(changed) + "\n", lines[0], *lines[5:]],
        "not a response body": [json.dumps({**json.loads(lines[5]), "response": {"status_code": 200, "body":
                                            {"choices": "x"}}}) + "\n"],
        "status 500": [json.dumps({**json.loads(lines[5]), "response": {"status_code": 500, "body": {}}}) + "\n"],
    }
    for name, content in bad.items():
        f = tmp_path / f"bad-{name.replace(' ', '_')}.jsonl"
        f.write_text("".join(content))
        capsys.readouterr()
        rc = collect(llama_server, run, "--batch-import", str(f))
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2, name
        assert len(err) == 1 and err[0].startswith("error: ") and str(f) in err[0], (name, err)
        assert cache_rows(run) == before, name
        assert (run / "manifest.json").read_bytes() == manifest_before, name
    # the import of a changed line for a cached answer alone keeps the cached answer
    f = tmp_path / "changed.jsonl"
    f.write_text(json.dumps(changed) + "\n")
    assert collect(llama_server, run, "--batch-import", str(f)) == 0
    assert cache_rows(run) == before


def test_batch_options_need_an_api_model_and_exact_scoring(tmp_path, capsys):
    for args in (["--model", "smollm2", "--batch-export", str(tmp_path / "x.jsonl")],
                 ["--model", "openai:m@http://127.0.0.1:9/v1", "--method", "sampled",
                  "--batch-export", str(tmp_path / "x.jsonl")],
                 ["--model", "openai:m@http://127.0.0.1:9/v1", "--batch-export", str(tmp_path / "no" / "x.jsonl")],
                 ["--model", "openai:m@http://127.0.0.1:9/v1", "--batch-export", str(tmp_path / "x.jsonl"),
                  "--batch-import", str(tmp_path / "y.jsonl")],
                 ["--model", "openai:m@http://127.0.0.1:9/v1", "--batch-import", str(tmp_path / "y.jsonl")]):
        capsys.readouterr()
        rc = main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--out", str(tmp_path / "run"), *args])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1, (args, err)
        assert not (tmp_path / "run").exists() and not (tmp_path / "x.jsonl").exists()


def test_echo_and_chat_bodies(tmp_path):
    dead = "http://127.0.0.1:9/v1"
    assert collect(dead, tmp_path / "r", "--batch-format", "completions-echo",
                   "--batch-export", str(tmp_path / "echo.jsonl"), pairs="1") == 0
    lines = [json.loads(x) for x in (tmp_path / "echo.jsonl").read_text().splitlines()]
    assert len(lines) == 11 * 3  # per trial: prompt + " Yes", prompt + " No", and the prompt alone
    first = lines[:3]
    key = first[0]["custom_id"].split("/")[0]
    assert [x["custom_id"] for x in first] == [f"{key}/0", f"{key}/1", f"{key}/prompt"]
    assert first[2]["body"]["prompt"] + first[0]["body"]["prompt"][len(first[2]["body"]["prompt"]):] \
        == first[0]["body"]["prompt"]
    assert all(x["body"]["echo"] is True and x["body"]["logprobs"] == 1 for x in first)
    # the OpenAI API (no URL): chat bodies with top_logprobs, no key needed
    assert main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--model", "openai:gpt-4o-mini",
                 "--out", str(tmp_path / "o"), "--batch-export", str(tmp_path / "chat.jsonl")]) == 0
    chat = [json.loads(x) for x in (tmp_path / "chat.jsonl").read_text().splitlines()]
    assert len(chat) == 11 and {x["url"] for x in chat} == {"/v1/chat/completions"}
    body = chat[0]["body"]
    assert body["messages"][0]["role"] == "user" and body["top_logprobs"] == 20 and body["logprobs"] is True
