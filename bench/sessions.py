"""Sessions: cost of one step (all subjects' decisions of a round) from round 1 to round 20.

A repeated prisoner's dilemma against tit-for-tat (examples/pd_tft/study.yaml with 20 rounds),
memory: transcript, so each subject's prompt grows by one question, answer and feedback per round.
Two scorers, timed in the same run on the same subjects:

  incremental  what `collect` does on a local model (collect/models/incremental.py): each path's
               keys/values are kept and a step encodes only its new tokens;
  re-encode    the packed exact scorer (`HFModel.choose`) on the very same requests (rounds 1, 2,
               the middle one and the last): each whole transcript encoded again.

Cost is the CPU time of this process (one torch thread) per subject and step, with wall time beside
it; nothing is read from a request cache. Targets (issue 23):
the incremental cost per step stays within 10% from round 2 to round 20 (round 1 also encodes the
instructions once), and at round 20 it is at least 5x cheaper than re-encoding.

The `flops model` column is what a step must compute, whatever the implementation: each new token
goes through the weights (2 x the non-embedding parameters; one LM-head position per step) and
attends to every earlier token (4 x context x heads x head size per layer: QK^T and PV). At 135M
parameters the second term is not small: a round-20 token attends to ~900 earlier ones, which adds
~30% to its weight flops (~5% at round 2). So exact attention alone makes a step of this transcript
~25% more flops at round 20 than at round 2 (the column, beside the measured cost): the 10% target
holds only where attention is a small share of a token's flops (larger models, shorter transcripts).

    python bench/sessions.py                 # 4 subjects, 20 rounds
    python bench/sessions.py --subjects 2 --rounds 10
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import markdown, report_target  # noqa: E402

from simsubjects.collect.models import load_model  # noqa: E402
from simsubjects.collect.models import incremental  # noqa: E402
from simsubjects.studyfile.session_run import collect_session  # noqa: E402
from simsubjects.collect.store import RequestCache  # noqa: E402
from simsubjects.studyfile.session import load_session  # noqa: E402


def study_file(folder: Path, subjects: int, rounds: int) -> Path:
    text = (ROOT / "examples" / "pd_tft" / "study.yaml").read_text()
    text = text.replace("subjects: 10", f"subjects: {subjects}").replace("rounds: 5", f"rounds: {rounds}")
    path = folder / "study.yaml"
    path.write_text(text)
    return path


def timed_run(model, study, folder: Path) -> tuple[list[dict], list[list]]:
    """The incremental run: seconds (wall and CPU) of each step's scoring call, and its requests."""
    times, asked = [], []
    real_choose = incremental.PathScorer.choose

    def wrapped(self, requests, chains):
        t, c = time.perf_counter(), time.process_time()
        out = real_choose(self, requests, chains)
        times.append((time.perf_counter() - t, time.process_time() - c, len(requests)))
        asked.append(list(requests))
        return out

    incremental.PathScorer.choose = wrapped
    try:
        cache = RequestCache(folder / "cache.sqlite")
        collect_session(study, model, cache, {"method": "exact", "batch_size": 256}, show_progress=False)
        cache.close()
    finally:
        incremental.PathScorer.choose = real_choose
    rows = [{"round": i + 1, "scorer": "incremental", "wall": w, "cpu": c, "requests": n}
            for i, (w, c, n) in enumerate(times)]
    return rows, asked


def reencode(model, asked: list[list], rounds: list[int]) -> list[dict]:
    """The same requests of the chosen rounds scored by the packed scorer, which encodes each whole prompt."""
    rows = []
    for r in rounds:
        t, c = time.perf_counter(), time.process_time()
        model.choose(asked[r - 1])
        rows.append({"round": r, "scorer": "re-encode", "wall": time.perf_counter() - t,
                     "cpu": time.process_time() - c, "requests": len(asked[r - 1])})
    return rows


