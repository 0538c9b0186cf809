"""Opinion survey over ATP questions (OpinionQA, Santurkar et al. 2023), with or without personas.

Questions come from an OpinionQA ``info.csv`` (question, references = options, option_ordinal =
ordinal values of the first options, the rest refusals). Each is asked in OpinionQA's multiple-
choice format (the HELM prompt of the paper, App. B.1):

    Question: <question>
    A. <option>
    ...
    Answer:

scored exactly over the letters (" A", " B", ...), refusals such as "Refused" included as options,
as OpinionQA does (its refusal rate R_M is the model's mass on them). Subjects: the default prompt
(no persona) and/or personas from a respondents table (simsubjects.collect.personas), whose text is placed
before the question: Argyle et al.'s first-person backstory or OpinionQA's QA / BIO / PORTRAY
steering formats. The options may be reordered per subject (simsubjects.collect.option_order), the order
shown recorded per trial.

After collection the human rows (OpinionQA count files or wave folder, overall and per group of the
compared attributes) are added beside the model's, so `analyze` has both sides in one table.

Everything the study needs is plain data (`params`): a YAML study file can feed the same keys.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simsubjects.collect import option_order, personas as P
from simsubjects.errors import UserError
from simsubjects.datasets.opinionqa import count_files, read_info, read_opinionqa
from simsubjects.datasets.registry import data_path

STUDY = "opinion_survey"
BUNDLED = "opinion_survey/American_Trends_Panel_W99"
BUNDLED_RESPONDENTS = "opinion_survey/respondents.csv"
DEFAULT = "default"  # condition of the prompt without persona
STEERED = "persona"


def format_question(question: str, options) -> str:
    """OpinionQA's multiple-choice prompt (HELM format of the paper, App. B.1)."""
    lines = [f"Question: {question}"] + [f"{P.LETTERS[i]}. {o}" for i, o in enumerate(options)]
    return "\n".join(lines + ["Answer:"])


def _bundled(rel: str) -> Path:
    return data_path(rel)


def questions_folder(questions: str | None) -> Path:
    return Path(questions) if questions else _bundled(BUNDLED)


def _subjects(params: dict) -> tuple[pd.DataFrame, dict, list[str]]:
    """(personas table or empty, column labels, persona attribute columns)."""
    source = params.get("personas") or "none"
    if source == "none":
        return pd.DataFrame(), {}, []
    path = _bundled(BUNDLED_RESPONDENTS) if source == "bundled" else Path(source)
    resp = P.read_respondents(path, weight=params.get("persona_weight") or None)
    steer = params.get("steer") or ""
    if steer and steer not in resp.attributes:
        raise UserError(f"--steer {steer}: not a column of {path}; columns: {', '.join(resp.attributes)}")
    sample = str(params.get("sample") or "all")
    if params.get("margins"):
        n = int(sample) if sample != "all" else len(resp.data)
        resp = P.panel(resp, P.read_margins(params["margins"]), n, seed=params.get("seed", 0),
                       trim=params.get("trim"))
    elif params.get("trim") is not None:
        raise UserError("--trim: trims raked weights; pass --margins too")
    elif sample != "all":
        try:
            n = int(sample)
        except ValueError:
            raise UserError(f"--sample {sample!r}: all or a number of subjects (per --steer group)") from None
        resp = P.resample(resp, n, seed=params.get("seed", 0), by=steer or None)
    fmt = params.get("persona_format") or "argyle"
    in_text = [a.strip() for a in (params.get("persona_attributes") or "").split(",") if a.strip()]
    if not in_text:
        in_text = [steer] if fmt in ("qa", "bio", "portray") and steer else resp.attributes
    table = P.personas(resp, fmt, in_text)
    table.attrs["panel"] = resp.info  # Kish n of raked (and trimmed) weights: recorded in the manifest
    return table, P.column_labels(resp), resp.attributes


