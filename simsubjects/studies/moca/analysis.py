"""Average marginal component effects (AMCE) of MoCa's story factors, people and models side by side.

Each MoCa factor has two attributes (Time has three; Same time is left out, as in the paper,
so Time is Late vs Early). For a factor with attributes A and B, the AMCE is the change in
P(Yes) when a story has A rather than B. Observations: for people, one vote per row (0/1);
for a model, one P(Yes) per trial (story x template x persona), so a model's stories weigh
equally when every story has the same trials. Only stories annotated with A or B enter.

Estimators (one function each, tidy table in, tidy table out):

* `amce_dim` — the paper's difference-in-means estimator (eq. 1): mean of the pooled
  responses of stories with A minus that of stories with B.
* `amce_ols` — the same contrast as OLS `y ~ 1 + 1{A}` (its slope *is* the difference in
  means) with standard errors clustered by story. `se_type`, with X the N x K design
  (K = 2), e the residuals, G stories, M = (X'X)^-1, CR0 meat = sum_g X_g' e_g e_g' X_g:
    - ``"CR0"``:   V = M meat M;                                  t test, df = G - 1
    - ``"stata"``: V = G/(G-1) * (N-1)/(N-K) * CR0 (CR1; statsmodels cluster with
      use_correction=True; estimatr se_type="stata");            t test, df = G - 1
    - ``"cregg"``: V = G/(G-1) * CR0 (survey::svyglm's linearization, which cregg::amce
      uses); normal reference (df = inf), as cregg does: its `z`/`p` come from
      lmtest::coeftest on a glm object (z test) and its interval from confint.svyglm
      (ddf = Inf by default).
    - ``"CR2"`` (default): Bell-McCaffrey bias-reduced, as estimatr::lm_robust's default:
      A_g = (I - H_gg)^(-1/2), H_gg = X_g M X_g' (symmetric inverse square root; eigenvalues
      <= 1e-12 set to 0, as estimatr), V = M [sum_g X_g' A_g e_g e_g' A_g X_g] M; df per
      coefficient j by estimatr's Satterthwaite formula (working model Omega = I): with
      c_g = e_j' M X_g' A_g, h_g = L' X_g' c_g' (M = L L', Cholesky), and the G x G matrix
      P = diag(||c_g||^2) - [h_g' h_k]_{g,k}, df_j = tr(P)^2 / sum(P^2).
  p-values and intervals use Student's t with that df.
* `amce_bootstrap` — percentile interval (level/2 and 1 - level/2 quantiles, numpy's linear
  rule), estimate = the point difference in means, se = sd of the draws. Resampling is
  stratified by attribute (A stories and B stories are resampled separately, like the
  released code, so no draw lacks a group); the unit is `story` (default: a drawn story brings
  all its votes/trials) or `vote` (single votes/trials, which ignores the clustering).
  Vectorized: each draw is a row of an index matrix (built in chunks of draws to bound
  memory); seeded per system and factor from `seed` so adding a model changes nothing else.
* `amce_paper` — the released code's convention (github.com/cicl-stanford/moca,
  experiments/causal_effect_analysis.py). Where it differs from the paper's text:
    1. the reported AMCE is the *mean of 100 bootstrap draws*, not the difference in means
       of eq. (1);
    2. the interval is the 5th-95th percentile of those draws (a 90% interval) while the
       figures call it "95%" (here conf_level = 0.90, the true coverage);
    3. the bootstrap resamples single votes (model: single P(Yes) values) within each
       attribute group, ignoring that votes are clustered in stories;
    4. each factor's direction is chosen so that the *human* effect is positive (label
       "B - A" when A - B < 0), and models are shown in the humans' direction;
    5. a model's responses pool its two prompt templates (yes/no and A/B), each story twice
       (here: collect with `build_trials(..., templates=("yesno", "ab"))`; a model's trials
       are always pooled);
    6. draws come from numpy's unseeded global generator (here: seeded per system x factor);
    7. the causal table adds two interaction contrasts (Abnormal - Normal within conjunctive
       and within disjunctive stories), not reproduced here.
  The text describes eq. (1) with a "95% bootstrap confidence interval".

The honest default (`amce`): difference in means as the estimate, CR2 cluster-robust OLS
inference, and a story-level bootstrap interval, each a row with its method named.
"""

