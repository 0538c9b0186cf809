"""--engine ray against the in-process engine: the same study, the same machine, the same run.

Each engine collects the ultimatum study (--pairs P, --batch-size B) into a fresh run folder, and
the collection's own seconds (manifest timings.collection_seconds: asking, answering, committing;
the model load and the cluster's start are reported apart) are compared. Every engine runs one
torch thread per model, so 1 Ray actor does the in-process run's arithmetic plus Ray's
scheduling and data transfer: the difference is the Ray path's overhead. Target (issue 26): at
most 10%. With 2 actors on 2 cores the throughput is what two single-thread models give on this
machine, reported as measured.

    python bench/engines.py [--pairs 6] [--batch-size 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import markdown, report_target  # noqa: E402

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def collect(model, pairs: int, batch: int) -> float:
    from simsubjects.collect.pipeline import run_study
    from simsubjects.collect.studies.registry import get_study

    with tempfile.TemporaryDirectory() as d:
        _, manifest = run_study(get_study("ultimatum"), "smollm2", Path(d) / "run",
                                params={"pairs": pairs, "seed": 0, "chat_template": False},
                                batch_size=batch, show_progress=False, model=model)
    return float(manifest["timings"]["collection_seconds"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=6, help="name pairs (11 trials each)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3, help="collections per engine, alternating; the fastest counts")
    a = ap.parse_args(argv)

    import ray
    import torch

    from simsubjects.collect.models import load_model
    from simsubjects.collect.ray_engine import RayEngine

    torch.set_num_threads(1)
    trials = 11 * a.pairs
    t = time.perf_counter()
    local = load_model("smollm2")
    local_load = time.perf_counter() - t
    t = time.perf_counter()
    # 3 logical CPUs for the 1 + 2 single-thread actors that stay alive side by side; the engines
    # take turns, so no more than 2 threads compute at once on the 2 cores
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    ray_start = time.perf_counter() - t
    engines = {}
    for n in (1, 2):
        t = time.perf_counter()
        engines[n] = RayEngine("smollm2", {}, actors=n, threads=1, batch_size=a.batch_size)
        engines[n].started = time.perf_counter() - t
    times: dict[str, list[float]] = {"in-process": [], "ray, 1 actor": [], "ray, 2 actors": []}
    collect(local, 1, a.batch_size)  # warm-up: first-call costs (allocations, lazy imports) off the clock
    for e in engines.values():
        collect(e, 1, a.batch_size)
    for r in range(a.repeat):  # alternating, so a burst of other load hits every engine alike
        for name, model in (("in-process", local), ("ray, 1 actor", engines[1]), ("ray, 2 actors", engines[2])):
            times[name].append(collect(model, a.pairs, a.batch_size))
            print(f"# round {r + 1}: {name} {times[name][-1]:.2f} s (load average {os.getloadavg()[0]:.1f})",
                  file=sys.stderr, flush=True)
    for e in engines.values():
        e.close()
    ray.shutdown()

    best = {k: min(v) for k, v in times.items()}
    base = best["in-process"]
    start = {"in-process": f"model {local_load:.1f} s", "ray, 1 actor": f"cluster {ray_start:.1f} s + actor {engines[1].started:.1f} s",
             "ray, 2 actors": f"actors {engines[2].started:.1f} s"}
    rows = [{"engine": k, "trials": trials, "seconds (best)": best[k], "seconds (all)": ", ".join(f"{x:.2f}" for x in v),
             "trials/s": trials / best[k], "vs in-process": best[k] / base, "start-up (not timed above)": start[k]}
            for k, v in times.items()]
    print(markdown(pd.DataFrame(rows), "{:.3g}"))
    overhead = best["ray, 1 actor"] / base - 1
    per_actor = trials / best["ray, 1 actor"]
    print(f"\nper-actor throughput (1 thread): {per_actor:.2f} trials/s; 2 actors: {trials / best['ray, 2 actors']:.2f} "
          f"trials/s ({best['ray, 1 actor'] / best['ray, 2 actors']:.2f}x one actor) on {os.cpu_count()} cores shared "
          f"with the driver and any other load (load average {os.getloadavg()[0]:.1f})")
    report_target("Ray path with 1 actor: overhead at most 10% vs in-process (same study, same run)",
                  f"{overhead:+.1%} ({best['ray, 1 actor']:.2f} s vs {base:.2f} s)", overhead <= 0.10,
                  "per-batch round trips (requests out, answers back, commit) are not hidden behind the next batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
