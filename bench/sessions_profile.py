"""Sessions: where one incremental step's CPU time goes, after a short and a long transcript.

One step of 43 new tokens (a round of examples/pd_tft) after 200 and after 900 tokens of context,
profiled with torch's profiler (CPU ms per step; the profiler inflates them) for two ways to run it:

  before  the path's keys/values in a DynamicCache that concatenates each step's onto them, with
          transformers' sdpa attention (an explicit mask, so each key/value head repeated per query head);
  now     collect/models/incremental.py: buffers written in place and SDPA's own lower-right causal mask
          with shared key/value heads.

Work that grows with the transcript shows as a growing column: `copy_ + cat` (cache copies) should stay
flat now; `attention` (the attention's arithmetic, inherent) grows in both. Table in docs/benchmarks.md.

    python bench/sessions_profile.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import markdown  # noqa: E402

from simsubjects.collect.models import incremental, load_model  # noqa: E402
from simsubjects.collect.models.generation import _prefill  # noqa: E402

NEW, CONTEXTS, REPS = 43, (200, 900), 4


def main() -> None:
    torch.set_num_threads(1)
    model = load_model("smollm2")
    m = model.model
    ids = list(range(1000, 1000 + max(CONTEXTS) + NEW + 10))
    with torch.inference_mode():
        buf = incremental._Buffers.extend(m, None, 0, len(ids))
        buf.feed(m, ids[: max(CONTEXTS) + NEW], 0)
        _, kv = _prefill(m, ids[: max(CONTEXTS) + NEW], None, 0)

    def before(b):
        _prefill(m, ids[b:b + NEW], [(k[:, :, :b], v[:, :, :b]) for k, v in kv], b)

    def now(b):
        buf.feed(m, ids[b:b + NEW], b, scratch=True)

    rows = []
    for name, step in (("before: concatenated cache, transformers sdpa", before), ("now: buffers, path attention", now)):
        for b in CONTEXTS:
            with torch.inference_mode():
                step(b)  # warm
                with profile(activities=[ProfilerActivity.CPU]) as prof:
                    for _ in range(REPS):
                        step(b)
            ms = {e.key: e.self_cpu_time_total / 1000 / REPS for e in prof.key_averages()}
            rows.append({"variant": name, "context": b, "copy_ + cat": ms.get("aten::copy_", 0) + ms.get("aten::cat", 0),
                         "attention": sum(v for k, v in ms.items() if "scaled_dot_product" in k),
                         "all ops": sum(ms.values())})
    import pandas as pd

    print(markdown(pd.DataFrame(rows).round(1)))


if __name__ == "__main__":
    main()
