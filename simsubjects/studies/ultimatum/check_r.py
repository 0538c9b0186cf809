"""The ultimatum study's --check-r piece: its analysis recomputed by its R twin (R/), compared number by number
(analyze/check_r.py: the R session and `compare`)."""

from __future__ import annotations


from simsubjects.analyze.check_r import FIELDS, RSession, _tag, compare, compare_fields, compare_worst
from .analysis import PAIRINGS, accept_probs, acceptance_by_offer, offer_correlations, pair_means, pairing_tests


def check_ultimatum(r: RSession, responses, items, tables, tol, tol_p) -> list[dict]:
    p = accept_probs(responses)
    tables = tables or {}
    by_offer = tables.get("acceptance_by_offer")
    by_offer = acceptance_by_offer(p) if by_offer is None else by_offer
    tests = tables.get("pairing_tests")
    tests = pairing_tests(p) if tests is None else tests
    corr = tables.get("offer_correlations")
    corr = offer_correlations(p) if corr is None else corr

    cols = [c for c in ("source", "model", "trial", "response", "weight", "validity", "offer", "pairing", "pair")
            if c in responses.columns]
    rp = r("prob_of", responses.loc[responses["source"] == "model", cols], "accept",
           keep=["model", "offer", "pairing", "pair"])
    rp["offer"] = rp["offer"].astype(float)
    key = ["source", "model", "trial"]
    both = p.merge(rp[[*key, "p_accept"]], on=key, suffixes=("", "_r"), how="outer")
    out = [compare_worst(f"ultimatum P(accept) of the trial that differs most, of {len(both)} trials", both,
                         "p_accept", tol)]

    for row in by_offer.to_dict("records"):
        x = rp.loc[(rp["model"] == row["model"]) & (rp["offer"] == float(row["offer"])), "p_accept"]
        rr = r("one_sample_test", x).iloc[0]
        out += compare_fields(_tag("ultimatum", row["model"], f"offer {row['offer']}", "mean P(accept)"),
                              {"estimate": row["mean"], "std.error": row["std.error"]}, rr, tol, tol_p)

    for row in tests.to_dict("records"):
        sub = rp[rp["model"] == row["model"]]
        if row["offer"] != "all":
            sub = sub[sub["offer"] == float(row["offer"])]
        sub = pair_means(sub)  # the name pair is the unit (R's P(accept) per trial, averaged per pair)
        tag = _tag("ultimatum", row["model"], f"offer {row['offer']}", row["comparison"])
        if row["test"].startswith("Welch"):
            rr = r("welch_test", sub.loc[sub["pairing"] == "Mr-Ms", "p_accept"],
                   sub.loc[sub["pairing"] == "Ms-Mr", "p_accept"]).iloc[0]
            out += compare_fields(tag + " Welch", row, rr, tol, tol_p, {**FIELDS, "effect_size": "effect_size"})
        elif row["test"].startswith("Kruskal"):
            sub = sub[sub["pairing"].isin(PAIRINGS)]
            rr = r.to_py(r.kruskal(r.vector(sub["p_accept"].to_numpy(float)), r.vector(sub["pairing"].tolist()))).iloc[0]
            out += compare_fields(tag + " Kruskal-Wallis", row, rr, tol, tol_p,
                                  {"statistic": "statistic", "df": "df", "p.value": "p.value"})

    for model, g in corr.groupby("model", sort=False):
        sub = rp[rp["model"] == model]
        rc = r.to_py(r.cor_offers(r.vector(sub["p_accept"].to_numpy(float)), r.vector(sub["pair"].tolist()),
                                  r.vector(sub["offer"].to_numpy(float))))
        m = g.assign(offer_a=g["offer_a"].astype(float), offer_b=g["offer_b"].astype(float)).merge(
            rc, on=["offer_a", "offer_b"], how="outer", suffixes=("", "_r"))
        for row in m[~(m["offer_a"] >= m["offer_b"])].itertuples(index=False):  # each pair once
            out.append(compare(_tag("ultimatum", model, f"offers {row.offer_a:g}-{row.offer_b:g}", "Pearson r"),
                               row.r, row.r_r, tol))
    return out
