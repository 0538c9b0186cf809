"""Sessions: cost of one step (all subjects' decisions of a round) from round 1 to round 20.

A repeated prisoner's dilemma against tit-for-tat (examples/pd_tft/study.yaml with 20 rounds),
memory: transcript, so each subject's prompt grows by one question, answer and feedback per round.
Two scorers, timed in the same run on the same subjects:

  re-encode    the packed exact scorer (`HFModel.choose`): every step encodes each whole transcript;
  incremental  what `collect` does on a local model (collect/models/incremental.py): each path's
               keys/values are kept and a step encodes only its new tokens.

Nothing is read from a request cache (a fresh run folder per configuration). Targets (issue 23):
the incremental cost per step stays within 10% from round 2 to round 20 (round 1 also encodes the
instructions once), and at round 20 it is at least 5x cheaper than re-encoding.

    python bench/sessions.py                 # 4 subjects, 20 rounds
    python bench/sessions.py --subjects 2 --rounds 10
"""

from __future__ import annotations

import argparse
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
from simsubjects.collect.sessions import collect_session  # noqa: E402
from simsubjects.collect.store import RequestCache  # noqa: E402
from simsubjects.studyfile.session import load_session  # noqa: E402


def study_file(folder: Path, subjects: int, rounds: int) -> Path:
    text = (ROOT / "examples" / "pd_tft" / "study.yaml").read_text()
    text = text.replace("subjects: 10", f"subjects: {subjects}").replace("rounds: 5", f"rounds: {rounds}")
    path = folder / "study.yaml"
    path.write_text(text)
    return path


def timed_run(model, study, folder: Path, reuse: bool) -> list[dict]:
    """Seconds of each step's scoring call (one call per round: one item per round, all subjects)."""
    times: list[tuple[float, int]] = []
    real_supports, real_choose = incremental.supports, incremental.PathScorer.choose
    orig_model_choose = model.choose

    def tick(fn):
        def wrapped(*a, **k):
            t = time.perf_counter()
            out = fn(*a, **k)
            times.append((time.perf_counter() - t, len(a[-1] if fn is real_choose else a[0])))
            return out
        return wrapped

    incremental.supports = (lambda m: real_supports(m)) if reuse else (lambda m: False)
    incremental.PathScorer.choose = tick(real_choose)
    model.choose = tick(orig_model_choose)
    before = model.stats["tokens"]
    try:
        cache = RequestCache(folder / "cache.sqlite")
        collect_session(study, model, cache, {"method": "exact", "batch_size": 256}, show_progress=False)
        cache.close()
    finally:
        incremental.supports, incremental.PathScorer.choose = real_supports, real_choose
        model.choose = orig_model_choose
    tokens = model.stats["tokens"] - before
    return [{"round": i + 1, "seconds": s, "requests": n, "tokens_all_rounds": tokens} for i, (s, n) in enumerate(times)]


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
        rows = []
        for name, reuse in (("re-encode", False), ("incremental", True)):
            folder = tmp / name
            folder.mkdir()
            for r in timed_run(model, study, folder, reuse):
                rows.append({"scorer": name, **r, "s_per_subject": r["seconds"] / r["requests"]})
    df = pd.DataFrame(rows)
    wide = df.pivot(index="round", columns="scorer", values="s_per_subject")
    wide["re-encode / incremental"] = wide["re-encode"] / wide["incremental"]
    print(f"`python bench/sessions.py --subjects {args.subjects} --rounds {args.rounds}` "
          f"({time.perf_counter() - t0:.0f} s)\n")
    print("Seconds per subject and step (the step's scoring call / its requests):")
    print(markdown(wide.reset_index()))
    last, second = args.rounds, 2
    flat = wide.loc[last, "incremental"] / wide.loc[second, "incremental"]
    ratio = wide.loc[last, "re-encode / incremental"]
    report_target(f"session step cost (incremental) flat from round {second} to {last} (within 10%)",
                  f"{wide.loc[second, 'incremental']:.3f} s -> {wide.loc[last, 'incremental']:.3f} s per subject "
                  f"({(flat - 1) * 100:+.0f}%)", abs(flat - 1) <= 0.10)
    report_target(f"session step at round {last}: incremental >= 5x cheaper than re-encoding",
                  f"{ratio:.2f}x", ratio >= 5)


if __name__ == "__main__":
    main()
