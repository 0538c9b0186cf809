"""MoCa human reference data (Nie et al. 2023): 25 yes/no votes per causal or moral story.

`load_moca(task)` returns two tables:

* **responses** — tidy human rows (docs/schema.md): one row per vote, `study="moca"`,
  `condition=task`, `subject` = vote index within the story (participants differ between
  stories and are not linked across them), `response` "Yes"/"No", `weight` 1,
  `method="observed"`, `source="human"`, `model="moca-human"`, plus design columns
  `task` and `persona` ("").
* **items** — one row per story: `item, task, index, story, question, human_p_yes,
  human_class, n_votes, transcribed_answer` and one column per annotated factor holding the
  readable attribute (missing where the story is not annotated for that factor).

Human class: "Yes" if P(Yes) > 0.6, "No" if P(Yes) < 0.4, else "ambiguous" — the paper's
50% +/- 10% band (Table 1: causal 48/50/46, moral 23/10/29), the same rule the released
code applies (`max(P) <= 0.6` is ambiguous).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from simsubjects.errors import UserError

# MoCa's factors as contrasts A - B (read by studies/moca/analysis.py and studies/moca/ppi.py): A is the
# attribute the literature expects to raise P(Yes) (causal: judged a cause; moral: judged
# permissible). Conjunctive - Disjunctive has no such expectation and keeps the annotation order.
CONTRASTS: dict[str, dict[str, tuple[str, str]]] = {
    "causal": {
        "causal_structure": ("Conjunctive", "Disjunctive"),
        "agent_awareness": ("Aware", "Unaware"),
        "norm_type": ("Prescriptive", "Statistical"),
        "event_normality": ("Abnormal", "Normal"),
        "action_omission": ("Action", "Omission"),
        "time": ("Late", "Early"),
    },
    "moral": {
        "causal_role": ("Side effect", "Means"),
        "personal_force": ("Impersonal", "Personal"),
        "evitability": ("Inevitable", "Avoidable"),
        "beneficence": ("Self-beneficial", "Other-beneficial"),
        "locus_of_intervention": ("Agent of harm", "Patient of harm"),
    },
}

TASKS = ("causal", "moral")
MODEL_NAME = "moca-human"

# Annotation tag -> (factor column, readable attribute). Factor names follow the brief and the
# paper; the data's own factor names differ only for "beneficiary" (-> beneficence).
TAGS: dict[str, dict[str, tuple[str, str]]] = {
    "causal": {
        "CS_1_Conjunctive": ("causal_structure", "Conjunctive"),
        "CS_1_Disjunctive": ("causal_structure", "Disjunctive"),
        "AK_2_Agent_Aware": ("agent_awareness", "Aware"),
        "AK_2_Agent_Unaware": ("agent_awareness", "Unaware"),
        "Norm_3_Prescriptive_Norm": ("norm_type", "Prescriptive"),
        "Norm_3_Statistics_Norm": ("norm_type", "Statistical"),
        "EC_4_Abnormal_Event": ("event_normality", "Abnormal"),
        "EC_4_Normal_Event": ("event_normality", "Normal"),
        "EC_4_Action": ("action_omission", "Action"),
        "EC_4_Omission": ("action_omission", "Omission"),
        "EC_4_Early_Cause": ("time", "Early"),
        "EC_4_Late_Cause": ("time", "Late"),
        "EC_4_Same_Time_Cause": ("time", "Same time"),  # kept here, left out of Early-Late
    },
    "moral": {
        "instrumental": ("causal_role", "Means"),
        "accidental": ("causal_role", "Side effect"),
        "personal": ("personal_force", "Personal"),
        "impersonal": ("personal_force", "Impersonal"),
        "avoidable": ("evitability", "Avoidable"),
        "inevitable": ("evitability", "Inevitable"),
        "self beneficial": ("beneficence", "Self-beneficial"),
        "other beneficial": ("beneficence", "Other-beneficial"),
        # Table A1 calls these "Instrument of Harm" / "Patient of Harm"; the data tags say
        # "influence agent/patient" and the released code labels them "Agent/Patient of harm".
        "influence agent": ("locus_of_intervention", "Agent of harm"),
        "influence patient": ("locus_of_intervention", "Patient of harm"),
    },
}

FACTORS: dict[str, list[str]] = {
    task: list(dict.fromkeys(f for f, _ in tags.values())) for task, tags in TAGS.items()
}

# Tags the annotation files define but that are not factors of the AMCE analysis
# (story outcome valence, moral norms, "other" causal structures): ignored if present.
_IGNORED_TAGS = {"Outcome_5_negative", "Outcome_5_positive", "Outcome_5_neutral",
                 "Norm_3_Moral_Norm", "CS_1_Other_Structure"}


def data_dir() -> Path:
    """Folder of the bundled MoCa files."""
    return Path(str(resources.files("simsubjects") / "datasets" / "moca"))


def human_class(p) -> np.ndarray:
    """Yes (p > 0.6) / No (p < 0.4) / ambiguous (0.4 <= p <= 0.6), elementwise."""
    p = np.asarray(p, dtype=float)
    return np.where(p > 0.6, "Yes", np.where(p < 0.4, "No", "ambiguous"))


def read_stories(task: str, folder: str | Path | None = None) -> list[dict]:
    """The stories of one task as dicts (each list element is itself a JSON string)."""
    if task not in TASKS:
        raise UserError(f"task: expected one of {', '.join(TASKS)}, got {task!r}")
    path = Path(folder or data_dir()) / f"{task}_dataset_v1.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        stories = [json.loads(s) if isinstance(s, str) else s for s in raw]
    except FileNotFoundError:
        raise UserError(f"{path}: MoCa file not found") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not valid JSON ({e.msg})") from None
    need = {"story", "question", "annotated_sentences", "individual_votes"}
    for i, s in enumerate(stories):
        if not isinstance(s, dict) or not need <= s.keys():
            raise UserError(f"{path}: story {i} lacks one of {', '.join(sorted(need))}")
    return stories


def _check_tags(task: str, folder: Path) -> None:
    """Every tag we map must sit under the same factor in the authors' anno_utils file."""
    path = folder / f"{task}_dataset_anno_utils.json"
    if not path.exists():
        return
    category = json.loads(path.read_text(encoding="utf-8"))["seg_marking_to_prompt_category"]
    rename = {"beneficiary": "beneficence"}
    for tag, (factor, _) in TAGS[task].items():
        if rename.get(category.get(tag), category.get(tag)) != factor:
            raise UserError(f"{path}: tag {tag!r} is not under factor {factor!r}")


