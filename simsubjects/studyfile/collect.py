"""Asking a model a study file's trials: k-choice, numeric estimates, free text judged by k-choice.

k-choice trials go through the package's one k-choice path (runner.collect_choices: exact
probabilities or sampled counts). Estimates and free text are generated at the response's
temperature through the request cache; a free-text answer is then classified by a follow-up
k-choice prompt (as Milgram's experimenter judgments are, Aher et al. 2023 App. E), asked of
the same model or of `--judge-model`.
"""

from __future__ import annotations

import re
import time
from string import Template

import pandas as pd

from ..collect.models.base import ChoiceRequest, CompletionRequest
from ..collect.runner import collect_choices, complete_many, progress
from ..collect.seeds import seed_from_text
from .spec import Response, Study

NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def parse_estimate(text: str, r: Response) -> float | None:
    """The number the text gives if it is valid for `r`, else None.

    With a terminator (e.g. "]"), the text before it must be one number (spaces and thousands
    commas removed) and the terminator must be there: a model that ran out of tokens, or wrote
    "about 5", gave no answer (the Wisdom-of-Crowds rule, Aher et al. 2023, Fig. 14). Without
    one, the first number in the text counts.
    """
    if r.terminator:
        head, sep, _ = text.partition(r.terminator)
        head = head.replace(",", "").replace(" ", "").strip()
        if not sep or not re.fullmatch(r"[-+]?\d+(?:\.\d+)?", head):
            return None
        text = head
    m = NUMBER.search(text)
    if not m:
        return None
    try:
        value = float(m.group().replace(",", ""))
    except ValueError:
        return None
    if r.integer and not value.is_integer():
        return None
    if (r.min is not None and value < r.min) or (r.max is not None and value > r.max):
        return None
    return value


def _seed(study: Study, trial: str) -> int:
    """One seed per trial: repetitions and subjects draw independently, re-runs draw the same."""
    return seed_from_text(study.seed, trial, nbytes=4)


def generation_requests(study: Study, trials: pd.DataFrame) -> list[CompletionRequest]:
    items = {it.id: it.response for it in study.items}
    # With a terminator, a local backend may stop once it appears: what is parsed is the same
    # (text before it), and no stop string is sent, so an answer without it stays invalid.
    return [CompletionRequest(prompt=p, n=1, temperature=float(items[i].temperature), top_p=1.0,
                              max_tokens=int(items[i].max_tokens), stop=(), seed=_seed(study, t),
                              settled=re.escape(items[i].terminator) if items[i].terminator else "")
            for p, i, t in zip(trials["prompt"], trials["item"], trials["trial"])]


def collect_study(study: Study, model, cache, trials: pd.DataFrame, params: dict, show_progress: bool = True,
                  judge=None):
    """Rows of every trial (k-choice, estimate, judged free text) and run statistics."""
    t0 = time.perf_counter()
    method, n, chunk = params.get("method", "exact"), int(params.get("n") or 50), int(params.get("batch_size") or 64)
    if method == "generated":
        method = "exact"  # a study of estimates and free text: its judge prompts are scored exactly
    parts, stats = [], {"trials": len(trials), "answered": 0, "rows": 0, "failures": [], "short": [], "queries": 0}
    choice = trials[trials["response_type"] == "choice"]
    if len(choice):
        rows, st = collect_choices(model, choice.reset_index(drop=True), cache, study=study.name, method=method,
                                   n=n, chunk=chunk, show_progress=show_progress)
        parts.append(rows)
        _add(stats, st)
    gen = trials[trials["response_type"] != "choice"].reset_index(drop=True)
    if len(gen):
        # the judge model loads only when free text is there to classify (`judge`: a loader or None)
        judge_model = judge() if judge is not None and (gen["response_type"] == "free_text").any() else model
        rows, st = _generated(study, model, cache, gen, method, n, chunk, show_progress, judge_model)
        parts.append(rows)
        _add(stats, st)
    responses = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else pd.DataFrame()
    valid = responses.drop_duplicates("trial")["validity"] if len(responses) else pd.Series(dtype=float)
    stats.update(rows=len(responses), mean_validity=float(valid.mean()) if len(valid) else None,
                 seconds=round(time.perf_counter() - t0, 3))
    return responses, stats, None


def _add(total: dict, st: dict) -> None:
    total["answered"] += st["answered"]
    total["queries"] += st.get("queries", 0)
    total["failures"] += st.get("failures", [])
    total["short"] += st.get("short", [])


