"""Ultimatum Game analyses (Aher et al. 2023, §4): acceptance by offer, gender pairing, name consistency."""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsubjects.analyze.methods.tests import kruskal_test, mean_se, welch_test
from simsubjects.analyze.tidy import prob_of
from simsubjects.analyze.methods.multiplicity import add_adjusted

PAIRINGS = ["Mr-Mr", "Mr-Ms", "Ms-Mr", "Ms-Ms"]


def accept_probs(responses: pd.DataFrame) -> pd.DataFrame:
    """One row per trial: normalized P(accept), validity Z and the design columns."""
    return prob_of(responses[responses["source"] == "model"], "accept",
                   keep=["model", "offer", "pairing", "pair", "proposer", "responder"])


def validity(p: pd.DataFrame) -> pd.DataFrame:
    overall = p.groupby("model").agg(validity=("validity", "mean"), n=("validity", "size")).reset_index()
    by_offer = p.groupby(["model", "offer"]).agg(validity=("validity", "mean"), n=("validity", "size")).reset_index()
    return pd.concat([overall.assign(offer="all"), by_offer.assign(offer=by_offer["offer"].astype(str))],
                     ignore_index=True)[["model", "offer", "validity", "n"]]


def acceptance_by_offer(p: pd.DataFrame) -> pd.DataFrame:
    rows = [{"model": m, "offer": o, **mean_se(g["p_accept"])} for (m, o), g in p.groupby(["model", "offer"])]
    return pd.DataFrame(rows)


def acceptance_by_pairing(p: pd.DataFrame) -> pd.DataFrame:
    rows = [{"model": m, "offer": o, "pairing": k, **mean_se(g["p_accept"])}
            for (m, o, k), g in p.groupby(["model", "offer", "pairing"])]
    return pd.DataFrame(rows)


def pair_means(g: pd.DataFrame) -> pd.DataFrame:
    """One row per name pair: its mean P(accept) over the trials given (one offer, or all offers). The name
    pair is the unit of the pairing tests: a pair's answers at 11 offers are not 11 independent observations
    (issue 25, audit: the pooled test counted 5 pairs x 11 offers as 55)."""
    return g.groupby(["pairing", "pair"], as_index=False, sort=True)["p_accept"].mean()


def pairing_tests(p: pd.DataFrame) -> pd.DataFrame:
    """Per offer and pooled: Kruskal-Wallis across the four pairings, and Welch Mr-Ms vs Ms-Mr (Figure 5b),
    on one value per name pair (pair_means; pooled: its mean over the offers)."""
    out = []
    for m, gm in p.groupby("model"):
        for offer, g in [("all", gm), *((str(o), go) for o, go in gm.groupby("offer"))]:
            g = pair_means(g)
            groups = {k: g.loc[g["pairing"] == k, "p_accept"].to_numpy() for k in PAIRINGS}
            groups = {k: v for k, v in groups.items() if len(v)}
            if len(groups) >= 2 and sum(len(v) for v in groups.values()) > len(groups):
                out.append(kruskal_test(groups).assign(model=m, offer=offer, comparison="4 pairings"))
            if len(groups.get("Mr-Ms", [])) > 1 and len(groups.get("Ms-Mr", [])) > 1:
                out.append(welch_test(groups["Mr-Ms"], groups["Ms-Mr"]).assign(
                    model=m, offer=offer, comparison="Mr-Ms minus Ms-Mr"))
    if not out:
        return pd.DataFrame(columns=["model", "offer", "comparison", "test", "statistic", "df", "p.value"])
    df = pd.concat(out, ignore_index=True).assign(unit="name pair")
    first = ["model", "offer", "comparison", "test", "statistic", "df", "p.value"]
    return df[first + [c for c in df.columns if c not in first]]


def offer_correlations(p: pd.DataFrame) -> pd.DataFrame:
    """Pearson r between offers of name-pair acceptance (Figure 4b), long format."""
    out = []
    for m, g in p.groupby("model"):
        wide = g.pivot_table(index="pair", columns="offer", values="p_accept")
        r = wide.corr(method="pearson").rename_axis(index="offer_a", columns="offer_b")
        long = r.stack(future_stack=True).rename("r").reset_index()
        out.append(long.assign(model=m, n_pairs=len(wide)))
    return pd.concat(out, ignore_index=True)[["model", "offer_a", "offer_b", "r", "n_pairs"]]


