"""Ask a model a study's trials through the cache and turn the answers into tidy rows.

Trials are processed in fixed chunks in trial order, and each chunk's answers are committed to
the cache in one transaction before the next chunk starts. A run killed at any point therefore
re-asks at most one chunk, with the same chunk composition, and ends with the identical table.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Sequence

import pandas as pd
from tqdm.auto import tqdm

from .models.base import ChoiceRequest, ChoiceResult, CompletionRequest, CompletionResult
from .store import RequestCache, stable_hash

TRIAL_COLUMNS = ["trial", "item", "condition", "subject", "prompt", "options", "labels"]


def progress(total: int, desc: str, enabled: bool = True):
    return tqdm(total=total, desc=desc, unit="trial", disable=not enabled, file=sys.stderr,
                dynamic_ncols=True, smoothing=0.1)


def _chunks(seq: Sequence, size: int):
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def cached_map(cache: RequestCache, requests: list, keys: list[str], ask: Callable,
               decode: Callable, chunk: int, bar=None) -> tuple[list, dict[int, str]]:
    """Answers for `requests` (cached or asked in fixed chunks); failures by index."""
    results: list = [None] * len(requests)
    failures: dict[int, str] = {}
    for start in range(0, len(requests), chunk):
        idx = list(range(start, min(start + chunk, len(requests))))
        known = cache.get_many(keys[i] for i in idx)
        todo = [i for i in idx if keys[i] not in known]
        fresh: dict[str, dict] = {}
        reasons: dict[str, str] = {}
        if todo:
            # Distinct requests only: several trials may share a prompt.
            uniq = list(dict.fromkeys(keys[i] for i in todo))
            first = {keys[i]: i for i in reversed(todo)}
            answers = ask([requests[first[k]] for k in uniq])
            for k, a in zip(uniq, answers):
                if a.failed:
                    reasons[k] = a.failed  # not cached: a re-run asks again
                else:
                    fresh[k] = a.__dict__
            cache.put_many(fresh)
        for i in idx:
            value = known.get(keys[i]) or fresh.get(keys[i])
            if value is None:
                failures[i] = reasons.get(keys[i], "failed")
            else:
                results[i] = decode(value)
        if bar is not None:
            bar.update(len(idx))
    return results, failures


def collect_choices(model, trials: pd.DataFrame, cache: RequestCache, *, study: str, method: str = "exact",
                    n: int = 50, chunk: int = 64, show_progress: bool = True) -> tuple[pd.DataFrame, dict]:
    """Tidy rows (one per trial x option) for a k-choice trials table; and run statistics."""
    missing = [c for c in TRIAL_COLUMNS if c not in trials.columns]
    if missing:
        raise ValueError(f"trials table lacks {missing}")
    fp = model.fingerprint()
    requests = [ChoiceRequest(p, tuple(o), n) for p, o in zip(trials["prompt"], trials["options"])]
    keys = [stable_hash({"model": fp, "method": method, **r.key()}) for r in requests]

    def ask(reqs):
        return model.choose(reqs, method=method)

    t0 = time.perf_counter()
    with progress(len(requests), f"{study} ({model.info.spec})", show_progress) as bar:
        results, failures = cached_map(cache, requests, keys, ask, lambda v: ChoiceResult(**v), chunk, bar)
    design = [c for c in trials.columns if c not in ("prompt", "options", "labels")]
    rows = []
    for t, (rec, res) in enumerate(zip(trials[design].to_dict("records"), results)):
        if res is None:
            continue
        labels = trials["labels"].iat[t]
        for i, label in enumerate(labels):
            rows.append({
                **{k: rec[k] for k in ("trial", "item", "condition", "subject")},
                "study": study, "source": "model", "model": model.info.spec, "method": res.method,
                "response": label,
                "weight": res.probs[i] if res.method == "exact" else float(res.counts[i]),
                "validity": res.validity,
                **{k: v for k, v in rec.items() if k not in ("trial", "item", "condition", "subject")},
                "n_samples": res.n_samples, "n_queries": res.n_queries,
            })
    stats = {
        "trials": len(trials), "answered": len(trials) - len(failures), "rows": len(rows),
        "failures": [{"trial": trials["trial"].iat[i], "reason": r} for i, r in failures.items()],
        "short": [{"trial": trials["trial"].iat[i], "reason": r.short} for i, r in enumerate(results)
                  if r is not None and r.short],
        "queries": int(sum(r.n_queries for r in results if r is not None)),
        "mean_validity": float(pd.Series([r.validity for r in results if r is not None]).mean()) if rows else None,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return pd.DataFrame(rows), stats


def complete_many(model, cache: RequestCache, requests: list[CompletionRequest], *, chunk: int = 16,
                  bar=None) -> tuple[list[CompletionResult | None], dict[int, str]]:
    """Free-text answers through the cache (for studies that parse completions themselves)."""
    fp = model.fingerprint()
    keys = [stable_hash({"model": fp, **r.key()}) for r in requests]
    return cached_map(cache, requests, keys, model.complete, lambda v: CompletionResult(**v), chunk, bar)
