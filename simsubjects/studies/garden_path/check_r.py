"""The garden_path study's --check-r piece: its analysis recomputed by its R twin (R/), compared number by number
(analyze/check_r.py: the R session and `compare`)."""

from __future__ import annotations


from simsubjects.analyze.check_r import RSession, _tag, compare, compare_fields, compare_worst
from . import analysis as gp


def check_garden_path(r: RSession, responses, items, tables, tol, tol_p) -> list[dict]:
    sent = gp.per_sentence(gp.ungrammatical_probs(responses))
    cols = [c for c in ("source", "model", "trial", "response", "weight", "validity", "item", "condition", "set",
                        "type") if c in responses.columns]
    rs = r("garden_path_sentences", responses[cols])
    key = ["model", "set", "type", "item"]
    m = sent.merge(rs, on=key, how="outer", suffixes=("", "_r"))
    out = [compare_worst(f"garden_path mean P(ungrammatical) of the {v} sentence that differs most, of {len(m)}",
                         m, v, tol) for v in ("garden_path", "control")]

    def subset(model, set_, type_):  # the Python tables add set "both" and type "all"
        g = rs[rs["model"] == model]
        g = g if set_ == "both" else g[g["set"] == set_]
        return g if type_ == "all" else g[g["type"] == type_]

    by_type = tables.get("by_type")
    by_type = gp.by_type(sent) if by_type is None else by_type
    for row in by_type.to_dict("records"):
        rr = r("one_sample_test", subset(row["model"], row["set"], row["type"])[row["version"]]).iloc[0]
        out += compare_fields(_tag("garden_path", row["model"], row["set"], row["type"], row["version"], "mean"),
                              {"estimate": row["mean_p_ungrammatical"], "std.error": row["std.error"]}, rr, tol, tol_p)
    tests = tables.get("paired_tests")
    tests = gp.paired_tests(sent) if tests is None else tests
    for (model, set_, type_), g in tests.groupby(["model", "set", "type"], sort=False):
        rt = r("garden_path_tests", subset(model, set_, type_)[["difference"]]).set_index("test")
        for row in g.to_dict("records"):
            if row["test"] not in rt.index:
                continue
            tag = _tag("garden_path", model, set_, type_, row["test"])
            out.append(compare(f"{tag} sentences GP > control", row["n_gp_greater"], rt.loc[row["test"], "n_gp_greater"], tol))
            out += compare_fields(tag, row, rt.loc[row["test"]], tol, tol_p,
                                  {"mean_difference": "estimate", "statistic": "statistic", "df": "df", "p.value": "p.value",
                                   "effect_size": "effect_size"})
    return out
