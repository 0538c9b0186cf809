"""The survey_bias study's --check-r piece: its analysis recomputed by its R twin (R/), compared number by number
(analyze/check_r.py: the R session and `compare`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from simsubjects.errors import UserError
from simsubjects.analyze.check_r import FIELDS, RSession, _tag, compare, compare_fields
from simsubjects.analyze.methods import representativeness as rep
from .analysis import delta_tests, question_deltas


def check_survey_bias(r: RSession, responses, items, tables, tol, tol_p) -> list[dict]:
    tables = tables or {}
    deltas = tables.get("deltas")
    deltas = question_deltas(responses, items) if deltas is None else deltas
    if "bias_tests" in tables and "perturbation_tests" in tables:
        tests = pd.concat([tables["bias_tests"], tables["perturbation_tests"]], ignore_index=True)
    else:
        tests = delta_tests(deltas)

    design = ["key", "bias", "perturbation", "form"]
    cols = [c for c in ("study", "source", "model", "trial", "item", "response", "weight", *design)
            if c in responses.columns]
    r_items = None
    if any(c not in responses.columns for c in design):
        if items is None:
            raise UserError("check_r survey_bias: responses lack key/bias/perturbation/form; pass the item table")
        r_items = items[["item", *[c for c in design if c in items.columns]]]
    rd = r("delta_bias", responses[cols], r_items) if r_items is not None else r("delta_bias", responses[cols])
    qkey = ["model", "bias", "perturbation", "key"]
    for c in qkey:
        rd[c] = rd[c].fillna("").astype(str)
    py = deltas.assign(**{c: deltas[c].fillna("").astype(str) for c in qkey})
    m = py.merge(rd, on=qkey, how="outer", suffixes=("", "_r"), indicator=True)
    out = [compare("survey_bias questions with a delta in only one of Python and R", 0,
                   int((m["_merge"] != "both").sum()), 0)]
    for row in m[m["_merge"] == "both"].to_dict("records"):
        tag = _tag("survey_bias", row["model"], row["bias"], row["perturbation"] or "bias", row["key"])
        out.append(compare(f"{tag} delta", row["delta"], row["estimate"], tol))
        out.append(compare(f"{tag} pct_first", row["pct_first"], row["pct_first_r"], tol))
        out.append(compare(f"{tag} pct_second", row["pct_second"], row["pct_second_r"], tol))

    rt = r("delta_tests", rd)
    rt["kind"] = np.where(rt["method"].str.startswith("Welch"), "welch", "one")
    tkey = ["model", "bias", "perturbation"]
    for c in tkey:
        rt[c] = rt[c].fillna("").astype(str)
    tests = tests.assign(**{c: tests[c].fillna("").astype(str) for c in tkey})
    for row in tests.to_dict("records"):
        kind = "welch" if str(row["test"]).startswith("Welch") else "one"
        sel = rt[(rt["kind"] == kind) & np.logical_and.reduce([rt[c] == row[c] for c in tkey])]
        tag = _tag("survey_bias", row["model"], row["bias"], row["perturbation"] or "bias",
                   "Welch t-test" if kind == "welch" else "one-sample t-test")
        if sel.empty:
            out.append(compare(f"{tag} (missing in R)", 0, math.nan, 0))
            continue
        out += compare_fields(tag, row, sel.iloc[0], tol, tol_p, {**FIELDS, "effect_size": "effect_size"})

    out += _check_representativeness(r, rep, responses, items, tol)
    return out


def _check_representativeness(r: RSession, rep, responses, items, tol) -> list[dict]:
    """Per-question distance and Rep, when human ordinal rows and option positions are at hand."""
    if "source" not in responses.columns or "position" not in responses.columns or items is None:
        return []
    human = responses[responses["source"] == "human"]
    need = {"labels", "positions", "refusal", "form", "perturbation", "key", "bias"}
    if human.empty or not need <= set(items.columns):
        return []
    model = rep.model_distribution(responses[responses["source"] != "human"], items)
    hcols = [c for c in ("model", "key", "position", "weight", "refusal", "attribute", "group") if c in human.columns]
    hdist = human[hcols]
    groups = [None]
    if "attribute" in hdist.columns and hdist["attribute"].nunique() > 1:
        groups.append(["attribute", "group"])
    out = []
    mcols = ["model", "key", "position", "weight", "refusal"]
    # the model's exact distributions list every option of a question: their positions are its span
    opts = model[["key", "position", "refusal"]].drop_duplicates()
    for by in groups:
        kw = {} if by is None else {"by": by}
        pq = rep.wasserstein_by_question(model, hdist, options=opts, **kw)
        rq = r("wasserstein_by_question", model[mcols], hdist, **kw)
        keys = ["model", *(by or []), "key"]
        mq = pq.merge(rq, on=keys, how="outer", suffixes=("", "_r"))
        for row in mq.to_dict("records"):
            out.append(compare(_tag("survey_bias representativeness", *[row[k] for k in keys], "W1/span"),
                               row["distance"], row["distance_r"], tol))
        prep = rep.representativeness(model, hdist, options=opts, **kw)
        rrep = r("representativeness", model[mcols], hdist, **kw)
        mr = prep.merge(rrep, on=["model", *(by or [])], how="outer", suffixes=("", "_r"))
        for row in mr.to_dict("records"):
            tag = _tag("survey_bias representativeness", row["model"], *[row[k] for k in (by or [])])
            out += compare_fields(tag, {k: row.get(k) for k in ("estimate", "std.error", "conf.low", "conf.high")},
                                  {k: row.get(f"{k}_r") for k in ("estimate", "std.error", "conf.low", "conf.high")},
                                  tol, tol)
    return out
