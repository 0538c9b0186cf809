"""The milgram study's --check-r piece: its analysis recomputed by its R twin (R/), compared number by number
(analyze/check_r.py: the R session and `compare`)."""

from __future__ import annotations


from simsubjects.analyze.check_r import RSession, _tag, compare, compare_fields
from . import analysis as mg


def check_milgram(r: RSession, responses, items, tables, tol, tol_p) -> list[dict]:
    b = mg.breakoffs(responses)
    sv = tables.get("survival")
    sv = mg.survival(b) if sv is None else sv
    tests = tables.get("tests")
    tests = mg.tests(b) if tests is None else tests
    rs = r("milgram_survival", b.rename(columns={"breakoff_level": "level"})[["model", "level", "censored"]],
           max_level=mg.LEVELS, by=["model"])
    m = sv.assign(level=sv["level"].astype(float)).merge(rs, on=["model", "level"], how="left")
    out = []
    for row in m.to_dict("records"):
        tag = _tag("milgram survival", row["model"], f"level {row['level']:g}")
        out.append(compare(f"{tag} share obeying", row["share_obeying"], row["estimate"], tol))
        out.append(compare(f"{tag} at risk", row["at_risk"], row["n.risk"], tol))
        out.append(compare(f"{tag} refusals", row["events"], row["n.event"], tol))
    # R's logrank is the Mantel-Cox test; the permutation row (small groups) has no df and its own p
    for row in tests[tests["test"].str.startswith("Log-rank (Mantel-Cox)")].to_dict("records"):
        g = b[b["model"].isin([row["model"], mg.HUMAN])]
        rr = r.to_py(r.logrank(r.vector(g["breakoff_level"].to_numpy(float)), r.vector(g["censored"].to_numpy(float)),
                               r.vector((g["model"] == row["model"]).map({True: "model", False: "human"}).tolist()),
                               r.vector(float(mg.LEVELS)))).iloc[0]
        out += compare_fields(_tag("milgram", row["comparison"], "log-rank"), row, rr, tol, tol_p,
                              {"statistic": "statistic", "df": "df", "p.value": "p.value"})
    return out
