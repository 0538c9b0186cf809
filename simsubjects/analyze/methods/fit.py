"""Every person's answers scored under the model (issue 39): the fit of a model to individual people.

Pure functions on the decision frame (docs/schema.md, "Fit tables"): one row per person x decision x
option with the model's exact probability `p` (normalized over the decision's options) and `chosen`
(the option the person answered). The unit of every interval is the person.

* `decision_fit`: per decision, log p(answer), its rank among the options, argmax, Brier score;
* `person_fit`: per person, the summed and mean log-likelihood per decision, accuracy, Brier, n_decisions;
* `baselines`: the same decisions under a baseline, as frames of the same shape: `uniform` (1/k),
  `marginal_loo` (the other people's answers to the item in the condition, add-`SMOOTH` smoothed) and,
  where the frame has previous moves (repeated games), `logit_loo` (a logit of the choice on prev_own
  and prev_other fitted on the other people);
* `study_fit`: McFadden's pseudo-R^2 = 1 - LL_model / LL_baseline (Centaur: Binz et al., Nature 2025,
  against the uniform choice; McFadden 1974) with a cluster bootstrap over people;
* `compare`: two systems (models, prompts, ablations, baselines) on the same people: the mean per-person
  difference in mean log-likelihood per decision, a paired t-test over people (tests.paired_t).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from simsubjects.analyze.methods import tests

FRAME = ["person", "decision", "item", "round", "condition", "option", "p", "chosen", "model", "ablation",
         "prev_own", "prev_other"]
UNMATCHED = ["person", "decision", "item", "answer"]
SYSTEM = ["kind", "model", "ablation"]  # kind: model | baseline
SMOOTH = 0.5  # add-1/2 (Jeffreys) pseudo-count per option of the leave-one-out marginal: an answer no other
# person gave keeps a finite log-likelihood
RIDGE = 1.0  # L2 penalty of the leave-one-out logit: separable cells (everyone cooperates after CC) stay finite
N_BOOT = 2000
LEVEL = 0.95
BOOT_METHOD = "cluster bootstrap over people, percentile"


def empty_frame() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="Int64" if c == "round" else "bool" if c == "chosen" else
                                      float if c == "p" else object) for c in FRAME})


def _keys(frame: pd.DataFrame) -> list[str]:
    return [c for c in SYSTEM if c in frame.columns] + ["person", "decision"]


def decision_fit(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per system x person x decision: `answer`, `p_answer`, `loglik` = log p(answer), `rank` (1 =
    the model's most probable option; ties share the better rank), `argmax` (rank 1), `brier` (sum over the
    options of (p - chosen)^2, 0 to 2), `n_options` (k), `loglik_uniform` = log(1/k)."""
    f = frame.copy()
    keys = _keys(f)
    f["_y"] = f["chosen"].astype(float)
    f["_sq"] = (f["p"] - f["_y"]) ** 2
    chosen = f[f["chosen"].astype(bool)].set_index(keys)
    out = chosen[["item", "round", "condition"]].copy()
    out["answer"] = chosen["option"]
    out["p_answer"] = chosen["p"].astype(float)
    with np.errstate(divide="ignore"):
        out["loglik"] = np.log(out["p_answer"])
    pa = f.merge(out["p_answer"].reset_index(), on=keys, how="left")["p_answer"].to_numpy()
    f["_better"] = f["p"].to_numpy() > pa
    agg = f.groupby(keys, sort=False, dropna=False).agg(n_options=("p", "size"), _better=("_better", "sum"),
                                                        brier=("_sq", "sum"))
    out = out.join(agg)
    out["rank"] = out.pop("_better").astype(int) + 1
    out["argmax"] = out["rank"] == 1
    out["loglik_uniform"] = -np.log(out["n_options"].astype(float))
    cols = [*keys, "item", "round", "condition", "n_options", "answer", "p_answer", "loglik", "loglik_uniform",
            "rank", "argmax", "brier"]
    return out.reset_index()[cols]


