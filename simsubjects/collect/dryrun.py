"""--dry-run: what a collection would ask, counted without loading model weights or answering.

The study's own collection code runs unchanged against a stand-in model that counts every request
(prompt tokens by the model's own tokenizer, forward passes by the backend's own packing and
batching plan) and answers with placeholders, through an in-memory request cache, so duplicate
prompts and chunking are counted exactly as a real run sends them. The real run's manifest
records the same figures under "usage" (hf.py counts them the same way), so the two compare.

Studies whose next requests depend on the answers (Milgram: a subject stops when it refuses) are
counted with placeholder answers; their figures are an estimate, marked as such.

Prices come only from --price-in/--price-out (per million tokens): prices change, so the package
bakes in no price table (a built-in estimate was 3x too low in EDSL #2580).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..errors import UserError
from ..redact import redact
from .models import ModelSpec, smollm2_path
from .models.base import ChoiceRequest, ChoiceResult, CompletionRequest, CompletionResult, ModelInfo
from simsubjects.collect.models.hf import HFModel

ADAPTIVE = ("milgram",)  # study names starting so: the number of steps depends on the answers


class MemoryCache:
    """The RequestCache interface in memory: a dry run writes nothing."""

    def __init__(self):
        self.d: dict[str, dict] = {}

    def get_many(self, keys) -> dict[str, dict]:
        return {k: self.d[k] for k in keys if k in self.d}

    def put_many(self, items: dict[str, dict]) -> None:
        self.d.update(items)

    def __len__(self) -> int:
        return len(self.d)

    def close(self) -> None:
        pass


@dataclass
class DryModel:
    """Counts what a backend would be asked. `counter`: a tokenizer-only HFModel (hf.py)."""

    counter: object
    info: ModelInfo
    local: bool  # a local model (forward passes are planned); else an API (calls are billed)
    stats: dict = field(default_factory=lambda: {"generations": 0, "completion_tokens_max": 0, "forwards": 0})

    def fingerprint(self) -> dict:
        return {"dry_run": self.info.spec}

    def format_prompt(self, prompt: str) -> str:
        return self.counter.format_prompt(prompt)

    def close(self) -> None:
        pass

    def choose(self, requests: Sequence[ChoiceRequest], method: str = "exact") -> list[ChoiceResult]:
        self.counter._count_requests(requests)
        if method == "exact":
            if self.local:
                self.stats["forwards"] += self.counter.count_forwards(requests)
            else:  # an API answers a k-choice request with (at least) one token
                self.stats["completion_tokens_max"] += len(requests)
            return [ChoiceResult.from_logprobs([math.log(1 / len(r.completions))] * len(r.completions))
                    for r in requests]
        # sampled: at least n draws (hf.py draws in rounds of max(8, n)) of up to the longest option + 1
        for r in requests:
            draws = max(8, r.n) if self.local else r.n
            longest = max(len(self.counter._encode(c)) for c in r.completions) + 1
            self.stats["generations"] += draws
            self.stats["completion_tokens_max"] += draws * longest
        return [ChoiceResult.from_counts([r.n] + [0] * (len(r.completions) - 1), r.n) for r in requests]

    def complete(self, requests: Sequence[CompletionRequest]) -> list[CompletionResult]:
        self.counter._count_requests(requests)
        self.stats["generations"] += sum(r.n for r in requests)
        self.stats["completion_tokens_max"] += sum(r.n * r.max_tokens for r in requests)
        return [CompletionResult(texts=[""] * r.n) for r in requests]

    def usage(self) -> dict:
        return {"requests": self.counter.stats["requests"], "prompt_tokens": self.counter.stats["prompt_tokens"],
                **self.stats}


# the default tokenizer of an API model's dry run, written as parse_spec("smollm2") would give it
EMBEDDED_TOKENIZER = ModelSpec("smollm2", "embedded", "smollm2")


def dry_model(spec: ModelSpec, *, chat_template: bool = False, tokenizer: ModelSpec | None = None, **_) -> DryModel:
    """The stand-in for `spec` (parsed): its own tokenizer for a local model; for an API model the
    tokenizer of `tokenizer` (a parsed local spec; default the embedded model's, an approximation)."""
    local = spec.backend != "openai"
    source = spec if local else (tokenizer or EMBEDDED_TOKENIZER)
    if source.backend == "openai":
        raise UserError(f"--tokenizer {source.text}: give a local model (smollm2 or hf:/path) whose tokenizer "
                        "counts tokens")
    path = smollm2_path() if source.backend == "embedded" else source.name
    counter = HFModel.tokenizer_only(path, spec=source.text, chat_template=chat_template)
    info = counter.info if local else ModelInfo(spec=redact(spec.text), backend="openai", name=spec.name,
                                                revision=spec.name, details={})
    return DryModel(counter=counter, info=info, local=local)


def dry_collect(study, model: DryModel, params: dict, *, method: str, n: int, batch_size: int) -> dict:
    """Run `study`'s collection against the dry model, as pipeline.run_study does; its usage."""
    from simsubjects.collect.runner import collect_trials  # lazy: imports tqdm, envwrap

    trials, _items = study.make(**params)
    params = {**params, "method": method, "n": n if method != "exact" else None}
    before = model.usage()
    cache = MemoryCache()
    collect_trials(study, model, cache, trials, params, method=method, n=n, chunk=batch_size)
    after = model.usage()
    row = {"study": study.name, "trials": len(trials), **{k: after[k] - before[k] for k in after}}
    if study.name.startswith(ADAPTIVE):
        row["note"] = "estimate: answers decide the steps"
    return row


def price_table(rows: list[dict], local: bool, price_in: float | None, price_out: float | None) -> pd.DataFrame:
    """One row per study plus a total; the price column where prices were given."""
    df = pd.DataFrame(rows)
    total = {"study": "total", **{c: df[c].sum() for c in df.columns if c not in ("study", "note")}}
    df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)
    cols = ["study", "trials", "requests", "forwards" if local else None, "generations", "prompt_tokens",
            "completion_tokens_max", "note" if "note" in df else None]
    df = df[[c for c in cols if c]]
    if price_in is not None or price_out is not None:
        df["price_max"] = (df["prompt_tokens"] * (price_in or 0.0) + df["completion_tokens_max"] * (price_out or 0.0)) / 1e6
    if "note" in df:
        df["note"] = df["note"].fillna("")
    return df


