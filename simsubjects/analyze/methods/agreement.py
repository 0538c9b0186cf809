"""Story-level agreement between a model's P(Yes) and people's (MoCa Table 3).

Metrics, each over stories (the released code's `moca/evaluator.py` definitions):

* ``agreement`` — 3-class discrete agreement: a story's class is Yes if P(Yes) > 0.6, No if
  P(Yes) < 0.4, ambiguous otherwise (50% +/- 10%), the same rule for people and the model; the
  share of stories whose classes match. A proportion (the paper prints percent).
* ``auc`` — ROC AUC of the model's P(Yes) against the human majority, on the stories people
  answered unambiguously (human class Yes or No); ties count one half (Mann-Whitney).
* ``mae`` — mean |P_model(Yes) - P_human(Yes)|. (The released code takes the probability of
  the human-majority label on both sides, which is the same number for two options.)
* ``ce`` — the paper's cross-entropy "on the probability of the matched label":
  mean over stories of -h* log(max(m*, 1e-3)), h* = people's share of their majority answer,
  m* = the model's probability of that answer (ties go to Yes, as argmax does in the code).
* ``ce_binary`` — full binary cross-entropy -[h log m + (1-h) log(1-m)] with m clipped to
  [1e-3, 1 - 1e-3]; not in the paper, reported for completeness.

Intervals: percentile bootstrap over stories (resampled with replacement, all stories; AUC is
recomputed on the unambiguous stories of each draw), seeded and vectorized: each draw is a row
of story counts, every metric a weighted mean (AUC a weighted pair count). `half_width` is
(conf.high - conf.low) / 2, the paper's "+/-".

With personas (a `persona` column): one row set per persona; ``average`` = the mean of the
per-persona metrics, with its interval from the same story draws applied to every persona;
``best`` / ``worst`` = the persona with the highest / lowest point agreement (the paper's
"most / least human-aligned"); ``mean_p`` = metrics of P(Yes) averaged over personas (the text's
wording of "Persona (average)", and what the released code feeds to the AMCE).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from simsubjects.errors import UserError

METRICS = ("agreement", "auc", "mae", "ce", "ce_binary")
CE_FLOOR = 1e-3


def classify(p) -> np.ndarray:
    """Yes (p > 0.6), No (p < 0.4), ambiguous (otherwise; NaN counts as ambiguous)."""
    p = np.asarray(p, dtype=float)
    return np.where(p > 0.6, "Yes", np.where(p < 0.4, "No", "ambiguous"))


def story_metrics(m: np.ndarray, h: np.ndarray) -> dict[str, np.ndarray]:
    """Per-story terms of the mean metrics; m is (..., n) model P(Yes), h is (n,) human P(Yes)."""
    m = np.asarray(m, dtype=float)
    h = np.asarray(h, dtype=float)
    yes_major = h >= 0.5  # argmax([p, 1-p]) picks Yes on a tie
    h_star = np.where(yes_major, h, 1 - h)
    m_star = np.where(yes_major, m, 1 - m)
    mc = np.clip(m, CE_FLOOR, 1 - CE_FLOOR)
    return {
        "agreement": (classify(m) == classify(h)).astype(float),
        "mae": np.abs(m - h),
        "ce": -h_star * np.log(np.maximum(m_star, CE_FLOOR)),
        "ce_binary": -(h * np.log(mc) + (1 - h) * np.log(1 - mc)),
    }


def _auc(score: np.ndarray, h: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Weighted Mann-Whitney AUC. score (P, n), counts (B, n) -> (P, B)."""
    cls = classify(h)
    pos, neg = cls == "Yes", cls == "No"
    wp, wn = counts[:, pos], counts[:, neg]  # (B, npos), (B, nneg)
    denom = wp.sum(1) * wn.sum(1)
    out = np.empty((score.shape[0], counts.shape[0]))
    for i, s in enumerate(score):  # loop over personas, not over draws
        sp, sn = s[pos][:, None], s[neg][None, :]
        c = (sp > sn) + 0.5 * (sp == sn)  # (npos, nneg)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[i] = ((wp @ c) * wn).sum(1) / denom
    return out


