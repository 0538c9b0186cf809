"""Conjoint prompts per second: each prompt encoded whole vs prefix packing (the shared instructions once per row).

The immigration conjoint's prompts (HHY 2014, ~190 tokens) share their instructions and the table
header (~35 tokens); a task's two profile orders and a respondent's tasks share them too. Prefix
packing (collect/models/packing.py) encodes such a shared prefix once per packed row. This
benchmark scores the same requests both ways on the same loaded model, in the same run, and
prints prompts/s (wall and CPU), tokens fed and forward passes, and the largest difference of the
log-probabilities (packing must change nothing).

    python bench/conjoint.py --respondents 10   # the `make demo` design: 10 x 5 tasks x 2 orders
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import markdown, report_target  # noqa: E402

from simsubjects.collect.models import ChoiceRequest, load_model  # noqa: E402


def conjoint_requests(respondents: int, tasks: int = 5) -> list[ChoiceRequest]:
    from simsubjects.studies.conjoint.design import build

    trials, _ = build(respondents=respondents, tasks=tasks, orders="both")
    return [ChoiceRequest(p, tuple(o)) for p, o in zip(trials["prompt"], trials["options"])]


def measure(lm, requests, packing: bool) -> tuple[dict, list]:
    lm.packing = packing
    before = dict(lm.stats)
    wall, cpu = time.perf_counter(), time.process_time()
    lps = lm.score(requests)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    fed = lm.stats["tokens"] - before["tokens"]
    return {"setting": "prefix packing" if packing else "each prompt whole", "prompts": len(requests),
            "tokens fed": int(fed), "forward passes": int(lm.stats["forwards"] - before["forwards"]),
            "seconds": round(wall, 2), "CPU seconds": round(cpu, 2), "prompts/s": len(requests) / wall,
            "prompts per CPU s": len(requests) / cpu}, lps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--respondents", type=int, default=10)
    ap.add_argument("--tasks", type=int, default=5)
    args = ap.parse_args()
    requests = conjoint_requests(args.respondents, args.tasks)
    lm = load_model("smollm2")
    lm.score(requests[:2])  # warm-up: first-call allocations stay out of both timings
    whole, lp_whole = measure(lm, requests, packing=False)
    packed, lp_packed = measure(lm, requests, packing=True)
    diff = float(np.max(np.abs(np.array(lp_whole) - np.array(lp_packed))))
    table = pd.DataFrame([whole, packed])
    table["vs whole"] = table["prompts/s"] / whole["prompts/s"]
    print(f"conjoint: {args.respondents} respondents x {args.tasks} tasks x 2 orders "
          f"({len(requests)} prompts, mean {whole['tokens fed'] / len(requests):.0f} tokens)")
    print(markdown(table))
    print(f"largest log-probability difference, packed vs whole: {diff:.2e}")
    ratio = packed["tokens fed"] / whole["tokens fed"]
    report_target("conjoint: prefix packing feeds fewer tokens than whole prompts, same log-probabilities",
                  f"{ratio:.2f} of the tokens, {table['vs whole'].iloc[1]:.2f}x prompts/s, max diff {diff:.1e}",
                  ratio < 1 and diff < 1e-4, "the prompts share only their first ~35 tokens")


if __name__ == "__main__":
    main()
