"""The wisdom study's --check-r piece: its analysis recomputed by its R twin (R/), compared number by number
(analyze/check_r.py: the R session and `compare`)."""

from __future__ import annotations


from simsubjects.analyze.check_r import RSession, _tag, compare
from .design import questions
from .analysis import estimates, per_question


def check_wisdom(r: RSession, responses, items, tables, tol, tol_p) -> list[dict]:
    pq = tables.get("per_question")
    pq = per_question(responses) if pq is None else pq
    d = estimates(responses)[["model", "item", "estimate"]]
    rw = r("wisdom_questions", d, questions()[["item", "truth"]])
    m = pq.merge(rw, on=["model", "item"], how="outer", suffixes=("", "_r"))
    out = []
    for row in m.to_dict("records"):
        for f in ("n_valid", "median", "q1", "q3", "iqr", "median_norm", "share_exact"):
            out.append(compare(_tag("wisdom", row["model"], row["item"], f), row[f], row[f"{f}_r"], tol))
    return out