def _generated(study: Study, model, cache, gen: pd.DataFrame, method: str, n: int, chunk: int, show: bool, judge):
    items = {it.id: it.response for it in study.items}
    with progress(len(gen), f"{study.name} generated ({model.info.spec})", show) as bar:
        results, failures = complete_many(model, cache, generation_requests(study, gen), chunk=min(chunk, 16), bar=bar)
    design = [c for c in gen.columns if c not in ("prompt", "options", "labels")]
    texts = {i: (r.texts[0] if r.texts else "") for i, r in enumerate(results) if r is not None}
    rows = []
    for i, rec in enumerate(gen[design].to_dict("records")):
        if i not in texts or items[rec["item"]].kind != "estimate":
            continue
        value = parse_estimate(texts[i], items[rec["item"]])
        rows.append({**_core(study, model, rec), "method": "generated",
                     "response": "" if value is None else f"{value:g}", "weight": 1.0,
                     "validity": float(value is not None), "estimate": value if value is not None else float("nan"),
                     "completion": texts[i], **_design(rec), "n_samples": 1, "n_queries": results[i].n_queries})
    free = [i for i in texts if items[gen["item"].iat[i]].kind == "free_text"]
    if free:
        rows += _judged(study, gen, free, texts, items, cache, method, n, chunk, show, judge, model)
    stats = {"answered": len(gen) - len(failures), "queries": sum(r.n_queries for r in results if r is not None),
             "failures": [{"trial": gen["trial"].iat[i], "reason": r} for i, r in failures.items()], "short": []}
    return pd.DataFrame(rows), stats


def _judged(study, gen, free, texts, items, cache, method, n, chunk, show, judge, model) -> list[dict]:
    """Each free-text answer classified by its item's judge prompt (a k-choice question)."""
    jrows = []
    for i in free:
        rec = gen.iloc[i]
        r = items[rec["item"]]
        from .design import shown_options  # lazy: imports studyfile.design; the judge's options are shown as listed

        shown = shown_options(r.judge, tuple(range(sum(not o.refusal for o in r.judge.options))))

        fill = {k: ("" if v is None else str(v)) for k, v in rec.items() if isinstance(v, (str, int, float))}
        fill.update(answer=texts[i].strip(), options=r.judge.option_separator.join(s[3] for s in shown))
        jrows.append({"trial": rec["trial"], "item": rec["item"], "condition": rec["condition"],
                      "subject": rec["subject"], "prompt": Template(r.judge_prompt).substitute(fill),
                      "options": tuple(s[2] for s in shown), "labels": tuple(s[0].label for s in shown),
                      "_row": i})
    jt = pd.DataFrame(jrows)
    answers, _ = collect_choices(judge, jt.drop(columns=["_row"]), cache, study=f"{study.name} judge",
                                 method=method, n=n, chunk=chunk, show_progress=show)
    design = [c for c in gen.columns if c not in ("prompt", "options", "labels")]
    by_trial = {rec["trial"]: rec for rec in gen[design].to_dict("records")}
    out = []
    for a in answers.to_dict("records"):
        rec = by_trial[a["trial"]]
        i = gen.index[gen["trial"] == a["trial"]][0]
        out.append({**_core(study, model, rec), "method": f"generated+judged-{a['method']}", "response": a["response"],
                    "weight": a["weight"], "validity": a["validity"], "completion": texts[i],
                    "judge": judge.info.spec, **_design(rec), "n_samples": a["n_samples"], "n_queries": a["n_queries"]})
    return out


def _core(study: Study, model, rec: dict) -> dict:
    return {"study": study.name, "trial": rec["trial"], "item": rec["item"], "condition": rec["condition"],
            "subject": rec["subject"], "source": "model", "model": model.info.spec}


def _design(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k not in ("trial", "item", "condition", "subject")}


def validity_sample(study: Study, model, trials: pd.DataFrame, params: dict, n: int = 20, judge=None) -> pd.DataFrame:
    """`--validate`: validity rates of a small sample by condition; outcomes are never shown."""
    sample = trials.sample(n=min(n, len(trials)), random_state=int(params.get("seed") or 0)).reset_index(drop=True)
    valid = pd.Series(float("nan"), index=sample.index)
    ch = sample["response_type"] == "choice"
    if ch.any():
        res = model.choose([ChoiceRequest(p, tuple(o)) for p, o in zip(sample.loc[ch, "prompt"], sample.loc[ch, "options"])])
        valid[ch] = [r.validity for r in res]
    items = {it.id: it.response for it in study.items}
    est = sample["response_type"] == "estimate"
    if est.any():
        res = model.complete(generation_requests(study, sample[est]))
        valid[est] = [float(bool(r.texts) and parse_estimate(r.texts[0], items[i]) is not None)
                      for r, i in zip(res, sample.loc[est, "item"])]
    z = sample.assign(validity=valid).dropna(subset=["validity"])
    return z.groupby(["response_type", "condition"])["validity"].agg(["mean", "min", "max", "size"]).reset_index()
