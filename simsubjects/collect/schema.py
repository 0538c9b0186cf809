"""The tidy responses table: one row per observation x response option, models and humans alike.

Every study writes these core columns, then its own design columns, whose labels its declaration
holds (`StudyDef.columns`). `labels(study)` feeds the codebook and the variable labels of .dta/.sav
exports.
"""

from __future__ import annotations

import pandas as pd

from .option_order import COLUMN_LABELS as OPTION_ORDER_LABELS
from simsubjects.errors import UserError

CORE_COLUMNS: dict[str, str] = {
    "study": "Registered study name (ultimatum, garden_path, wisdom, milgram, survey_bias, moca, ...)",
    "trial": "Identifier of one observation; all response rows of an observation share it",
    "item": "Stimulus identifier; joins the item side table (items.parquet)",
    "condition": "Experimental condition label",
    "subject": "Simulated or human participant (name, persona, respondent or vote id)",
    "source": "model or human",
    "model": "Model spec for model rows; reference data set for human rows",
    "method": "exact (log-probabilities), sampled (counted samples), generated (free text), observed (human data)",
    "response": "Response option",
    "weight": "Probability (exact), count (sampled/observed) or survey weight of this response",
    "validity": "Validity rate Z of the observation: mass on valid options (exact) or share of valid samples",
}

# Columns the collection machinery adds whatever the study; each study declares the labels of its
# own design columns (StudyDef.columns), read by labels().
COLLECTION_COLUMNS: dict[str, str] = {
    "n_samples": "Number of valid samples behind a sampled distribution",
    "n_queries": "Number of model queries made for the observation",
    "run": "Run folder of the row, when several runs are analyzed together",
    # columns every study file (simsubjects/studyfile, YAML) may write
    "response_type": "choice, estimate or free_text", "question": "Item text as shown (vignette filled in)",
    # the option order shown (built-ins and study files alike): collect/option_order.py's one table
    **OPTION_ORDER_LABELS,
    "repetition": "Repetition of the trial", "judge": "Model that classified the free-text answer",
    # collect --ablate (issue 39): the twin a row belongs to; "" or missing = the full prompt
    "ablation": "Ablation twin: instructions (removed), labels (neutral option labels), history; empty: full prompt",
}

# Columns a session (simsubjects/studyfile/session_run.py) writes beside the core ones: its StudyDef's
# declared columns (their codebook labels), and so names no item, variable, player, payoff rule or
# subjects-table column of a study file may take (studyfile/spec.RESERVED; issue 42).
SESSION_COLUMNS: dict[str, str] = {  # docs/studies.md, "Paths and rows"
    "round": "Round of the block (1, 2, ...)",
    "step": "Decision's number in its path (round rows: decisions so far)",
    "path": "Path of the subject (1..K; enumerated: the first leaf under the row)",
    "parent": "Trial id of the decision before (empty for the first)",
    "block": "Block of the session",
    "player": "Who decided: subject, or a model player's name",
    "drawn": "1 on the option the path went on with (enumerated: every option, 1)",
    "reach": "Model's probability of the path's history up to this row",
    "continued": "1 when another round followed, else 0",
    "question": "Question as shown (placeholders filled)",
    "block_order": "Order of the blocks on this path",
    "item_order": "Order of the block's items and players in this round",
    "payoff": "The subject's payoff of the round",
}


def labels(study: str | None = None) -> dict[str, str]:
    """Variable labels of a study's responses/items columns: core, collection and its declared design columns."""
    out = {**CORE_COLUMNS, **COLLECTION_COLUMNS}
    if study:
        from simsubjects.collect.studies.registry import studies  # lazy: imports collect.studies.registry, datasets

        decl = studies().get(study)
        if decl is not None:
            out.update(decl.columns)
    return out


def empty_responses(extra: list[str] | None = None) -> pd.DataFrame:
    return pd.DataFrame(columns=[*CORE_COLUMNS, *(extra or [])])


def check_responses(df: pd.DataFrame, where: str = "responses") -> pd.DataFrame:
    """Raise if a responses table lacks a core column; return it with core columns first."""
    missing = [c for c in CORE_COLUMNS if c not in df.columns]
    if missing:
        raise UserError(f"{where}: missing column(s) {', '.join(missing)}; expected the tidy schema of docs/schema.md")
    rest = [c for c in df.columns if c not in CORE_COLUMNS]
    return df[[*CORE_COLUMNS, *rest]]
