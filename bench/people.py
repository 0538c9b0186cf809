"""paths: people: tokens the model processes to score a recorded 20-round history, with and without reuse.

Teacher forcing (issue 39, docs/people.md) scores every decision of a recorded person: at round k the
prompt is the rules, the person's rounds 1..k-1 with the feedback they received, and round k's
question. Scored from scratch, the k-th prompt costs all its tokens, so a 20-round history costs
about 20 x 20 / 2 transcripts' rounds. `collect` on a local model reuses each path's keys and values
(collect/models/incremental.py): a decision feeds only the tokens after the previous prompt. Here both
costs are counted in the same run, on the same requests, for a repeated prisoner's dilemma
(examples/pd_dalbo_people's rules) replayed on recorded persons with 20 rounds each (seeded moves):

  reuse     tokens fed by the incremental scorer during `collect_session` (the model's own counter,
            stats["tokens"]: each context's new tokens) plus each completion's tail tokens;
  no reuse  the same requests, each context encoded whole: the sum of the prompts' tokens plus tails
            (counted from the scorer's token plan), and, measured, the packed scorer's counter on
            the very same requests (HFModel.choose; it packs shared prefixes within a batch, so it
            is given one request at a time).
  history   the tokens of the person's whole 20-round transcript: the context of the last decision.

Target (issue 39): reuse <= 2 x history, per person.

    python bench/people.py                  # 2 persons, 20 rounds
    python bench/people.py --persons 4 --rounds 20
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import markdown  # noqa: E402

from simsubjects.collect.models import incremental, load_model  # noqa: E402
from simsubjects.collect.store import RequestCache  # noqa: E402
from simsubjects.studyfile.session import load_session  # noqa: E402
from simsubjects.studyfile.session_run import collect_session  # noqa: E402


def study_folder(folder: Path, persons: int, rounds: int) -> Path:
    """examples/pd_dalbo_people's rules, one supergame of `rounds` rounds, persons with seeded moves."""
    text = (ROOT / "examples" / "pd_dalbo_people" / "study.yaml").read_text()
    text = text[:text.index("    - id: sg2")]  # one block
    text = text.replace("rounds: {max: 30,", f"rounds: {{max: {rounds},").replace("choice2: choice, ", "")
    rng = np.random.default_rng(39)
    rows = [{"person": f"p{i}", "supergame": "sg1", "round": r, "choice": "JF"[rng.integers(2)],
             "other": "JF"[rng.integers(2)]} for i in range(1, persons + 1) for r in range(1, rounds + 1)]
    pd.DataFrame(rows).to_csv(folder / "decisions.csv", index=False)
    pd.DataFrame({"subject": [f"p{i}" for i in range(1, persons + 1)], "treatment": "D75R48", "R": 48,
                  "delta": 0.75}).to_csv(folder / "subjects.csv", index=False)
    (folder / "study.yaml").write_text(text)
    return folder / "study.yaml"


def tails(model, requests) -> list[int]:
    """Tokens each request's completions feed after its context (the first token of a tail is read from
    the context's last logits)."""
    out = []
    for r in requests:
        _, stail, ctails = model.plan([r])[0]
        out.append(sum(max(len(t) - 1, 0) for t in [stail, *ctails]))
    return out


def run(model, study, folder: Path) -> tuple[int, list]:
    """The incremental run: context tokens it fed (the model's counter) and its requests, in order."""
    asked = []
    real = incremental.PathScorer.choose

    def wrapped(self, requests, chains):
        asked.extend(requests)
        return real(self, requests, chains)

    incremental.PathScorer.choose = wrapped
    before = model.stats["tokens"]
    try:
        cache = RequestCache(folder / "cache.sqlite")
        collect_session(study, model, cache, {"method": "exact", "batch_size": 256}, show_progress=False)
        cache.close()
    finally:
        incremental.PathScorer.choose = real
    return model.stats["tokens"] - before, asked


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--persons", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args(argv)
    model = load_model("smollm2")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        study = load_session(study_folder(Path(tmp), args.persons, args.rounds))
        fed, asked = run(model, study, Path(tmp))
    ctx = [len(model.plan([r])[0][0]) for r in asked]
    tail = tails(model, asked)
    before = model.stats["tokens"]
    t1 = time.perf_counter()
    for r in asked:  # one at a time: no prefix shared inside a batch
        model.choose([r])
    packed, packed_s = model.stats["tokens"] - before, time.perf_counter() - t1
    # a request's person: the run asks the persons' decisions of a round together, in subject order
    person = [f"p{i % args.persons + 1}" for i in range(len(asked))]
    df = pd.DataFrame({"person": person, "context": ctx, "tail": tail})
    last = df.groupby("person")["context"].last()
    table = pd.DataFrame({
        "person": last.index,
        "decisions": df.groupby("person").size().to_numpy(),
        "history tokens": last.to_numpy(),
        "reuse tokens": (df.groupby("person")["context"].apply(lambda c: c.diff().fillna(c).sum()).to_numpy()
                         + df.groupby("person")["tail"].sum().to_numpy()),
        "no-reuse tokens": (df.groupby("person")["context"].sum() + df.groupby("person")["tail"].sum()).to_numpy(),
    })
    table["reuse / history"] = table["reuse tokens"] / table["history tokens"]
    table["no-reuse / history"] = table["no-reuse tokens"] / table["history tokens"]
    print(f"`python bench/people.py --persons {args.persons} --rounds {args.rounds}` "
          f"({time.perf_counter() - t0:.0f} s; load average {os.getloadavg()[0]:.1f})\n")
    print(markdown(table))
    total_reuse = fed + df["tail"].sum()
    print(f"\nmeasured: the incremental scorer fed {fed} context tokens + {df['tail'].sum()} tail tokens = "
          f"{total_reuse} for {len(asked)} decisions (per person by the prompts' growth above: "
          f"{table['reuse tokens'].sum()}); the packed scorer, one request at a time, fed {packed} "
          f"({packed_s:.1f} s); no reuse counted from the plans: {table['no-reuse tokens'].sum()}")
    print(f"share of the no-reuse cost fed with reuse: {total_reuse / packed:.3f}" if packed else "")
    worst = float(table["reuse / history"].max())
    ok = worst <= 2.0 and total_reuse <= 2.0 * table["history tokens"].sum()
    print(f"target reuse <= 2 x history per person: worst {worst:.2f} x; measured total "
          f"{total_reuse / table['history tokens'].sum():.2f} x: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
