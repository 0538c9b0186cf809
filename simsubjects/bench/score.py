"""The bench's scorecard: the model's effect per finding, computed on its exact answer distributions, and
the statistics across findings (docs/bench.md lists every column with its formula, unit and source).

The model's population for a condition is the mixture over the design's subjects in it (personas, name
pairs): each subject's answer distribution (averaged over its option orders) weighted equally. Its effect
has no Monte-Carlo noise; "significant at N" is the exact probability that a study of N people drawn from
that population, analyzed with the original test, rejects in the original direction (analyze/methods/power.py).

Sign convention: every effect column is aligned so that positive = the direction the original found.
The original's and replication's effects are read as their sources report them, positive = the original's
direction (Many Labs' coding); the model's raw contrast (levels[0] - levels[1], or mean - null) is
multiplied by the hypothesis's direction (+1 positive, -1 negative).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..analyze.methods import effects as ef
from ..analyze.methods import power as pw
from ..analyze.tidy import shares
from ..errors import UserError

ALPHA = 0.05
UNIT = "finding"
# the scale each estimator reports on (Effect.scale's vocabulary)
ESTIMATOR_SCALE = {"diff_proportions": "diff_prop", "log_odds_ratio": "log_or", "cohens_d": "d", "r": "r",
                   "cohens_w": "w", "one_sample_d": "d", "cohens_h": "h"}
BINARY_TESTS = ("chi2", "fisher", "z_proportions")
TWO_GROUP_T = ("student_t", "welch_t")


class NoValidAnswers(UserError):
    """A finding's run holds no valid answer for a contrast (e.g. no parseable estimate): the scorecard gives
    the finding a row without model numbers and says why in `note`, rather than no scorecard at all."""


@dataclass
class Population:
    """One condition's mixture over subjects: answer shares, score moments (None for unordered options)."""
    dist: pd.Series          # option label -> probability (refusals removed, renormalized)
    mean: float | None
    var: float | None
    subject_means: pd.Series | None  # subject -> expected score
    n_subjects: int
    validity: float


# -- reading a run ----------------------------------------------------------------------------------

def read_run(folder: Path):
    """(study, responses) of one finding's run folder: the run's own copy of the study file."""
    from ..collect.store import load_run
    from ..collect.untrusted import inside
    from ..studyfile.origin import origin
    from ..studyfile.spec import load_study

    manifest, responses, _ = load_run(folder)
    o = origin(manifest)
    if not o.is_study_file:
        raise UserError(f"{folder}: not a study file's run; a bench finding is a study file")
    path = inside(folder, o.file, f"{Path(folder) / 'manifest.json'}: parameters.studyfile.file")
    seed = (manifest.get("parameters") or {}).get("seed")
    return load_study(path, seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None), responses


def _options(study, item: str):
    it = next((i for i in study.items if i.id == item), None)
    if it is None:
        raise UserError(f"{study.file}: finding.hypothesis names item {item!r}, which the study does not have")
    r = it.response.judge if it.response.kind == "free_text" else it.response
    return [o for o in r.options if not o.refusal]


def subject_distributions(study, responses: pd.DataFrame, item: str, by: list[str]) -> pd.DataFrame:
    """One row per subject (x `by` columns) x option: the subject's probability of the option, the mean over
    its trials (option orders, repetitions) of the per-trial shares over the non-refusal options."""
    opts = _options(study, item)
    labels = [o.label for o in opts]
    df = shares(responses[responses["item"] == item])
    df = df[df["response"].astype(str).isin(labels)]
    tot = df.groupby("trial")["share"].transform("sum")
    df = df.assign(share=df["share"] / tot.where(tot > 0))
    keys = ["subject", *by]
    per_trial = df.pivot_table(index=[*keys, "trial"], columns="response", values="share", aggfunc="sum",
                               fill_value=0.0, observed=True)
    per_trial = per_trial.reindex(columns=labels, fill_value=0.0)
    return per_trial.groupby(level=keys, sort=False).mean()


