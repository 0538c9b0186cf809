"""SIGKILL a collection again and again at random points; the resumed run loses nothing.

One uninterrupted reference run, then the same command on another folder is started and killed
with SIGKILL `KILLS` times (each time after the model has loaded, at a seeded random point: after a
random number of further cache commits plus a random part of a batch, so kills land before, inside
and between cache commits; the last two inside the final writes), then started once more and left
to finish. The final responses.parquet must equal the reference table exactly and no row may be
lost. After every kill the cache must pass SQLite's integrity check and the folder must either
refuse analysis ("did not finish") or hold the complete reference table; temporary files a kill
leaves behind are gone after the next start.

Each start is a process forked from a multiprocessing fork server that has imported torch,
transformers and the CLI once (as `simsubjects preload` does for users), so a start costs the model
load, not the ~7 s import; SIGKILL reaches the collecting process itself.

Run: python -m pytest tests/test_kill_resume.py -q -s -m slow   (12 starts, each loading the model)
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import time
from pathlib import Path

import pandas as pd
import pytest

from tests import forked

PAIRS, BATCH = 2, 2
TRIALS = PAIRS * 11
ARGS = ["collect", "ultimatum", "--pairs", str(PAIRS), "--batch-size", str(BATCH), "--quiet"]
KILLS = 10
SEED = 7
START_TIMEOUT = 420  # seconds for one start to load the model on a busy 2-core machine


def cached_answers(out: Path) -> int:
    path = out / "cache.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
    except sqlite3.Error:
        return 0


def integrity(out: Path) -> str:
    path = out / "cache.sqlite"
    if not path.exists():
        return "ok"
    with sqlite3.connect(path, timeout=30) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def manifest_stamp(out: Path):
    """Changes when `RunStore.open` rewrites the manifest, i.e. once the model has loaded."""
    try:
        st = os.stat(out / "manifest.json")
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def table_stamp(out: Path):
    try:
        st = os.stat(out / "responses.parquet")
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def writing_tables(out: Path, stamp) -> bool:
    """The final writes have begun: a table's temporary file exists, or responses.parquet was replaced."""
    try:
        names = os.listdir(out)
    except FileNotFoundError:
        return False
    return any(n.startswith((".responses.parquet.", ".items.parquet.")) for n in names) or table_stamp(out) != stamp


@pytest.fixture(scope="module")
def forkserver():
    return forked.context()


def start(ctx, out: Path, log: Path) -> forked.Start:
    return forked.Start(ctx, ARGS + ["--out", str(out)], log)


def run_to_end(ctx, out: Path, log: Path) -> int:
    return start(ctx, out, log).wait()


@pytest.mark.slow
def test_ten_random_kills_lose_no_rows(tmp_path, forkserver):
    from simsubjects.collect.store import load_run
    from simsubjects.errors import UserError

    ref = tmp_path / "reference"
    assert run_to_end(forkserver, ref, tmp_path / "reference.log") == 0, (tmp_path / "reference.log").read_text()[-2000:]
    want = pd.read_parquet(ref / "responses.parquet")
    assert len(want) == TRIALS * 2
    # The kill schedule follows the reference's own pace (the machine may be busy). Kills 1-8: wait
    # until the cache holds 0 or 1 further batches (random), then a random part of a batch, so they
    # land before, inside and between cache commits. Kills 9-10: wait until every answer is cached
    # and the final tables are being written, then kill at once (between the table writes and the
    # manifest that marks the run complete). A start that finishes before its kill is started again.
    per_batch = json.loads((ref / "manifest.json").read_text())["timings"]["collection_seconds"] / (TRIALS / BATCH)

    rng = random.Random(SEED)
    out, log = tmp_path / "killed", tmp_path / "killed.log"
    kills, finished_first, history = 0, 0, []
    for attempt in range(KILLS + 8):
        if kills == KILLS:
            break
        before = cached_answers(out)
        final_phase = kills >= KILLS - 2
        if final_phase:
            target, extra = TRIALS, 0.0
        else:
            target, extra = min(TRIALS, before + BATCH * rng.randint(0, 1)), rng.uniform(0.0, per_batch)
        stamp, tables = manifest_stamp(out), table_stamp(out)
        proc = start(forkserver, out, log)
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while manifest_stamp(out) == stamp and proc.poll() is None:  # the model is loading
                assert time.monotonic() < deadline, "the collection did not start in time"
                time.sleep(0.02)
            while proc.poll() is None and cached_answers(out) < target:
                assert time.monotonic() < deadline, "the collection made no progress"
                time.sleep(0.01)
            if final_phase:
                while proc.poll() is None and not writing_tables(out, tables):
                    assert time.monotonic() < deadline, "the final tables were never written"
                    time.sleep(0.0005)
            t_kill = time.monotonic() + extra
            while proc.poll() is None and time.monotonic() < t_kill:
                time.sleep(0.005)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
                killed = True
            else:
                assert proc.returncode == 0, log.read_text(errors="replace")[-2000:]
                finished_first += 1
                killed = False
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert integrity(out) == "ok"
        try:
            _, got, _ = load_run(out)
            state = "complete"
            pd.testing.assert_frame_equal(got, want)
        except UserError as e:
            assert "did not finish" in str(e), str(e)
            state = "unfinished"
        history.append({"attempt": attempt + 1, "phase": "final writes" if final_phase else "collection",
                        "cached_before": before, "target": target, "extra_s": round(extra, 2), "killed": killed,
                        "cached_after": cached_answers(out), "state": state,
                        "temp_files": sorted(n for n in os.listdir(out) if n.endswith(".tmp"))})

    assert run_to_end(forkserver, out, log) == 0, log.read_text(errors="replace")[-2000:]
    got = pd.read_parquet(out / "responses.parquet")
    keys = ["trial", "response"]
    rows_lost = len(want) - len(want[keys].merge(got[keys], on=keys))
    leftovers = sorted(p.name for p in out.iterdir() if p.name.endswith(".tmp"))
    print(f"\nkill test: {kills} kills delivered, {finished_first} starts finished before their kill, "
          f"rows lost: {rows_lost} of {len(want)}, {per_batch:.1f}s per batch, temp files left: {leftovers}")
    for h in history:
        print("  ", h)
    assert kills == KILLS, f"only {kills} kills delivered"
    assert rows_lost == 0
    pd.testing.assert_frame_equal(got, want)
    assert cached_answers(out) == TRIALS
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert not leftovers