def person_fit(decisions: pd.DataFrame) -> pd.DataFrame:
    """One row per system x person: `n_decisions`, `loglik` (the sum over the person's decisions),
    `loglik_mean` (per decision), `loglik_uniform` (the uniform choice's sum), `accuracy` (share of
    decisions where the answer is the model's argmax), `brier` (mean per decision), `perplexity`
    (exp(-loglik_mean))."""
    keys = [c for c in SYSTEM if c in decisions.columns] + ["person"]
    out = decisions.groupby(keys, sort=False, dropna=False).agg(
        n_decisions=("loglik", "size"), loglik=("loglik", "sum"), loglik_mean=("loglik", "mean"),
        loglik_uniform=("loglik_uniform", "sum"), accuracy=("argmax", "mean"), brier=("brier", "mean")).reset_index()
    out["perplexity"] = np.exp(-out["loglik_mean"])
    return out


# ------------------------------------------------------------------------------------------ baselines

def _people_answers(frame: pd.DataFrame) -> pd.DataFrame:
    """The people's answers, once per person x decision (the frame repeats them per model and ablation)."""
    cols = ["person", "decision", "item", "round", "condition", "option", "chosen", "prev_own", "prev_other"]
    return frame[[c for c in cols if c in frame.columns]].drop_duplicates(["person", "decision", "option"])


def uniform(frame: pd.DataFrame) -> pd.DataFrame:
    f = _people_answers(frame)
    return f.assign(p=1.0 / f.groupby(["person", "decision"])["option"].transform("size"))


def marginal_loo(frame: pd.DataFrame, smooth: float = SMOOTH) -> pd.DataFrame:
    """The other people's answers to the same item in the same condition: p = (count + smooth) /
    (n_others + smooth * k), leaving the person out (a person's own answer never predicts itself)."""
    f = _people_answers(frame).copy()
    f["_y"] = f["chosen"].astype(float)
    cell = ["item", "condition", "option"]
    total = f.groupby(cell, dropna=False)["_y"].transform("sum")
    own = f.groupby([*cell, "person"], dropna=False)["_y"].transform("sum")
    f["_n"] = f["_y"]
    n_all = f.groupby(["item", "condition"], dropna=False)["_n"].transform("sum")
    n_own = f.groupby(["item", "condition", "person"], dropna=False)["_n"].transform("sum")
    k = f.groupby(["person", "decision"])["option"].transform("size")
    f["p"] = (total - own + smooth) / (n_all - n_own + smooth * k)
    return f.drop(columns=["_y", "_n"])


def logit_loo(frame: pd.DataFrame, ridge: float = RIDGE) -> pd.DataFrame | None:
    """Repeated games: per item, a logit of each option against the rest on dummies of prev_own and
    prev_other (statsmodels GLM, binomial, L2 penalty `ridge`), fitted on the other people; each person's
    decisions are predicted by the fit that left them out, normalized over the options (for two options
    this is the binary logit). None when the frame has no previous moves."""
    f = _people_answers(frame)
    if "prev_own" not in f.columns or not (f["prev_own"].fillna("").astype(str) != "").any():
        return None
    parts = [_logit_item(g, ridge) for _, g in f.groupby("item", sort=False)]
    return pd.concat(parts, ignore_index=True)


def _logit_item(f: pd.DataFrame, ridge: float) -> pd.DataFrame:
    import statsmodels.api as sm

    f = f.copy()
    x = pd.get_dummies(f[["prev_own", "prev_other"]].fillna("").astype(str), drop_first=True, dtype=float)
    x = sm.add_constant(x, has_constant="add")
    f["p"] = np.nan
    people = f["person"].unique()
    for person, option in itertools.product(people, f["option"].unique()):
        train = (f["person"] != person) & (f["option"] == option)
        test = (f["person"] == person) & (f["option"] == option)
        if not train.any():
            f.loc[test, "p"] = np.nan
            continue
        y = f.loc[train, "chosen"].astype(float)
        # ridge: a saturated logit of a cell everyone answers alike has an infinite coefficient (separation)
        fit = sm.GLM(y, x[train], family=sm.families.Binomial()).fit_regularized(alpha=ridge / train.sum(), L1_wt=0.0)
        f.loc[test, "p"] = fit.predict(x[test])
    k = f.groupby(["person", "decision"])["option"].transform("size")
    f["p"] = f["p"].fillna(1.0 / k)  # no other person: the uniform choice
    f["p"] = f["p"] / f.groupby(["person", "decision"])["p"].transform("sum")
    return f