def population(study, responses: pd.DataFrame, item: str, measure: dict, by: dict | None = None) -> Population:
    """The mixture over the subjects whose trials have the columns `by` equal to the given levels."""
    sub = responses
    for col, level in (by or {}).items():
        if col not in sub.columns:
            raise UserError(f"{study.file}: finding.hypothesis.factor {col!r} is not a column of the responses")
        sub = sub[sub[col].astype(str) == str(level)]
    if sub.empty:
        raise UserError(f"{study.file}: no responses for item {item!r} at {by}")
    it = next((i for i in study.items if i.id == item), None)
    if it is not None and it.response.kind == "estimate":
        return _estimates(study, sub, item, measure)
    per_subject = subject_distributions(study, sub, item, [])
    opts = _options(study, item)
    scores = _scores(opts, measure)
    validity = float(sub.drop_duplicates("trial")["validity"].mean()) if "validity" in sub.columns else math.nan
    dist = per_subject.mean(axis=0)
    if scores is None:
        return Population(dist, None, None, None, len(per_subject), validity)
    s = np.asarray(scores, float)
    m_s = per_subject.to_numpy(float) @ s                      # each subject's expected score
    v_s = per_subject.to_numpy(float) @ (s * s) - m_s ** 2       # and its variance
    mean = float(m_s.mean())
    var = float(v_s.mean() + m_s.var())                        # law of total variance over the mixture
    return Population(dist, mean, var, pd.Series(m_s, index=per_subject.index), len(per_subject), validity)


def _estimates(study, sub: pd.DataFrame, item: str, measure: dict) -> Population:
    """A numeric estimate item (generated text, parsed): no exact distribution exists, so a subject's
    distribution is the empirical one of its valid draws (each row one draw, weighted by `weight`); the
    mixture's moments follow as for scored options. Unlike k-choice answers these carry sampling noise."""
    if not measure.get("mean"):
        raise UserError(f"{study.file}: finding.hypothesis.measure: an estimate item {item!r} takes {{mean: true}}")
    rows = sub[(sub["item"] == item)]
    validity = float(rows.drop_duplicates("trial")["validity"].mean()) if "validity" in rows.columns else math.nan
    rows = rows[pd.to_numeric(rows["estimate"], errors="coerce").notna()]
    if rows.empty:
        raise NoValidAnswers(f"item {item!r} has no valid estimate in the run (validity {validity:.3g})")
    x = pd.to_numeric(rows["estimate"]).to_numpy(float)
    w = rows["weight"].to_numpy(float)
    g = pd.DataFrame({"subject": rows["subject"].to_numpy(), "w": w, "wx": w * x, "wxx": w * x * x})
    per = g.groupby("subject", sort=False)[["w", "wx", "wxx"]].sum()
    m_s = (per["wx"] / per["w"]).to_numpy(float)
    v_s = (per["wxx"] / per["w"]).to_numpy(float) - m_s ** 2
    return Population(pd.Series(dtype=float), float(m_s.mean()), float(v_s.mean() + m_s.var()),
                      pd.Series(m_s, index=per.index), len(per), validity)


def item_measure(study, item: str, measure: dict) -> dict:
    """The measure as it applies to one outcome of a within/association hypothesis: {option: X} scores the
    item that has option X (1/0); an outcome without that option is scored by its positions (or estimates),
    e.g. agreeing to a request (binary) against the estimated share of peers who would (a scale)."""
    if "option" in measure and measure["option"] not in [o.label for o in scored_options(study, item)]:
        return {"mean": True}
    return measure


def scored_options(study, item: str):
    """The options an outcome is scored on (refusals left out); none for an estimate item or a missing one."""
    it = next((i for i in study.items if i.id == item), None)
    if it is None or it.response.kind == "estimate":
        return []
    return _options(study, item)


