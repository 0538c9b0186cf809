"""--engine ray on a real Ray cluster on loopback (`ray start --head`, 2 CPUs): two CPU actors collect a
tiny study; its rows equal a single-process run's, also when one actor is SIGKILLed mid-run.

The module builds one pool of two actors (each a fresh Ray worker that imports torch and loads the
model, ~10 s of CPU): the `collect --engine ray` run uses it (the command line's options are checked
where the engine is built), then the kill test kills one of its actors, so it runs last.

Each actor answers whole --batch-size shards, the forward composition of a local run, so the
probabilities are compared to 1e-12. Unit: the trial (one k-choice request of the ultimatum study).
The cluster is bounded in time (start within 120 s) and stopped at the end of the module.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pandas as pd
import pytest

from tests.llama_server import free_port

# Token authentication (Ray's default for local clusters since 2.59): one random token for this test
# cluster, shared by the head, its workers and this driver through the environment; set before Ray
# is imported, which reads it then.
os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16), RAY_USAGE_STATS_ENABLED="0")
ray = pytest.importorskip("ray") if os.environ.get("SIMSUBJECTS_REQUIRE_RAY") != "1" else __import__("ray")

PARAMS = {"pairs": 1, "seed": 0, "chat_template": False}
BATCH = 4  # 11 trials: shards of 4, 4 and 3
OPTIONS = {"chat_template": False, "trust_remote_code": False, "device": "auto"}  # what `collect` passes


def _session_pids(sid: int) -> list[int]:
    """Live processes of the session `sid` (the head and every process it started, actor workers
    included); zombies are dead already."""
    pids = []
    for d in os.listdir("/proc"):
        try:
            stat = open(f"/proc/{d}/stat").read() if d.isdigit() else ""
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split() if stat else []
        if fields and fields[0] != "Z" and int(fields[3]) == sid:
            pids.append(int(d))
    return pids


@pytest.fixture(scope="module")
def cluster():
    """`ray start --head --block` on 127.0.0.1 with 2 CPUs; its address. Killed at the end."""
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    port = free_port()
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
           "--port", str(port), "--num-cpus", "2", "--num-gpus", "0", "--include-dashboard", "false",
           "--temp-dir", temp, "--disable-usage-stats",
           "--include-log-monitor", "false"]  # no log monitor: the driver reads no worker logs (log_to_driver=False)
    log = open(os.path.join(temp, "head.log"), "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, open(os.path.join(temp, "head.log")).read()[-3000:]
            try:
                ray.init(address=address, log_to_driver=False)
                break
            except Exception:  # noqa: BLE001 - not up yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)
        yield address
    finally:
        ray.shutdown()
        # As `ray stop --force`: SIGKILL the head's process group (its graceful stop on SIGTERM took ~30 s
        # of waiting). Actor workers have process groups of their own, in the head's session: they
        # exit when their raylet is gone; wait (bounded) until no process of the session is left.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _session_pids(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in _session_pids(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)
        for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
            os.environ.pop(var, None)


@pytest.fixture(scope="module")
def local_rows(smollm2, tmp_path_factory):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.collect.studies.registry import get_study

    out = tmp_path_factory.mktemp("local") / "run"
    rows, _ = run_study(get_study("ultimatum"), "smollm2", out, params=PARAMS, batch_size=BATCH, show_progress=False,
                        model=smollm2)
    return rows


@pytest.fixture(scope="module")
def engine(cluster):
    """The module's pool: RayEngine("smollm2", ...) with two actors on the cluster, built as
    `collect --engine ray --ray-actors 2` builds it."""
    from simsubjects.collect.ray_engine import RayEngine

    pool = RayEngine("smollm2", OPTIONS, address=cluster, actors=2, batch_size=BATCH)
    yield pool
    pool.close()


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    key = ["trial", "response"]
    a, b = a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True)
    floats = [c for c in a.columns if a[c].dtype.kind == "f"]
    pd.testing.assert_frame_equal(a.drop(columns=floats), b.drop(columns=floats))
    pd.testing.assert_frame_equal(a[floats], b[floats], check_exact=False, atol=1e-12, rtol=0)


def test_two_cpu_actors_give_the_local_rows(cluster, engine, local_rows, tmp_path, monkeypatch):
    import simsubjects.collect.ray_engine as ray_engine
    from simsubjects.cli.commands import main

    # `collect --engine ray` builds RayEngine from its options: here it gets the module's pool (built
    # with the same arguments), after checking that the options reached it; the collection closes it
    built, closed = [], []

    def shared_pool(spec, options, **kw):
        built.append((str(spec), options, kw))
        return engine

    monkeypatch.setattr(ray_engine, "RayEngine", shared_pool)
    monkeypatch.setattr(engine, "close", lambda: closed.append(True))
    assert len(engine.actors) == 2  # no actor lost yet (the kill test runs after this one)
    out = tmp_path / "ray"
    assert main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--batch-size", str(BATCH), "--engine", "ray",
                 "--ray-address", cluster, "--ray-actors", "2", "--out", str(out)]) == 0
    assert built == [("smollm2", OPTIONS, {"address": cluster, "actors": 2, "threads": 1, "batch_size": BATCH})]
    assert closed == [True]  # the actors end with the collection
    _same(local_rows, pd.read_parquet(out / "responses.parquet"))
    record = json.loads((out / "manifest.json").read_text())["engine"]
    assert record["name"] == "ray" and record["nodes"] == 1 and record["actors"] == 2
    assert record["actors_lost"] == 0 and record["shards_retried"] == 0
    assert set(record["versions"]) == {"ray", "torch", "transformers"}
    # the same run folder resumes under the local engine: same identity, everything cached
    assert main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--batch-size", str(BATCH), "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    # the finished run keeps its own (ray) record; the resume is an event (collect/resume_record.py, issue 25)
    assert manifest["engine"]["name"] == "ray" and manifest["usage"]["requests"] > 0
    assert manifest["events"][-1]["engine"] == {"name": "local"} and manifest["events"][-1]["usage"]["requests"] == 0


def test_an_actor_killed_mid_run_changes_no_row(engine, local_rows, tmp_path):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.collect.studies.registry import get_study

    # the pool's actors have answered the collection above (when run with it): warm actors give the
    # same rows as the local run, the kill below included
    assert len(engine.actors) == 2
    victim = engine.described[0]["pid"]
    real_map, calls = engine._map, []

    def map_then_kill(op, requests, *args):
        calls.append(len(requests))
        if len(calls) == 2:  # the first batch is committed; the victim dies with the second in flight
            refs_before = len(engine.actors)
            os.kill(victim, signal.SIGKILL)
            assert refs_before == 2
        return real_map(op, requests, *args)

    engine._map = map_then_kill
    try:
        rows, manifest = run_study(get_study("ultimatum"), "smollm2", tmp_path / "run", params=PARAMS,
                                   batch_size=BATCH, show_progress=False, model=engine)
        alive = len(engine.actors)
    finally:
        engine.close()
    assert len(calls) == 2  # 8 trials, then 3 (the chunk is batch size x 2 actors)
    assert engine.shards_retried >= 1 and alive == 1
    assert manifest["engine"]["actors_lost"] == 1 and manifest["engine"]["shards_retried"] >= 1
    _same(local_rows, rows)
    assert manifest["failures"] == []


def test_bad_engine_options_one_line_exit_2(tmp_path, capsys):
    from simsubjects.cli.commands import main

    for args in (["--engine", "ray", "--model", "openai:m@http://127.0.0.1:9/v1"], ["--ray-actors", "2"],
                 ["--engine", "ray", "--ray-actors", "0"], ["--engine", "ray", "--ray-threads", "0"],
                 ["--engine", "ray", "--validate"]):
        capsys.readouterr()
        assert main(["collect", "ultimatum", "--pairs", "1", "--quiet", "--out", str(tmp_path / "r"), *args]) == 2, args
        assert len(capsys.readouterr().err.strip().splitlines()) == 1, args
    assert not (tmp_path / "r").exists()
