"""The moca study's --check-r piece: its analysis recomputed by its R twin (R/), compared number by number
(analyze/check_r.py: the R session and `compare`)."""

from __future__ import annotations

import numpy as np

from simsubjects.errors import UserError
from simsubjects.analyze.check_r import RSession, _tag, compare_fields
from .analysis import BY, CONTRASTS, SE_TYPES, amce_ols, outcomes


def check_moca(r: RSession, responses, items, tables, tol, tol_p) -> list[dict]:
    if items is None:
        raise UserError("check_r moca: needs the item table (items.parquet) for the story factors")
    data = outcomes(responses, items)
    out = []
    r_frames: dict = {}  # one R data frame per system x task, reused across factors and se types
    for se_type in SE_TYPES:
        py = amce_ols(data, se_type=se_type)
        for row in py.to_dict("records"):
            key = tuple(row[c] for c in BY) + (row["task"],)
            if key not in r_frames:
                mask = np.ones(len(data), dtype=bool)
                for c, v in zip(BY, key):
                    mask &= (data[c] == v).to_numpy()
                mask &= (data["task"] == row["task"]).to_numpy()
                facs = [f for f in CONTRASTS[row["task"]] if f in data.columns]
                r_frames[key] = r.to_r(data.loc[mask, ["y", "item", *facs]])
            rr = r("amce", r_frames[key], "y", row["factor"], "item", se_type=se_type,
                   levels=[row["level_a"], row["level_b"]], baseline=row["level_b"]).iloc[0]
            system = "/".join(str(row[c]) for c in BY)
            out += compare_fields(_tag("moca AMCE", system, row["task"], row["term"], se_type), row, rr, tol, tol_p)
    return out