def _scores(opts, measure: dict):
    """Per option: 1/0 for {option: LABEL}; the ordinal position for {mean: true}; None for {options}."""
    if "option" in measure:
        if measure["option"] not in [o.label for o in opts]:
            raise UserError(f"finding.hypothesis.measure.option {measure['option']!r}: not an option "
                            f"({', '.join(o.label for o in opts)})")
        return [1.0 if o.label == measure["option"] else 0.0 for o in opts]
    if measure.get("mean"):
        if any(o.position is None for o in opts):
            raise UserError("finding.hypothesis.measure.mean: the outcome's options have no positions (scores)")
        return [float(o.position) for o in opts]
    return None


# -- the model's effect -----------------------------------------------------------------------------

@dataclass
class ModelEffect:
    value: float             # on the estimator's scale, raw sign (levels[0] - levels[1], mean - null)
    scale: str
    d: float                 # d-equivalent, raw sign
    parts: dict              # what the power and the columns need: p1, p2, m, var, r, w, n_subjects, validity


def _sign(h: dict) -> int:
    return -1 if h.get("direction") == "negative" else 1


def model_effect(finding, study, responses: pd.DataFrame) -> ModelEffect:
    h, est = finding.hypothesis, finding.estimator
    kind = h["kind"]
    if kind == "between":
        return _between(study, responses, h, est)
    if kind == "one_sample":
        return _one_sample(study, responses, h, est)
    return _paired(study, responses, h, est)


def _between(study, responses, h, est) -> ModelEffect:
    a, b = (population(study, responses, h["outcome"], h["measure"], {h["factor"]: lv}) for lv in h["levels"])
    parts = {"n_subjects": a.n_subjects + b.n_subjects, "validity": (a.validity + b.validity) / 2,
             "group": [a.n_subjects, b.n_subjects]}
    if "options" in h["measure"]:  # a multinomial outcome: Cohen's w of the level x answer table
        keep = [str(o) for o in h["measure"]["options"]]
        joint = np.vstack([a.dist.reindex(keep, fill_value=0.0), b.dist.reindex(keep, fill_value=0.0)]) / 2
        w = ef.cohens_w_table(joint)
        return ModelEffect(w, "w", math.nan, {**parts, "w": w, "k": len(keep)})
    parts.update(m1=a.mean, m2=b.mean, v1=a.var, v2=b.var)
    d = ef.cohens_d(a.mean, a.var, b.mean, b.var)
    if "option" in h["measure"]:
        p1, p2 = a.mean, b.mean
        parts.update(p1=p1, p2=p2)
        lor = ef.log_odds_ratio(p1, p2)
        d = ef.logor_to_d(lor)  # Chinn's d of a 2 x 2 table (HumanStudy-Bench's d-equivalent of a chi-square)
        value = {"diff_proportions": p1 - p2, "log_odds_ratio": lor, "cohens_h": ef.cohens_h(p1, p2),
                 "cohens_d": d, "r": ef.d_to_r(d)}.get(est)
    else:
        value = {"cohens_d": d, "r": ef.d_to_r(d)}.get(est)
    if value is None:
        raise UserError(f"{study.file}: finding.estimator {est!r} does not fit a between hypothesis on "
                        f"{h['measure']}")
    return ModelEffect(float(value), ESTIMATOR_SCALE[est], float(d), parts)


def _one_sample(study, responses, h, est) -> ModelEffect:
    pop = population(study, responses, h["outcome"], h["measure"])
    null = float(h.get("null", 0.5 if "option" in h["measure"] else 0.0))
    parts = {"n_subjects": pop.n_subjects, "validity": pop.validity, "m": pop.mean, "var": pop.var, "null": null}
    if "option" in h["measure"]:
        parts["p"] = pop.mean
        d = ef.cohens_h(pop.mean, null)
        value = {"cohens_h": d, "diff_proportions": pop.mean - null,
                 "one_sample_d": ef.one_sample_d(pop.mean, pop.var, null),
                 "log_odds_ratio": ef.log_odds_ratio(pop.mean, null)}.get(est)
    else:
        d = ef.one_sample_d(pop.mean, pop.var, null)
        value = d if est in ("one_sample_d", "cohens_d") else None
    if value is None:
        raise UserError(f"{study.file}: finding.estimator {est!r} does not fit a one_sample hypothesis")
    return ModelEffect(float(value), ESTIMATOR_SCALE[est], float(d), parts)


