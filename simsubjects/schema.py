"""The tidy responses table: one row per observation x response option, models and humans alike.

Every study writes these core columns, then its own design columns (see each study's
`columns`). Labels here feed the codebook and the variable labels of .dta/.sav exports.
"""

from __future__ import annotations

import pandas as pd

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

# Labels of design columns shared by several studies; studies add their own.
DESIGN_COLUMNS: dict[str, str] = {
    "offer": "Offer to the responder in dollars (of $10)",
    "proposer": "Proposer's name",
    "responder": "Responder's name",
    "proposer_title": "Proposer's title (Mr./Ms.)",
    "responder_title": "Responder's title (Mr./Ms.)",
    "pairing": "Gender pairing proposer-responder (Mr-Ms = male proposer, female responder)",
    "pair": "Name-pair identifier",
    "n_samples": "Number of valid samples behind a sampled distribution",
    "n_queries": "Number of model queries made for the observation",
    # Garden path
    "sentence": "Sentence judged", "version": "gp (garden path) or control (comma)",
    "set": "published (Christianson et al. 2001) or novel (Aher et al. 2023)", "type": "OT or RAT verb",
    # Wisdom of Crowds
    "estimate": "Parsed integer estimate (missing when invalid)", "truth": "True answer",
    "completion": "Raw model completion",
    # Milgram
    "breakoff_level": "Last level at which the subject obeyed (0 none, 30 completed)",
    "cause": "terminated, prods exhausted, completed or max stages",
    "completed": "1 if the subject completed all levels", "censored": "1 if cut by --max-stages",
    "n_steps": "Steps simulated", "n_disobediences": "Disobedient steps",
    "judgment_validity": "Mean validity of the experimenter judgments", "rule": "Judgment-probability rule",
    "judgment": "termination or obedience", "level": "Shock level (1-30)", "step": "Step of the record",
    "attempt": "Attempt within the stage", "kind": "Kind of step", "decision": "Decision taken",
    "p_rule": "Probability used by the rule", "p_scored": "Unnormalized probability of the scored completion",
    "outcome": "Outcome of the judgment",
    # Survey bias and MoCa
    "key": "Question key", "bias": "Response bias", "perturbation": "Non-bias perturbation ('' for a bias pair)",
    "form": "original or modified question form", "num_options": "Number of answer options",
    "task": "causal or moral", "persona": "Persona slug ('' for none)", "template": "Prompt template",
    # Study files (docs/studies.md)
    "response_type": "choice, estimate or free_text", "question": "Item text as shown (vignette filled in)",
    "option_order": "Options in the order shown to this subject", "ordering": "Index of the option ordering",
    "repetition": "Repetition of the trial", "judge": "Model that classified the free-text answer",
}

LABELS = {**CORE_COLUMNS, **DESIGN_COLUMNS}


def empty_responses(extra: list[str] | None = None) -> pd.DataFrame:
    return pd.DataFrame(columns=[*CORE_COLUMNS, *(extra or [])])


def check_responses(df: pd.DataFrame, where: str = "responses") -> pd.DataFrame:
    """Raise if a responses table lacks a core column; return it with core columns first."""
    from .errors import UserError

    missing = [c for c in CORE_COLUMNS if c not in df.columns]
    if missing:
        raise UserError(f"{where}: missing column(s) {', '.join(missing)}; expected the tidy schema of docs/schema.md")
    rest = [c for c in df.columns if c not in CORE_COLUMNS]
    return df[[*CORE_COLUMNS, *rest]]
