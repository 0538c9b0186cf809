"""Analysis of a session run with the subject as the unit (docs/studies.md, "Paths and rows").

A subject's decisions are not independent observations: round after round they share the
subject's persona and its own earlier answers. So every test and interval here is computed on
subject-level values (each subject's mean over its paths and rounds, weighted by the paths'
probabilities when they were enumerated), never on decisions; by-round tables are descriptive
(the share of each option, and its mean over subjects with a t interval over subjects).
"""

from __future__ import annotations


import numpy as np
import pandas as pd
from scipy import stats

from ..analyze.methods.tests import paired_t, welch_t
from .session import SessionStudy

SYSTEM = ["source", "model"]


def analyze_session(study: SessionStudy, responses: pd.DataFrame, items: pd.DataFrame) -> dict[str, pd.DataFrame]:
    out = {}
    dec = responses[responses["condition"] == "decision"].copy()
    rounds = responses[responses["condition"] == "round"].copy()
    paths = responses[responses["condition"] == "path"].copy()
    if len(dec):
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


def choice_by_round(dec: pd.DataFrame) -> pd.DataFrame:
    """The probability of each option by item and round: the mean over subjects of each subject's
    reach-weighted mean probability (a subject with several paths counts once), and its t interval
    over subjects (unit: subject)."""
    dec = dec.assign(_w=dec["reach"].astype(float), _p=dec["weight"].astype(float))
    dec["_wp"] = dec["_w"] * dec["_p"]
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


def subject_tests(dec: pd.DataFrame) -> pd.DataFrame:
    """Does a choice's probability change from the first round to the last? A paired t-test over
    subjects (analyze/methods/tests.paired_t, the package's one) of each subject's mean probability in the
    last vs the first round (unit: subject); items with a single round are left out."""
    rows = []
    dec = dec.assign(_w=dec["reach"].astype(float))
    dec["_wp"] = dec["_w"] * dec["weight"].astype(float)
    for keys, d in dec.groupby([*_key(dec), "item", "response"], sort=False):
        first, last = d["round"].min(), d["round"].max()
        if first == last:
            continue
        g = d.groupby(["subject", "round"])
        per = (g["_wp"].sum() / g["_w"].sum()).unstack("round")
        pair = per[[first, last]].dropna()
        if len(pair) < 2:
            continue
        diff = pair[last] - pair[first]
        t = paired_t(pair[last].to_numpy(float), pair[first].to_numpy(float))  # no spread: tests.no_test's rule
        stat, p = t["statistic"], t["p.value"]
        ci = _mean_ci(diff)
        rows.append({**dict(zip([*_key(dec), "item", "response"], keys)), "test": f"round {last} - round {first}",
                     "estimate": ci["estimate"], "std.error": ci["std.error"], "statistic": stat,
                     "df": len(pair) - 1, "p.value": p, "conf.low": ci["conf.low"], "conf.high": ci["conf.high"],
                     "n": len(pair), "unit": "subject"})
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
            if n in d:
                measures[f"mean {n}"] = pd.to_numeric(d[n], errors="coerce")
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
    (weighted by the paths' probabilities `reach`); `mean NAME` its weighted mean over the round rows."""
    kind, rest = measure.split(" ", 1)
    if kind == "share":
        item, label = rest.split("=", 1)
        d = dec[(dec["item"] == item) & (dec["response"] == label)]
        w, x = d["reach"].astype(float), d["weight"].astype(float)
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
    the mean over subjects vs the mean over persons, each with its t interval (unit: subject, person),
    and a Welch two-sample t-test of the difference (analyze/methods/tests.welch_t)."""
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
            rows.append({"measure": measure, **where, "source": src, **_mean_ci(vals), "unit": unit})
        if len(model) >= 2 and len(human) >= 2:
            # the package's one Welch test; identical subjects (one prompt) beside people without spread
            # give the exact difference and no p-value (tests.no_test's rule)
            t = welch_t(model.to_numpy(float), human.to_numpy(float))
            tests.append({"measure": measure, **where, "test": "Welch two-sample t-test, model - people",
                          **{k: t[k] for k in ("estimate", "statistic", "df", "p.value", "conf.low", "conf.high")},
                          "n_model": len(model), "n_people": len(human), "unit": "subject / person"})
    return pd.DataFrame(rows), pd.DataFrame(tests)


def side_by_side(bp: pd.DataFrame, human: str) -> pd.DataFrame:
    """The cells both sides have, one row each: the model's mean over subjects and the people's mean
    over persons, with their t intervals and counts (the report's "model and people" table)."""
    if not len(bp):
        return bp
    cells = [c for c in bp.columns if c not in ("source", "estimate", "std.error", "conf.low", "conf.high", "n", "unit")]
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
                     "n_persons": ppl["n"]})
    return pd.DataFrame(rows)


def plot_session(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, outdir) -> list:
    """By round: each answer's share (and, with `human:`, people's beside it), and the mean payoffs;
    points are means over subjects (persons) with 95% t intervals over subjects (persons)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    return paths
