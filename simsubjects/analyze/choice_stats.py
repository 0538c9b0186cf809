"""Per-trial statistics of k-choice answers (moved out of collect/: collection gathers, analysis computes).

`p_yes`: MoCa's P(Yes) per trial (Nie et al. 2023, Appendix A.3).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import UserError
from .tidy import trial_key

NOT_SURE_VALUE = 0.5  # Appendix A.3: "not sure" counts as P = 0.5 for either answer


def _label_kind(response: pd.Series) -> pd.Series:
    r = response.astype(str).str.strip().str.lower().str.rstrip(".")
    return r.map({"yes": "yes", "no": "no", "not sure": "unsure"})


def p_yes(responses: pd.DataFrame) -> pd.DataFrame:
    """P(Yes) per trial from exact, sampled, generated or observed rows.

    exact: weight(Yes) / (weight(Yes) + weight(No)). Counted rows (sampled, generated,
    observed): (n_Yes + 0.5 n_not_sure) / (n_Yes + n_No + n_not_sure). Responses other than
    Yes / No / not sure are not counted. Returns one row per trial with the trial's ids and
    design columns, `p_yes`, `n` (counted weight) and `method`.
    """
    need = {"trial", "item", "source", "model", "method", "response", "weight"}
    if not need <= set(responses.columns):
        raise UserError(f"responses: missing column(s) {', '.join(sorted(need - set(responses.columns)))}")

    key = trial_key(responses)  # trial ids are unique within a run, not across models or stacked runs
    df = responses.assign(_kind=_label_kind(responses["response"]), _w=responses["weight"].astype(float))
    df = df[df["_kind"].notna()]
    wide = df.pivot_table(index=key, columns="_kind", values="_w", aggfunc="sum", fill_value=0.0)
    for k in ("yes", "no", "unsure"):
        if k not in wide:
            wide[k] = 0.0
    total = wide["yes"] + wide["no"] + wide["unsure"]
    with np.errstate(invalid="ignore", divide="ignore"):
        p = (wide["yes"] + NOT_SURE_VALUE * wide["unsure"]) / total
    keep = [c for c in ("study", "item", "condition", "subject", "method", "validity", "task", "persona",
                        "template") if c in responses.columns]
    first = responses[[*key, *keep]].drop_duplicates(key).set_index(key)
    out = first.join(pd.DataFrame({"p_yes": p, "n": total}), how="left").reset_index()
    for c, default in (("persona", ""), ("template", "")):
        if c not in out:
            out[c] = default
        out[c] = out[c].fillna(default)
    return out


# ---------------------------------------------------------------------------------------------
# Declaration: `simsubjects collect moca`
# ---------------------------------------------------------------------------------------------
