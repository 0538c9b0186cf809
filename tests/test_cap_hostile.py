"""Issue 42's backend cases: the budget cap against a server that lies about its usage, impossible
log-probabilities, batch results from another model, hostile batch files, Ray addresses, the preload
server's cache folder, overflowing human estimates; and issue 37's one collection function.

The server cases run the real llama-cpp-python server on 127.0.0.1 behind tests/fault_proxy.py, which
rewrites its answers. Units: a price is USD at --price-in/--price-out per million tokens; a count of
requests is the trial (one k-choice request of the ultimatum study, 11 of them at --pairs 1).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path

import pytest

from simsubjects.cli.commands import main
from tests.fault_proxy import FaultProxy
from tests.llama_server import llama_server  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[1]
DEAD = "http://127.0.0.1:9/v1"  # nothing listens: commands that must not contact a server use it


@pytest.fixture(autouse=True)
def _no_real_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # never send a real key to loopback servers


def ultimatum(url, out, *extra):
    return main(["collect", "ultimatum", "--model", f"openai:smollm2@{url}", "--pairs", "1", "--quiet",
                 "--out", str(out), *extra])


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def upstream_price(proxy, price_in: float, price_out: float) -> float:
    """What the server really billed (its own usage, summed by the proxy before any rewrite), in USD."""
    c = proxy.counts
    return (c["upstream_prompt_tokens"] * price_in + c["upstream_completion_tokens"] * price_out) / 1e6


# -- item 7 and item 8: usage a server reports --------------------------------------------------------

def _usage(value):
    def rewrite(body):
        if isinstance(body.get("usage"), dict):
            body["usage"]["prompt_tokens"] = value
        return body
    return rewrite


@pytest.mark.server
@pytest.mark.parametrize("value", [-1000, "lots"], ids=["negative", "lots"])
def test_usage_below_zero_or_not_a_number_is_one_line_exit_2(value, llama_server, tmp_path, capsys):  # noqa: F811
    with FaultProxy(llama_server.removesuffix("/v1"), rewrite=_usage(value)) as proxy:
        assert ultimatum(proxy.base_url, tmp_path / "r", "--price-in", "1", "--max-cost", "1") == 2
    line = one_line(capsys)
    assert "usage.prompt_tokens" in line and repr(value) in line, line
    assert not (tmp_path / "r" / "responses.parquet").exists()


@pytest.mark.server
def test_missing_usage_is_counted_locally_and_the_cap_holds(llama_server, tmp_path, capsys):  # noqa: F811
    def drop(body):
        body.pop("usage", None)
        return body

    cap = 700e-6  # USD: 700 prompt tokens at $1 per million; the 11 trials take about 1,800
    with FaultProxy(llama_server.removesuffix("/v1"), rewrite=drop) as proxy:
        # batches of 1 trial: a few fit under the cap before the local count reaches it
        assert ultimatum(proxy.base_url, tmp_path / "r", "--price-in", "1", "--max-cost", f"{cap:.6f}",
                         "--batch-size", "1") == 2
        assert "stopped before" in one_line(capsys)
        assert 0 < upstream_price(proxy, 1, 0) <= cap  # the server's own count: the cap held
        # a larger cap finishes; the manifest says the local count priced every call
        assert ultimatum(proxy.base_url, tmp_path / "r", "--price-in", "1", "--max-cost", "1") == 0
    budget = json.loads((tmp_path / "r" / "manifest.json").read_text())["budget"]
    assert set(budget["counted_by"]) == {"local"} and budget["counted_by"]["local"] > 0
    assert budget["max_cost"] == 1 and 0 < budget["spent"] <= 1


@pytest.mark.server
def test_a_truthful_servers_usage_prices_the_calls(llama_server, tmp_path):  # noqa: F811
    assert ultimatum(llama_server, tmp_path / "r", "--price-in", "1", "--max-cost", "1") == 0
    budget = json.loads((tmp_path / "r" / "manifest.json").read_text())["budget"]
    assert set(budget["counted_by"]) == {"server"}


@pytest.mark.server
def test_sampled_stops_before_the_request_that_would_pass_the_cap(llama_server, tmp_path, capsys):  # noqa: F811
    """Sampling draws until --n valid answers (up to 20 x --n draws, each resending the prompt): the
    batch's estimate counts --n draws, so only the per-call gate keeps the cap (3.6x it before)."""
    args = ["--method", "sampled", "--n", "3", "--price-in", "1", "--price-out", "1"]
    assert ultimatum(llama_server, tmp_path / "dry", *args, "--dry-run") == 0
    total = [x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("total")]
    estimate = float(total[0].split()[-1])  # price_max of the whole run, USD
    cap = 1.5 * estimate  # the one batch's estimate fits: the old check sent the whole batch
    # llama.cpp answers n > 1 with one text: each draw is a request that resends the prompt
    with FaultProxy(llama_server.removesuffix("/v1")) as proxy:
        code = ultimatum(proxy.base_url, tmp_path / "r", *args, "--max-cost", f"{cap:.9f}")
        billed = upstream_price(proxy, 1, 1)
    assert code == 2 and "stopped before" in one_line(capsys)
    assert billed <= cap, (billed, cap)


