"""Wisdom of Crowds (Aher et al. 2023, §7 and Appendix D): integer estimates to 10 questions.

Free-response prompt of Figure 14 ("... answer (integer): [") at temperature 1, top_p 1.
Validity (Figure 14 caption, prompts.json): the completion must contain "]", and the text
before the first "]" must be an integer once commas and spaces are removed.

The request is sent WITHOUT a stop sequence and parsed up to the first "]": backends cut a stop
string out of the text (the HF backend, and OpenAI-compatible servers), so with stop="]" a
completion that ended at "]" could not be told from one that ran out of tokens without it.
max_tokens (12) leaves room for the longest truth (299,792,458 written with separators) plus "]".
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from simsubjects.datasets.registry import load_json
from simsubjects.errors import UserError
from simsubjects.collect.models.base import CompletionRequest
from simsubjects.collect.runner import collect_texts
from simsubjects.studies.names import name_pool
from simsubjects.collect.studies.registry import fill_template

STUDY_NAME = "wisdom"
MAX_TOKENS = 12


def prompt_spec() -> dict:
    return load_json("aher2023/prompts.json")["wisdom"]


def questions() -> pd.DataFrame:
    """The 10 questions: item, question, truth, source, human_median, human_iqr (first five only)."""
    rows = load_json("aher2023/wisdom.json")
    df = pd.DataFrame([{k: r[k] for k in ("id", "question", "truth", "source", "human_median", "human_iqr")}
                       for r in rows]).rename(columns={"id": "item"})
    return df


def paper_lm_reference() -> pd.DataFrame:
    """Medians and IQRs of LM-1..LM-6 printed in Table 2 (long: item, model, median, iqr)."""
    return pd.DataFrame([{"item": r["id"], "model": m, "median": v["median"], "iqr": v["iqr"]}
                         for r in load_json("aher2023/wisdom.json") for m, v in r["lm"].items()])


def parse_estimate(completion: str) -> int | None:
    """The integer a completion gives, or None when invalid (rule of prompts.json).

    "1,064]" -> 1064; " 299 792 458]" -> 299792458; "about 5]", "5" (no "]"), "3.5]" -> None.
    """
    rule = prompt_spec()["validity"]
    head, sep, _ = completion.partition(rule["terminator"])
    if not sep:
        return None
    for ch in rule["strip"]:
        head = head.replace(ch, "")
    return int(head) if re.fullmatch(rule["regex"], head) else None


def participants(n: int, seed: int = 0) -> pd.DataFrame:
    """The first n of a seeded shuffle of the 1,500 names (Mr./Ms./Mx. x 500 surnames)."""
    pool = name_pool(titles=tuple(prompt_spec()["titles"]))
    if not 1 <= n <= len(pool):
        raise UserError(f"--participants {n}: must be between 1 and {len(pool)}")
    order = np.random.default_rng(seed).permutation(len(pool))[:n]
    return pool.iloc[order].reset_index(drop=True)


def select_questions(spec: str = "all") -> pd.DataFrame:
    """Questions by number (1-10): "all", "1,3", "1-5", "6-10"; in table order."""
    qs = questions()
    if spec.strip().lower() == "all":
        return qs
    wanted: set[int] = set()
    try:
        for part in spec.split(","):
            a, _, b = part.strip().partition("-")
            wanted.update(range(int(a), int(b or a) + 1))
    except ValueError:
        raise UserError(f"--questions {spec}: give numbers 1-{len(qs)}, e.g. 1,3 or 1-5, or all") from None
    if not wanted or min(wanted) < 1 or max(wanted) > len(qs):
        raise UserError(f"--questions {spec}: question numbers run from 1 to {len(qs)}")
    return qs.iloc[sorted(k - 1 for k in wanted)].reset_index(drop=True)


def build_trials(participants_: int = 5, questions_: str = "all", seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, items): every participant answers every chosen question (one free-text request each)."""
    template = prompt_spec()["template"]
    qs = select_questions(questions_)
    people = participants(participants_, seed)
    rows = []
    for q in qs.to_dict("records"):
        for p in people.to_dict("records"):
            rows.append({
                "trial": f"{q['item']} | {p['name']}", "item": q["item"], "condition": q["source"],
                "subject": p["name"], "prompt": fill_template(template, "prompt template of wisdom (datasets/aher2023/prompts.json)",
                                                    name=p["name"], question=q["question"]),
                "truth": q["truth"], "title": p["title"], "group": p["group"],
            })
    return pd.DataFrame(rows), qs


def requests_for(trials: pd.DataFrame, params: dict) -> list[CompletionRequest]:
    max_tokens, seed = params.get("max_tokens", MAX_TOKENS), int(params.get("seed") or 0)
    return [CompletionRequest(prompt=p, n=1, temperature=1.0, top_p=1.0, max_tokens=max_tokens, stop=(), seed=seed)
            for p in trials["prompt"]]


def parse_answer(text: str, trial: dict) -> dict:
    """One participant's answer: the integer estimate in the text (validity 0 when there is none)."""
    value = parse_estimate(text)
    return {"response": "" if value is None else str(value), "validity": float(value is not None),
            "estimate": float("nan") if value is None else float(value), "truth": float(trial["truth"]),
            "completion": text}


def collect(model, cache, trials: pd.DataFrame, params: dict, show_progress: bool = True):
    """One generated estimate per participant x question, through the free-text collector."""
    df, stats = collect_texts(model, trials, cache, requests_for(trials, params), study=STUDY_NAME,
                              parse=parse_answer, chunk=int(params.get("batch_size") or 16),
                              show_progress=show_progress)
    return df, stats, None


def validate(model, trials: pd.DataFrame, params: dict, n: int = 20) -> pd.DataFrame:
    """Prompt validation: validity rate of a small sample by condition; the estimates are never shown."""
    sample = trials.sample(n=min(n, len(trials)), random_state=int(params.get("seed") or 0))
    res = model.complete(requests_for(sample, params))
    valid = [float(not r.failed and bool(r.texts) and parse_estimate(r.texts[0]) is not None) for r in res]
    z = sample.assign(validity=valid)
    return z.groupby("condition")["validity"].agg(["mean", "min", "max", "size"]).reset_index()
