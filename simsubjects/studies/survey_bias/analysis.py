"""Response-bias analysis of Tjuatja et al. (2024): Δb/Δp per question, t-tests, uncertainty, Figure 2.

Input: tidy responses (docs/schema.md) of the survey_bias study, with the design columns
key, bias, perturbation, form (or an item table to join them from on ``item``). ``response`` holds
the answer labels ("A", "B", ...; lower case is accepted); weights are counts (sampled) or
probabilities (exact), pooled over the trials of a question form.

Δ per question follows the released analysis (``analysis/utils.py`` of
github.com/lindiatjuatja/BiasMonkey), which produced the paper's Table 4:

    Δ = 100 * share(first form, first options) - 100 * share(second form, second options)

(share = count / samples of that form, i.e. count / 50 * 100 in the release; blank answers in the
released files are samples that match no option, so they stay in the 50)

| bias | first: form [options] | second: form [options] | Table 2 as printed |
| --- | --- | --- | --- |
| acquiescence | modified [A] | original [A] | q'[a] - q[a] |
| allow_forbid | original [B] | modified [A] (perturbation pairs: [B]) | q[b] - q'[a] |
| response_order | original [A] | modified [A] (answers mapped back to the original order) | printed q'[d] - q[a]: opposite sign |
| opinion_float | original [C] | modified [C] | q[c] - q'[c] |
| odd_even | modified [B, D] | original [B, D] (original = scale with a middle) | q'[b]+q'[d] - q[b] - q[d] |

Response order: Table 2 prints the reversed form's count of the original first option minus the
original form's, but Table 4 (and the released code) uses original minus reversed; we follow
Table 4. Allow/forbid: the released analysis drops 8 questions (``ALLOW_FORBID_EXCLUDE``) from the
bias and the perturbation pairs, and compares option B of the original with option A of the
forbid form (the "No, do not allow" answers), but option B with option B in perturbation pairs
(there the second form is the perturbed original). Perturbation pairs use their bias's rule with
first/second forms unchanged (the perturbed question is the modified form). The opinion-float Δp
of the paper are the odd/even perturbation pairs analysed with the odd/even rule (Table 4 prints the
same Δp for both rows); ``pairs_from`` says where a row's pairs came from.

Tests across questions: the paper's one-sample Student t-test of mean Δ against 0, and beside it a
Welch two-sample t-test of the per-question percentages of the first vs the second form.

Uncertainty: normalized entropy H / ln(number of options of the form) of each question form, and
Pearson's r between a form's entropy and |Δb| across questions. The released code used the entropy
of the *second* form above (the original form for acquiescence and odd/even, but the reversed,
forbid and "Don't know" forms for response order, allow/forbid and opinion float); both forms are
reported and ``paper_convention`` marks the one behind Table 4's r.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simsubjects.errors import UserError
from simsubjects.analyze.methods.tests import one_sample_t, pearson_r, welch_test  # noqa: F401 - pearson_r re-exported
from simsubjects.analyze.methods.multiplicity import add_adjusted, add_adjusted_wide

BIAS_ORDER = ("acquiescence", "allow_forbid", "response_order", "opinion_float", "odd_even")
PERTURBATION_ORDER = ("key_typo", "middle_random", "letter_swap")
BIAS_LABELS = {"acquiescence": "Acquiescence", "allow_forbid": "Allow/forbid", "response_order": "Response Order",
               "opinion_float": "Opinion Float", "odd_even": "Odd/even"}
SETTING_LABELS = {"bias": "bias", "key_typo": "key typo", "middle_random": "middle random", "letter_swap": "letter swap"}

ALLOW_FORBID_EXCLUDE = ("GAP21Q46_W82", "RACESURV15b_W43", "DRONE4D_W27", "ABORTIONALLOW_W32", "INEQ10_W54",
                        "INEQ11_W54", "POLICY1_W42", "GOVT_ROLE_W32")


@dataclass(frozen=True)
class DeltaRule:
    """Δ = pct(first_form, first_options) - pct(second_form, second_options)."""

    first_form: str
    first_options: tuple[str, ...]
    second_form: str
    second_options: tuple[str, ...]


BIAS_RULES: dict[str, DeltaRule] = {
    "acquiescence": DeltaRule("modified", ("A",), "original", ("A",)),
    "allow_forbid": DeltaRule("original", ("B",), "modified", ("A",)),
    "response_order": DeltaRule("original", ("A",), "modified", ("A",)),
    "opinion_float": DeltaRule("original", ("C",), "modified", ("C",)),
    "odd_even": DeltaRule("modified", ("B", "D"), "original", ("B", "D")),
}
PERTURBATION_RULES: dict[str, DeltaRule] = {**BIAS_RULES, "allow_forbid": DeltaRule("original", ("B",), "modified", ("B",))}

GROUP = ["model", "bias", "perturbation"]
DESIGN = ["key", "bias", "perturbation", "form"]


def rule_for(bias: str, perturbation: str) -> DeltaRule:
    if bias not in BIAS_RULES:
        raise UserError(f"unknown bias {bias!r}; use one of {', '.join(BIAS_ORDER)}")
    return PERTURBATION_RULES[bias] if perturbation else BIAS_RULES[bias]


def _prepare(responses: pd.DataFrame, items: pd.DataFrame | None) -> pd.DataFrame:
    """Responses with design columns (joined from items if needed), upper-case labels, model set."""
    for col in ("item", "response", "weight"):
        if col not in responses.columns:
            raise UserError(f"responses: missing column {col!r}; expected the tidy schema of docs/schema.md")
    df = responses.copy()
    missing = [c for c in [*DESIGN, "num_options"] if c not in df.columns]
    if missing:
        if items is None:
            raise UserError(f"responses: missing column(s) {', '.join(missing)}; pass the item table (items.parquet)")
        have = [c for c in missing if c in items.columns]
        df = df.merge(items[["item", *have]].drop_duplicates("item"), on="item", how="left", validate="many_to_one")
        lost = df[[c for c in DESIGN if c in have]].isna().any(axis=1)
        if "source" in df.columns:
            lost &= df["source"].astype(str) != "human"  # human reference rows belong to no pair
        if lost.any():
            raise UserError(f"responses: item {df.loc[lost, 'item'].iloc[0]!r} is not in the item table")
    still = [c for c in DESIGN if c not in df.columns]
    if still:
        raise UserError(f"responses: missing column(s) {', '.join(still)} and the item table does not have them")
    if "model" not in df.columns:
        df["model"] = ""
    if "study" in df.columns:
        df = df[df["study"].astype(str) == "survey_bias"]
    # only rows of question pairs (human ATP rows of the same study carry no bias/form)
    df = df[df["bias"].notna() & df["form"].notna() & (df["bias"].astype(str) != "")]
    df["perturbation"] = df["perturbation"].fillna("").astype(str)
    df["response"] = df["response"].astype(str).str.strip().str.upper()
    df["weight"] = pd.to_numeric(df["weight"], errors="coerce")
    if df["weight"].isna().any():
        raise UserError("responses: column 'weight' has missing or non-numeric values")
    bad = sorted(set(df["bias"]) - set(BIAS_RULES))
    if bad:
        raise UserError(f"responses: unknown bias value(s) {bad}; use {', '.join(BIAS_ORDER)}")
    bad = sorted(set(df["form"]) - {"original", "modified"})
    if bad:
        raise UserError(f"responses: column 'form' has {bad}; use original or modified")
    return df


def form_distributions(responses: pd.DataFrame, items: pd.DataFrame | None = None) -> pd.DataFrame:
    """Answer distribution of each question form: weights pooled over its trials.

    Columns: model, bias, perturbation, key, form, response, weight, share, n (total weight:
    the number of samples for sampled rows, the number of trials for exact ones).
    """
    df = _prepare(responses, items)
    keys = [*GROUP, "key", "form"]
    out = df.groupby([*keys, "response"], sort=False, as_index=False)["weight"].sum()
    out["n"] = out.groupby(keys, sort=False)["weight"].transform("sum")
    out["share"] = out["weight"] / out["n"]
    nopt = df.groupby(keys, sort=False)["num_options"].max().rename("num_options") if "num_options" in df.columns else None
    if nopt is not None:
        out = out.merge(nopt.reset_index(), on=keys, how="left")
    return out


def _pct(dist: pd.DataFrame, form: str, options: tuple[str, ...]) -> pd.DataFrame:
    d = dist[dist["form"] == form]
    hit = d[d["response"].isin(options)].groupby([*GROUP, "key"], sort=False)["weight"].sum()
    tot = d.groupby([*GROUP, "key"], sort=False)["n"].first()
    return pd.DataFrame({"pct": 100 * hit.reindex(tot.index, fill_value=0.0) / tot, "n": tot})


def question_deltas(responses: pd.DataFrame, items: pd.DataFrame | None = None,
                    exclude: tuple[str, ...] = ALLOW_FORBID_EXCLUDE) -> pd.DataFrame:
    """Δb (bias pairs) and Δp (perturbation pairs) per question, in percentage points.

    Columns: model, bias, perturbation, key, delta, pct_first, pct_second, first, second
    ("form[options]"), n_first, n_second, pairs_from. `exclude` lists allow/forbid keys left out
    (the release's 8). A question with a form missing gets delta NaN.
    """
    dist = form_distributions(responses, items)
    dist = dist[~((dist["bias"] == "allow_forbid") & dist["key"].isin(exclude))]
    frames = []
    for (bias, pert), d in dist.groupby(["bias", "perturbation"], sort=False):
        rule = rule_for(bias, pert)
        a = _pct(d, rule.first_form, rule.first_options)
        b = _pct(d, rule.second_form, rule.second_options)
        m = a.add_suffix("_first").join(b.add_suffix("_second"), how="outer").reset_index()
        m["delta"] = m["pct_first"] - m["pct_second"]
        m["first"] = f"{rule.first_form}[{','.join(rule.first_options)}]"
        m["second"] = f"{rule.second_form}[{','.join(rule.second_options)}]"
        m["pairs_from"] = bias
        frames.append(m)
    if not frames:
        raise UserError("responses: no survey_bias rows to analyse")
    out = pd.concat(frames, ignore_index=True)
    # the paper's opinion-float Δp are the odd/even perturbation pairs (same questions, odd/even rule)
    have = set(map(tuple, out.loc[out["bias"] == "opinion_float", ["model", "perturbation"]].to_numpy()))
    borrowed = out[(out["bias"] == "odd_even") & (out["perturbation"] != "")]
    borrowed = borrowed[[(m, p) not in have for m, p in zip(borrowed["model"], borrowed["perturbation"])]]
    if len(borrowed):
        out = pd.concat([out, borrowed.assign(bias="opinion_float", pairs_from="odd_even")], ignore_index=True)
    cols = ["model", "bias", "perturbation", "key", "delta", "pct_first", "pct_second", "first", "second",
            "n_first", "n_second", "pairs_from"]
    return _order(out[cols])


def _order(df: pd.DataFrame) -> pd.DataFrame:
    b = df["bias"].map({x: i for i, x in enumerate(BIAS_ORDER)})
    p = df["perturbation"].map({"": 0, **{x: i + 1 for i, x in enumerate(PERTURBATION_ORDER)}}).fillna(9)
    return df.assign(_b=b, _p=p).sort_values(["model", "_b", "_p"], kind="stable").drop(columns=["_b", "_p"]).reset_index(drop=True)


def _with_d(row: dict, difference: float, sd: float, kind: str) -> dict:
    """A test row with its standardized effect size (`difference` / `sd`), NaN where it has no test."""
    d = difference / sd if math.isfinite(row.get("statistic", math.nan)) and sd > 0 else math.nan
    return {**row, "effect_size": d, "effect_size_type": kind}


def delta_tests(deltas: pd.DataFrame) -> pd.DataFrame:
    """Per (model, bias, perturbation): one-sample t of mean Δ vs 0, and Welch of first vs second form.

    Columns: model, bias, perturbation, setting, test, estimate, std.error, statistic, df, p.value,
    conf.low, conf.high, n, effect_size, effect_size_type, pairs_from. n counts the values behind the
    estimate (docs/conventions.md): the questions for the one-sample test of the deltas, both forms' values
    (2 x questions) for Welch's. The effect sizes are the study file's (studyfile one_sample and welch):
    Cohen's d = mean delta / sd of the deltas, and Lakens' (2013, eq. 10) d_av = the forms' mean difference
    over the mean of their two sds; NaN where a row has no test (tests.no_test). Questions with a missing
    form are left out.
    """
    rows = []
    for (model, bias, pert), d in deltas.groupby(GROUP, sort=False):
        d = d.dropna(subset=["delta"])
        base = dict(model=model, bias=bias, perturbation=pert, setting=pert or "bias",
                    pairs_from=d["pairs_from"].iloc[0] if len(d) else bias)
        rows.append({**base, **_with_d(one_sample_t(d["delta"]), d["delta"].mean(), d["delta"].std(), "cohen_d")})
        rows.append({**base, **welch_test(d["pct_first"], d["pct_second"]).iloc[0].to_dict()})  # with d_av
    cols = ["model", "bias", "perturbation", "setting", "test", "estimate", "std.error", "statistic", "df", "p.value",
            "conf.low", "conf.high", "n", "effect_size", "effect_size_type", "pairs_from"]
    return _order(pd.DataFrame(rows, columns=cols))


def normalized_entropy(shares, num_options: int) -> float:
    """H(p) / ln(num_options): 0 = all mass on one option, 1 = uniform over all options."""
    p = np.asarray(shares, float)
    p = p[p > 0]
    if num_options < 2 or not len(p):
        return math.nan
    p = p / p.sum()
    return float(-(p * np.log(p)).sum() / math.log(num_options))


def form_entropy(responses: pd.DataFrame, items: pd.DataFrame | None = None) -> pd.DataFrame:
    """Normalized entropy of each question form's answer distribution.

    Columns: model, bias, perturbation, key, form, entropy (nats), num_options, normalized_entropy.
    The number of options is the form's own (4 for a no-middle form, 6 with "Don't know").
    """
    dist = form_distributions(responses, items)
    if "num_options" not in dist.columns or dist["num_options"].isna().any():
        raise UserError("responses: column 'num_options' (options of each form) is needed for entropy; pass the item table")
    rows = []
    for keys, d in dist.groupby([*GROUP, "key", "form"], sort=False):
        n = int(d["num_options"].iloc[0])
        p = d["share"].to_numpy(float)
        p = p[p > 0]
        h = float(-(p * np.log(p)).sum()) if len(p) else math.nan
        rows.append(dict(zip([*GROUP, "key", "form"], keys), entropy=h, num_options=n,
                         normalized_entropy=normalized_entropy(d["share"], n)))
    return _order(pd.DataFrame(rows))


def entropy_correlation(deltas: pd.DataFrame, entropy: pd.DataFrame) -> pd.DataFrame:
    """Pearson r between a form's normalized entropy and |Δb| across questions, per model and bias.

    One row per (model, bias, entropy_form in original/modified); ``paper_convention`` is True for
    the form the released analysis (Table 4) used: the second form of the bias's Δ rule.
    """
    d = deltas[(deltas["perturbation"] == "")].dropna(subset=["delta"])
    e = entropy[entropy["perturbation"] == ""]
    rows = []
    for (model, bias), dd in d.groupby(["model", "bias"], sort=False):
        for form in ("original", "modified"):
            ee = e[(e["model"] == model) & (e["bias"] == bias) & (e["form"] == form)]
            m = dd.merge(ee[["key", "normalized_entropy"]], on="key", how="inner").dropna(subset=["normalized_entropy"])
            rows.append(dict(model=model, bias=bias, entropy_form=form,
                             paper_convention=form == BIAS_RULES[bias].second_form,
                             **pearson_r(m["normalized_entropy"], m["delta"].abs())))
    cols = ["model", "bias", "entropy_form", "paper_convention", "test", "estimate", "statistic", "df", "p.value",
            "conf.low", "conf.high", "n"]
    out = pd.DataFrame(rows, columns=cols)
    out["perturbation"] = ""
    return _order(out).drop(columns="perturbation")


def figure2_grid(tests: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Figure 2 as a table: per model x bias x setting (bias, key typo, middle random, letter swap),
    mean Δ, its one-sample t-test p, and direction: "positive"/"negative" if p < alpha, else "ns"."""
    t = tests[tests["test"] == "One-sample t-test"].copy()
    sig = t["p.value"] < alpha
    t["significant"] = sig
    t["direction"] = np.where(~sig, "ns", np.where(t["estimate"] > 0, "positive", "negative"))
    cols = ["model", "bias", "setting", "estimate", "p.value", "n", "significant", "direction", "pairs_from"]
    return t[cols].reset_index(drop=True)


def table4(tests: pd.DataFrame, correlation: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 4 layout: one row per model x bias, Δb, Δp per perturbation, their p, Pearson r."""
    t = tests[tests["test"] == "One-sample t-test"]
    rows = []
    for (model, bias), d in t.groupby(["model", "bias"], sort=False):
        rec = {"model": model, "bias": bias}
        for setting in ("bias", *PERTURBATION_ORDER):
            s = d[d["setting"] == setting]
            name = "delta_b" if setting == "bias" else f"delta_p_{setting}"
            rec[name] = s["estimate"].iloc[0] if len(s) else math.nan
            rec[f"p_{setting}"] = s["p.value"].iloc[0] if len(s) else math.nan
        c = correlation[(correlation["model"] == model) & (correlation["bias"] == bias) & correlation["paper_convention"]]
        rec["pearson_r"] = c["estimate"].iloc[0] if len(c) else math.nan
        rec["pearson_p"] = c["p.value"].iloc[0] if len(c) else math.nan
        rows.append(rec)
    return pd.DataFrame(rows)


def analyze_survey_bias(responses: pd.DataFrame, items: pd.DataFrame | None = None,
                        exclude: tuple[str, ...] = ALLOW_FORBID_EXCLUDE, alpha: float = 0.05) -> dict[str, pd.DataFrame]:
    """All survey-bias tables: deltas, bias_tests, perturbation_tests, entropy, entropy_correlation,
    grid (Figure 2) and table4."""

    deltas = question_deltas(responses, items, exclude)
    tests = delta_tests(deltas)
    entropy = form_entropy(responses, items)
    corr = entropy_correlation(deltas, entropy)
    return {
        "deltas": deltas,
        # Holm/BH: bias tests across the biases, perturbation tests across a bias's perturbations
        "bias_tests": add_adjusted(tests[tests["perturbation"] == ""].reset_index(drop=True), by=["model", "test"]),
        "perturbation_tests": add_adjusted(tests[tests["perturbation"] != ""].reset_index(drop=True),
                                           by=["model", "test", "bias"]),
        "entropy": entropy,
        "entropy_correlation": corr,
        "grid": figure2_grid(tests, alpha),
        # Table 4: each model's grid of tests one family (Tjuatja et al.: 5 tests x 9 biases per model)
        "table4": add_adjusted_wide(table4(tests, corr), ["p_bias", *(f"p_{s}" for s in PERTURBATION_ORDER),
                                                          "pearson_p"]),
    }


def plot_grid(grid: pd.DataFrame, path) -> Path:
    """Figure 2: one panel per model; rows biases, columns bias/key typo/middle random/letter swap.

    Significant positive cells dark blue, significant negative light orange (value printed),
    non-significant cells hatched.
    """
    import matplotlib  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib imports in ~1.3 s; only a figure needs it
    from matplotlib.patches import Rectangle  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    if grid.empty:
        raise UserError("plot_grid: the grid table is empty")
    models = list(dict.fromkeys(grid["model"]))
    biases = [b for b in BIAS_ORDER if b in set(grid["bias"])]
    settings = ["bias", *PERTURBATION_ORDER]
    ncol = min(5, len(models))
    nrow = math.ceil(len(models) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.0 * ncol + 1.2, 2.6 * nrow + 0.4), squeeze=False)
    colors = {"positive": "#3182bd", "negative": "#fdae6b"}
    for k, model in enumerate(models):
        ax = axes[k // ncol][k % ncol]
        g = grid[grid["model"] == model]
        for i, bias in enumerate(biases):
            for j, setting in enumerate(settings):
                cell = g[(g["bias"] == bias) & (g["setting"] == setting)]
                y = len(biases) - 1 - i
                if cell.empty:
                    ax.add_patch(Rectangle((j, y), 1, 1, facecolor="#eeeeee", edgecolor="gray"))
                    continue
                c = cell.iloc[0]
                if c["direction"] == "ns":
                    ax.add_patch(Rectangle((j, y), 1, 1, facecolor="white", edgecolor="gray", hatch="//"))
                else:
                    ax.add_patch(Rectangle((j, y), 1, 1, facecolor=colors[c["direction"]], edgecolor="gray"))
                    ax.text(j + 0.5, y + 0.5, f"{c['estimate']:.1f}", ha="center", va="center", fontsize=8)
        ax.set_xlim(0, len(settings))
        ax.set_ylim(0, len(biases))
        ax.set_title(str(model), fontsize=9)
        ax.set_xticks([j + 0.5 for j in range(len(settings))])
        ax.set_xticklabels([SETTING_LABELS[s] for s in settings], rotation=90, fontsize=8)
        ax.set_yticks([len(biases) - 1 - i + 0.5 for i in range(len(biases))])
        ax.set_yticklabels([BIAS_LABELS[b] for b in biases] if k % ncol == 0 else [], fontsize=8)
        ax.tick_params(length=0)
    for k in range(len(models), nrow * ncol):
        axes[k // ncol][k % ncol].axis("off")
    fig.text(0.5, 0.005, "blue: significant positive mean; orange: significant negative\n"
                         "hatched: not significant; grey: not run", ha="center", va="bottom", fontsize=7)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")  # the legend line is wider than a one-model grid
    plt.close(fig)
    return path


def plot_survey_bias(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir) -> list[Path]:
    """The Figure 2 grid of a run (one panel per model)."""
    path = Path(outdir) / "fig2_bias_grid.png"
    plot_grid(tables["grid"], path)
    return [path]


def summary(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Terminal view: the per-bias tests (mean Δb, t, df, p, n), each perturbation's Δp and p, Pearson r."""
    cols = ["model", "bias", "setting", "test", "estimate", "statistic", "df", "p.value", "n"]
    bias = tables["bias_tests"]
    pert = tables["perturbation_tests"]
    return {
        "response biases: mean Δb across questions (one-sample t-test against 0 and Welch between forms)":
            bias[[c for c in cols if c in bias.columns]],
        "non-bias perturbations: mean Δp (one-sample t-test)":
            pert[pert["test"] == "One-sample t-test"][[c for c in cols if c in pert.columns]],
        "Table 4 layout (Δ in percentage points; Pearson r of entropy vs |Δb|)": tables["table4"],
    }