def _paired(study, responses, h, est) -> ModelEffect:
    """within (difference of two items, same subjects) and association (their correlation over subjects).
    A subject answers the two items independently given who it is, so the mixture's moments follow from
    each subject's means and variances."""
    first, second = (population(study, responses, it, item_measure(study, it, h["measure"])) for it in h["outcomes"])
    if first.subject_means is None or second.subject_means is None or \
            set(first.subject_means.index) != set(second.subject_means.index):
        raise UserError(f"{study.file}: finding.hypothesis.outcomes need scored items answered by the same subjects")
    a, b = first.subject_means.align(second.subject_means, join="inner")
    ma, mb = a.to_numpy(float), b.to_numpy(float)
    va, vb = first.var, second.var
    parts = {"n_subjects": first.n_subjects, "validity": (first.validity + second.validity) / 2}
    if h["kind"] == "association":
        cov = float(np.mean(ma * mb) - ma.mean() * mb.mean())
        r = cov / math.sqrt(va * vb) if va > 0 and vb > 0 else math.nan
        parts["r"] = r
        return ModelEffect(r, "r", ef.r_to_d(r), parts)
    # within: D = a - b; E[D] = mean(ma - mb); Var D = E_s[var_a,s + var_b,s] + Var_s(ma - mb)
    diff = ma - mb
    within_var = (va - ma.var()) + (vb - mb.var())
    var_d = float(within_var + diff.var())
    d = ef.one_sample_d(float(diff.mean()), var_d, 0.0)
    parts.update(m=float(diff.mean()), var=var_d)
    return ModelEffect(d, "d", d, parts)


# -- significance at N ------------------------------------------------------------------------------

def _groups(eff) -> tuple[int, int] | None:
    if eff is None or not eff.n:
        return None
    if eff.n_groups and len(eff.n_groups) == 2:
        return int(eff.n_groups[0]), int(eff.n_groups[1])
    return eff.n // 2, eff.n - eff.n // 2  # no per-group Ns in the source: an even split


def significance(finding, me: ModelEffect, eff) -> tuple[float, str]:
    """(probability, method): P(a study of eff's N from the model's population rejects at .05 two-sided in
    the original direction), and which computation gave it (docs/bench.md)."""
    if eff is None or not eff.n:
        return math.nan, ""
    h, test, p = finding.hypothesis, finding.test, me.parts
    direction = _sign(h)
    kind = h["kind"]
    if kind == "between" and "w" in p:
        n1, n2 = _groups(eff)
        return pw.power_chi2_w(me.value, n1 + n2, p["k"] - 1, ALPHA), "noncentral chi-square (lambda = N w^2)"
    if kind == "between" and "p1" in p and test in BINARY_TESTS:
        n1, n2 = _groups(eff)
        return pw.power_two_proportions(p["p1"], p["p2"], n1, n2, test, ALPHA, direction), f"exact sum ({test})"
    if kind == "between":
        n1, n2 = _groups(eff)
        return pw.power_means(me.d, n1, n2, ALPHA, direction), "noncentral t"
    if kind == "one_sample" and "p" in p and test in ("binomial", "z_proportions", "chi2"):
        t = "binomial" if test == "binomial" else "z"
        return pw.power_one_proportion(p["p"], eff.n, p["null"], t, ALPHA, direction), f"exact sum ({test})"
    if kind == "association" and test in TWO_GROUP_T:
        # the original compared two groups by a t test (e.g. Ross et al.'s false consensus: estimates by own
        # choice): its power is the noncentral t at the groups' sizes and the model's d, not the correlation
        # test's Fisher-z approximation (which differs by 1e-5 on these findings; docs/bench.md)
        n1, n2 = _groups(eff)
        return pw.power_means(me.d, n1, n2, ALPHA, direction), "noncentral t"
    if kind == "association":
        return pw.power_correlation(me.value, eff.n, ALPHA, direction), "Fisher z normal"
    d = ef.one_sample_d(p["m"], p["var"], p.get("null", 0.0))
    return pw.power_means(d, eff.n, None, ALPHA, direction), "noncentral t"


