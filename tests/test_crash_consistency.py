"""SIGKILL during `export` and `analyze` at seeded random points, 10 each: the output folder then holds
either the previous complete set or the new complete set, never a mix, never a partial or temporary
file; and the next run cleans whatever a killed one left beside it (issue 18).

Setup: a run folder grown to a few thousand questions (tests.harden_util.grow_run) so that writing
takes a few seconds; set A is written from one version of the data, then the data change and set B
is the output of the command under test. Each kill restores A in the target first and keeps the
leftovers of earlier kills beside it, so the final clean-up check sees them all.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import time
from pathlib import Path

import pandas as pd
import pytest

from simsubjects.cli.commands import main
from tests.harden_util import grow_run, imported_run

KILLS = 10
N_KEYS = 250


def _fingerprint(folder: Path) -> dict[str, object]:
    """Names and contents of a set; binary formats that stamp the time (dta, sav) by size only."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            out[str(p.relative_to(folder))] = len(data) if p.suffix in (".dta", ".sav", ".rds") else data
    return out


def _start(argv) -> int:
    """The command in a forked child (no interpreter start-up: the kill lands in the command's own work)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        rc = 1
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            rc = main([str(a) for a in argv])
        finally:
            os._exit(rc)
    return pid


def _staging(target: Path) -> bool:
    return any(p.name.startswith(f".{target.name}.staging-") for p in target.parent.iterdir())


def _run_watched(argv, target: Path, kill: tuple[str, float] | None = None) -> tuple[dict, int | None]:
    """Run the command, noting when its staging folder appears ("stage") and when the target is swapped
    ("swap": the target's inode changes). `kill` = (event, seconds): SIGKILL that long after the event.
    Returns (event times, exit code or None if killed)."""
    ino = target.stat().st_ino if target.exists() else None
    t0 = time.perf_counter()
    pid = _start(argv)
    events: dict[str, float] = {}
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        now = time.perf_counter() - t0
        if done:
            return events, os.waitstatus_to_exitcode(status)
        if "stage" not in events and _staging(target):
            events["stage"] = now
        if "swap" not in events and target.exists() and target.stat().st_ino != ino:
            events["swap"] = now
        if kill is not None and kill[0] in events and now - events[kill[0]] >= kill[1]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return events, None
        time.sleep(0.001)


def _leftovers(parent: Path, name: str) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))


@pytest.mark.parametrize("command", ["export", "analyze"])
def test_sigkill_leaves_the_old_or_the_new_set(tmp_path, command):
    run = grow_run(imported_run(tmp_path), N_KEYS, seed=1)
    target = run / ("export" if command == "export" else "analysis")
    first = ["export", run, "--to", "csv"] if command == "export" else ["analyze", run, "--no-plots"]
    second = ["export", run, "--to", "csv,parquet,dta,sav"] if command == "export" else ["analyze", run]
    assert main([str(a) for a in first]) == 0
    old = _fingerprint(target)
    saved = tmp_path / "old-set"
    shutil.copytree(target, saved)
    grow_run(imported_run(tmp_path, "run2"), N_KEYS, seed=2)  # other data: the new set differs in content
    for name in ("responses.parquet", "items.parquet"):
        shutil.copy(tmp_path / "run2" / name, run / name)
    # the new complete set, written once into a copy of the folder (the same command's result)
    ref = tmp_path / "ref"
    shutil.copytree(run, ref)
    events, rc = _run_watched([a if a != run else ref for a in second], ref / target.name)
    assert rc == 0 and {"stage", "swap"} <= set(events), events
    write_phase = events["swap"] - events["stage"]
    new = _fingerprint(ref / target.name)
    assert new != old and set(old) <= set(new)

    rng = random.Random(18)
    outcomes = []
    for i in range(KILLS):
        shutil.rmtree(target)
        shutil.copytree(saved, target)  # the previous complete set; leftovers of earlier kills stay beside it
        # a legacy leftover inside the target, as versions before crash-consistent writes left them
        (target / ".export-legacy").mkdir()
        (target / ".export-legacy" / "responses.dta").write_bytes(b"partial")
        (target / ".table4.csv.abc.tmp").write_bytes(b"partial")
        # a seeded point in the write phase (staging folder to swap), or in the clean-up after the swap
        u = 1.3 * (i + rng.random()) / KILLS  # seeded, one point in each tenth of the span
        kill = ("stage", u * write_phase) if u < 1 else ("swap", (u - 1) * 0.05)
        _, rc = _run_watched(second, target, kill=kill)
        got = _fingerprint(target)
        got = {k: v for k, v in got.items() if not (k.startswith(".export-legacy") or k.endswith(".tmp"))}
        if got == old:
            outcomes.append("old")
        elif got == new:
            outcomes.append("new")
        else:
            pytest.fail(f"kill #{len(outcomes) + 1} (rc {rc}) left a mix: "
                        f"extra {sorted(set(got) - set(old) - set(new))}, "
                        f"differs from old {sorted(k for k in got if got[k] != old.get(k))[:5]}, "
                        f"from new {sorted(k for k in got if got[k] != new.get(k))[:5]}")
    print(f"\n{command}: write phase {write_phase:.2f}s; {KILLS} kills -> {outcomes.count('old')} old set, "
          f"{outcomes.count('new')} new set")
    assert outcomes.count("old") and outcomes.count("new"), outcomes  # both sides of the swap were hit
    # a complete run afterwards removes every leftover, beside the target and inside it
    assert main([str(a) for a in second]) == 0
    assert _fingerprint(target) == new
    assert _leftovers(run, target.name) == []
    assert not [p.name for p in target.iterdir() if p.name.startswith(".")]
    zero = [p.name for p in target.glob("*.png") if p.stat().st_size == 0]
    assert zero == []