def baselines(frame: pd.DataFrame) -> pd.DataFrame:
    """The baselines' frames stacked, kind = baseline, model = the baseline's name, ablation = ""."""
    made = {"uniform": uniform(frame), "marginal_loo": marginal_loo(frame), "logit_loo": logit_loo(frame)}
    return pd.concat([b.assign(kind="baseline", model=name, ablation="") for name, b in made.items() if b is not None],
                     ignore_index=True)


def systems(frame: pd.DataFrame) -> pd.DataFrame:
    """The model rows (kind = model) and the baselines' on the same decisions, in one frame."""
    return pd.concat([frame.assign(kind="model", ablation=frame["ablation"].fillna("")), baselines(frame)],
                     ignore_index=True)


# ------------------------------------------------------------------------------------------ the study

def _boot_r2(lm: np.ndarray, lb: np.ndarray, n_boot: int, seed: int, level: float) -> tuple[float, float]:
    """Percentile interval of 1 - sum(lm)/sum(lb) resampling people (each with all their decisions):
    one index row per draw (vectorized), as paired.cluster_bootstrap does for a mean difference. Written
    here rather than through scipy.stats.bootstrap(paired=True), which would resample alike: the draws
    stay the package's documented ones (numpy default_rng(seed).integers, as paired.cluster_bootstrap),
    so anyone can repeat them exactly (tests/test_fit_methods.py does)."""
    n = lm.size
    if n < 2:
        return math.nan, math.nan
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    draws = 1 - lm[idx].sum(1) / lb[idx].sum(1)
    lo, hi = np.quantile(draws, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def study_fit(people: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL) -> pd.DataFrame:
    """One row per model x ablation x baseline: `estimate` = McFadden's pseudo-R^2 = 1 - LL_model /
    LL_baseline over the decisions both scored (the baseline `uniform` gives Centaur's number), with
    `conf.low`, `conf.high` from a cluster bootstrap over people (percentile, `n_boot` draws, seeded)."""
    models = people[people["kind"] == "model"]
    bases = people[people["kind"] == "baseline"]
    rows = []
    for (model, abl), m in models.groupby(["model", "ablation"], sort=False, dropna=False):
        for base, b in bases.groupby("model", sort=False):
            j = m.merge(b[["person", "loglik", "n_decisions"]], on="person", suffixes=("", "_b"))
            lm, lb = j["loglik"].to_numpy(float), j["loglik_b"].to_numpy(float)
            lo, hi = _boot_r2(lm, lb, n_boot, seed, level)
            n_dec = int(j["n_decisions"].sum())
            rows.append({"model": model, "ablation": abl, "baseline": base, "estimate": 1 - lm.sum() / lb.sum(),
                         "conf.low": lo, "conf.high": hi, "loglik": lm.sum(), "loglik_baseline": lb.sum(),
                         "loglik_mean": lm.sum() / n_dec, "loglik_mean_baseline": lb.sum() / n_dec,
                         "accuracy": float((j["accuracy"] * j["n_decisions"]).sum() / n_dec),
                         "brier": float((j["brier"] * j["n_decisions"]).sum() / n_dec),
                         "n_people": len(j), "n_decisions": n_dec, "n_boot": n_boot, "conf.level": level,
                         "method": f"McFadden pseudo-R2 vs {base}; {BOOT_METHOD}"})
    return pd.DataFrame(rows, columns=STUDY_COLUMNS)


STUDY_COLUMNS = ["model", "ablation", "baseline", "estimate", "conf.low", "conf.high", "loglik", "loglik_baseline",
                 "loglik_mean", "loglik_mean_baseline", "accuracy", "brier", "n_people", "n_decisions", "n_boot",
                 "conf.level", "method"]
COMPARE_COLUMNS = ["model_a", "ablation_a", "model_b", "ablation_b", "measure", "estimate", "std.error",
                   "statistic", "df", "p.value", "conf.low", "conf.high", "n", "n_decisions", "method"]


def compare(decisions: pd.DataFrame, a: tuple, b: tuple, level: float = LEVEL) -> dict:
    """System a = (kind, model, ablation) against b on the same people: each person's mean log-likelihood
    per decision over the decisions both scored, and the paired t-test of the mean difference (a - b)
    over people (tests.paired_t; R's t.test(paired = TRUE)): the person is the unit."""
    sel = [_of(decisions, s) for s in (a, b)]
    both = pd.concat(sel, axis=1, keys=["a", "b"], join="inner").reset_index()
    per = both.groupby("person", sort=False)[["a", "b"]].mean()
    t = tests.paired_t(per["a"].to_numpy(), per["b"].to_numpy(), level)
    return {"model_a": a[1], "ablation_a": a[2], "model_b": b[1], "ablation_b": b[2], "measure": "loglik_mean",
            **{k: t.get(k, math.nan) for k in ("estimate", "std.error", "statistic", "df", "p.value", "conf.low",
                                               "conf.high")},
            "n": int(len(per)), "n_decisions": int(len(both)), "method": "paired t-test over people"}


def _of(decisions: pd.DataFrame, s: tuple) -> pd.Series:
    m = (decisions["kind"] == s[0]) & (decisions["model"] == s[1]) & (decisions["ablation"] == s[2])
    return decisions[m].set_index(["person", "decision"])["loglik"]


def comparisons(decisions: pd.DataFrame, level: float = LEVEL) -> pd.DataFrame:
    """The pairs a reader asks about: each ablation twin against its model's full prompt, every two models
    on the full prompt, and each model's full prompt against each baseline."""
    sys = decisions[SYSTEM].drop_duplicates().itertuples(index=False, name=None)
    sys = list(sys)
    full = [s for s in sys if s[0] == "model" and s[2] == ""]
    pairs = [(s, ("model", s[1], "")) for s in sys if s[0] == "model" and s[2] != "" and ("model", s[1], "") in sys]
    pairs += list(itertools.combinations(full, 2))
    pairs += [(m, b) for m in full for b in sys if b[0] == "baseline"]
    return pd.DataFrame([compare(decisions, a, b, level) for a, b in pairs], columns=COMPARE_COLUMNS)


def calibration(frame: pd.DataFrame, bins: int = 10) -> pd.DataFrame:
    """Predicted against observed answer shares: every option of every decision, per model x ablation,
    binned by the model's p into `bins` equal-width bins; `p_mean` the mean predicted probability of the
    bin's options, `observed` the share of them the people chose, `n` how many (a calibrated model lies on
    the diagonal)."""
    f = frame.assign(ablation=frame["ablation"].fillna(""), _y=frame["chosen"].astype(float),
                     bin=np.minimum((frame["p"].astype(float) * bins).astype(int), bins - 1))
    out = f.groupby(["model", "ablation", "bin"], sort=True).agg(n=("p", "size"), p_mean=("p", "mean"),
                                                                 observed=("_y", "mean")).reset_index()
    out["p_low"], out["p_high"] = out["bin"] / bins, (out["bin"] + 1) / bins
    return out[["model", "ablation", "bin", "p_low", "p_high", "n", "p_mean", "observed"]]


def fit_tables(frame: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0) -> dict[str, pd.DataFrame]:
    """fit_decisions, fit_people, fit_study and fit_compare of a non-empty decision frame."""
    dec = decision_fit(systems(frame))
    people = person_fit(dec)
    return {"fit_decisions": dec, "fit_people": people, "fit_study": study_fit(people, n_boot, seed),
            "fit_compare": comparisons(dec)}
