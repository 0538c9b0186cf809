"""Representativeness of a model's opinions (Santurkar et al. 2023), as used by Tjuatja et al. (2024).

Per question, D_M (model) and D_H (humans) are distributions over the ordinal answer options,
refusals and "Don't know" excluded and the rest renormalized. Their distance is the
Wasserstein-1 (earth mover's) distance on the options' ordinal positions divided by its largest
possible value, the span of the question's whole option list (N - 1 for positions 1..N; OpinionQA's
get_max_wd), so it lies in [0, 1], whichever options the two distributions happen to hold.
Representativeness = 1 - mean distance over questions; per demographic group when the human rows
carry groups.

Inputs are tidy distributions, one row per question x option: columns ``key``, ``position``
(ordinal value; NaN for refusals), ``weight`` (probability, count or survey weight), optionally
``refusal`` (True rows are dropped) and ``model``; human rows from ``collect.human.atp`` also
carry ``attribute``/``group``. ``model_distribution`` builds the model side from survey_bias
responses and their item table.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from simsubjects.errors import UserError
from simsubjects.analyze.methods.distances import wasserstein_normalized
from simsubjects.analyze.tidy import n_trials, trial_total


def _by(by) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def ordinal_distribution(dist: pd.DataFrame, group: list[str], where: str) -> pd.DataFrame:
    """Drop refusals/unknown positions, pool rows per (group, key, position), renormalize per question."""
    for col in ("key", "position", "weight"):
        if col not in dist.columns:
            raise UserError(f"{where}: missing column {col!r}; expected key, position, weight[, refusal]")
    d = dist.copy()
    d["position"] = pd.to_numeric(d["position"], errors="coerce")
    d["weight"] = pd.to_numeric(d["weight"], errors="coerce")
    if d["weight"].isna().any() or (d["weight"] < 0).any():
        raise UserError(f"{where}: column 'weight' has missing or negative values")
    keep = d["position"].notna()
    if "refusal" in d.columns:
        keep &= ~d["refusal"].fillna(False).astype(bool)
    d = d[keep]
    keys = [*group, "key"]
    d = d.groupby([*keys, "position"], as_index=False, sort=False)["weight"].sum()
    total = d.groupby(keys, sort=False)["weight"].transform("sum")
    d = d[total > 0].assign(weight=lambda x: x["weight"] / x.groupby(keys, sort=False)["weight"].transform("sum"))
    return d


def _human_side(human_dist: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    if not by and "attribute" in human_dist.columns:
        overall = human_dist[human_dist["attribute"] == "Overall"]
        if overall.empty and human_dist["attribute"].nunique() > 1:
            raise UserError("human_dist: several demographic groups and no 'Overall' rows; pass by=['attribute', 'group']")
        return overall if not overall.empty else human_dist
    missing = [c for c in by if c not in human_dist.columns]
    if missing:
        raise UserError(f"human_dist: missing column(s) {', '.join(missing)} named in by=")
    return human_dist


def option_spans(options: pd.DataFrame | None, model: pd.DataFrame, human: pd.DataFrame) -> dict:
    """{key: span of the question's ordinal option list}.

    `options`: one row per question x option (key, position[, refusal]), e.g. the item table's
    option lists; without it, every position listed for the question in either distribution
    (the package's readers list every option, zero-weight ones included).
    """
    if options is None:
        # an option no one chose is missing from a distribution that lists chosen answers only (people's
        # counts, sampled draws): the span shrinks and W1/span grows. Said, not guessed (issue 40, item 7)
        warnings.warn("representativeness: no options= given, so each question's W1 span is the range of the "
                      "positions listed in the two distributions; an option that neither lists (no one chose it) "
                      "narrows the span and inflates W1/span: pass options= (key, position[, refusal]), the "
                      "questions' whole option lists", UserWarning, stacklevel=3)
        listed = pd.concat([model[["key", "position"]], human[["key", "position"]]], ignore_index=True)
    else:
        for col in ("key", "position"):
            if col not in options.columns:
                raise UserError(f"options: missing column {col!r}; expected key, position[, refusal]")
        listed = options.assign(position=pd.to_numeric(options["position"], errors="coerce"))
        if "refusal" in listed.columns:
            listed = listed[~listed["refusal"].fillna(False).astype(bool)]
        listed = listed[listed["position"].notna()]
    g = listed.groupby("key")["position"]
    return (g.max() - g.min()).to_dict()


def wasserstein_by_question(model_dist: pd.DataFrame, human_dist: pd.DataFrame, by=None,
                            options: pd.DataFrame | None = None) -> pd.DataFrame:
    """Normalized W1 between D_M and D_H per question (and model, and group of `by`).

    `by`: human columns that define groups (e.g. ["attribute", "group"]); if the model rows carry
    them too they are matched (steered models), otherwise every group is compared with the same D_M.
    `options`: the questions' option lists (key, position[, refusal]) whose span normalizes W1
    (see option_spans). Columns: model, *by, key, distance, n_options_model, n_options_human.
    """
    by = _by(by)
    md = model_dist if "model" in model_dist.columns else model_dist.assign(model="")
    shared = [c for c in by if c in md.columns]
    m = ordinal_distribution(md, ["model", *shared], "model_dist")
    h = ordinal_distribution(_human_side(human_dist, by), by, "human_dist")
    spans = option_spans(options, m, h)
    rows = []
    # human distributions by question: [(group values, rows), ...]
    hg: dict = {}
    for hk, g in h.groupby(["key", *by], sort=False):
        hk = hk if isinstance(hk, tuple) else (hk,)
        hg.setdefault(hk[0], []).append((dict(zip(by, hk[1:])), g))
    for mk, mg in m.groupby(["model", *shared, "key"], sort=False):
        mk = mk if isinstance(mk, tuple) else (mk,)
        model, key = mk[0], mk[-1]
        fixed = dict(zip(shared, mk[1:-1]))
        for groups, g in hg.get(key, []):
            if any(groups[c] != v for c, v in fixed.items()):
                continue
            rows.append({"model": model, **groups, "key": key,
                         "distance": wasserstein_normalized(mg["position"].to_numpy(float), mg["weight"].to_numpy(float),
                                                            g["position"].to_numpy(float), g["weight"].to_numpy(float),
                                                            spans.get(key)),
                         "n_options_model": len(mg), "n_options_human": len(g)})
    cols = ["model", *by, "key", "distance", "n_options_model", "n_options_human"]
    out = pd.DataFrame(rows, columns=cols)
    if out.empty:
        raise UserError("representativeness: no question key is in both the model and the human distributions")
    return out


def representativeness(model_dist: pd.DataFrame, human_dist: pd.DataFrame, by=None, conf: float = 0.95,
                       options: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rep = 1 - mean normalized W1 over questions, per model (and group of `by`).

    Columns (broom names): model, *by, test, estimate (Rep), mean_distance, std.error (of the mean
    distance), conf.low, conf.high (t interval of Rep), n (questions).
    """
    by = _by(by)
    per_q = wasserstein_by_question(model_dist, human_dist, by, options).dropna(subset=["distance"])
    rows = []
    for k, g in per_q.groupby(["model", *by], sort=False):
        k = k if isinstance(k, tuple) else (k,)
        d = g["distance"].to_numpy(float)
        n = len(d)
        mean = float(d.mean())
        se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        q = stats.t.ppf(0.5 + conf / 2, n - 1) if n > 1 else math.nan
        rows.append({**dict(zip(["model", *by], k)), "test": "Representativeness (1 - mean W1/span)",
                     "estimate": 1 - mean, "mean_distance": mean, "std.error": se,
                     "conf.low": 1 - mean - q * se, "conf.high": 1 - mean + q * se, "n": n})
    return pd.DataFrame(rows, columns=["model", *by, "test", "estimate", "mean_distance", "std.error", "conf.low", "conf.high", "n"])


def model_distribution(responses: pd.DataFrame, items: pd.DataFrame, biases=None, form: str = "original") -> pd.DataFrame:
    """Model answer distributions over ordinal positions from survey_bias responses.

    Uses the `form` ("original") of the bias pairs (no perturbation) of `biases` (default all);
    a question asked in several biases is pooled on ordinal position (mean of the per-trial
    shares). Each response label gets the position and refusal flag of its option in the item table.
    Columns: model, key, response, position, refusal, weight.
    """
    for col in ("item", "labels", "positions", "refusal", "form", "perturbation", "key", "bias"):
        if col not in items.columns:
            raise UserError(f"items: missing column {col!r}")
    it = items[(items["form"] == form) & (items["perturbation"].fillna("") == "")]
    if biases is not None:
        it = it[it["bias"].isin(list(biases))]
    lab = []
    for rec in it.to_dict("records"):
        for label, pos, ref in zip(rec["labels"], rec["positions"], rec["refusal"]):
            lab.append({"item": rec["item"], "key": rec["key"], "response": str(label).upper(),
                        "position": float(pos), "refusal": bool(ref)})
    lab = pd.DataFrame(lab, columns=["item", "key", "response", "position", "refusal"])
    r = responses[responses["item"].isin(set(it["item"]))].copy()
    if r.empty:
        raise UserError(f"responses: no rows for the {form} forms of the bias pairs")
    if "model" not in r.columns:
        r["model"] = ""
    r["response"] = r["response"].astype(str).str.strip().str.upper()
    r["share"] = r["weight"] / trial_total(r)
    r = r.drop(columns=[c for c in ("key", "position", "refusal") if c in r.columns])
    r = r.merge(lab, on=["item", "response"], how="left")
    # answers outside the options shown (e.g. 'E' to a 4-option form) have no position
    r["refusal"] = r["refusal"].fillna(True).astype(bool)
    r["key"] = r["key"].fillna(r["item"].map(it.set_index("item")["key"]))
    ntrials = n_trials(r, ["model", "key"])
    r["w"] = r["share"] / ntrials
    # pool on the ordinal position: the same option may carry different letters in different biases
    out = r.groupby(["model", "key", "position", "refusal"], as_index=False, sort=False, dropna=False).agg(
        response=("response", "first"), weight=("w", "sum"))
    # every option of the question is listed, unanswered ones with weight 0, so the span that
    # normalizes W1 is that of the whole option list (OpinionQA), not of the answers drawn
    full = lab[~lab["refusal"]].drop_duplicates(["key", "position"])[["key", "position", "response", "refusal"]]
    full = out[["model", "key"]].drop_duplicates().merge(full, on="key")
    absent = full.merge(out[["model", "key", "position"]], on=["model", "key", "position"], how="left",
                        indicator=True)
    absent = absent[absent["_merge"] == "left_only"].drop(columns="_merge").assign(weight=0.0)
    out = pd.concat([out, absent], ignore_index=True) if len(absent) else out
    return out[["model", "key", "response", "position", "refusal", "weight"]]


# ---------------------------------------------------------------- interval from resampling units

SMALL_GROUP = 100  # respondents below which the note on small-sample bias is printed


def _unit_matrix(rows: pd.DataFrame, columns: pd.MultiIndex) -> tuple[np.ndarray, list]:
    """(units x (key, position)) weights of each unit (respondent or subject), refusals already dropped."""
    m = rows.pivot_table(index="unit", columns=["key", "position"], values="weight", aggfunc="sum", fill_value=0.0)
    m = m.reindex(columns=columns, fill_value=0.0)
    return m.to_numpy(float), list(m.index)


def _rep_of_pooled(pm: np.ndarray, ph: np.ndarray, seg: np.ndarray, dx: np.ndarray, span: np.ndarray) -> np.ndarray:
    """Rep = 1 - mean over keys of W1/span, for each row of the pooled (replicates x columns) weights.
    W1 on the line is the area between the two CDFs: sum over a key's positions of |Fm - Fh| x gap."""
    keys = seg.max() + 1
    dists = np.empty((pm.shape[0], keys))
    for k in range(keys):
        cols = seg == k
        a, b = pm[:, cols], ph[:, cols]
        ta, tb = a.sum(1, keepdims=True), b.sum(1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            fa, fb = np.cumsum(a / ta, 1), np.cumsum(b / tb, 1)
        dists[:, k] = (np.abs(fa - fb)[:, :-1] * dx[cols][:-1]).sum(1) / span[k]
        dists[(ta[:, 0] <= 0) | (tb[:, 0] <= 0), k] = np.nan
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a replicate with no key in common: NaN
        return 1 - np.nanmean(dists, axis=1)


def _layout(model_units: pd.DataFrame, human: pd.DataFrame):
    """The (key, position) columns of both sides, each column's key index, each key's span and the gaps."""
    both = pd.concat([model_units[["key", "position"]], human[["key", "position"]]])
    cols = pd.MultiIndex.from_frame(both.drop_duplicates().sort_values(["key", "position"]))
    keys = cols.get_level_values(0).to_numpy()
    pos = cols.get_level_values(1).to_numpy(float)
    seg = pd.factorize(keys)[0]
    span = np.array([np.ptp(pos[seg == k]) for k in range(seg.max() + 1)])
    span = np.where(span > 0, span, np.nan)
    dx = np.append(np.diff(pos), 0.0)
    return cols, seg, span, dx


def _clean(u: pd.DataFrame) -> pd.DataFrame:
    return u.assign(key=u["key"].astype(str), position=pd.to_numeric(u["position"]).astype(float),
                    weight=u["weight"].astype(float))


BOOT_METHOD = "basic (reverse percentile), upper bound capped at Rep = 1"


def _calibrated_half_alpha(rng, cm: np.ndarray, ch: np.ndarray, reps: np.ndarray, full: float, um, uh, geometry,
                           conf: float, outer: int = 200, inner: int = 100) -> float:
    """The double bootstrap's calibrated alpha/2 of the basic interval (Hall 1986; Davison & Hinkley 1997,
    sec. 3.9): within each of `outer` first replicates, `inner` resamples of that replicate's own units
    (multinomial counts with the replicate's counts as probabilities, all drawn at once) say at which
    level its basic interval would cover the full-sample Rep; alpha/2 is the (1 - conf) quantile of those
    levels, so that the interval covers at the nominal rate where the plain basic one falls short (Rep's
    W1 distances are not smooth near equal CDFs: the plain basic interval covered 88% at 95% in
    tests/test_rep_coverage.py's design). Hand-written and vectorized: scipy.stats.bootstrap has no
    double bootstrap, and calling it per replicate would recompute the pandas statistic 20,000 times."""
    outer = min(outer, len(reps))
    nm, nh = cm.shape[1], ch.shape[1]
    block = max(1, int(4e6 // (inner * (nm + nh))))  # outer replicates per block: count matrices under ~32 MB
    inn = np.empty((inner, outer))
    for s in range(0, outer, block):
        e = min(outer, s + block)
        im = rng.multinomial(nm, cm[s:e] / nm, size=(inner, e - s)).reshape(-1, nm).astype(float)
        ih = rng.multinomial(nh, ch[s:e] / nh, size=(inner, e - s)).reshape(-1, nh).astype(float)
        inn[:, s:e] = _rep_of_pooled(im @ um, ih @ uh, *geometry).reshape(inner, e - s)
    with np.errstate(invalid="ignore"):
        f = np.nanmean(inn <= 2 * reps[:outer] - full, axis=0)
    level = np.minimum(f, 1 - f)  # the two-sided half-level at which replicate b's basic interval covers Rep
    return float(max(np.nanquantile(level, 1 - conf), 0.5 / len(reps)))


def _summary(reps: np.ndarray, full: float, replicates: int, conf: float, half_alpha: float | None = None) -> dict:
    """The basic bootstrap interval of Rep, [2 Rep - q_hi, 2 Rep - q_lo] of the replicates' quantiles
    (Davison & Hinkley 1997, eq. 5.6), not the percentile interval [q_lo, q_hi]: Rep is biased low by
    sampling noise (each sample's W1 distance adds noise to the true one), so the replicates sit below
    Rep as Rep sits below the truth, and the percentile interval covered only 0-61% (issue 40's audit);
    the basic interval reflects that shift (tests/test_rep_coverage.py simulates its coverage). Rep = 1
    (identical distributions) lies on the boundary of [0, 1]: the upper bound is capped there. The
    percentile bounds stay beside it (`boot.percentile.*`), and `boot.note` says when the bias-corrected
    Rep falls outside the interval."""
    a = (1 - conf) / 2 if half_alpha is None else half_alpha
    q_lo, q_hi = np.nanquantile(reps, [(1 - conf) / 2, (1 + conf) / 2])  # the percentile interval
    b_lo, b_hi = np.nanquantile(reps, [a, 1 - a])
    bias = float(np.nanmean(reps) - full)
    lo, hi = 2 * full - b_hi, min(1.0, 2 * full - b_lo)
    corrected = float(full - bias)
    note = "" if lo <= corrected <= hi else (f"the bias-corrected Rep {corrected:.3f} lies outside the basic "
                                             "interval: the bootstrap distribution is skewed; read both with care")
    return {"boot.low": float(lo), "boot.high": float(hi), "boot.bias": bias, "estimate.corrected": corrected,
            "boot.percentile.low": float(q_lo), "boot.percentile.high": float(q_hi),
            "boot.method": BOOT_METHOD + ("" if half_alpha is None else
                                          f"; double-bootstrap calibrated level {1 - 2 * half_alpha:.4f}"),
            "boot.note": note, "boot.half_alpha": float(a), "replicates": int(replicates), "rep_full": float(full)}


def _resample_indices(n_model: int, n_human: int, replicates: int, seed: int):
    """The seeded generator and the (replicates x units) row indices of the model's subjects and the
    people's respondents that `resampled_interval` resamples (model first: the test's loop draws in this
    order). One home for the draw, so that `--check-r` hands R the very resamples Python used."""
    rng = np.random.default_rng(seed)
    idx_m = rng.integers(0, n_model, size=(replicates, n_model))
    idx_h = rng.integers(0, n_human, size=(replicates, n_human))
    return rng, idx_m, idx_h


def resamples(model_units: pd.DataFrame, human_units: pd.DataFrame, replicates: int = 2000, seed: int = 0,
              conf: float = 0.95, calibrate: int = 100) -> dict:
    """What `resampled_interval(model_units, human_units, replicates, conf, seed, calibrate)` resampled, for
    an outside twin to recompute its columns (`analyze --check-r`, R/studyfile.R's sf_representativeness_boot):
    `units_model`, `units_human` (unit labels, as str, in the order the indices refer to), `idx_model`,
    `idx_human` (0-based replicates x units row indices) and `half_alpha`, the level/2 of the basic interval
    (the double bootstrap's calibrated level; (1 - conf)/2 without calibration)."""
    model_units, human_units = _clean(model_units), _clean(human_units)
    cols, _, _, _ = _layout(model_units, human_units)
    um, units_m = _unit_matrix(model_units, cols)
    uh, units_h = _unit_matrix(human_units, cols)
    _, idx_m, idx_h = _resample_indices(len(um), len(uh), replicates, seed)
    r = resampled_interval(model_units, human_units, replicates, conf, seed, calibrate)
    return {"units_model": [str(u) for u in units_m], "units_human": [str(u) for u in units_h],
            "idx_model": idx_m, "idx_human": idx_h, "half_alpha": r["boot.half_alpha"]}


def resampled_interval(model_units: pd.DataFrame, human_units: pd.DataFrame, replicates: int = 2000,
                       conf: float = 0.95, seed: int = 0, calibrate: int = 100) -> dict:
    """Basic bootstrap interval of Rep (`_summary`) from resampling units: the model's subjects and the people's respondents,
    each with replacement and independently (the two samples are independent), Rep recomputed per replicate.

    Inputs: one row per unit x key x position: `unit`, `key`, `position`, `weight` (a respondent's survey-
    weighted answer, a subject's shares over its trials), refusals dropped. The span of each key is that of
    the positions listed on either side, as in `wasserstein_by_question`. Hand-written on a units x options
    matrix because scipy.stats.bootstrap would call the pandas statistic thousands of times (it is the test
    reference; tests/test_representativeness.py). Returns boot.low, boot.high, boot.bias (mean of the
    replicates minus Rep on the whole samples: how much sampling noise lowers Rep), estimate.corrected
    (the bootstrap bias-corrected Rep, Rep - boot.bias = 2 Rep - mean of the replicates; Efron &
    Tibshirani 1993, sec. 10.6: it removes the first-order bias and adds variance), replicates,
    n_subjects, n_respondents. `calibrate`: inner resamples per replicate of the double bootstrap that
    calibrates the basic interval's level (`_calibrated_half_alpha`, on the first 200 replicates, drawn
    after them, so the replicates are unchanged by it); 0: the plain basic interval."""
    model_units, human_units = _clean(model_units), _clean(human_units)
    cols, seg, span, dx = _layout(model_units, human_units)
    um, _ = _unit_matrix(model_units, cols)
    uh, _ = _unit_matrix(human_units, cols)
    full = _rep_of_pooled(um.sum(0, keepdims=True), uh.sum(0, keepdims=True), seg, dx, span)[0]
    rng, idx_m, idx_h = _resample_indices(len(um), len(uh), replicates, seed)
    cm = np.zeros((replicates, len(um)))
    ch = np.zeros((replicates, len(uh)))
    np.add.at(cm, (np.arange(replicates)[:, None], idx_m), 1.0)
    np.add.at(ch, (np.arange(replicates)[:, None], idx_h), 1.0)
    reps = _rep_of_pooled(cm @ um, ch @ uh, seg, dx, span)
    half = _calibrated_half_alpha(rng, cm, ch, reps, full, um, uh, (seg, dx, span), conf,
                                  inner=calibrate) if calibrate else None
    return {**_summary(reps, full, replicates, conf, half), "n_subjects": len(um), "n_respondents": len(uh)}


def multinomial_interval(model_units: pd.DataFrame, human_dist: pd.DataFrame, replicates: int = 2000,
                         conf: float = 0.95, seed: int = 0) -> dict:
    """Basic bootstrap interval of Rep (`_summary`) where the people come as a distribution with its count, not as rows.

    Each question's human distribution (`key`, `position`, `weight`: survey-weighted shares or counts,
    refusals dropped) is redrawn as a multinomial sample of its `n_respondents` (the substantive answers'
    unweighted count, summed over the question's rows) with the observed shares as probabilities; the
    model's subjects (`unit` rows, as in `resampled_interval`, each row already multiplied by its persona
    weight) are resampled with replacement, independently. The survey weights' design effect is not in
    the interval: the bundled counts carry no per-respondent weights. Returns what `resampled_interval`
    returns, n_respondents being the largest question's count."""
    d = multinomial_resamples(model_units, human_dist, replicates, seed)
    seg, span, dx, um = d["seg"], d["span"], d["dx"], d["unit_matrix"]
    full = _rep_of_pooled(um.sum(0, keepdims=True), d["human_full"][None, :], seg, dx, span)[0]
    counts = np.zeros((replicates, len(um)))
    np.add.at(counts, (np.arange(replicates)[:, None], d["idx_model"]), 1.0)
    reps = _rep_of_pooled(counts @ um, d["human_pooled"], seg, dx, span)
    return {**_summary(reps, full, replicates, conf), "n_subjects": len(um),
            "n_respondents": max(d["sizes"], default=0)}


def multinomial_resamples(model_units: pd.DataFrame, human_dist: pd.DataFrame, replicates: int = 2000,
                          seed: int = 0) -> dict:
    """What `multinomial_interval` resamples, drawn once here for it and for `--check-r`'s R twin (R cannot
    redraw numpy's): `idx_model` (replicates x subjects, 0-based rows of `units_model`, drawn first) and
    `human_pooled` (replicates x columns: each question's redrawn multinomial counts), the columns' `key`
    and `position`, the unit matrix, the people's whole-sample weights `human_full` and each question's
    count (`sizes`)."""
    model_units = _clean(model_units)
    human = _clean(human_dist).assign(n_respondents=pd.to_numeric(human_dist["n_respondents"]).astype(float))
    cols, seg, span, dx = _layout(model_units, human)
    um, units = _unit_matrix(model_units, cols)
    h = human.groupby(["key", "position"])[["weight", "n_respondents"]].sum().reindex(cols, fill_value=0.0)
    hw, hn = h["weight"].to_numpy(float), h["n_respondents"].to_numpy(float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(um), size=(replicates, len(um)))
    ph = np.zeros((replicates, len(cols)))
    sizes = []
    for k in range(seg.max() + 1):
        c = seg == k
        n, tot = int(round(hn[c].sum())), hw[c].sum()
        sizes.append(n)
        if n > 0 and tot > 0:
            ph[:, c] = rng.multinomial(n, hw[c] / tot, size=replicates)
    return {"units_model": [str(u) for u in units], "idx_model": idx, "human_pooled": ph, "human_full": hw,
            "key": [str(k) for k in cols.get_level_values(0)], "position": cols.get_level_values(1).to_numpy(float),
            "unit_matrix": um, "seg": seg, "span": span, "dx": dx, "sizes": sizes}




def small_sample_note(n_respondents: int, bias: float) -> str:
    """The note beside a Rep computed against few respondents (issue 25, audit finding 7)."""
    if n_respondents >= SMALL_GROUP:
        return ""
    return (f"{n_respondents} respondents: Rep is biased low by their sampling noise (resampling puts the bias "
            f"near {bias:+.3f}; a perfect model scores about 0.94 against 30 respondents); compare groups of "
            "similar size")
