"""Helpers of the hardening tests: run folders made without a model, and real full or read-only disks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from simsubjects.cli.commands import main

R_OK = "key,response,group,num_options\nK1,a,orig alpha,2\nK1,b,pos alpha,2\nK1,b,orig alpha,2\n"


def imported_run(root: Path, name: str = "run") -> Path:
    """A complete survey_bias run folder from imported BiasMonkey answers (no model)."""
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "acquiescence.csv").write_text(R_OK)
    assert main(["import-responses", "biasmonkey", str(root / "results"), "--model", "m", "--out",
                 str(root / name)]) == 0
    shutil.rmtree(root / "results")
    return root / name


def grow_run(run: Path, n_keys: int, seed: int) -> Path:
    """Replicate the imported run's one question `n_keys` times with seeded random answer shares, so
    that analyze and export take seconds (room for a SIGKILL mid-write) and their output is new."""
    r = pd.read_parquet(run / "responses.parquet")
    items = pd.read_parquet(run / "items.parquet")
    rng = np.random.default_rng(seed)
    parts, iparts = [], []
    for k in range(n_keys):
        key = f"K{k}"
        part = r.assign(key=key, item=r["item"].str.replace("/K1/", f"/{key}/"),
                        trial=r["trial"].str.replace("/K1/", f"/{key}/"))
        part["weight"] = rng.integers(0, 50, len(part)).astype(float)
        parts.append(part)
        iparts.append(items.assign(key=key, item=items["item"].str.replace("/K1/", f"/{key}/")))
    pd.concat(parts, ignore_index=True).to_parquet(run / "responses.parquet", index=False)
    pd.concat(iparts, ignore_index=True).to_parquet(run / "items.parquet", index=False)
    return run


def edit_manifest(run: Path, **fields) -> None:
    m = json.loads((run / "manifest.json").read_text())
    m.update(fields)
    (run / "manifest.json").write_text(json.dumps(m))


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def can_mount() -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    probe = Path(f"/tmp/simsubjects-mount-probe-{os.getpid()}")
    probe.mkdir(exist_ok=True)
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
                            capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", str(probe)], check=True)
        return ok
    finally:
        probe.rmdir()


@contextmanager
def tmpfs(where: Path, size_kb: int = 256, read_only: bool = False, fill: bool = False):
    """A real small file system at `where`: read-only, or full (`fill`: a file takes every free byte)."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(where)], check=True)
    try:
        if fill:
            fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT)
            try:
                while os.write(fd, b"\0" * 4096):
                    pass
            except OSError:  # ENOSPC: the disk is full
                pass
            finally:
                os.close(fd)
        if read_only:
            subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