# -- one finding's row ------------------------------------------------------------------------------

def from_d(d: float, scale: str, groups=None) -> float:
    """A d-equivalent on another effect's scale (nan where no conversion exists)."""
    n1, n2 = groups or (None, None)
    return {"d": d, "r": ef.d_to_r(d, n1, n2) if math.isfinite(d) else math.nan,
            "z": ef.fisher_z(ef.d_to_r(d, n1, n2)) if math.isfinite(d) else math.nan,
            "log_or": ef.d_to_logor(d), "or": math.exp(ef.d_to_logor(d)) if math.isfinite(d) else math.nan,
            "h": d}.get(scale, math.nan)


def _on_scale(me: ModelEffect, aligned: float, aligned_d: float, eff) -> float:
    if eff is None:
        return math.nan
    return aligned if eff.scale == me.scale else from_d(aligned_d, eff.scale, _groups(eff))


def _d_of(eff, which: str = "value") -> float:
    if eff is None:
        return math.nan
    v = getattr(eff, which) if which != "value" else eff.value
    return ef.to_d(v, eff.scale, *(_groups(eff) or (None, None))) if v is not None else math.nan


def _inside(x: float, eff) -> float:
    """1.0 when x lies in the effect's interval, 0.0 outside, nan without an interval or a comparable x."""
    if eff is None or eff.ci_low is None or eff.ci_high is None or not math.isfinite(x):
        return math.nan
    return float(eff.ci_low <= x <= eff.ci_high)


def _se_d(eff) -> float:
    """The sampling error of an effect on the d scale: from its interval (converted), else from its Ns."""
    if eff is None:
        return math.nan
    lo, hi = _d_of(eff, "ci_low"), _d_of(eff, "ci_high")
    if math.isfinite(lo) and math.isfinite(hi):
        return ef.se_from_ci(lo, hi)
    g = _groups(eff)
    d = _d_of(eff)
    return ef.se_d(d, *g) if g and math.isfinite(d) else math.nan


def supported(eff) -> float | None:
    """Did the replication support the original? Its interval lies above 0 (aligned), else p < .05 with a
    positive estimate; None without a replication or either."""
    if eff is None:
        return None
    if eff.ci_low is not None:
        null = 1.0 if eff.scale == "or" else 0.0
        return bool(eff.ci_low > null)
    if eff.p is not None:
        return bool(eff.p < ALPHA and eff.value > (1.0 if eff.scale == "or" else 0.0))
    return None


def _pas(d_model: float, orig, two_groups: bool = True) -> float:
    """HumanStudy-Bench's PAS of one finding: posteriors of an effect from the original's statistic and from
    the model's at the original's N (its exact d is the estimate a study of that N would center on), both by
    the BIC Bayes factor of the 1-df Wald statistic (d / se_d)^2 (analyze/methods/power.py)."""
    g = _groups(orig)
    d_h = _d_of(orig)
    if not g or not math.isfinite(d_h) or not math.isfinite(d_model):
        return math.nan
    n = sum(g)
    ns = g if two_groups else (n, None)  # one sample or paired: se_d of one group of n

    def chi2(d):
        return (d / ef.se_d(d, *ns)) ** 2
    pi_h = pw.posterior_effect(chi2(d_h), n)
    pi_a = pw.posterior_effect(chi2(d_model), n)
    return pw.pas(pi_h, np.sign(d_h), pi_a, np.sign(d_model))