# -- item 8 and 9: log-probabilities ---------------------------------------------------------------

def test_positive_logprobs_are_refused_beyond_the_tolerance():
    from simsubjects.collect.models.base import LOGPROB_TOLERANCE, ChoiceResult, ImpossibleLogprobs

    ok = ChoiceResult.from_logprobs([LOGPROB_TOLERANCE / 2, -30.0])  # float rounding: kept, Z clamped to 1
    assert ok.validity == 1.0
    for bad in ([0.5, -1.0], [1000.0, -2.0], [-0.1, -0.1], [float("nan"), -1.0], [float("inf"), -1.0]):
        with pytest.raises(ImpossibleLogprobs):
            ChoiceResult.from_logprobs(bad)
    assert ChoiceResult.from_logprobs([float("-inf"), 0.0]).probs == [0.0, 1.0]  # a probability of 0


def _options() -> list[str]:
    """The ultimatum study's two answers, as the study makes them (never retyped)."""
    from simsubjects.collect.studies.registry import get_study

    trials, _ = get_study("ultimatum").make(pairs=1, seed=0)
    return list(trials["options"].iloc[0])


def _plus_1000(body):
    """Every log-probability +1000, and the study's answers among the next token's top ones."""
    answers = _options()
    for ch in body.get("choices", []):
        lp = ch.get("logprobs") or {}
        if isinstance(lp.get("top_logprobs"), list):
            lp["top_logprobs"] = [{**{k: 1000.0 for k in (d or {})}, **{a: 1000.0 for a in answers}}
                                  for d in lp["top_logprobs"]]
        if isinstance(lp.get("token_logprobs"), list):
            lp["token_logprobs"] = [1000.0 for _ in lp["token_logprobs"]]
        for tok in lp.get("content") or []:
            tok["logprob"] = 1000.0
            for t in tok.get("top_logprobs") or []:
                t["logprob"] = 1000.0
    return body


# -- item 6, 8, 9: batch files ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def batch(llama_server, tmp_path_factory):  # noqa: F811
    """The ultimatum study exported, and its results from the real server (as the Batch API writes them)."""
    from tests.test_batch_files import run_batch

    d = tmp_path_factory.mktemp("batch")
    assert ultimatum(DEAD, d / "unused", "--batch-export", str(d / "requests.jsonl")) == 0
    run_batch(llama_server, d / "requests.jsonl", d / "results.jsonl")
    return d


def _edited(src: Path, dest: Path, edit) -> Path:
    lines = [json.loads(x) for x in src.read_text().splitlines()]
    for i, line in enumerate(lines):
        edit(i, line["response"]["body"])
    dest.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return dest


def test_results_from_another_model_are_refused_and_listed(batch, tmp_path, capsys):
    def other(i, body):
        if i in (2, 5):
            body["model"] = "gpt-imposter"

    results = _edited(batch / "results.jsonl", tmp_path / "other.jsonl", other)
    out = tmp_path / "r"
    assert ultimatum(DEAD, out, "--batch-import", str(results)) == 2
    line = one_line(capsys)
    assert "2 result line(s) answered by another model" in line and "gpt-imposter" in line
    assert "line 3" in line and "line 6" in line, line
    assert not (out / "cache.sqlite").exists()  # nothing imported


