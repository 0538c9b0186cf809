"""--max-cost with --price-in/--price-out: a collection stops before its priced usage would pass the cap,
keeps what is done, and the same command with a larger cap finishes with the uncapped run's rows.

The embedded model counts its prompt tokens as an API would bill them (manifest "usage"), so the cap
is exercised on a real model. Unit: the trial (one k-choice request of the ultimatum study).
"""

from __future__ import annotations

import json
import re
import sqlite3

import pandas as pd

from simsubjects.cli.commands import main

BASE = ["collect", "ultimatum", "--pairs", "1", "--quiet", "--batch-size", "3"]


def cached(out) -> int:
    db = sqlite3.connect(out / "cache.sqlite")
    try:
        return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
    finally:
        db.close()


def test_cap_stops_keeps_and_resumes_to_the_same_rows(tmp_path, capsys):
    assert main([*BASE, "--out", str(tmp_path / "free")]) == 0
    free = json.loads((tmp_path / "free" / "manifest.json").read_text())
    full = free["usage"]["prompt_tokens"] / 1e6  # the whole run's price at $1 per million prompt tokens
    capped = tmp_path / "capped"
    capsys.readouterr()
    cap = full * 0.5
    assert main([*BASE, "--out", str(capped), "--price-in", "1", "--max-cost", f"{cap:.9f}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stopped before" in err[0] and "remain" in err[0], err
    assert not (capped / "responses.parquet").exists()
    done = cached(capped)
    assert 0 < done < 11 and done % 3 == 0  # whole batches of 3 trials, committed before the stop
    # the stop came before the cap: what was asked is priced below it
    spent = float(re.search(r"used \$([0-9.e-]+)", err[0]).group(1))
    assert spent <= cap
    remain = int(re.search(r"(\d+) requests remain", err[0]).group(1))
    assert remain == 11 - done
    # the same command with a larger cap finishes, asking only for the rest
    assert main([*BASE, "--out", str(capped), "--price-in", "1", "--max-cost", f"{full:.9f}"]) == 0
    resumed = json.loads((capped / "manifest.json").read_text())
    assert resumed["usage"]["requests"] == 11 - done
    a = pd.read_parquet(tmp_path / "free" / "responses.parquet")
    b = pd.read_parquet(capped / "responses.parquet")
    pd.testing.assert_frame_equal(a, b)  # same batch size: the same numbers to the last bit


def test_dry_run_says_whether_it_fits(tmp_path, capsys):
    for cap, verdict in (("1", "the run fits"), ("0.0001", "the run does not fit")):
        capsys.readouterr()
        assert main([*BASE, "--out", str(tmp_path / "r"), "--dry-run", "--price-in", "1", "--max-cost", cap]) == 0
        assert verdict in capsys.readouterr().out
    assert not (tmp_path / "r").exists()


def test_bad_caps_one_line_exit_2(tmp_path, capsys):
    for args in (["--max-cost", "1"], ["--max-cost", "-1", "--price-in", "1"],
                 ["--max-cost", "nan", "--price-in", "1"], ["--max-cost", "1", "--price-in", "-2"]):
        capsys.readouterr()
        assert main([*BASE, "--out", str(tmp_path / "r"), *args]) == 2, args
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()
