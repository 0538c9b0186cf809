"""Run folders: a collection killed with SIGKILL and started again gives the identical table."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pandas as pd
import pytest

CMD = [sys.executable, "-m", "simsubjects.cli", "collect", "ultimatum", "--pairs", "4", "--quiet",
       "--batch-size", "4"]


def run(out, check=True):
    return subprocess.run(CMD + ["--out", str(out)], check=check, capture_output=True, text=True)


def cached_answers(out) -> int:
    path = out / "cache.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_kill_and_resume_gives_identical_table(tmp_path):
    clean = tmp_path / "clean"
    run(clean)
    want = pd.read_parquet(clean / "responses.parquet")
    assert len(want) == 4 * 11 * 2

    killed = tmp_path / "killed"
    proc = subprocess.Popen(CMD + ["--out", str(killed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while cached_answers(killed) < 8 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the collection finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = cached_answers(killed)
    assert 0 < partial < 44
    # The killed folder must not look complete.
    from simsubjects.collect.store import load_run
    from simsubjects.errors import UserError

    with pytest.raises(UserError, match="did not finish"):
        load_run(killed)

    run(killed)
    got = pd.read_parquet(killed / "responses.parquet")
    pd.testing.assert_frame_equal(got, want)
    assert cached_answers(killed) == 44