def finding_row(finding, study, responses: pd.DataFrame) -> dict:
    """The scorecard's row for one finding (columns: COLUMNS)."""
    me = model_effect(finding, study, responses)
    s = 1 if me.scale == "w" else _sign(finding.hypothesis)
    aligned, aligned_d = me.value * s, me.d * s
    orig, rep = finding.original, finding.replication
    on_orig, on_rep = _on_scale(me, aligned, aligned_d, orig), _on_scale(me, aligned, aligned_d, rep)
    p_orig, method = significance(finding, me, orig)
    p_rep, _ = significance(finding, me, rep)
    d_o, d_r = _d_of(orig), _d_of(rep)
    r_m = ef.d_to_r(aligned_d) if math.isfinite(aligned_d) else math.nan
    r_r = ef.d_to_r(d_r) if math.isfinite(d_r) else math.nan
    return {
        "finding": finding.id, "corpus": finding.corpus, "domain": finding.domain, "year": finding.year,
        "title": finding.title, "citation": finding.citation, "estimator": finding.estimator, "test": finding.test,
        "kind": finding.hypothesis["kind"], "model_effect": aligned, "model_scale": me.scale, "model_d": aligned_d,
        "n_subjects": me.parts["n_subjects"], "validity": me.parts["validity"],
        "original_effect": orig.value, "original_scale": orig.scale, "original_ci_low": orig.ci_low,
        "original_ci_high": orig.ci_high, "original_n": orig.n, "original_d": d_o, "original_source": orig.source,
        "replication_effect": rep.value if rep else math.nan, "replication_scale": rep.scale if rep else "",
        "replication_ci_low": rep.ci_low if rep else math.nan, "replication_ci_high": rep.ci_high if rep else math.nan,
        "replication_n": rep.n if rep else math.nan, "replication_d": d_r, "replication_se_d": _se_d(rep),
        "replication_source": rep.source if rep else "", "replication_supported": supported(rep),
        "model_on_original_scale": on_orig, "model_on_replication_scale": on_rep,
        "direction_vs_original": float(aligned > 0) if me.scale != "w" and aligned != 0 else math.nan,
        "direction_vs_replication": (float(np.sign(aligned) == np.sign(rep.value - (1.0 if rep.scale == "or" else 0)))
                                     if rep and me.scale != "w" and aligned != 0 else math.nan),
        "sig_at_original_n": p_orig, "sig_at_replication_n": p_rep, "power_method": method,
        "in_original_ci": _inside(on_orig, orig), "in_replication_ci": _inside(on_rep, rep),
        "ratio_d": aligned_d / d_r if math.isfinite(d_r) and d_r != 0 else math.nan,
        "ratio_z": (ef.fisher_z(r_m) / ef.fisher_z(r_r) if math.isfinite(r_r) and r_r != 0 and math.isfinite(r_m)
                    else math.nan),
        "pas": _pas(aligned_d, orig, finding.hypothesis["kind"] == "between"),
        # what the power computations took (the R twin recomputes them from these)
        "model_p1": me.parts.get("p1", me.parts.get("p", math.nan)), "model_p2": me.parts.get("p2", math.nan),
        "null": me.parts.get("null", math.nan), "direction": s,
        "chi2_df": me.parts["k"] - 1 if "k" in me.parts else math.nan,
        "original_n1": (_groups(orig) or (math.nan,) * 2)[0], "original_n2": (_groups(orig) or (math.nan,) * 2)[1],
        "unit": UNIT,
    }


