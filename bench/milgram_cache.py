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
    python bench/milgram_cache.py --subjects 4 --baseline-stages 10   # what run_all.py runs
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import attention_pair_flops, markdown, non_embedding_params, report_target  # noqa: E402

from simsubjects.collect.models import ChoiceResult, CompletionRequest, load_model  # noqa: E402
from simsubjects.studies.milgram.design import (DEFAULT_RULE, SETTLED, Subject, scenario, simulate,  # noqa: E402
                                                 subject_pool)

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


def report_flatness(df: pd.DataFrame, name: str, model, start_tokens: int) -> None:
    """The per-step target for one configuration, with what the attention alone predicts: every
    token fed or decoded in a step attends over the whole record, 4*heads*head_dim*layers FLOPs
    per (query, key) pair against 2 FLOPs per non-embedding parameter."""
    rows = df[df["config"] == name].sort_values("stages") if "config" in df else df.iloc[:0]
    if len(rows) < 2:
        return
    first, last = rows.iloc[0], rows.iloc[-1]
    growth = last["s_per_step"] / first["s_per_step"]
    per_token = 2 * non_embedding_params(model.model)
    pair = attention_pair_flops(model.model.config)
    # mean record length over each interval's steps (from the previous boundary, or the first prompt)
    starts = [start_tokens] + list(rows["record_tokens"][:-1])
    mean_first = (starts[0] + first["record_tokens"]) / 2
    mean_last = (starts[-1] + last["record_tokens"]) / 2
    predicted = (per_token + pair * mean_last) / (per_token + pair * mean_first)
    report_target(f"Milgram cost per step ({name}) flat from {first['stages']} to {last['stages']} stages (within 10%)",
                  f"{first['s_per_step']:.2f} s -> {last['s_per_step']:.2f} s per step ({growth - 1:+.0%})",
                  growth <= 1.10,
                  f"each token fed or decoded in a step attends over the whole record (~{mean_first:.0f} tokens on "
                  f"average in the first interval, ~{mean_last:.0f} in the last); for this model a (query, key) "
                  f"pair costs {pair / 1e3:.0f}k FLOPs against {per_token / 1e6:.0f}M per token for the weights, "
                  f"so attention alone grows each step's FLOPs by {predicted - 1:+.0%}; the record's keys/values "
                  f"are reused, never recomputed, and exact attention cannot skip the older ones")


def first_prompt_tokens(model, scen, person) -> int:
    """Tokens of a subject's first prompt (the record before stage 1)."""
    return len(model.tokenizer(Subject(scen, dict(person), DEFAULT_RULE, 1).prompt).input_ids)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--scenario", default="milgram", choices=["milgram", "milgram_novel"])
    ap.add_argument("--subjects", type=int, default=8, help="subjects decoded together (simsubjects)")
    ap.add_argument("--stages", default="10,20,30", help="comma-separated stage counts")
    ap.add_argument("--max-tokens", type=int, default=40)
    ap.add_argument("--configs", default=",".join(CONFIGS), help=f"which of {', '.join(CONFIGS)}")
    ap.add_argument("--baseline-stages", type=int, default=None,
                    help="run re-encode (the slow baseline) only up to this many stages (default: all)")
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
        upto = [s for s in stages if name != "re-encode" or a.baseline_stages is None or s <= a.baseline_stages]
        if not upto:
            continue
        for r in run(model, scen, people if together else people[:1], upto, a.max_tokens, settled):
            out.append({"config": name, "subjects": len(people) if together else 1, **r})
    df = pd.DataFrame(out)
    if "re-encode" in set(df["config"]):
        base = df[df["config"] == "re-encode"].set_index("stages")["s_per_subject"]
        df["speedup"] = [base.get(s, float("nan")) / v for s, v in zip(df["stages"], df["s_per_subject"])]
    for name in ("simsubjects", "reuse"):
        report_flatness(df, name, model, first_prompt_tokens(model, scen, people[0]))
    print(f"Milgram ({a.scenario}), max_tokens {a.max_tokens}, model {model.info.spec}; seconds per subject for "
          "the first N stages (cumulative), s_per_step within each interval; speedup against re-encode:\n")
    print(markdown(df))
    return 0


if __name__ == "__main__":
    sys.exit(main())
