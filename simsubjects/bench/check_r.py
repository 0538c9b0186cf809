"""`bench report --check-r`: the scorecard's effect sizes, significance and across-finding statistics
recomputed by the R twins (R/bench.R: effectsize, pwr, metafor) and compared, one row per number."""

from __future__ import annotations

import pandas as pd

from ..analyze.check_r import TOL, compare, r_session
from ..errors import UserError

R_PACKAGES = (("effectsize", "r-cran-effectsize"), ("pwr", "r-cran-pwr"), ("metafor", "r-cran-metafor"))
PER_FINDING = ("model_d", "original_d", "ratio_z", "sig_at_original_n")
TOL_POWER = 1e-9  # measured: pwr's pt() (AS 243) within 3.4e-13 of a 40-digit integral on the corpus; scipy 1e-16


def check_bench(card: pd.DataFrame, across: pd.DataFrame) -> pd.DataFrame:
    """Rows: statistic, python, r, abs_diff, tolerance, ok (analyze/check_r.py's columns)."""
    r = r_session()
    for pkg, deb in R_PACKAGES:
        if not r.ro.r(f'isTRUE(requireNamespace("{pkg}", quietly = TRUE))')[0]:
            raise UserError(f"--check-r: the R package {pkg} is missing; apt-get install {deb}")
    cols = [c for c in card.columns if c not in ("original_source", "replication_source", "citation", "title")]
    flat = card[cols].copy()
    flat["replication_supported"] = flat["replication_supported"].map(
        lambda v: "" if v is None or v != v else str(bool(v)))
    theirs = r("bench_effects", flat).set_index("finding")
    rows = []
    for _, row in card.iterrows():
        for col in PER_FINDING:
            tol = TOL_POWER if col == "sig_at_original_n" else TOL
            rows.append(compare(f"{row['finding']} {col}", row[col], theirs.loc[row["finding"], col], tol))
    ours = across[(across["split"] == "all") & (across["predictor"] == "model")]
    ours = ours.set_index(["statistic", "reference"])["estimate"]
    want = {"direction_share": "replication", "pearson_r": "replication", "lins_ccc": "replication",
            "disattenuated_r": "replication", "false_positive_rate": "replication", "pas": "original",
            "ecs": "original"}
    got = r("bench_across", flat).set_index("statistic")["estimate"]
    for stat, ref in want.items():
        rows.append(compare(f"across {stat}", ours.get((stat, ref)), got.get(stat), TOL))
    return pd.DataFrame(rows)
