"""Run every benchmark in one go and write docs/benchmarks.md with their tables.

    python bench/run_all.py [--quick]

The full sizes are chosen so that the whole run takes about 15 minutes on a quiet 2-core machine.

Not part of the test suite: timings belong in a table with ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import tempfile
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHES = [
    ("First result: cold and warm weight cache", "startup.py", [], ["--repeat", "1"]),
    ("k-choice scoring vs lm-evaluation-harness", "kchoice.py", ["--ultimatum", "220", "--survey", "300"],
     ["--ultimatum", "110", "--survey", "50"]),
    ("Exact distribution vs sampling until 50 valid answers", "sampling.py", ["--forms", "4"], ["--forms", "2"]),
    ("Milgram: seconds per subject, re-encoding the record vs simsubjects' generation", "milgram_cache.py",
     ["--subjects", "4", "--baseline-stages", "10"], ["--subjects", "2", "--stages", "5,10", "--baseline-stages", "5"]),
    ("Option-order averaging: every ordering vs one", "option_order.py", ["--questions", "2", "--repeat", "3"],
     ["--questions", "1", "--repeat", "2"]),
    ("Sessions: cost per step from round 1 to 20, reused keys/values vs re-encoding", "sessions.py",
     ["--subjects", "2", "--rounds", "20"], ["--subjects", "1", "--rounds", "10"]),
    ("AMCE bootstrap (10,000 draws, all MoCa factors)", "bootstrap.py", ["--draws", "10000"], ["--draws", "2000"]),
    ("--engine ray vs in-process (same study, same run)", "engines.py", ["--pairs", "6", "--repeat", "3"],
     ["--pairs", "2", "--repeat", "2"]),
    ("Conjoint: prompts per second with and without prefix packing", "conjoint.py", ["--respondents", "10"],
     ["--respondents", "3"]),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller samples")
    ap.add_argument("--server", default="auto" if importlib.util.find_spec("llama_cpp") else None,
                    help="OpenAI-compatible URL for the sampling benchmark (default: start llama-cpp-python's "
                         "server on loopback where it is installed)")
    ap.add_argument("--out", default=str(HERE.parent / "docs" / "benchmarks.md"))
    ap.add_argument("--only", default=None, help="comma-separated scripts to run (e.g. startup,option_order); "
                                                  "default: all of them")
    args = ap.parse_args()
    parts = [f"# Benchmarks\n\nMade by `python bench/run_all.py{' --quick' if args.quick else ''}` on "
             f"{datetime.now(timezone.utc):%Y-%m-%d} ({platform.machine()}, {platform.python_version()}, "
             "2 cores). Every ratio compares two measurements taken in the same run.\n"]
    targets = Path(tempfile.mkstemp(suffix=".jsonl")[1])  # each benchmark appends its targets (common.py)
    env = {**os.environ, "SIMSUBJECTS_BENCH_TARGETS": str(targets)}
    for title, script, full, quick in BENCHES:
        if not (HERE / script).exists() or (args.only and script.removesuffix(".py") not in args.only.split(",")):
            continue
        extra = ["--server", args.server] if script == "sampling.py" and args.server else []
        cmd = [sys.executable, str(HERE / script), *(quick if args.quick else full), *extra]
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        took = time.perf_counter() - t
        body = "\n".join(line for line in proc.stdout.splitlines() if line.strip() and not line.startswith("target: "))
        if proc.returncode:
            body += f"\n\n(failed: exit {proc.returncode})\n```\n{proc.stderr[-2000:]}\n```"
        parts.append(f"## {title}\n\n`{' '.join(['python', 'bench/' + script, *cmd[2:]])}` ({took:.0f} s)\n\n{body}\n")
        print(parts[-1], flush=True)
    parts.insert(1, targets_section([json.loads(x) for x in targets.read_text().splitlines() if x.strip()]))
    targets.unlink()
    Path(args.out).write_text("\n".join(parts))
    print(f"wrote {args.out}")


def targets_section(rows: list[dict]) -> str:
    """The issue's targets, measured in this run; a missed one says what limits it."""
    if not rows:
        return "## Targets\n\n(no benchmark reported a target)\n"
    lines = ["| target | measured | met | what limits it |", "|---|---|---|---|"]
    lines += [f"| {r['target']} | {r['measured']} | {r['met']} | {r['what limits it']} |" for r in rows]
    return "## Targets\n\n" + "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
