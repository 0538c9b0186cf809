"""Analysis of a session run with the subject as the unit (docs/studies.md, "Paths and rows").

A subject's decisions are not independent observations: round after round they share the
subject's persona and its own earlier answers. So every test and interval here is computed on
subject-level values (each subject's mean over its paths and rounds, weighted by the paths'
probabilities when they were enumerated), never on decisions; by-round tables are descriptive
(the share of each option, and its mean over subjects with a t interval over subjects).

A decision's weight in a subject's mean (`_weighted`): with `paths: enumerate`, `reach`, the exact
probability of the tree node (each round's nodes then sum to 1 and rounds count equally); a sampled
path is one draw from that distribution already, so each of its decisions has weight 1. (Weighting a
sampled path by `reach`, the model's probability of its history so far, would count a path twice,
once by being drawn and once by its probability, and make round 1 dominate a mean over rounds.)
"""

from __future__ import annotations


import numpy as np
import pandas as pd
from scipy import stats

from ..analyze.methods.tests import paired_t, people_share_interval, t_label, welch_t
from .figures import plot_fit
from .people_fit import fit_tables
from .session import SessionStudy
from ..analyze.methods.multiplicity import add_adjusted

SYSTEM = ["source", "model"]


def _people_fit(study: SessionStudy, responses: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """fit_decisions, fit_people, fit_study, fit_compare, fit_calibration, fit_unmatched of a `paths: people`
    run: studyfile/people_fit.py (issue 39's methods side), which reads session_people.decision_frame."""
    if not study.session.people:
        return {}
    return fit_tables(study, responses)


def analyze_session(study: SessionStudy, responses: pd.DataFrame, items: pd.DataFrame) -> dict[str, pd.DataFrame]:
    out = _people_fit(study, responses)  # paths: people: the fit tables, twins included (docs/people.md)
    if "ablation" in responses.columns:  # --ablate twins: the session's tables are the full prompt's (docs/people.md)
        responses = responses[responses["ablation"].fillna("") == ""]
    dec = responses[responses["condition"] == "decision"].copy()
    rounds = responses[responses["condition"] == "round"].copy()
    paths = responses[responses["condition"] == "path"].copy()
    if len(dec):
        dec = _weighted(dec, study.session.enumerate)
        out["choice_by_round"] = choice_by_round(dec)
        out["subject_tests"] = subject_tests(dec)
    if len(rounds):
        out["rounds"] = round_table(study, rounds)
        out["rounds_by_round"] = rounds_by_round(study, rounds)
    if len(paths) and study.session.enumerate:
        out["paths"] = path_table(paths)
    if study.people is not None and (len(dec) or len(rounds)):
        out["beside_people"], out["beside_people_tests"] = beside_people(study, dec, rounds)
        out["model_and_people"] = side_by_side(out["beside_people"], study.human_name)
    return out


def _key(df: pd.DataFrame) -> list[str]:
    return [c for c in SYSTEM if c in df.columns]


def _weighted(dec: pd.DataFrame, enumerate_: bool) -> pd.DataFrame:
    """The decision rows with `_p`, the option's probability (its `weight` over the decision's total:
    with --method sampled `weight` holds counts), and `_w`, the decision's weight in a subject's mean
    (module docstring: `reach` when enumerated, 1 on a sampled path)."""
    total = dec.groupby([*_key(dec), "trial", "item"], sort=False)["weight"].transform("sum").astype(float)
    w = dec["reach"].astype(float) if enumerate_ else pd.Series(1.0, index=dec.index)
    return dec.assign(_p=dec["weight"].astype(float) / total.where(total > 0), _w=w)


def choice_by_round(dec: pd.DataFrame) -> pd.DataFrame:
    """The probability of each option by item and round: the mean over subjects of each subject's
    mean probability over its paths (weights `_w`: a subject with several paths counts once), and its
    t interval over subjects (unit: subject)."""
    dec = dec.assign(_wp=dec["_w"] * dec["_p"])
    g = dec.groupby([*_key(dec), "item", "round", "response", "subject"], sort=False)
    per = (g["_wp"].sum() / g["_w"].sum()).rename("p").reset_index()
    rows = []
    for keys, d in per.groupby([*_key(dec), "item", "round", "response"], sort=False):
        rows.append({**dict(zip([*_key(dec), "item", "round", "response"], keys)), **_mean_ci(d["p"])})
    return pd.DataFrame(rows).sort_values([*_key(dec), "item", "response", "round"], kind="stable")


def _mean_ci(x: pd.Series, level: float = 0.95) -> dict:
    x = pd.to_numeric(x, errors="coerce").dropna()
    n = len(x)
    est = float(x.mean()) if n else float("nan")
    if n < 2:
        return {"estimate": est, "std.error": float("nan"), "conf.low": float("nan"), "conf.high": float("nan"),
                "n": n, "unit": "subject"}
    se = float(x.std(ddof=1) / np.sqrt(n))
    q = stats.t.ppf(0.5 + level / 2, n - 1)
    return {"estimate": est, "std.error": se, "conf.low": est - q * se, "conf.high": est + q * se, "n": n,
            "unit": "subject"}


REACHED_SHARE = 0.5  # subject_tests compares round 1 with the last round at least this share of subjects reached
EQUAL_TOL = 1e-9  # values this close (relative) are equal: zero variance
MIN_N = 3  # fewer values on a side, or no variance: no p-value, a `note` instead (a t-test of 2 values is noise)


def degenerate(*samples) -> str:
    """Why a t-test of these samples gives no p-value ("" when it does): a side with fewer than MIN_N
    values, or a side whose values are all equal (within EQUAL_TOL: subjects with one prompt get the
    same probability up to float sums in another batch). The t statistic is then infinite or
    undefined, and scipy prints p-values such as 7.5e-20 that mean nothing."""
    flat = []
    for name, x in samples:
        x = pd.to_numeric(pd.Series(x), errors="coerce").dropna()
        if len(x) < MIN_N:
            return f"n < {MIN_N} ({name}: {len(x)}): no test"
        if x.max() - x.min() <= EQUAL_TOL * max(1.0, float(x.abs().max())):
            flat.append(name)
    return f"zero variance ({', '.join(flat)}): no test" if flat else ""


def last_round(per: pd.DataFrame, first) -> int | None:
    """The last round that at least REACHED_SHARE of the subjects who played round `first` reached
    (with a continuation probability few subjects reach the highest round)."""
    base = per[first].notna().sum()
    ok = [r for r in per.columns if r > first and per[r].notna().sum() >= REACHED_SHARE * base]
    return max(ok) if ok else None


def subject_tests(dec: pd.DataFrame) -> pd.DataFrame:
    """Does a choice's probability change from the first round to a later one? A paired t-test over
    subjects (analyze/methods/tests.paired_t, the package's one) of each subject's mean probability in round L vs the first round,
    L the last round at least REACHED_SHARE of the subjects reached (unit: subject); items with a
    single round are left out; a degenerate sample (`degenerate`) has `note` and no p-value."""
    rows = []
    dec = dec.assign(_wp=dec["_w"] * dec["_p"])
    for keys, d in dec.groupby([*_key(dec), "item", "response"], sort=False):
        g = d.groupby(["subject", "round"])
        per = (g["_wp"].sum() / g["_w"].sum()).unstack("round")
        first = d["round"].min()
        last = last_round(per, first)
        if last is None:
            continue
        pair = per[[first, last]].dropna()
        diff = pair[last] - pair[first]
        note = degenerate(("subjects", diff))  # n < MIN_N or no spread: a note, no p-value
        stat, p = float("nan"), float("nan")
        if not note:
            t = paired_t(pair[last].to_numpy(float), pair[first].to_numpy(float))
            stat, p = t["statistic"], t["p.value"]
        ci = _mean_ci(diff)
        rows.append({**dict(zip([*_key(dec), "item", "response"], keys)), "test": f"round {last} - round {first}",
                     "estimate": ci["estimate"], "std.error": ci["std.error"], "statistic": stat,
                     "df": len(pair) - 1, "p.value": p, "conf.low": ci["conf.low"], "conf.high": ci["conf.high"],
                     "n": len(pair), "reached": float(per[last].notna().sum() / per[first].notna().sum()),
                     "unit": "subject", "note": note})
    return pd.DataFrame(rows)


def round_table(study: SessionStudy, rounds: pd.DataFrame) -> pd.DataFrame:
    """One row per subject x path x round (enumerated: per tree node at a round's end, with its
    probability in `weight`): answers, moves, payoffs and variables."""
    sess = study.session
    cols = ["subject", "path", "block", "round", "weight", "reach", "continued"]
    extra = [it.id for b in sess.blocks for it in b.items] + list(sess.players)
    extra += [n for b in sess.blocks for n in b.payoff_names()] + list(sess.variables)
    extra = [c for c in dict.fromkeys(extra) if c in rounds.columns]
    return rounds[[*_key(rounds), *cols, *extra]].reset_index(drop=True)


def rounds_by_round(study: SessionStudy, rounds: pd.DataFrame) -> pd.DataFrame:
    """By block and round: each answer's share and each payoff's mean, as means over subjects of
    each subject's (probability-weighted) value, with t intervals over subjects (unit: subject)."""
    sess = study.session
    rows = []
    rounds = rounds.assign(_w=rounds["weight"].astype(float))
    for b in sess.blocks:
        d = rounds[rounds["block"] == b.id]
        if not len(d):
            continue
        measures = {}
        for it in b.items:
            for lab in it.labels:
                measures[f"share {it.id}={lab}"] = (d[it.id] == lab).astype(float)
        for name in list(b.players):
            if name in d:
                for lab in sorted(d[name].dropna().unique()):
                    measures[f"share {name}={lab}"] = (d[name] == lab).astype(float)
        for n in b.payoff_names():
            x = pd.to_numeric(d[n], errors="coerce") if n in d else None
            if x is not None and x.notna().any():  # a text rule (a carried-out move) is not averaged
                measures[f"mean {n}"] = x
        for name, x in measures.items():
            frame = d.assign(_x=x, _wx=x * d["_w"])
            for (*keys, r), g in frame.groupby([*_key(d), "round"], sort=True):
                per = g.groupby("subject")["_wx"].sum() / g.groupby("subject")["_w"].sum()
                rows.append({**dict(zip(_key(d), keys)), "block": b.id, "round": r, "measure": name,
                             **_mean_ci(per), "reach": float(g.groupby("subject")["_w"].sum().mean())})
    return pd.DataFrame(rows)


def path_table(paths: pd.DataFrame) -> pd.DataFrame:
    """Enumerated trees: each leaf (path) with its answers and probability; `total` per subject is 1."""
    out = paths[[*_key(paths), "subject", "path", "response", "weight", "round", "step"]].rename(
        columns={"response": "answers", "weight": "probability", "round": "last_round", "step": "decisions"})
    out["total"] = out.groupby([*_key(paths), "subject"])["probability"].transform("sum")
    return out.reset_index(drop=True)


def subject_values(study: SessionStudy, dec: pd.DataFrame, rounds: pd.DataFrame, measure: str,
                   where: dict) -> pd.Series:
    """Each subject's value of `measure` in the cells `where` (by round, block, persona column):
    `share ITEM=OPTION` is the subject's mean probability of the option over its decisions there
    (weights `_w`: `reach` when enumerated, 1 on a sampled path, so rounds count equally); `mean NAME`
    its mean over the round rows (weight: `weight`, the node's probability or 1)."""
    kind, rest = measure.split(" ", 1)
    if kind == "share":
        item, label = rest.split("=", 1)
        if "_w" not in dec:
            dec = _weighted(dec, study.session.enumerate)
        d = dec[(dec["item"] == item) & (dec["response"] == label)]
        w, x = d["_w"], d["_p"]
    else:
        d = rounds
        w, x = d["weight"].astype(float), pd.to_numeric(d.get(rest), errors="coerce")
    keep = pd.Series(True, index=d.index)
    for col, v in where.items():
        if v is None or v is pd.NA or v == "" or (isinstance(v, float) and v != v):
            continue  # an empty cell of the human table: pooled over that column
        keep &= (d[col] == v) if col == "round" else (d[col].astype(str) == str(v))
    d, w, x = d[keep], w[keep], x[keep]
    ok = x.notna()
    num = (w[ok] * x[ok]).groupby(d.loc[ok, "subject"]).sum()
    den = w[ok].groupby(d.loc[ok, "subject"]).sum()
    return (num / den.where(den > 0)).dropna()


def beside_people(study: SessionStudy, dec: pd.DataFrame, rounds: pd.DataFrame):
    """Model and people side by side in each cell of the human table (by round, block, persona column):
    the mean over subjects vs the mean over persons, each with its t interval (unit: subject, person; a
    `share` cell where every person's value is 0 or 1, one choice each, has the Wilson interval:
    `interval`), and
    a Welch two-sample t-test of the difference (analyze/methods/tests.welch_t); a degenerate sample
    (`degenerate`: n < 3 or zero variance on a side) has a `note` and no p-value."""
    people, by = study.people, study.people_by
    rows, tests = [], []
    for keys, g in people.groupby(["measure", *by], sort=False, dropna=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        measure, where = keys[0], dict(zip(by, keys[1:]))
        model = subject_values(study, dec, rounds, measure, where)
        human = g.groupby("respondent")["value"].mean()
        for src, vals, unit in (("model", model, "subject"), (study.human_name, human, "person")):
            if not len(vals):
                continue  # a cell the model did not play (e.g. a supergame of people only)
            row = {"measure": measure, **where, "source": src, **_mean_ci(vals), "unit": unit,
                   "interval": t_label(unit)}
            share = unit == "person" and str(measure).startswith("share ")  # a payoff's 0/1 values are not a share
            rows.append(people_share_interval(vals, row) if share else row)
        if not len(model) or not len(human):
            continue
        note = degenerate(("model", model), (study.human_name, human))
        est, stat, df, p, low, high = float(model.mean() - human.mean()), *[float("nan")] * 5
        if len(model) >= 2 and len(human) >= 2:  # the one Welch test and its degenerate rule (tests.no_test)
            t = welch_t(model.to_numpy(float), human.to_numpy(float))
            stat, df, p, low, high = (t[k] for k in ("statistic", "df", "p.value", "conf.low", "conf.high"))
        if note:  # n < MIN_N or no spread on a side: the note says so, and no statistic or p-value
            stat, p = float("nan"), float("nan")
        tests.append({"measure": measure, **where, "test": "Welch two-sample t-test, model - people",
                      "estimate": est, "statistic": stat, "df": df, "p.value": p, "conf.low": low,
                      "conf.high": high, "n_model": len(model), "n_people": len(human),
                      "unit": "subject / person", "note": note})
    return pd.DataFrame(rows), _with_family(pd.DataFrame(tests))


BESIDE_FAMILY = "model - people tests of a session (every cell of the human table)"


def _with_family(tests: pd.DataFrame) -> pd.DataFrame:
    """Holm and BH over the session's model - people tests (one per measure x cell of the human table), one
    family: a reader scanning the cells for a difference is protected (issue 40, item 6). A test without a
    p-value (its `note`) stays out of the family, as R's p.adjust leaves NA out."""
    return add_adjusted(tests, family=BESIDE_FAMILY) if len(tests) else tests


def side_by_side(bp: pd.DataFrame, human: str) -> pd.DataFrame:
    """The cells both sides have, one row each: the model's mean over subjects and the people's mean
    over persons, with their intervals (the model's t; the people's t or Wilson, `people.interval`) and
    counts (the report's "model and people" table)."""
    if not len(bp):
        return bp
    cells = [c for c in bp.columns
             if c not in ("source", "estimate", "std.error", "conf.low", "conf.high", "n", "unit", "interval")]
    key = pd.Series([tuple(map(str, r)) for r in bp[cells].itertuples(index=False)], index=bp.index)
    model, people = bp[bp["source"] == "model"], bp[bp["source"] == human]
    both = set(key[model.index]) & set(key[people.index])
    rows = []
    for i, rec in model.iterrows():
        if key[i] not in both:
            continue
        ppl = people[key[people.index] == key[i]].iloc[0]
        rows.append({**{c: rec[c] for c in cells}, "model": rec["estimate"], "model.conf.low": rec["conf.low"],
                     "model.conf.high": rec["conf.high"], "n_subjects": rec["n"], "people": ppl["estimate"],
                     "people.conf.low": ppl["conf.low"], "people.conf.high": ppl["conf.high"],
                     "n_persons": ppl["n"], "people.interval": ppl.get("interval", t_label("person"))})
    return pd.DataFrame(rows)


def plot_session(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir) -> list:
    """By round: each answer's share (and, with `human:`, people's beside it), and the mean payoffs;
    points are means over subjects (persons) with 95% t intervals over subjects (persons)."""
    import matplotlib  # lazy: imports pyparsing, matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: imports matplotlib, mpl_toolkits

    paths = []
    rb = tables.get("rounds_by_round")
    if rb is not None and len(rb):
        for kind, ylabel in (("share", "share of subjects' answers"), ("mean", "mean over subjects")):
            d = rb[rb["measure"].str.startswith(kind + " ") & ~rb["measure"].str.contains("partner=|player=")]
            if not len(d):
                continue
            fig, ax = plt.subplots(figsize=(6, 4))
            for (block, measure), g in d.groupby(["block", "measure"], sort=False):
                g = g.sort_values("round")
                ax.errorbar(g["round"], g["estimate"], yerr=[g["estimate"] - g["conf.low"].fillna(g["estimate"]),
                                                              g["conf.high"].fillna(g["estimate"]) - g["estimate"]],
                            marker="o", capsize=3, label=f"{block}: {measure}")
            ax.set(xlabel="round", ylabel=ylabel, title=f"{'Answers' if kind == 'share' else 'Payoffs'} by round")
            ax.legend(fontsize=7)
            fig.tight_layout()
            paths.append(outdir / f"session_{kind}_by_round.png")
            fig.savefig(paths[-1], dpi=110)
            plt.close(fig)
    side = tables.get("beside_people")
    if side is not None and len(side) and "round" in side:
        d = side[side["round"].notna()]
        if "block" in d:
            d = d[d["block"].isna() | (d["block"].astype(str) == "")]
        if len(d):
            groups = [c for c in d.columns if c not in ("measure", "round", "source", "estimate", "std.error",
                                                        "conf.low", "conf.high", "n", "unit", "block")]
            fig, ax = plt.subplots(figsize=(7, 6))
            for keys, g in d.groupby(["measure", "source", *groups], sort=False, dropna=False):
                g = g.sort_values("round")
                ax.errorbar(g["round"], g["estimate"], yerr=1.96 * g["std.error"].fillna(0), marker="o" if keys[1] == "model"
                            else "s", linestyle="-" if keys[1] == "model" else "--", capsize=2,
                            label=" ".join(str(k) for k in keys))
            ax.set(xlabel="round", ylabel="mean over subjects / persons", title="Model and people by round")
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.legend(fontsize=6, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))
            fig.tight_layout()
            paths.append(outdir / "session_beside_people_by_round.png")
            fig.savefig(paths[-1], dpi=110)
            plt.close(fig)
    if "fit_people" in tables:  # paths: people: fit_people.png and fit_calibration.png (studyfile/figures.py)
        paths += [x for x in plot_fit(tables, outdir) if x]
    return paths