def _factor_row(task: str, story: dict, where: str) -> dict[str, object]:
    row: dict[str, object] = {f: None for f in FACTORS[task]}
    for sent in story["annotated_sentences"]:
        _, tag = sent["annotation"]
        if tag in _IGNORED_TAGS:
            continue
        if tag not in TAGS[task]:
            raise UserError(f"{where}: unknown annotation tag {tag!r}")
        factor, attr = TAGS[task][tag]
        if row[factor] not in (None, attr):
            raise UserError(f"{where}: factor {factor} tagged both {row[factor]} and {attr}")
        row[factor] = attr
    return row


def load_moca(task: str = "all", folder: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Human votes (tidy responses) and the item side table for `task` ("causal", "moral", "all")."""
    tasks = TASKS if task == "all" else (task,)
    if any(t not in TASKS for t in tasks):
        raise UserError(f"task: expected causal, moral or all, got {task!r}")
    folder = Path(folder or data_dir())
    resp_parts, item_rows = [], []
    for t in tasks:
        _check_tags(t, folder)
        for i, s in enumerate(read_stories(t, folder)):
            item = f"{t}-{i:03d}"
            votes = np.asarray(s["individual_votes"], dtype=bool)
            if votes.size == 0:
                raise UserError(f"{folder / f'{t}_dataset_v1.json'}: story {i} has no votes")
            p = float(votes.mean())
            item_rows.append({
                "item": item, "task": t, "index": i, "story": s["story"], "question": s["question"],
                "human_p_yes": p, "human_class": str(human_class(p)), "n_votes": int(votes.size),
                "transcribed_answer": s.get("transcribed_answer"),
                **_factor_row(t, s, f"{t}_dataset_v1.json story {i}"),
            })
            n = votes.size
            resp_parts.append(pd.DataFrame({
                "trial": [f"{item}-v{j:02d}" for j in range(n)],
                "item": item, "condition": t, "subject": [str(j) for j in range(n)],
                "response": np.where(votes, "Yes", "No"), "task": t,
            }))
    r = pd.concat(resp_parts, ignore_index=True)
    responses = pd.DataFrame({
        "study": "moca", "trial": r["trial"], "item": r["item"], "condition": r["condition"],
        "subject": r["subject"], "source": "human", "model": MODEL_NAME, "method": "observed",
        "response": r["response"], "weight": 1.0, "validity": 1.0, "task": r["task"], "persona": "",
    })
    items = pd.DataFrame(item_rows)
    return responses, items