def build(questions: str | None = None, first: int = 0, personas: str = "none", persona_format: str = "argyle",
          persona_attributes: str = "", persona_weight: str = "", steer: str = "POLPARTY", sample: str = "all",
          margins: str | None = None, no_default_prompt: bool = False, order: str = "fixed", seed: int = 0,
          human: str | None = None, human_format: str = "auto", groups: str = "POLPARTY", trim: float | None = None):
    """(trials, items) of the opinion survey; every argument is plain data."""
    default_prompt = not no_default_prompt
    params = dict(personas=personas, persona_format=persona_format, persona_attributes=persona_attributes,
                  persona_weight=persona_weight, steer=steer, sample=sample, margins=margins, seed=seed, trim=trim)
    if order not in option_order.MODES:
        raise UserError(f"--order {order!r}: choose {', '.join(option_order.MODES)}")
    if first < 0:
        raise UserError(f"--first {first}: must be 0 (all) or a positive number")
    P.check_format(persona_format)
    qs = read_info(questions_folder(questions))
    if first:
        qs = dict(list(qs.items())[:first])
    # the human data is read now as well, so a bad file fails before the model loads, not after collection
    read_opinionqa(_human_source(questions, human, human_format), keys=list(qs), fmt=human_format,
                   attributes=[g.strip() for g in (groups or "").split(",") if g.strip()] or None)
    table, labels, attrs = _subjects(params)
    if table.empty and not default_prompt:
        raise UserError("--no-default-prompt needs --personas: there would be no subject to ask")
    subjects = ([{P.ID: "", "persona_text": "", "persona_weight": 1.0, **{a: "" for a in attrs}}]
                if default_prompt else []) + table.to_dict("records")
    rows = []
    for s in subjects:
        for q in qs.values():
            rows.append({
                "trial": f"{q.key}|{s[P.ID] or DEFAULT}", "item": q.key, "condition": STEERED if s[P.ID] else DEFAULT,
                "subject": s[P.ID], "prompt": "", "options": tuple(f" {P.LETTERS[i]}" for i in range(len(q.references))),
                "labels": q.references, "key": q.key, P.ID: s[P.ID], **{a: s[a] for a in attrs},
                "persona_weight": s["persona_weight"], "persona_text": s["persona_text"],
            })

    def render(rec, shown):
        text = format_question(qs[rec["key"]].question, shown)
        return f"{rec['persona_text']}\n\n{text}" if rec[P.ID] else text

    trials = option_order.reorder_trials(pd.DataFrame(rows), render, order, seed,
                                         fixed_last=lambda rec: qs[rec["key"]].refusal)
    trials.attrs["column_labels"] = {**labels, **COLUMN_LABELS}
    if table.attrs.get("panel"):
        trials.attrs["panel"] = dict(table.attrs["panel"])
    items = pd.DataFrame([{"item": q.key, "key": q.key, "question": q.question, "labels": q.references,
                           "positions": q.positions, "refusal": q.refusal, "num_options": len(q.references)}
                          for q in qs.values()])
    items.attrs["persona_attributes"] = attrs
    return trials, items


COLUMN_LABELS = {
    **option_order.COLUMN_LABELS,
    "position": "Ordinal value of the option (OpinionQA option_ordinal; missing for refusals)",
    "refusal": "1 if the option is a refusal (Refused, Don't know)",
    "attribute": "Demographic attribute of a human group (Overall for the whole sample)",
    "group": "Demographic group of the human rows",
    "n_respondents": "Respondents who gave this answer (human rows)",
    "wave": "ATP wave of the human data",
    "question": "Question text",
}


def _human_source(questions: str | None, human: str | None, fmt: str) -> Path:
    folder = Path(human) if human else questions_folder(questions)
    if not folder.is_dir():
        raise UserError(f"--human {folder}: no such folder (OpinionQA count files or a wave folder)")
    if fmt in ("auto", "counts") and not count_files(folder) and not (folder / "responses.csv").is_file():
        raise UserError(f"--human {folder}: holds neither <ATTRIBUTE>_data.json count files nor responses.csv")
    return folder


def finalize(responses: pd.DataFrame, params: dict) -> pd.DataFrame:
    """Model rows get each option's ordinal position, refusal flag and shown position; human rows are added."""
    qs = read_info(questions_folder(params.get("questions")))
    opt = pd.DataFrame([{"key": q.key, "response": r, "position": p, "refusal": f}
                        for q in qs.values() for r, p, f in zip(q.references, q.positions, q.refusal)])
    model = option_order.add_shown_position(responses.merge(opt, on=["key", "response"], how="left"))
    keys = list(dict.fromkeys(model["key"]))
    groups = [g.strip() for g in (params.get("groups") or "").split(",") if g.strip()]
    folder = _human_source(params.get("questions"), params.get("human"), params.get("human_format", "auto"))
    human = read_opinionqa(folder, attributes=groups or None, keys=keys, fmt=params.get("human_format", "auto"))
    return pd.concat([model, human], ignore_index=True)