COLUMNS = {  # column -> (unit, meaning); docs/bench.md gives the formulas
    "finding": ("finding", "the finding's id (<corpus>.<key>)"),
    "kind": ("finding", "the hypothesis' kind: between | within | one_sample | association"),
    "model_effect": ("finding", "the model's effect on its estimator's scale, positive = the original's direction"),
    "model_d": ("finding", "the model's effect as Cohen's d (Chinn's d for 2 x 2 tables)"),
    "n_subjects": ("subjects", "the model's subjects (mixture components) in the contrast"),
    "validity": ("trial", "mean validity (probability mass on valid answers) of the outcome's trials"),
    "original_d": ("finding", "the original effect as d"),
    "replication_d": ("finding", "the replication's pooled effect as d"),
    "replication_se_d": ("finding", "the replication's standard error on the d scale (from its interval)"),
    "replication_supported": ("finding", "the replication's interval lies above 0 (original direction)"),
    "direction_vs_original": ("finding", "1 when the model's effect has the original's sign"),
    "direction_vs_replication": ("finding", "1 when the model's effect has the replication's sign"),
    "sig_at_original_n": ("finding (probability)", "P(a study of the original's N from the model's population "
                                                   "rejects at .05 in the original direction)"),
    "sig_at_replication_n": ("finding (probability)", "the same at the replication's N"),
    "in_original_ci": ("finding", "1 when the model's effect lies in the original's interval"),
    "in_replication_ci": ("finding", "1 when the model's effect lies in the replication's interval"),
    "ratio_d": ("finding", "model d / replication d"),
    "ratio_z": ("finding", "Fisher z of the model's r / Fisher z of the replication's r"),
    "pas": ("finding (probability)", "HumanStudy-Bench's PAS against the original"),
    "model_p1": ("finding (probability)", "binary outcome: the model's share in levels[0] (one sample: its share)"),
    "model_p2": ("finding (probability)", "binary outcome: the model's share in levels[1]"),
    "null": ("finding", "one sample: the value the original tested against"),
    "direction": ("finding", "+1 when the original found levels[0] above levels[1] (or the mean above null), "
                             "-1 below; the sign that aligns the model's raw contrast"),
    "chi2_df": ("finding", "multinomial outcome: the chi-square test's degrees of freedom (options - 1)"),
    "power_method": ("finding", "which computation gave sig_at_original_n and sig_at_replication_n"),
    "original_n1": ("people", "the original's group sizes used for power (its n_groups, else an even split)"),
    "note": ("finding", "why a finding has no model numbers (its run has no valid answer), else empty"),
}


# -- across findings --------------------------------------------------------------------------------

def _stat_rows(card: pd.DataFrame, split: str, n_boot: int, seed: int) -> list[dict]:
    """The across-finding statistics of one set of findings: the model, and the context rows (the original
    studies as a predictor of their replications; the null predictor, every effect 0)."""
    rep = card[np.isfinite(card["replication_d"].astype(float))]
    rows = []

    def row(stat, predictor, reference, est, low=math.nan, high=math.nan, n=None):
        rows.append({"split": split, "statistic": stat, "predictor": predictor, "reference": reference,
                     "estimate": est, "conf.low": low, "conf.high": high,
                     "n": int(n if n is not None else len(card)), "unit": UNIT})

    y, se = rep["replication_d"].to_numpy(float), rep["replication_se_d"].to_numpy(float)
    for name, x in (("model", rep["model_d"].to_numpy(float)), ("original", rep["original_d"].to_numpy(float)),
                    ("zero", np.zeros(len(rep)))):
        pairs = int((np.isfinite(x) & np.isfinite(y)).sum())
        row("direction_share", name, "replication", ef.direction_agreement(x, y), n=pairs)
        b = ef.pearson_boot(x, y, n_boot=n_boot, seed=seed)
        row("pearson_r", name, "replication", b["estimate"], b["conf.low"], b["conf.high"], b["n"])
        row("lins_ccc", name, "replication", ef.lins_ccc(x, y), n=pairs)
        dis = ef.disattenuated_r(x, y, se)
        row("disattenuated_r", name, "replication", dis["estimate"], n=dis["n"])
    both = int((np.isfinite(card["model_d"].astype(float)) & np.isfinite(card["original_d"].astype(float))).sum())
    row("direction_share", "model", "original", ef.direction_agreement(card["model_d"], card["original_d"]), n=both)
    fp = ef.false_positive_rate(card["sig_at_original_n"], card["replication_supported"])
    row("false_positive_rate", "model", "replication", fp["estimate"], n=fp["n"])
    for col in ("sig_at_original_n", "sig_at_replication_n", "in_original_ci", "in_replication_ci", "validity"):
        v = card[col].astype(float)
        ref = "original" if "original" in col else "replication" if "replication" in col else ""
        row(f"mean_{col}", "model", ref, float(v.mean()), n=int(v.notna().sum()))
    p = card["pas"].astype(float)
    row("pas", "model", "original", float(p.mean()) if p.notna().any() else math.nan, n=int(p.notna().sum()))
    row("ecs", "model", "original", ef.lins_ccc(card["original_d"], card["model_d"]),
        n=int((np.isfinite(card["original_d"].astype(float)) & np.isfinite(card["model_d"].astype(float))).sum()))
    return rows