def _metric_draws(m: np.ndarray, h: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    """Every metric for every persona (rows of m) and every story-count row of counts."""
    n = counts.sum(1, keepdims=True).T  # (1, B)
    terms = story_metrics(m, h)
    out = {k: (v @ counts.T) / n for k, v in terms.items()}
    out["auc"] = _auc(m, h, counts)
    return out


def story_counts(rng: np.random.Generator, n: int, n_boot: int) -> np.ndarray:
    """(n_boot, n) multiplicities of the n stories in each bootstrap draw."""
    idx = rng.integers(0, n, size=(n_boot, n))
    flat = (idx + n * np.arange(n_boot)[:, None]).ravel()
    return np.bincount(flat, minlength=n_boot * n).reshape(n_boot, n).astype(float)


def _as_p(obj, what: str) -> pd.DataFrame:
    if isinstance(obj, pd.Series):
        return pd.DataFrame({"item": obj.index.astype(str), "p_yes": obj.to_numpy(dtype=float)})
    if isinstance(obj, pd.DataFrame):
        col = "p_yes" if "p_yes" in obj else "human_p_yes" if "human_p_yes" in obj else None
        if "item" not in obj or col is None:
            raise UserError(f"{what}: needs columns item and p_yes (or a Series indexed by item)")
        return obj.rename(columns={col: "p_yes"})
    raise UserError(f"{what}: expected a DataFrame or a Series, got {type(obj).__name__}")


def agreement(model_p, human_p, n_boot: int = 10000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Table 3 metrics with bootstrap intervals, per model (and persona) against people.

    model_p: DataFrame `item, p_yes` (+ optional `model`, `persona`) or a Series by item.
    human_p: DataFrame `item, p_yes` (or the items table with `human_p_yes`) or a Series by item.
    Stories lacking a model P(Yes) for any persona of a model are left out of that model; `n`
    says how many stories each row uses.
    """
    mp, hp = _as_p(model_p, "model_p"), _as_p(human_p, "human_p")
    if hp["item"].duplicated().any():
        raise UserError("human_p: one P(Yes) per item expected")
    if "model" not in mp:
        mp = mp.assign(model="")
    if "persona" not in mp:
        mp = mp.assign(persona="")
    mp = mp.assign(persona=mp["persona"].fillna("").astype(str))
    if n_boot < 1:
        raise UserError("n_boot: must be at least 1")
    hser = hp.set_index("item")["p_yes"].astype(float)
    alpha = (1 - level) / 2
    rows = []
    for model, g in mp.groupby("model", sort=True):
        wide = g.pivot_table(index="item", columns="persona", values="p_yes", aggfunc="mean")
        wide = wide[wide.index.isin(hser.index)].dropna()
        if wide.empty:
            continue
        personas = list(wide.columns)
        m = wide.to_numpy().T  # (P, n)
        h = hser.loc[wide.index].to_numpy()
        n = h.size
        rng = np.random.default_rng(seed)
        counts = story_counts(rng, n, n_boot)
        point = _metric_draws(m, h, np.ones((1, n)))  # each (P, 1)
        draws = _metric_draws(m, h, counts)  # each (P, B)

        def emit(summary, persona, est, dr):
            for k in METRICS:
                lo, hi = np.nanquantile(dr[k], [alpha, 1 - alpha]) if np.isfinite(dr[k]).any() else (np.nan, np.nan)
                rows.append({"model": model, "persona": persona, "summary": summary, "metric": k,
                             "estimate": float(est[k]), "conf.low": float(lo), "conf.high": float(hi),
                             "half_width": float((hi - lo) / 2), "n": n, "n_boot": n_boot,
                             "conf_level": level, "method": "bootstrap-story-percentile"})

        if personas == [""]:
            emit("single", "", {k: point[k][0, 0] for k in METRICS}, {k: draws[k][0] for k in METRICS})
            continue
        for i, slug in enumerate(personas):
            emit("persona", slug, {k: point[k][i, 0] for k in METRICS}, {k: draws[k][i] for k in METRICS})
        with warnings.catch_warnings():  # draws where AUC is undefined for every persona
            warnings.simplefilter("ignore", RuntimeWarning)
            emit("average", "", {k: np.nanmean(point[k][:, 0]) for k in METRICS},
                 {k: np.nanmean(draws[k], axis=0) for k in METRICS})
        agg = point["agreement"][:, 0]
        for summary, i in (("best", int(np.argmax(agg))), ("worst", int(np.argmin(agg)))):
            emit(summary, personas[i], {k: point[k][i, 0] for k in METRICS}, {k: draws[k][i] for k in METRICS})
        mean_m = m.mean(0, keepdims=True)
        pm, dm = _metric_draws(mean_m, h, np.ones((1, n))), _metric_draws(mean_m, h, counts)
        emit("mean_p", "", {k: pm[k][0, 0] for k in METRICS}, {k: dm[k][0] for k in METRICS})
    cols = ["model", "persona", "summary", "metric", "estimate", "conf.low", "conf.high", "half_width",
            "n", "n_boot", "conf_level", "method"]
    return pd.DataFrame(rows, columns=cols)