def step_flops(model, start: int, new: int) -> float:
    """Flops of one incremental step: `new` tokens after `start` tokens of context (see the docstring)."""
    cfg = model.model.config
    embed = model.model.get_input_embeddings().weight.numel()
    weights = sum(p.numel() for p in model.model.parameters()) - embed
    width = cfg.num_attention_heads * (getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads)
    attend = sum(start + i + 1 for i in range(new))  # keys each new token attends to
    return 2.0 * weights * new + 2.0 * embed + 4.0 * width * cfg.num_hidden_layers * attend


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subjects", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args(argv)
    model = load_model("smollm2")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        study = load_session(study_file(tmp, args.subjects, args.rounds))
        rows, asked = timed_run(model, study, tmp)
        picks = sorted({1, 2, args.rounds // 2, args.rounds})
        rows += reencode(model, asked, picks)
    df = pd.DataFrame(rows)
    tokens = [len(model.tokenizer(a[0].prompt).input_ids) for a in asked]
    df["prompt_tokens"] = [tokens[r - 1] for r in df["round"]]
    for col in ("wall", "cpu"):
        df[f"{col}_s_per_subject"] = df[col] / df["requests"]
    wide = df.pivot(index="round", columns="scorer", values="cpu_s_per_subject")
    wall = df.pivot(index="round", columns="scorer", values="wall_s_per_subject")
    table = pd.DataFrame({"round": wide.index, "prompt tokens": [tokens[r - 1] for r in wide.index],
                          "incremental cpu s": wide["incremental"].to_numpy(),
                          "incremental wall s": wall["incremental"].to_numpy(),
                          "re-encode cpu s": wide.get("re-encode", pd.Series(index=wide.index, dtype=float)).to_numpy(),
                          "re-encode wall s": wall.get("re-encode", pd.Series(index=wide.index, dtype=float)).to_numpy()})
    table["re-encode / incremental (cpu)"] = table["re-encode cpu s"] / table["incremental cpu s"]
    # the tokens a step feeds: its prompt's tokens after the previous prompt's (a path's transcript grows)
    flops = [step_flops(model, tokens[r - 2] if r > 1 else 0, tokens[r - 1] - (tokens[r - 2] if r > 1 else 0))
             for r in wide.index]
    table["flops model (vs round 2)"] = [f / flops[1] if len(flops) > 1 else 1.0 for f in flops]
    print(f"`python bench/sessions.py --subjects {args.subjects} --rounds {args.rounds}` "
          f"({time.perf_counter() - t0:.0f} s; load average {os.getloadavg()[0]:.1f})\n")
    print("Per subject and step: the step's scoring call (CPU time of this process and wall time) / its requests; "
          "re-encode scores the very same requests at the rounds shown:")
    print(markdown(table))
    last, second = args.rounds, 2
    inc = wide["incremental"]
    # three steps at each end (a single step's CPU time moves by +-15% on a shared machine); round 1
    # is left out: it also encodes the instructions
    early, late = inc.loc[second:second + 2].mean(), inc.loc[last - 2:last].mean()
    flat = late / early
    fl = table.set_index("round")["flops model (vs round 2)"]
    bound = fl.loc[last - 2:last].mean() / fl.loc[second:second + 2].mean()
    ratio = wide.loc[last, "re-encode"] / inc.loc[last]
    report_target(f"session step cost (incremental, CPU) flat from round {second} to {last} (within 10%; "
                  f"mean of rounds {second}-{second + 2} vs {last - 2}-{last})",
                  f"{early:.3f} s -> {late:.3f} s per subject ({(flat - 1) * 100:+.0f}%)",
                  abs(flat - 1) <= 0.10, f"exact attention over the longer transcript: the flops model alone gives "
                                         f"{(bound - 1) * 100:+.0f}% at 135M (docstring); the machine was shared")
    report_target(f"session step at round {last}: incremental >= 5x cheaper than re-encoding (CPU)",
                  f"{ratio:.2f}x", ratio >= 5)


if __name__ == "__main__":
    main()