from __future__ import annotations

import zlib
from typing import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from simsubjects.errors import UserError
from simsubjects.analyze.methods.regression import SE_TYPES, cluster_vcov, ols_cluster  # noqa: F401 - re-exported
from simsubjects.datasets.moca_humans import CONTRASTS  # noqa: F401 - MoCa's annotation; re-exported
from simsubjects.analyze.choice_stats import p_yes
from simsubjects.analyze.methods.agreement import agreement
from simsubjects.analyze.methods.multiplicity import add_adjusted
from simsubjects.studies.moca.ppi import paired_stories, tables as ppi_tables  # mixed subjects; paired comparisons



def design_levels(responses=None, items=None) -> dict[str, list[str]]:
    """The export's level order of MoCa's factors: B (the contrast's baseline) first, then A."""
    return {f: [b, a] for task in CONTRASTS.values() for f, (a, b) in task.items()}


BY = ("source", "model")
COLUMNS = ["task", "factor", "term", "level_a", "level_b", "estimate", "std.error", "statistic", "df", "p.value",
           "conf.low", "conf.high", "conf_level", "n", "n_clusters", "n_a", "n_b", "method", "se_type",
           "n_boot", "convention"]
_CHUNK = 2_000_000  # index-matrix cells per bootstrap chunk


# ---------------------------------------------------------------- data

MISSING_P = ("half", "drop")


def outcomes(responses: pd.DataFrame, items: pd.DataFrame, missing_p: str = "half") -> pd.DataFrame:
    """One row per trial: y = P(Yes) (a 0/1 vote for people), joined with the item factors.

    A model trial with no valid answer has no P(Yes). `missing_p="half"` (default) counts it as
    0.5 (Yes and No equally likely), as the released evaluator does (github.com/cicl-stanford/moca,
    moca/evaluator.py, docs/conventions.md); `"drop"` leaves the trial out.
    """

    if missing_p not in MISSING_P:
        raise UserError(f"missing_p: expected one of {', '.join(MISSING_P)}, got {missing_p!r}")
    if "study" in responses:
        responses = responses[responses["study"] == "moca"]
    if "item" not in items:
        raise UserError("items: missing column item")
    py = p_yes(responses).rename(columns={"p_yes": "y"})
    py = py[py["y"].notna()] if missing_p == "drop" else py.fillna({"y": 0.5})
    facs = [c for task in CONTRASTS.values() for c in task if c in items.columns]
    if "task" not in items:
        raise UserError("items: missing column task")
    # the task comes from the item table, whatever the response rows carry
    out = py.drop(columns=["task"], errors="ignore").merge(
        items[["item", "task", *facs]], on="item", how="left", validate="many_to_one")
    return out


def _systems(data: pd.DataFrame, by: Sequence[str]) -> Iterator[tuple[dict, pd.DataFrame]]:
    missing = [c for c in by if c not in data]
    if missing:
        raise UserError(f"data: missing grouping column(s) {', '.join(missing)}")
    # people first, then models in name order
    order = data[list(by)].drop_duplicates()
    if "source" in by:
        order = order.assign(_h=(order["source"] != "human")).sort_values(["_h", *by]).drop(columns="_h")
    else:
        order = order.sort_values(list(by))
    for key in order.itertuples(index=False):
        kd = dict(zip(by, key))
        mask = np.ones(len(data), dtype=bool)
        for c, v in kd.items():
            mask &= (data[c] == v).to_numpy()
        yield kd, data[mask]


