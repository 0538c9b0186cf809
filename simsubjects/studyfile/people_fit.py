"""Every person's answers scored under the model (issue 39): the decision frame of a study-file run, and
the fit tables `analyze` writes from it (analyze/methods/fit.py computes them).

The frame (docs/schema.md, "Fit tables"): one row per person x decision x option, the model's exact
probability `p` of the option normalized over the decision's options, and `chosen` on the person's
answer. A plain study file gets one when its design reads `subjects: people`: every respondent of
`human:` is a subject, asked each item they answered in the condition they answered it in (spec.py,
design.py), so the model's row of (subject, item, condition) is the prompt that person saw. A session
with `paths: people` gets its frame from session_people.py (the teacher-forced paths).
"""

from __future__ import annotations

import pandas as pd

from ..analyze.methods import fit
from . import session_people
from ..analyze.blocks import Block, Table


def decision_frame(study, responses: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(frame, unmatched): the frame is empty where the run scored no person."""
    none = (fit.empty_frame(), pd.DataFrame(columns=fit.UNMATCHED))
    if hasattr(study, "session"):  # a session run: its paths: people mode (session_people.py)
        return session_people.decision_frame(study, responses)
    if not getattr(study, "people", False) or study.human is None:
        return none
    return _plain_frame(study, responses)


def _model_decisions(responses: pd.DataFrame) -> pd.DataFrame:
    """The model's exact distribution per model x ablation x person x item x condition: an item asked in
    several option orders (option_order: averaged) or repetitions gets the mean over them, normalized."""
    m = responses[(responses["source"] == "model") & (responses["method"] == "exact")]
    m = m.assign(ablation=m["ablation"].fillna("").astype(str) if "ablation" in m.columns else "",
                 condition=m["condition"].fillna("").astype(str))
    if "run" in m.columns and m["run"].nunique() > 1:  # analyze RUN1 RUN2: each run its own system
        m = m.assign(model=m["run"].astype(str) + ": " + m["model"].astype(str))
    keys = ["model", "ablation", "subject", "item", "condition"]
    m = m.assign(_w=m["weight"].astype(float) / m.groupby([*keys, "trial"])["weight"].transform("sum"))
    p = m.groupby([*keys, "response"], sort=False)["_w"].sum() / m.groupby([*keys, "response"], sort=False)["trial"].nunique()
    p = p / p.groupby(level=list(range(len(keys))), sort=False).transform("sum")
    return p.rename("p").reset_index().rename(columns={"response": "option"})


def _plain_frame(study, responses: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    items = {it.id: it for it in study.items}
    within = any(f.assignment != "between" for f in study.factors)
    model = _model_decisions(responses)
    human = responses[responses["source"] == "human"]
    human = human[human["item"].map(lambda i: i in items and items[i].response.kind == "choice")]
    answers = {(r.subject, r.item, "" if pd.isna(r.condition) else str(r.condition)): str(r.response)
               for r in human.itertuples(index=False)}
    parts, unmatched = [], []
    for (name, abl, person, item, cond), g in model.groupby(["model", "ablation", "subject", "item", "condition"],
                                                          sort=False):
        ans = answers.get((person, item, cond))
        if ans is None:
            continue  # a model trial of no person's answer (the design asks only answered items)
        order = {lab: i for i, lab in enumerate(_labels(items[item], cond, study))}
        g = g.assign(_o=g["option"].map(order)).sort_values("_o", kind="stable")
        if ans not in set(g["option"]):
            continue  # listed below, once per person x item
        parts.append(pd.DataFrame({
            "person": person, "decision": f"{item} | {cond}" if within and cond else item, "item": item,
            "round": pd.array([pd.NA] * len(g), dtype="Int64"), "condition": cond, "option": g["option"].to_numpy(),
            "p": g["p"].to_numpy(float), "chosen": (g["option"] == ans).to_numpy(), "model": name, "ablation": abl,
            "prev_own": "", "prev_other": ""}))
    scored = {(f["person"].iat[0], f["item"].iat[0], f["condition"].iat[0]) for f in parts}
    for (person, item, cond), ans in answers.items():
        if (person, item, cond) not in scored:  # an answer never scored is listed, not dropped
            unmatched.append({"person": person, "decision": f"{item} | {cond}" if within and cond else item,
                              "item": item, "answer": ans})
    frame = pd.concat(parts, ignore_index=True)[fit.FRAME] if parts else fit.empty_frame()
    return frame, pd.DataFrame(unmatched, columns=fit.UNMATCHED)


def _labels(item, cond: str, study) -> list[str]:
    """The item's option labels in their declared order, in the condition's response (response_by)."""
    levels = dict(part.split("=", 1) for part in cond.split(",")) if cond else {}
    r = item.response_in(levels) if item.response_by in levels or not item.response_by else item.response
    return [o.label for o in r.options]


def fit_tables(study, responses: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The fit tables of a run (docs/schema.md): none where no person was scored. The bootstrap's seed
    is the study's design seed, so the intervals are the same at every analysis."""
    frame, unmatched = decision_frame(study, responses)
    if frame.empty:
        return {}
    tables = fit.fit_tables(frame, seed=int(getattr(study, "seed", 0) or 0))
    tables["fit_calibration"] = fit.calibration(frame)
    tables["fit_unmatched"] = unmatched
    return tables


STUDY_SHOWN = ["model", "ablation", "baseline", "estimate", "conf.low", "conf.high", "loglik_mean",
               "loglik_mean_baseline", "accuracy", "n_people", "n_decisions"]
COMPARE_SHOWN = ["model_a", "ablation_a", "model_b", "ablation_b", "estimate", "conf.low", "conf.high", "p.value", "n"]


def report_blocks(tables: dict[str, pd.DataFrame]) -> list:
    """The report's blocks (data; publish/ renders them) of a run that scored people: the pseudo-R^2
    against each baseline, and each ablation twin, model and baseline set against the full prompt."""
    st, cmp = tables.get("fit_study"), tables.get("fit_compare")
    if st is None or not len(st):
        return []
    out = [Block(title="Every person's answers under the model", tables=(Table(st[STUDY_SHOWN], csv=None),),
                 caption="McFadden's pseudo-R² = 1 − LL(model) / LL(baseline) over the same decisions (against "
                         "the uniform choice: Centaur's, Binz et al. 2025); 95% intervals from a cluster bootstrap "
                         "over people. Mean log-likelihood per decision beside each baseline's. Every person: "
                         "fit_people.csv; every decision: fit_decisions.csv.")]
    if cmp is not None and len(cmp):
        out.append(Block(title="Per person: each ablation against the full prompt, each model against the baselines",
                         tables=(cmp[COMPARE_SHOWN],),
                         caption="Mean over people of the difference in mean log-likelihood per decision (a − b), "
                                 "with a paired t interval over people. A twin far below the full prompt means the "
                                 "fit depends on the instructions (or on the options' labels)."))
    return out