def across(card: pd.DataFrame, cutoff: int | None = None, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The across-finding table: every statistic over all findings, then by corpus, by domain, and by
    publication year against `cutoff` (year <= cutoff: before the model's training cutoff)."""
    rows = _stat_rows(card, "all", n_boot, seed)
    for col in ("corpus", "domain"):
        for level, g in card.groupby(col, sort=True):
            rows += _stat_rows(g, f"{col}={level}", n_boot, seed)
    if cutoff is not None:
        year = pd.to_numeric(card["year"], errors="coerce")
        for label, mask in ((f"year<={cutoff}", year <= cutoff), (f"year>{cutoff}", year > cutoff)):
            if mask.any():
                rows += _stat_rows(card[mask], label, n_boot, seed)
    return pd.DataFrame(rows)


def _unscored(finding, why: str) -> dict:
    """The row of a finding whose run has no valid answers: its published numbers, no model numbers."""
    orig, rep = finding.original, finding.replication
    return {"finding": finding.id, "corpus": finding.corpus, "domain": finding.domain, "year": finding.year,
            "title": finding.title, "citation": finding.citation, "estimator": finding.estimator,
            "test": finding.test, "model_effect": math.nan, "model_d": math.nan, "original_effect": orig.value,
            "original_scale": orig.scale, "original_ci_low": orig.ci_low, "original_ci_high": orig.ci_high,
            "original_n": orig.n, "original_d": _d_of(orig), "original_source": orig.source,
            "replication_effect": rep.value if rep else math.nan, "replication_scale": rep.scale if rep else "",
            "replication_ci_low": rep.ci_low if rep else math.nan,
            "replication_ci_high": rep.ci_high if rep else math.nan, "replication_n": rep.n if rep else math.nan,
            "replication_d": _d_of(rep), "replication_se_d": _se_d(rep),
            "replication_source": rep.source if rep else "", "replication_supported": supported(rep),
            "unit": UNIT, "note": f"not scored: {why}"}


def scorecard(findings, folders: dict) -> pd.DataFrame:
    """One row per finding that has a run folder (folders: finding id -> run folder)."""
    rows = []
    for f in findings:
        folder = folders.get(f.id)
        if folder is None:
            continue
        study, responses = read_run(folder)
        try:
            rows.append({**finding_row(f, study, responses), "note": ""})
        except NoValidAnswers as e:
            rows.append(_unscored(f, str(e)))
    if not rows:
        raise UserError("no finding has a finished run folder; run `simsubjects bench run` first")
    card = pd.DataFrame(rows)
    return card.reindex(columns=[*[c for c in card.columns if c != "note"], "note"])