def _contrast_frames(data: pd.DataFrame, contrasts, by) -> Iterator[dict]:
    """For every system x factor: y, indicator of A, cluster codes."""
    contrasts = contrasts or CONTRASTS
    for col in ("y", "item", "task"):
        if col not in data:
            raise UserError(f"data: missing column {col}; build it with outcomes(responses, items)")
    for kd, sub in _systems(data, by):
        for task, facs in contrasts.items():
            st = sub[sub["task"] == task]
            for factor, (a, b) in facs.items():
                if factor not in st or st.empty:
                    continue
                f = st[factor]
                m = (f == a) | (f == b)
                if not m.any():
                    continue
                s = st[m.fillna(False).to_numpy()]
                yield {"key": kd, "task": task, "factor": factor, "a": a, "b": b,
                       "y": s["y"].to_numpy(dtype=float), "d": (s[factor] == a).to_numpy(),
                       "cluster": pd.factorize(s["item"])[0]}


def _row(fr: dict, **vals) -> dict:
    base = {**fr["key"], "task": fr["task"], "factor": fr["factor"], "term": f"{fr['a']} - {fr['b']}",
            "level_a": fr["a"], "level_b": fr["b"], "n": int(fr["y"].size),
            "n_clusters": int(np.unique(fr["cluster"]).size), "n_a": int(fr["d"].sum()),
            "n_b": int((~fr["d"]).sum()), "convention": "honest"}
    return {**base, **vals}


def _table(rows: list[dict], by) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for c in [*by, *COLUMNS]:
        if c not in df:
            df[c] = np.nan
    return df[[*by, *COLUMNS]]


# ---------------------------------------------------------------- difference in means

def _dim(y: np.ndarray, d: np.ndarray) -> float:
    if d.all() or not d.any():
        return float("nan")
    return float(y[d].mean() - y[~d].mean())


def amce_dim(data: pd.DataFrame, contrasts=None, by: Sequence[str] = BY) -> pd.DataFrame:
    """Paper eq. (1): pooled mean response with attribute A minus that with attribute B."""
    rows = [_row(fr, estimate=_dim(fr["y"], fr["d"]), method="difference-in-means", se_type="")
            for fr in _contrast_frames(data, contrasts, by)]
    return _table(rows, by)


# ---------------------------------------------------------------- cluster-robust OLS

def amce_ols(data: pd.DataFrame, se_type: str = "CR2", contrasts=None, by: Sequence[str] = BY,
             level: float = 0.95) -> pd.DataFrame:
    """The contrast as OLS y ~ 1 + 1{A}, standard errors clustered by story (see module doc)."""
    if se_type not in SE_TYPES:
        raise UserError(f"se_type: expected one of {', '.join(SE_TYPES)}, got {se_type!r}")
    rows = []
    for fr in _contrast_frames(data, contrasts, by):
        y, d = fr["y"], fr["d"]
        n_cl = np.unique(fr["cluster"]).size
        if d.all() or not d.any() or n_cl < 3:
            rows.append(_row(fr, estimate=_dim(y, d), method="ols-cluster", se_type=se_type, conf_level=level))
            continue
        X = np.column_stack([np.ones_like(y), d.astype(float)])
        res = ols_cluster(y, X, fr["cluster"], se_type, level).iloc[1]
        rows.append(_row(fr, **res.to_dict(), conf_level=level, method="ols-cluster", se_type=se_type))
    return _table(rows, by)


# ---------------------------------------------------------------- bootstrap

def draw_indices(rng: np.random.Generator, m: int, n_boot: int) -> np.ndarray:
    """(n_boot, m) indices of m units drawn with replacement, one draw per row."""
    return rng.integers(0, m, size=(n_boot, m))


def dim_draws(sums_a, counts_a, sums_b, counts_b, idx_a, idx_b) -> np.ndarray:
    """Difference in pooled means for every draw (row) of unit indices, without a Python loop.

    A unit is a story (sums = its total response, counts = its number of responses) or a
    single response (sums = y, counts = 1).
    """
    ma = sums_a[idx_a].sum(1) / counts_a[idx_a].sum(1)
    mb = sums_b[idx_b].sum(1) / counts_b[idx_b].sum(1)
    return ma - mb


def _units(y, cluster, unit):
    if unit == "vote":
        return y, np.ones_like(y)
    codes = pd.factorize(cluster)[0]
    return np.bincount(codes, weights=y), np.bincount(codes).astype(float)