def test_results_with_logprobs_of_plus_1000_are_refused_naming_the_line(batch, tmp_path, capsys):
    results = _edited(batch / "results.jsonl", tmp_path / "plus.jsonl",
                      lambda i, body: _plus_1000(body) if i == 0 else None)
    assert ultimatum(DEAD, tmp_path / "r", "--batch-import", str(results)) == 2
    line = one_line(capsys)
    assert "plus.jsonl line 1" in line and "above 0" in line, line
    assert not (tmp_path / "r" / "cache.sqlite").exists()


def test_batch_import_from_a_fifo_or_a_device_is_one_line_exit_2(tmp_path, capsys):
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)  # opened for reading, it would block until a writer comes: never opened
    for source in (fifo, Path("/dev/zero")):
        assert ultimatum(DEAD, tmp_path / "r", "--batch-import", str(source)) == 2
        assert "not a regular file" in one_line(capsys)
    assert not (tmp_path / "r").exists()


def test_batch_export_keeps_an_existing_file_without_overwrite(tmp_path, capsys):
    target = tmp_path / "requests.jsonl"
    target.write_text("mine\n")
    assert ultimatum(DEAD, tmp_path / "r", "--batch-export", str(target)) == 2
    line = one_line(capsys)
    assert "exists" in line and "--overwrite" in line, line
    assert target.read_text() == "mine\n"
    assert ultimatum(DEAD, tmp_path / "r", "--batch-export", str(target), "--overwrite") == 0
    assert len(target.read_text().splitlines()) == 11  # one line per trial: the study's 11 requests


# -- item 8: Ray addresses --------------------------------------------------------------------------

@pytest.mark.parametrize("address", ["http://user:hunter2@127.0.0.1:9", "/tmp/ray.sock", "127.0.0.1:99999"])
def test_a_non_ray_address_is_one_line_exit_2(address, tmp_path, capsys):
    code = main(["collect", "ultimatum", "--pairs", "1", "--engine", "ray", "--ray-address", address,
                 "--out", str(tmp_path / "r")])
    assert code == 2
    line = one_line(capsys)
    assert "not a Ray address" in line and "hunter2" not in line
    assert not (tmp_path / "r").exists()


# -- item 10: the preload server's cache folder, human estimates --------------------------------------

def test_a_relative_cache_folder_reaches_the_preload_server_absolute(tmp_path, monkeypatch):
    """The server runs in <cache>/run; a relative SIMSUBJECTS_CACHE read there again doubled the path."""
    from simsubjects.cli import preload

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMSUBJECTS_CACHE", "cache")
    client = preload.runtime_dir()
    env = preload.import_env()  # the server's environment (preload.start)
    assert env["SIMSUBJECTS_CACHE"] == str(tmp_path / "cache")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the server's working folder is another
    monkeypatch.setenv("SIMSUBJECTS_CACHE", env["SIMSUBJECTS_CACHE"])
    assert preload.runtime_dir() == client


def test_human_estimates_that_overflow_fail_check_naming_the_rows(tmp_path, capsys):
    study = tmp_path / "s"
    shutil.copytree(ROOT / "simsubjects/studyfile/starters/estimation", study)
    (study / "human.csv").write_text("who,question,answer,w\na,everest,1e308,1e308\nb,everest,1e308,1e308\n"
                                     "c,moon,384400,1\n")
    text = (study / "study.yaml").read_text()
    (study / "study.yaml").write_text(text + "\nhuman:\n  file: human.csv\n  columns: {respondent: who, item: question, "
                                             "response: answer, weight: w}\n")
    assert main(["study", "check", str(study / "study.yaml")]) == 2
    line = one_line(capsys)
    assert "rows 2, 3 of the human table" in line and "everest" in line and "overflow" in line, line
    # finite sums pass
    (study / "human.csv").write_text("who,question,answer,w\na,everest,8000,1\nb,everest,9000,2\n")
    assert main(["study", "check", str(study / "study.yaml")]) == 0


# -- item 7 and issue 37: study files and sessions take the options README shows for collect ------------

@pytest.mark.parametrize("path", ["examples/vignette_2x2/study.yaml", "examples/trust_bdm/study.yaml",
                                  "examples/milgram/study.yaml"], ids=["study-file", "session", "obedience"])
