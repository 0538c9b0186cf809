"""`study check`: the design of a study file, without loading a model (well under 2 s)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .design import build_trials
from .door import describe_any, load_any


def token_counter():
    """(count function: texts -> their total tokens, what it is): SmolLM2's tokenizer where the weight cache
    holds it (a JSON file, read by `tokenizers` in milliseconds; the texts encoded in one batch call), else
    an estimate of 4 characters a token."""
    try:
        from tokenizers import Tokenizer  # lazy: optional (tokenizers)

        from ..collect.models.weight_cache import root  # lazy: optional (collect.models.openai_transport, collect.models.openai_probe)

        found = sorted((root() / "weights").glob("*/tokenizer.json"))
        if found:
            tok = Tokenizer.from_file(str(found[0]))
            return (lambda texts: sum(len(e.ids) for e in tok.encode_batch(list(texts), add_special_tokens=False))), \
                "SmolLM2 tokenizer"
    except Exception:  # noqa: BLE001 - counting is a convenience; the estimate below stands in
        pass
    return (lambda texts: sum(max(1, round(len(t) / 4)) for t in texts)), "estimate: characters / 4"


def describe(path, show: int = 3) -> str:
    loaded = load_any(path)
    if not loaded.plain:  # a session or a Milgram obedience file: its own description
        return describe_any(loaded)
    study = loaded.study
    trials, items = build_trials(study)
    count, how = token_counter()
    choice = trials[trials["response_type"] == "choice"]
    gen = trials[trials["response_type"] != "choice"]
    judged = trials[trials["response_type"] == "free_text"]
    distinct = choice.drop_duplicates(["prompt", "options"])
    requests = len(distinct) + len(gen) + len(judged)
    tokens = count([*distinct["prompt"], *gen["prompt"]])
    lines = [f"{study.file}: valid", f"study: {study.name} - {study.title}"]
    if study.citation:
        lines.append(f"citation: {study.citation}")
    if study.license:
        lines.append(f"license of the stimuli: {study.license}")
    kinds = pd.Series([it.response.kind for it in study.items]).value_counts()
    lines.append(f"items: {len(study.items)} ({', '.join(f'{n} {k}' for k, n in kinds.items())})")
    for f in study.factors:
        lines.append(f"factor {f.name} ({f.assignment}): {', '.join(f.levels)}")
    drawn = f" ({study.per_item} drawn per item)" if study.per_item else ""
    lines += [f"subjects: {len(study.subjects)}{drawn}; conditions: {trials['condition'].nunique()}; "
              f"repetitions: {study.repetitions}; option order: {study.order_mode}; seed: {study.seed}",
              f"trials: {len(trials)} ({len(choice)} k-choice, {len(gen)} generated)",
              f"requests per model: {requests} ({len(distinct)} distinct k-choice prompts scored over "
              f"{int(distinct['options'].map(len).sum())} completions, {len(gen)} generations"
              f"{f', {len(judged)} judge prompts' if len(judged) else ''})",
              f"prompt tokens per model: {tokens} ({how}; judge prompts not counted)"]
    if study.human is not None:
        lines.append(f"human rows: {len(study.human)} from {study.human['subject'].nunique()} respondents "
                     f"({study.human_name})")
    if study.analyses:
        lines.append("analyses: " + ", ".join(a.get("name") or a["type"] for a in study.analyses))
    lines.append(f"tables: {', '.join(str(Path(p).name) for p in study.files.values())}")
    for rec in trials.head(show).to_dict("records"):
        lines += ["", f"--- trial {rec['trial']} ({rec['response_type']}) ---", rec["prompt"]]
        if rec["options"]:
            lines.append("completions scored: " + ", ".join(f"{c!r} = {lab}" for c, lab in zip(rec["options"], rec["labels"])))
    return "\n".join(lines)