def _rng(seed: int, fr: dict) -> np.random.Generator:
    key = "|".join([*map(str, fr["key"].values()), fr["task"], fr["factor"]])
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


def bootstrap_draws(fr: dict, unit: str, n_boot: int, seed: int) -> np.ndarray:
    """n_boot stratified bootstrap differences in means for one system x factor."""
    y, d, cl = fr["y"], fr["d"], fr["cluster"]
    sa, ca = _units(y[d], cl[d], unit)
    sb, cb = _units(y[~d], cl[~d], unit)
    rng = _rng(seed, fr)
    step = max(1, _CHUNK // max(sa.size + sb.size, 1))
    out = np.empty(n_boot)
    for start in range(0, n_boot, step):  # chunks of draws bound memory; each chunk is vectorized
        k = min(step, n_boot - start)
        ia, ib = draw_indices(rng, sa.size, k), draw_indices(rng, sb.size, k)
        out[start:start + k] = dim_draws(sa, ca, sb, cb, ia, ib)
    return out


def amce_bootstrap(data: pd.DataFrame, unit: str = "story", n_boot: int = 10000, seed: int = 0,
                   contrasts=None, by: Sequence[str] = BY, level: float = 0.95) -> pd.DataFrame:
    """Percentile bootstrap interval around the difference in means (see module doc)."""
    if unit not in ("story", "vote"):
        raise UserError(f"unit: expected story or vote, got {unit!r}")
    if n_boot < 2:
        raise UserError("n_boot: must be at least 2")
    rows = []
    q = [(1 - level) / 2, 1 - (1 - level) / 2]
    for fr in _contrast_frames(data, contrasts, by):
        est = _dim(fr["y"], fr["d"])
        vals = dict(estimate=est, conf_level=level, method=f"bootstrap-{unit}", se_type="", n_boot=n_boot)
        if np.isfinite(est):
            dr = bootstrap_draws(fr, unit, n_boot, seed)
            lo, hi = np.quantile(dr, q)
            vals.update({"std.error": float(dr.std(ddof=1)), "conf.low": float(lo), "conf.high": float(hi)})
        rows.append(_row(fr, **vals))
    return _table(rows, by)


# ---------------------------------------------------------------- released-code convention

def amce_paper(data: pd.DataFrame, n_boot: int = 100, seed: int = 0, contrasts=None,
               by: Sequence[str] = BY) -> pd.DataFrame:
    """The released code's numbers: bootstrap mean, 5th-95th percentiles, human-positive signs."""
    contrasts = contrasts or CONTRASTS
    human = data[data["source"] == "human"] if "source" in data else data.iloc[:0]
    if human.empty:
        raise UserError("convention='paper': needs human rows to orient the factors")
    hum = amce_dim(human, contrasts, by)
    flipped = {}
    for task, facs in contrasts.items():
        flipped[task] = {}
        for f, (a, b) in facs.items():
            est = hum.loc[(hum["task"] == task) & (hum["factor"] == f), "estimate"]
            flip = bool(len(est)) and est.iloc[0] < 0
            flipped[task][f] = (b, a) if flip else (a, b)
    rows = []
    for fr in _contrast_frames(data, flipped, by):
        vals = dict(method="paper-bootstrap-vote", se_type="", n_boot=n_boot, conf_level=0.90)
        if np.isfinite(_dim(fr["y"], fr["d"])):
            dr = bootstrap_draws(fr, "vote", n_boot, seed)
            lo, hi = np.quantile(dr, [0.05, 0.95])
            vals.update({"estimate": float(dr.mean()), "std.error": float(dr.std(ddof=1)), "conf.low": float(lo),
                         "conf.high": float(hi)})
        rows.append({**_row(fr, **vals), "convention": "paper"})
    return _table(rows, by)


def amce(data: pd.DataFrame, methods: Sequence[str] = ("dim", "ols", "bootstrap"), *,
         convention: str = "honest", se_type: str = "CR2", unit: str = "story",
         n_boot: int | None = None, seed: int = 0, contrasts=None, by: Sequence[str] = BY,
         level: float = 0.95) -> pd.DataFrame:
    """AMCE table: the chosen estimators stacked (honest), or the released code's (paper)."""
    if convention == "paper":
        return amce_paper(data, n_boot=n_boot or 100, seed=seed, contrasts=contrasts, by=by)
    if convention != "honest":
        raise UserError(f"convention: expected honest or paper, got {convention!r}")
    parts = []
    for m in methods:
        if m == "dim":
            parts.append(amce_dim(data, contrasts, by))
        elif m == "ols":
            parts.append(amce_ols(data, se_type, contrasts, by, level))
        elif m == "bootstrap":
            parts.append(amce_bootstrap(data, unit, n_boot or 10000, seed, contrasts, by, level))
        else:
            raise UserError(f"methods: unknown {m!r}; choose from dim, ols, bootstrap")
    return pd.concat(parts, ignore_index=True)


# ---------------------------------------------------------------- plots

def _system_label(row: pd.Series, by: Sequence[str]) -> str:
    if row.get("source") == "human":
        return "Human"
    parts = [str(row[c]) for c in by if c != "source" and c in row and str(row[c]) not in ("", "nan")]
    return " / ".join(parts) or "model"


def _by_of(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns[: list(table.columns).index("task")]]


def _pick(table: pd.DataFrame, preferred: Sequence[str]) -> pd.DataFrame:
    for m in preferred:
        t = table[table["method"] == m]
        if not t.empty:
            return t
    return table[table["method"] == table["method"].iloc[0]]


def plot_radar(amce_table: pd.DataFrame, path) -> None:
    """Figures 2-3 style: per task a radar chart, the two attributes of a factor on opposite spokes.

    A positive AMCE (A - B) is drawn on A's spoke, a negative one on B's spoke, 0 on the other.
    """
    import matplotlib  # lazy: matplotlib imports in ~1.3 s; only a figure needs it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    if amce_table.empty:
        raise UserError("amce_table: empty, nothing to plot")
    t = _pick(amce_table, ["difference-in-means", "paper-bootstrap-vote"])
    by = _by_of(t)
    tasks = [k for k in CONTRASTS if k in set(t["task"])] or sorted(set(t["task"]))
    fig, axes = plt.subplots(1, len(tasks), subplot_kw={"projection": "polar"},
                             figsize=(6.5 * len(tasks), 6.5), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        tt = t[t["task"] == task]
        factors = list(dict.fromkeys(tt["factor"]))
        J = len(factors)
        ang = np.concatenate([np.arange(J) * np.pi / J, np.arange(J) * np.pi / J + np.pi])
        first = tt.drop_duplicates("factor").set_index("factor")
        labels = [first.loc[f, "level_a"] for f in factors] + [first.loc[f, "level_b"] for f in factors]
        rmax = 0.05
        for _, g in tt.groupby(by, sort=False):
            est = g.set_index("factor")["estimate"].reindex(factors).fillna(0).to_numpy()
            vals = np.concatenate([np.maximum(est, 0), np.maximum(-est, 0)])
            rmax = max(rmax, float(vals.max()))
            lab = _system_label(g.iloc[0], by)
            style = dict(color="black", lw=2.5) if lab == "Human" else dict(lw=1.5)
            ax.plot(np.append(ang, ang[0]), np.append(vals, vals[0]), label=lab, **style)
        ax.set_xticks(ang)
        ax.set_xticklabels(labels, fontsize=9)
        ax.set_ylim(0, rmax * 1.1)
        ax.set_title(f"{task}: AMCE (change in P(Yes))", pad=18)
        ax.legend(loc="upper right", bbox_to_anchor=(1.3, 1.12), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def plot_forest(amce_table: pd.DataFrame, path, method: str | None = None) -> None:
    """Forest plot: per task and factor, each system's AMCE with its interval."""
    import matplotlib  # lazy: matplotlib imports in ~1.3 s; only a figure needs it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib imports in ~1.3 s; only a figure needs it

    if amce_table.empty:
        raise UserError("amce_table: empty, nothing to plot")
    t = amce_table[amce_table["method"] == method] if method else _pick(
        amce_table.dropna(subset=["conf.low"]) if amce_table["conf.low"].notna().any() else amce_table,
        ["bootstrap-story", "ols-cluster", "paper-bootstrap-vote", "bootstrap-vote"])
    if t.empty:
        raise UserError(f"method: no rows with method {method!r}")
    by = _by_of(t)
    tasks = [k for k in CONTRASTS if k in set(t["task"])] or sorted(set(t["task"]))
    systems = list(dict.fromkeys(_system_label(r, by) for _, r in t.iterrows()))
    heights = [t[t["task"] == k]["factor"].nunique() for k in tasks]
    fig, axes = plt.subplots(len(tasks), 1, figsize=(7.5, 1.0 + 0.45 * len(systems) * sum(heights) / 2 + len(tasks)),
                             squeeze=False, gridspec_kw={"height_ratios": heights})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, task in zip(axes[:, 0], tasks):
        tt = t[t["task"] == task]
        terms = list(dict.fromkeys(tt["term"]))
        for si, s in enumerate(systems):
            off = (si - (len(systems) - 1) / 2) * 0.8 / max(len(systems), 1)
            for ti, term in enumerate(terms):
                r = tt[(tt["term"] == term) & (tt.apply(lambda x: _system_label(x, by), axis=1) == s)]
                if r.empty:
                    continue
                r = r.iloc[0]
                err = None
                if pd.notna(r["conf.low"]):
                    err = [[r["estimate"] - r["conf.low"]], [r["conf.high"] - r["estimate"]]]
                ax.errorbar(r["estimate"], ti + off, xerr=err, fmt="o", ms=4, capsize=2,
                            color="black" if s == "Human" else colors[si % len(colors)], label=s)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_yticks(range(len(terms)))
        ax.set_yticklabels(terms)
        ax.invert_yaxis()
        level = tt["conf_level"].dropna()
        ax.set_title(f"{task}: AMCE with {int(round(100 * level.iloc[0])) if len(level) else ''}% interval "
                     f"({tt['method'].iloc[0]})", fontsize=10)
        handles, labs = ax.get_legend_handles_labels()
        uniq = dict(zip(labs, handles))  # one legend entry per system
        ax.legend(uniq.values(), uniq.keys(), fontsize=8, loc="best")
    axes[-1, 0].set_xlabel("change in P(Yes)")
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


# ---------------------------------------------------------------- everything for one run

POOLING = ("rows", "story")


def agreement_units(story_rows: pd.DataFrame, human: pd.Series, pooling: str = "rows"):
    """(model P(Yes) per unit, human P(Yes) per unit) for the Table 3 metrics.

    pooling="rows" (default, the released evaluator): each story x prompt template is one unit,
    so a run with both templates scores 2n rows against the story's human P(Yes) repeated;
    "story": each story's P(Yes) is first averaged over its templates (n units).
    """
    if pooling not in POOLING:
        raise UserError(f"pooling: expected one of {', '.join(POOLING)}, got {pooling!r}")
    g = story_rows.groupby(["model", "persona", "item", *(["template"] if pooling == "rows" else [])],
                           sort=True)["y"].mean().rename("p_yes").reset_index()
    if pooling == "story":
        return g, human
    unit = g["item"].astype(str) + " | " + g["template"].astype(str)
    hp = pd.Series(human.reindex(g["item"]).to_numpy(), index=unit.to_numpy())
    return g.assign(item=unit).drop(columns="template"), hp[~hp.index.duplicated()]


def analyze_moca(responses: pd.DataFrame, items: pd.DataFrame, n_boot: int = 10000, seed: int = 0,
                 se_type: str = "CR2", pooling: str = "rows", missing_p: str = "half") -> dict[str, pd.DataFrame]:
    """Table 1 counts, per-story P(Yes), Table 3 agreement, AMCE (honest and paper convention).

    Keys: ``table1`` (human Yes/No/ambiguous per task), ``story_p`` (mean P(Yes) per source,
    model, persona and story, over its templates), ``agreement`` (per task, model and persona
    summary; models only; its units per `pooling`, see `agreement_units`: by default each story x
    template row, as the released evaluator), ``amce`` (difference in means, OLS with `se_type`
    cluster-robust SEs, story bootstrap), ``amce_paper`` (released-code convention; only when
    human rows are present). A model's AMCE pools all its trials (templates, personas) story by
    story. `missing_p`: a trial without P(Yes) counts as 0.5 ("half", the release) or is dropped.
    """

    data = outcomes(responses, items, missing_p)
    if "persona" not in data:
        data["persona"] = ""
    story = (data.groupby(["source", "model", "persona", "task", "item"], sort=True)["y"]
             .agg(p_yes="mean", n="size").reset_index())
    table1 = (items.groupby("task")["human_class"].value_counts().unstack(fill_value=0)
              .reindex(columns=["Yes", "No", "ambiguous"], fill_value=0).reset_index())
    table1["n"] = table1[["Yes", "No", "ambiguous"]].sum(axis=1)
    human = items.set_index("item")["human_p_yes"]
    parts = []
    if "template" not in data:
        data["template"] = ""
    for task, g in data[data["source"] != "human"].groupby("task"):
        hp = human[items.set_index("item")["task"] == task]
        mp, hp = agreement_units(g, hp, pooling)
        a = agreement(mp, hp, n_boot=n_boot, seed=seed)
        parts.append(a.assign(task=task))
    agree = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    # Holm/BH across the factors of a task, per system and method (the AMCE family)
    a = add_adjusted(amce(data, se_type=se_type, n_boot=n_boot, seed=seed),
                     by=["source", "model", "task", "method", "se_type"])
    out = {"table1": table1, "story_p": story, "agreement": agree, "amce": a}
    if (data["source"] == "human").any():
        out["amce_paper"] = amce(data, convention="paper", seed=seed)

        out.update(ppi_tables(data, seed=seed))
        out["paired"] = paired_stories(story, seed=seed)
    return out


def plot_moca(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir) -> list[Path]:
    """Radar (Figures 2-3) and forest plots of a run's AMCE table."""
    outdir = Path(outdir)
    paths = [outdir / "fig_amce_radar.png", outdir / "fig_amce_forest.png"]
    plot_radar(tables["amce"], paths[0])
    plot_forest(tables["amce"], paths[1])
    return paths


def _interval(lo, hi) -> str:
    return f"[{lo:.3f}, {hi:.3f}]" if np.isfinite(lo) and np.isfinite(hi) else ""


def side_by_side(a: pd.DataFrame) -> pd.DataFrame:
    """One row per factor: each system's difference in means with its OLS-cluster and bootstrap intervals."""
    rows = []
    for (task, factor, term), g in a.groupby(["task", "factor", "term"], sort=False):
        row = {"task": task, "factor": factor, "term": term}
        for (source, model), s in g.groupby(["source", "model"], sort=False):
            who = "human" if source == "human" else model
            by = s.set_index("method")
            if "difference-in-means" in by.index:
                row[who] = by.at["difference-in-means", "estimate"]
            for method, label in (("ols-cluster", "OLS-cluster CI"), ("bootstrap-story", "bootstrap CI")):
                if method in by.index:
                    row[f"{who} {label}"] = _interval(by.at[method, "conf.low"], by.at[method, "conf.high"])
        rows.append(row)
    return pd.DataFrame(rows)


def summary(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Terminal view: agreement (Table 3) and the AMCE side by side, humans and model."""
    a = tables["amce"]
    se = ", ".join(sorted({str(x) for x in a["se_type"].dropna() if str(x)})) or "CR2"
    return {
        "human classes (Table 1)": tables["table1"],
        "agreement with humans (Table 3; 95% bootstrap over stories)": tables["agreement"],
        f"AMCE, humans and model side by side: difference in means, 95% intervals from OLS clustered by story "
        f"({se}) and from the story bootstrap": side_by_side(a),
    }
