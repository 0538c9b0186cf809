"""Milgram simulator: seconds per subject after 10, 20 and 30 stages, with and without the HF
backend's reuse of the growing record's keys/values (HFModel.reuse_cache).

The subjects are forced to obey (the judge asks the model, for the timing, then returns "no
termination, shock"), so every subject runs the full schedule: 36 steps for 30 stages, the record
growing from ~0.9k to ~3k tokens. One run of the longest schedule is timed at each stage
boundary; nothing is read from a request cache.

    python bench/milgram_cache.py                       # 1 subject, stages 10,20,30, both modes
    python bench/milgram_cache.py --subjects 2 --stages 5,10 --max-tokens 20
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import markdown  # noqa: E402

from simsubjects.collect.models import ChoiceResult, CompletionRequest, load_model  # noqa: E402
from simsubjects.collect.studies.milgram import scenario, simulate, subject_pool  # noqa: E402

OBEY = ChoiceResult.from_logprobs([math.log(1e-6), math.log(1 - 1e-6)])  # [negative, positive] = shock
STAY = ChoiceResult.from_logprobs([math.log(1 - 1e-6), math.log(1e-6)])  # [not stop, stop] = not stop


def run(model, scen, people, stages: list[int], max_tokens: int) -> list[dict]:
    timer = {"generate": 0.0, "judge": 0.0}

    def generate(prompts):
        t = time.perf_counter()
        res = model.complete([CompletionRequest(p, max_tokens=max_tokens, seed=0) for p in prompts])
        timer["generate"] += time.perf_counter() - t
        timer["tokens"] = max(len(model.tokenizer(p).input_ids) for p in prompts)
        return [r.texts[0] for r in res]

    def judge(reqs):
        t = time.perf_counter()
        model.choose(reqs)  # asked for the timing; the decisions are forced
        timer["judge"] += time.perf_counter() - t
        return [STAY if "did stop or did not stop" in r.prompt else OBEY for r in reqs]

    # Stage boundaries: the step counts at which the first 10, 20, 30 stages are done.
    bounds, steps = {}, 0
    for k, st in enumerate(scen["stages"][: max(stages)], start=1):
        steps += 1 + bool(st["no_punish_text"])
        if k in stages:
            bounds[steps] = k
    rows, done = [], {"steps": 0}
    t0 = time.perf_counter()

    def on_step(_active):
        done["steps"] += 1
        if done["steps"] in bounds:
            rows.append({"stages": bounds[done["steps"]], "steps": done["steps"],
                         "prompt_tokens": timer.get("tokens", 0),
                         "s_per_subject": (time.perf_counter() - t0) / len(people),
                         "generate_s": timer["generate"] / len(people), "judge_s": timer["judge"] / len(people)})
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)  # partial results survive an interrupted run

    simulate(scen, people, generate, judge, max_stages=max(stages), on_step=on_step)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--scenario", default="milgram", choices=["milgram", "milgram_novel"])
    ap.add_argument("--subjects", type=int, default=1)
    ap.add_argument("--stages", default="10,20,30", help="comma-separated stage counts")
    ap.add_argument("--max-tokens", type=int, default=40)
    ap.add_argument("--modes", default="off,on", help="reuse_cache modes to time: off, on")
    a = ap.parse_args(argv)
    stages = sorted(int(s) for s in a.stages.split(","))
    model = load_model(a.model)
    scen = scenario(a.scenario)
    people = subject_pool().head(a.subjects).to_dict("records")
    has_flag = hasattr(model, "reuse_cache")
    modes = [m.strip() for m in a.modes.split(",")] if has_flag else ["(backend default)"]
    if not has_flag:
        print("this backend has no reuse_cache flag: timing it as it is", file=sys.stderr)
    # Warm-up (first torch calls, allocator): otherwise the first mode timed pays for it.
    run(model, scen, people[:1], [1], a.max_tokens)
    out = []
    for mode in modes:
        if has_flag:
            model.reuse_cache = mode == "on"
            if hasattr(model, "prefix_store"):
                model.prefix_store.clear()
        print(f"reuse_cache={mode}:", file=sys.stderr, flush=True)
        for r in run(model, scen, people, stages, a.max_tokens):
            out.append({"reuse_cache": mode, **r})
        print(f"reuse_cache={mode}: done", file=sys.stderr)
    df = pd.DataFrame(out)
    if "off" in modes and len(modes) > 1:  # speed-up of each mode over no reuse, per stage count
        base = df[df["reuse_cache"] == "off"].set_index("stages")["s_per_subject"]
        df["speedup_vs_off"] = [base.get(s, float("nan")) / v for s, v in zip(df["stages"], df["s_per_subject"])]
    print(f"Milgram ({a.scenario}), {a.subjects} subject(s), max_tokens {a.max_tokens}, model {model.info.spec}; "
          "seconds per subject for the first N stages (cumulative):\n")
    print(markdown(df))
    return 0


if __name__ == "__main__":
    sys.exit(main())
