"""What the report shows of Aher, Arriaga & Kalai (2023) for all four of its studies (ultimatum, garden_path,
wisdom, milgram; each study's own block is its folder's report.py): Table 1's valid-answer rates.

The published numbers (Table 1's valid-answer rates, App. C's garden-path counts) are data:
datasets/aher2023/published.json, with their source.
"""

from __future__ import annotations

import functools

import pandas as pd

from simsubjects.datasets.registry import load_json
from simsubjects.analyze.blocks import Block


@functools.lru_cache(maxsize=1)
def published() -> dict:
    return load_json("aher2023/published.json")


def validity_vs_table1(study: str, value: float | None, model: str = "this run") -> Block:
    ref = published()["table1_valid_percent"][study]
    pct = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731 - one decimal, as Table 1 prints
    row = {"": "valid answers (%)", **{k: pct(v) for k, v in ref.items()},
           f"this run: {model}": pct(None if value is None else 100 * value)}
    return Block("Validity rate beside the paper's Table 1 (LM-1..LM-5 = GPT-3 models)", (pd.DataFrame([row]),),
                 "Share of probability (k-choice) or of completions (free text) on valid answers. "
                 + ("Table 1's extracted text leaves this row's first cell empty; its values sit under LM-2..LM-5 "
                    "as printed." if ref.get("LM-1") is None else ""))


def table1_reference(study: str) -> dict:
    """{"LM-k": valid-answer rate (%)} of Table 1 for the report's validity table ({} for other studies)."""
    return dict(published()["table1_valid_percent"].get(study, {}))
