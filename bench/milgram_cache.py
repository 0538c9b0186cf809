"""Milgram simulator: seconds per subject after 10, 20 and 30 stages, for a plain implementation
and for simsubjects' generation path (cached keys/values, subjects decoded together, early stop).

Configurations, each timed in the same run on the same subjects' prompts:
  re-encode   one subject at a time; the whole record is encoded again at every stage and the
              completion runs to max_tokens (the straightforward loop);
  reuse       one subject at a time; the record's keys/values are kept between stages
              (HFModel.reuse_cache);
  simsubjects what `collect milgram` does: reuse, all subjects of a chunk decoded together,
              generation ends once the first sentence is settled (milgram.SETTLED).

The subjects are forced to obey (the judge asks the model, for the timing, then returns "no
termination, shock"), so every subject runs the full schedule: 36 steps for 30 stages, the record
growing from ~0.9k to ~3k tokens. `s_per_step` is the cost of one step inside each stage interval
(10 stages at a time): flat when a stage's cost does not grow with the record. Nothing is read
from a request cache.

    python bench/milgram_cache.py                       # stages 10,20,30; 8 subjects decoded together
    python bench/milgram_cache.py --stages 5,10 --subjects 4 --max-tokens 20
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report_target, markdown  # noqa: E402

from simsubjects.collect.models import ChoiceResult, CompletionRequest, load_model  # noqa: E402
from simsubjects.collect.studies.milgram import SETTLED, scenario, simulate, subject_pool  # noqa: E402

OBEY = ChoiceResult.from_logprobs([math.log(1e-6), math.log(1 - 1e-6)])  # [negative, positive] = shock
STAY = ChoiceResult.from_logprobs([math.log(1 - 1e-6), math.log(1e-6)])  # [not stop, stop] = not stop

CONFIGS = {  # name: (reuse keys/values, settled stop, subjects decoded together)
    "re-encode": (False, False, False),
    "reuse": (True, False, False),
    "simsubjects": (True, True, True),
}


def run(model, scen, people, stages: list[int], max_tokens: int, settled: bool) -> list[dict]:
    timer = {"generate": 0.0, "judge": 0.0, "tokens": 0}

    def generate(prompts):
        t = time.perf_counter()
        res = model.complete([CompletionRequest(p, max_tokens=max_tokens, seed=0, settled=SETTLED if settled else "")
                              for p in prompts])
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
    rows, done = [], {"steps": 0, "last": (0, 0.0)}
    t0 = time.perf_counter()

    def on_step(_active):
        done["steps"] += 1
        if done["steps"] in bounds:
            now = time.perf_counter() - t0
            last_steps, last_t = done["last"]
            rows.append({"stages": bounds[done["steps"]], "steps": done["steps"], "record_tokens": timer["tokens"],
                         "s_per_subject": now / len(people),
                         "s_per_step": (now - last_t) / (done["steps"] - last_steps) / len(people),
                         "generate_s": timer["generate"] / len(people), "judge_s": timer["judge"] / len(people)})
            done["last"] = (done["steps"], now)
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)  # partial results survive an interrupted run

    simulate(scen, people, generate, judge, max_stages=max(stages), on_step=on_step)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--scenario", default="milgram", choices=["milgram", "milgram_novel"])
    ap.add_argument("--subjects", type=int, default=8, help="subjects decoded together (simsubjects)")
    ap.add_argument("--stages", default="10,20,30", help="comma-separated stage counts")
    ap.add_argument("--max-tokens", type=int, default=40)
    ap.add_argument("--configs", default=",".join(CONFIGS), help=f"which of {', '.join(CONFIGS)}")
    a = ap.parse_args(argv)
    stages = sorted(int(s) for s in a.stages.split(","))
    model = load_model(a.model)
    if not hasattr(model, "reuse_cache"):
        ap.error(f"{a.model}: only the hf backend has the configurations compared here")
    scen = scenario(a.scenario)
    people = subject_pool().head(a.subjects).to_dict("records")
    run(model, scen, people[:1], [1], a.max_tokens, True)  # warm-up: first torch calls, allocator
    out = []
    for name in a.configs.split(","):
        reuse, settled, together = CONFIGS[name]
        model.reuse_cache = reuse
        model.prefix_store.clear()
        print(f"{name}:", file=sys.stderr, flush=True)
        # One at a time: per-subject cost does not depend on how many subjects follow, so one is timed.
        for r in run(model, scen, people if together else people[:1], stages, a.max_tokens, settled):
            out.append({"config": name, "subjects": len(people) if together else 1, **r})
    df = pd.DataFrame(out)
    if "re-encode" in set(df["config"]):
        base = df[df["config"] == "re-encode"].set_index("stages")["s_per_subject"]
        df["speedup"] = [base.get(s, float("nan")) / v for s, v in zip(df["stages"], df["s_per_subject"])]
    reuse = df[df["config"] == "reuse"].sort_values("stages") if "config" in df else df.iloc[:0]
    if len(reuse) >= 2:
        first, last = reuse.iloc[0], reuse.iloc[-1]
        growth = last["s_per_step"] / first["s_per_step"]
        report_target(f"Milgram cost per step flat from {first['stages']} to {last['stages']} stages (within 10%)",
                      f"{first['s_per_step']:.2f} s -> {last['s_per_step']:.2f} s per step ({growth - 1:+.0%})",
                      growth <= 1.10,
                      f"each new step attends over the whole record so far ({first['record_tokens']} -> "
                      f"{last['record_tokens']} tokens); its keys/values are reused, not recomputed, but attention "
                      f"and the cache copy per decoded token grow with the record's length")
    print(f"Milgram ({a.scenario}), max_tokens {a.max_tokens}, model {model.info.spec}; seconds per subject for "
          "the first N stages (cumulative), s_per_step within each interval; speedup against re-encode:\n")
    print(markdown(df))
    return 0


if __name__ == "__main__":
    sys.exit(main())
