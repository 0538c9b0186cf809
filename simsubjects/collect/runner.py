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

from .defaults import BATCH_SIZE, SAMPLES
from .models.base import ChoiceRequest, ChoiceResult, CompletionRequest, CompletionResult
from .store import RequestCache, stable_hash
from .choice import PROTOCOL

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


# -- the tidy-row contract: one core-row builder, one cache-key recipe, one stats record ----------------

CORE_IDS = ("trial", "item", "condition", "subject")
NOT_DESIGN = ("prompt", "options", "labels")


def core_row(trial: dict, *, study: str, model: str, method: str, response: str, weight: float,
             validity: float) -> dict:
    """The core response columns (docs/schema.md), in their order, for one observation of a trial."""
    return {**{k: trial[k] for k in CORE_IDS}, "study": study, "source": "model", "model": model,
            "method": method, "response": response, "weight": weight, "validity": validity}


def design_of(trial: dict, taken=()) -> dict:
    """A trial's design columns beyond the ids (what the study added), minus columns already set."""
    return {k: v for k, v in trial.items() if k not in CORE_IDS and k not in NOT_DESIGN and k not in taken}


def cache_key(fingerprint: dict, request, method: str | None = None) -> str:
    """The one cache-key recipe: the model's fingerprint, the k-choice method (None for free text),
    the request; sampled answers also name the sampling protocol's version (collect/choice.py)."""
    key = {"model": fingerprint}
    if method is not None:
        key["method"] = method
        if method == "sampled":
            key["protocol"] = PROTOCOL
    return stable_hash({**key, **request.key()})


def run_stats(trial_ids: Sequence, results: list, failures: dict[int, str], rows: int, t0: float,
              validity: float | None = None, **extra) -> dict:
    """The one statistics record of a collection (manifest "counts", "failures", "short")."""
    done = [r for r in results if r is not None]
    if validity is None and done and hasattr(done[0], "validity"):
        validity = float(pd.Series([r.validity for r in done]).mean())
    return {
        "trials": len(trial_ids), "answered": len(trial_ids) - len(failures), "rows": rows,
        "failures": [{"trial": trial_ids[i], "reason": r} for i, r in failures.items()],
        "short": [{"trial": trial_ids[i], "reason": r.short} for i, r in enumerate(results)
                  if r is not None and getattr(r, "short", None)],
        "queries": int(sum(r.n_queries for r in done)),
        "mean_validity": validity if rows else None,
        **extra,
        "seconds": round(time.perf_counter() - t0, 3),
    }


# -- the two collectors ----------------------------------------------------------------------------

def collect_choices(model, trials: pd.DataFrame, cache: RequestCache, *, study: str, method: str = "exact",
                    n: int = SAMPLES, chunk: int = BATCH_SIZE, show_progress: bool = True) -> tuple[pd.DataFrame, dict]:
    """Tidy rows (one per trial x option) for a k-choice trials table; and run statistics."""
    missing = [c for c in TRIAL_COLUMNS if c not in trials.columns]
    if missing:
        raise ValueError(f"trials table lacks {missing}")
    fp = model.fingerprint()
    requests = [ChoiceRequest(p, tuple(o), n) for p, o in zip(trials["prompt"], trials["options"])]
    keys = [cache_key(fp, r, method) for r in requests]

    def ask(reqs):
        return model.choose(reqs, method=method)

    t0 = time.perf_counter()
    with progress(len(requests), f"{study} ({model.info.spec})", show_progress) as bar:
        results, failures = cached_map(cache, requests, keys, ask, lambda v: ChoiceResult(**v), chunk, bar)
    rows = []
    for t, (rec, res) in enumerate(zip(trials.to_dict("records"), results)):
        if res is None:
            continue
        for i, label in enumerate(trials["labels"].iat[t]):
            weight = res.probs[i] if res.method == "exact" else float(res.counts[i])
            rows.append({**core_row(rec, study=study, model=model.info.spec, method=res.method, response=label,
                                    weight=weight, validity=res.validity),
                         **design_of(rec), "n_samples": res.n_samples, "n_queries": res.n_queries})
    return pd.DataFrame(rows), run_stats(list(trials["trial"]), results, failures, len(rows), t0)


def collect_texts(model, trials: pd.DataFrame, cache: RequestCache, requests: list[CompletionRequest], *,
                  study: str, parse: Callable[[str, dict], dict], chunk: int = 16,
                  show_progress: bool = True) -> tuple[pd.DataFrame, dict]:
    """The free-text collector: one request per trial, one row per trial.

    `parse(text, trial)` reads the first generated text and returns at least `response` (a string)
    and `validity` (1.0 when the text could be read, else 0.0), plus any columns of its own; the
    trial's design columns follow. Method "generated", weight 1 (docs/schema.md)."""
    t0 = time.perf_counter()
    with progress(len(requests), f"{study} ({model.info.spec})", show_progress) as bar:
        results, failures = complete_many(model, cache, requests, bar=bar, chunk=chunk)
    rows = []
    for rec, res in zip(trials.to_dict("records"), results):
        if res is None:
            continue
        parsed = dict(parse(res.texts[0] if res.texts else "", rec))
        response, validity = parsed.pop("response"), float(parsed.pop("validity"))
        rows.append({**core_row(rec, study=study, model=model.info.spec, method="generated", response=response,
                                weight=1.0, validity=validity),
                     **parsed, **design_of(rec, taken=parsed), "n_samples": len(res.texts),
                     "n_queries": res.n_queries})
    df = pd.DataFrame(rows)
    validity = float(df["validity"].mean()) if len(df) else float("nan")
    return df, run_stats(list(trials["trial"]), results, failures, len(df), t0, validity=validity)


def complete_many(model, cache: RequestCache, requests: list[CompletionRequest], *, chunk: int = 16,
                  bar=None) -> tuple[list[CompletionResult | None], dict[int, str]]:
    """Free-text answers through the cache (for studies that parse completions themselves)."""
    fp = model.fingerprint()
    keys = [cache_key(fp, r) for r in requests]
    return cached_map(cache, requests, keys, model.complete, lambda v: CompletionResult(**v), chunk, bar)


def collect_trials(study, model, cache: RequestCache, trials: pd.DataFrame, params: dict, *, method: str, n: int,
                   chunk: int, show_progress: bool = False) -> tuple:
    """A study's trials through `model` and `cache`: the study's own `collect` (responses, stats,
    records) where it declares one, else the k-choice runner (responses, stats, None). The one path
    that run_study, --dry-run, --max-cost and --batch-export all take."""
    if study.collect is None:
        return (*collect_choices(model, trials, cache, study=study.name, method=method, n=n,
                                 show_progress=show_progress, chunk=chunk), None)
    return study.collect(model, cache, trials, {**params, "batch_size": chunk}, show_progress)
