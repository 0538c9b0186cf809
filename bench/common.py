"""Shared pieces of the benchmarks: timing, the fp32 matmul peak, markdown tables."""

from __future__ import annotations

import time

import pandas as pd
import torch


def best_of(fn, repeat: int = 3) -> float:
    """Fastest wall time of `repeat` runs (the least disturbed by other load)."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def matmul_peak(n: int = 2048, repeat: int = 5) -> float:
    """fp32 FLOP/s of a square torch matmul: the machine's practical peak."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    return 2 * n**3 / best_of(lambda: a @ b, repeat)


def non_embedding_params(model) -> int:
    emb = model.get_input_embeddings().weight.numel()
    return sum(p.numel() for p in model.parameters()) - emb


def attention_pair_flops(config) -> int:
    """FLOPs of one (query, key) pair over all layers: q.k and the weighted sum of v, per head."""
    heads, layers = config.num_attention_heads, config.num_hidden_layers
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return 2 * 2 * heads * head_dim * layers


def markdown(df: pd.DataFrame, floatfmt: str = "{:.4g}") -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        cells = [floatfmt.format(v) if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report_target(target: str, measured: str, met: bool, limit: str = "") -> None:
    """One line of the targets table that run_all.py puts at the top of docs/benchmarks.md.

    Appended (JSON) to the file named by $SIMSUBJECTS_BENCH_TARGETS, which run_all.py sets; a
    benchmark run alone just prints it. `limit`: what keeps a missed target from being met."""
    import json
    import os

    row = {"target": target, "measured": measured, "met": "yes" if met else "no", "what limits it": "" if met else limit}
    print(f"target: {row}")
    path = os.environ.get("SIMSUBJECTS_BENCH_TARGETS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