def test_study_files_and_sessions_take_max_cost(path, tmp_path, capsys):
    assert main(["collect", str(ROOT / path), "--out", str(tmp_path / "r"), "--dry-run", "--price-in", "1",
                 "--max-cost", "1000"]) == 0
    assert "--max-cost 1000: the run fits" in capsys.readouterr().out
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("path", ["examples/vignette_2x2/study.yaml", "examples/trust_bdm/study.yaml"],
                         ids=["study-file", "session"])
def test_study_files_and_sessions_export_batch_files(path, tmp_path, capsys):
    target = tmp_path / "requests.jsonl"
    assert main(["collect", str(ROOT / path), "--model", f"openai:smollm2@{DEAD}", "--out", str(tmp_path / "r"),
                 "--batch-export", str(target)]) == 0
    lines = [json.loads(x) for x in target.read_text().splitlines()]
    assert lines and all(x["body"]["model"] == "smollm2" for x in lines)
    assert not (tmp_path / "r").exists()  # export writes nothing into --out


def test_study_files_take_engine(tmp_path, capsys):
    # --engine ray is checked like a built-in's: an API model is refused before anything loads
    assert main(["collect", str(ROOT / "examples/vignette_2x2/study.yaml"), "--model", f"openai:smollm2@{DEAD}",
                 "--engine", "ray", "--out", str(tmp_path / "r")]) == 2
    assert "--engine ray runs local models" in one_line(capsys)


# -- issue 37: one collection function, one home for each default ------------------------------------

def _calls(tree, name: str) -> int:
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call)
               and getattr(n.func, "id", getattr(n.func, "attr", None)) == name)


def test_one_collection_function_serves_every_collect_entry_point():
    cli = {f.name: ast.parse(f.read_text()) for f in (ROOT / "simsubjects/cli").glob("*.py")}
    callers = sorted(name for name, tree in cli.items() if _calls(tree, "run_study"))
    assert callers == ["collection.py"], callers
    users = {name for name, tree in cli.items() if _calls(tree, "collect_study")}
    assert {"commands.py", "studyfile.py", "session_cmd.py", "obedience_cmd.py", "replicate.py"} <= users


def test_one_home_for_the_batch_size_and_n_defaults():
    """No literal default of batch_size / n / --batch-size / --n outside collect/defaults.py."""
    from simsubjects.collect import defaults

    found = []
    for f in (ROOT / "simsubjects").rglob("*.py"):
        if f.name == "defaults.py" or "studies" in f.parts or "datasets" in f.parts:
            continue  # a study's own protocol constants (milgram's judgments) are not option defaults
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.args[-len(node.args.defaults):] if node.args.defaults else []
                pairs = list(zip(args, node.args.defaults)) + list(zip(node.args.kwonlyargs, node.args.kw_defaults))
                found += [f"{f.name}:{node.name}({a.arg}={d.value})" for a, d in pairs
                          if a.arg in ("batch_size", "n", "chunk") and isinstance(d, ast.Constant)
                          and d.value in (defaults.BATCH_SIZE, defaults.SAMPLES) and f.name != "base.py"]
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "option" and node.args \
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value in ("--batch-size", "--n"):
                found += [f"{f.name}: option {node.args[0].value}"] if f.name != "options.py" else []
    assert not found, found


# -- item 9: Ray's files -------------------------------------------------------------------------------

RAY_SCRIPT = """
import ray
from simsubjects.collect.ray_engine import private_ray_dir
d = private_ray_dir()
ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, _temp_dir=d, log_to_driver=False,
         configure_logging=False, num_cpus=1)
assert ray.get(ray.remote(lambda: 2).remote()) == 2
print(d)
"""


def test_a_local_ray_cluster_leaves_no_logs_or_token_behind(tmp_path):
    """The cluster RayEngine starts (no --ray-address): its session folder is removed at exit and its
    token never reaches ~/.ray/auth_token (the mode-0644 file of issue 42)."""
    import subprocess
    import sys

    pytest.importorskip("ray")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env.update(HOME=str(home), PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", RAY_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    folder = Path(r.stdout.strip().splitlines()[-1])
    assert folder.name.startswith("simsubjects-ray-") and not folder.exists()  # logs removed at exit
    assert not (home / ".ray").exists()  # no token file written into the home folder