def analyze_ultimatum(responses: pd.DataFrame, items: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    p = accept_probs(responses)
    return {
        "validity": validity(p),
        "acceptance_by_offer": acceptance_by_offer(p),
        "acceptance_by_pairing": acceptance_by_pairing(p),
        "pairing_tests": add_adjusted(pairing_tests(p), by=["model", "comparison"]),  # Holm/BH across offers
        "offer_correlations": offer_correlations(p),
    }


def plot_ultimatum(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir) -> list:
    """Figures 4a, 4b and 5 of the paper as PNG files; returns their paths."""
    import matplotlib  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    paths = []
    by_offer = tables["acceptance_by_offer"]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for m, g in by_offer.groupby("model"):
        ax.errorbar(g["offer"], g["mean"], yerr=1.96 * g["std.error"].fillna(0), marker="o", capsize=3, label=m)
    ax.set(xlabel=r"Offer (\$ of \$10)", ylabel="Mean P(accept)", ylim=(-0.02, 1.02), xticks=range(11),
           title="Acceptance by offer (cf. Figure 4a)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(outdir / "fig4a_acceptance_by_offer.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    corr = tables["offer_correlations"]
    for m, g in corr.groupby("model"):
        mat = g.pivot(index="offer_a", columns="offer_b", values="r")
        fig, ax = plt.subplots(figsize=(5.5, 4.6))
        im = ax.imshow(mat.to_numpy(), vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set(xticks=range(len(mat)), yticks=range(len(mat)), xticklabels=mat.columns, yticklabels=mat.index,
               xlabel=r"Offer (\$)", ylabel="Offer ($)", title=f"Name-pair correlation across offers\n{m} (cf. Figure 4b)")
        for i in range(len(mat)):
            for j in range(len(mat)):
                v = mat.iat[i, j]
                if np.isfinite(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6)
        fig.colorbar(im, ax=ax, label="Pearson r")
        fig.tight_layout()
        paths.append(outdir / f"fig4b_offer_correlations{'' if corr['model'].nunique() == 1 else '_' + _slug(m)}.png")
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)

    pair = tables["acceptance_by_pairing"]
    p = accept_probs(responses)
    for m, g in pair.groupby("model"):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
        for k, gk in g.groupby("pairing"):
            a1.errorbar(gk["offer"], gk["mean"], yerr=1.96 * gk["std.error"].fillna(0), marker="o", capsize=2, label=k)
        a1.set(xlabel=r"Offer (\$)", ylabel="Mean P(accept)", ylim=(-0.02, 1.02), xticks=range(11),
               title="By gender pairing (proposer-responder)")
        a1.legend(fontsize=8)
        pm = p[(p["model"] == m) & (p["offer"] == 2)]
        for k in ("Mr-Ms", "Ms-Mr"):
            a2.hist(pm.loc[pm["pairing"] == k, "p_accept"], bins=20, range=(0, 1), alpha=0.6, label=k)
        a2.set(xlabel=r"P(accept) of a \$2 offer", ylabel="Name pairs", title=r"Mr-Ms vs Ms-Mr at \$2 (cf. Figure 5b)")
        a2.legend(fontsize=8)
        fig.suptitle(m, fontsize=9)
        fig.tight_layout()
        paths.append(outdir / f"fig5_gender_pairing{'' if pair['model'].nunique() == 1 else '_' + _slug(m)}.png")
        fig.savefig(paths[-1], dpi=120)
        plt.close(fig)
    return paths


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s)


def summary(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Terminal-sized views: offers down, pairings across."""
    pair = tables["acceptance_by_pairing"].pivot_table(index=["model", "offer"], columns="pairing", values="mean")
    by_offer = tables["acceptance_by_offer"].set_index(["model", "offer"])[["mean", "std.error", "n"]]
    v = tables["validity"].query("offer != 'all'").set_index(["model", "offer"])["validity"]
    v.index = v.index.set_levels(v.index.levels[1].astype(int), level=1)
    wide = by_offer.rename(columns={"mean": "P(accept)"}).join(v).join(pair).reset_index()
    corr = tables["offer_correlations"]
    off = corr[corr["offer_a"] < corr["offer_b"]]
    tests = tables["pairing_tests"]
    return {
        "acceptance by offer (mean P(accept), SE, validity, by gender pairing)": wide,
        "gender pairing tests": tests[tests["offer"].isin(["all", "2", "8"])][
            ["model", "offer", "comparison", "test", "statistic", "df", "p.value"]],
        "validity": tables["validity"].query("offer == 'all'"),
        "name-pair consistency (Figure 4b)": off.groupby("model")["r"].agg(
            mean_r="mean", min_r="min", max_r="max").reset_index(),
    }