def check_prices(price_in, price_out) -> None:
    for name, v in (("--price-in", price_in), ("--price-out", price_out)):
        if v is not None and not (v >= 0 and math.isfinite(v)):
            raise UserError(f"{name} {v}: a price per million tokens, 0 or more")


def describe(df: pd.DataFrame, spec: str, local: bool, tokenizer_spec: str | None) -> str:
    """The lines printed under the table: what was counted, and how."""
    lines = ["dry run: no model weights loaded, nothing answered, nothing written."]
    if local:
        lines.append("prompt tokens counted by the model's tokenizer; forwards: exact-scoring forward passes; "
                     "completion_tokens_max: generations x their max_tokens (an upper bound)")
    else:
        lines.append(f"prompt tokens counted by {tokenizer_spec or 'smollm2'}'s tokenizer, an approximation of "
                     f"{spec}'s (pass --tokenizer hf:/path for the served model's own)")
    if "price_max" in df:
        lines.append("price_max: prompt tokens x --price-in + completion_tokens_max x --price-out, per million "
                     "(an upper bound for generations)")
    return "\n".join(lines)




def dry_run_study(study, spec: ModelSpec, params: dict, *, method: str, n: int, batch_size: int,
                  chat_template: bool = False, tokenizer: ModelSpec | None = None) -> tuple[list[dict], DryModel]:
    """`collect STUDY --dry-run`: the same checks as run_study, then the counted collection (`spec` and
    `tokenizer` parsed by the command line)."""
    if method not in study.methods:
        raise UserError(f"--method {method}: {study.name} supports {', '.join(study.methods)}")
    if method != "exact" and n < 1:
        raise UserError(f"--n {n}: must be at least 1")
    study.make(**params)  # a bad study option fails before the tokenizer loads
    model = dry_model(spec, chat_template=chat_template, tokenizer=tokenizer)
    return [dry_collect(study, model, params, method=method, n=n, batch_size=batch_size)], model
