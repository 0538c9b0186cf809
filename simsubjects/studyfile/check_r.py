"""`analyze RUN --check-r` on a study file's run: each analysis the file lists, recomputed in R.

R starts from the tidy responses (responses.parquet: model and human rows) and the file's option
positions, not from Python's per-trial scores: R/studyfile.R computes the trial scores, the subject
means and every test itself. Twins, per analysis type (docs/studies.md):

* distribution — shares by item x condition x response, validity and n; the estimates' mean,
  median, sd and quartiles (quantile type 7); people_beside_model: R's shares and means set side by
  side as the Python table is;
* welch — stats::t.test(x, y) on subject means (survey::svyttest with survey weights), and d_av;
* paired — stats::t.test(x, y, paired = TRUE) on each subject's means at the two levels (svyttest of the
  differences with survey weights), and d_z;
* one_sample — stats::t.test(x) on subject means of score - mu (svyttest with survey weights), and d;
* chi_square — stats::chisq.test(correct = FALSE) on the subject-level expected counts, Cramér's V
  (p.value.asymptotic; a model's permutation p.value is R's own draws, not compared);
* amce — estimatr::lm_robust(score ~ factors, clusters = subject, se_type = "CR2");
* representativeness — representativeness() of R/representativeness.R on the pooled distributions; the
  bootstrap columns (boot.low, boot.high, boot.bias, estimate.corrected) by sf_representativeness_boot on
  the resamples Python drew (their index matrices passed to R) at Python's calibrated level;
* agreement — stats::cor.test of item means;
* order effects (randomized or averaged option orders) — welch_test / one_sample_test of the subject
  means shown first and last, and the mean over items;
* summaries — sf_summaries: check-all shares and numeric means, t interval over subjects (people's 0/1
  values: the Wilson interval, stats::prop.test(correct = FALSE); `interval` must match);
* the Holm / BH columns of every table — p.adjust (analyze.check_r.check_r_rows);
* fit_people (model rows) and fit_study (against the uniform choice) of a run that scored people
  (design.subjects: people, issue 39) — sf_fit_people / sf_fit_study of R/fit.R, from the responses.

`type: function` analyses have no twin here; their rows are absent, and the
check says so in one row each (`ok` stays true: nothing was compared).
"""

from __future__ import annotations

import math

import pandas as pd

from ..analyze.check_r import _tag, compare, compare_fields
from ..analyze.methods.registry import TESTS
from .analyses import (analyze_study, declared_levels, full_prompt, options_table, people_beside_model,
                       representativeness_resamples)
from .spec import Study

BROOM = {k: k for k in ("estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high", "n")}
NO_TWIN = ("summaries", "function")  # and any registry test without an R twin


def _columns(study: Study, responses: pd.DataFrame) -> list[str]:
    """The response columns R needs: trial keys, answers, weights and every grouping column named."""
    named = {"item", "condition", "subject", "response", "weight", "validity", "estimate", "response_type",
             "shown_position"}
    for a in study.analyses:
        named |= {a.get("factor"), *(a.get("factors") or []), *(a.get("by") or [])}
        if isinstance(a.get("mu"), str):
            named.add(a["mu"])
    return [c for c in ["source", "model", "run", "trial", *sorted(n for n in named if n)] if c in responses.columns]


def _merge(py: pd.DataFrame, r: pd.DataFrame | None, keys: list[str]) -> pd.DataFrame:
    r = pd.DataFrame(columns=keys) if r is None else r
    both = [py.assign(**{k: py[k].astype(str) for k in keys}), r.assign(**{k: r[k].astype(str) for k in keys})]
    return both[0].merge(both[1], on=keys, how="outer", suffixes=("", "_r"), indicator=True)


def _rows(label: str, m: pd.DataFrame, keys: list[str], fields: dict, tol, tol_p) -> list[dict]:
    """One comparison row per field and matched row; a row only Python (or only R) has is a difference."""
    out = [compare(f"{label}: rows in only one of Python and R", 0, int((m["_merge"] != "both").sum()), 0)]
    for row in m[m["_merge"] == "both"].to_dict("records"):
        tag = _tag(label, *[row[k] for k in keys])
        if str(row.get("warning") or "") not in ("", "nan"):  # no test on either side: the estimate, and p empty
            out.append(compare(f"{tag} estimate", row.get("estimate"), row.get("estimate_r"), tol))
            out.append(compare(f"{tag} p.value (none)", row.get("p.value"), row.get("p.value_r"), tol_p))
            continue
        out += compare_fields(tag, {k: row.get(k) for k in fields}, {v: row.get(f"{v}_r") for v in fields.values()},
                              tol, tol_p, fields)
    return out


BOOT = ("boot.low", "boot.high", "boot.bias", "estimate.corrected")


def _bootstrap(r, call, label, study, responses, by, table, tol) -> list[dict]:
    """The representativeness table's bootstrap columns against R/studyfile.R's sf_representativeness_boot,
    on the resamples Python drew (their index matrices handed to R: R cannot redraw numpy's) and at the
    level Python's double bootstrap calibrated; to 1e-9 or `tol`, the smaller."""
    out = []
    for row, s in representativeness_resamples(study, responses, by, table):
        mat = {k: r.ro.r["matrix"](r.vector(s[k].ravel(order="F")), nrow=s[k].shape[0]) for k in ("idx_model", "idx_human")}
        group = {"by": by, "group": [str(row[b]) for b in by]} if by else {}  # an empty list has no R type
        got = call("sf_representativeness_boot", row["model"], s["units_model"], mat["idx_model"], s["units_human"],
                   mat["idx_human"], s["half_alpha"], **group)
        tag = _tag(f"{label} bootstrap", row["model"], *[row[b] for b in by])
        out += [compare(f"{tag} {k}", row[k], got[k].iat[0], min(tol, 1e-9)) for k in BOOT]
    return out


def check_study_file(study: Study, r, responses: pd.DataFrame, items, tables, tol, tol_p) -> list[dict]:
    """Every analysis of `study` with an R twin, Python (`tables`, as analyze computed them) against R."""
    tables = tables or analyze_study(study, responses, items)
    fit = _fit(r, responses, tables, tol) if "fit_people" in tables else []
    responses = full_prompt(responses)  # the --ablate twins' rows enter the fit tables only (issue 39)
    opts = options_table(study)
    resp = responses[_columns(study, responses)]
    rd, ro = r.to_r(resp), r.to_r(opts)
    call = lambda name, *a, **k: r.to_py(r.env.find(name)(rd, ro, *[r.vector(x) for x in a],  # noqa: E731
                                                          **{key: r.vector(v) for key, v in k.items()}))
    out = _distribution(r, rd, ro, tables, tol)
    tests = tables.get("tests", pd.DataFrame())
    for i, a in enumerate(study.analyses):
        kind, name = a["type"], a.get("name") or f"{a['type']}_{i + 1}"
        by = list(a.get("by", ["item"]))
        label = f"{name} ({kind})"
        method = TESTS.get(kind)
        if method is not None and method.r_twin:  # the registry names the twin and the columns compared
            py = tests[tests["analysis"] == name] if "analysis" in tests else tests.iloc[:0]
            keys = ["source", "model", *by, *method.matched_on]
            args, kwargs = method.r_args(a, by)
            rr = call(method.r_twin, *args, **kwargs)
            fields = {k: k for k in method.compared}
            out += _rows(label, _merge(py, _nonempty(rr), keys), keys, fields, tol, tol_p)
        elif kind == "amce":
            declared = declared_levels(study, a["factors"])
            rr = call("sf_amce", list(a["factors"]), [declared.get(str(f), [""])[0] for f in a["factors"]])
            keys = ["source", "model", "term"]
            out += _rows(label, _merge(tables[name], _nonempty(rr), keys), keys, BROOM, tol, tol_p)
        elif kind == "representativeness":
            rby = list(a.get("by", []))
            rr = call("sf_representativeness", by=rby) if rby else call("sf_representativeness")
            keys = ["model", *rby]
            fields = {k: k for k in ("estimate", "std.error", "conf.low", "conf.high", "n")}
            out += _rows(label, _merge(tables[name], rr, keys), keys, fields, tol, tol)
            out += _bootstrap(r, call, label, study, responses, rby, tables[name], tol)
        elif kind == "agreement":
            aby = list(a.get("by", []))
            rr = call("sf_agreement", by=aby) if aby else call("sf_agreement")
            fields = {k: k for k in ("estimate", "p.value", "n", "mean_abs_difference")}
            out += _rows(label, _merge(tables[name], rr, ["model", *aby]), ["model", *aby], fields, tol, tol_p)
        elif kind == "summaries" and items is not None and "answer_kind" in items.columns:
            out += _summaries(r, rd, ro, items, tables, tol)
        elif kind in NO_TWIN or method is not None:
            out.append({"statistic": f"{label}: no R twin (not compared)", "python": math.nan, "r": math.nan,
                        "abs_diff": 0.0, "tolerance": 0.0, "ok": True})
    if "order_effects" in tables and len(tables["order_effects"]):
        out += _order_effects(r, study, responses, tables, tol, tol_p)
    return out + fit


def check_session_fit(r, responses, tables, tol) -> list[dict]:
    """`analyze --check-r` of a session with paths: people: its fit tables against R/fit.R's
    sf_fit_session_people (each decision's rows, the recorded answer the path followed: drawn = 1)."""
    if "fit_people" not in tables:
        return []
    return _fit(r, responses, tables, tol, "sf_fit_session_people",
                ("source", "model", "trial", "step", "item", "subject", "player", "condition", "response",
                 "weight", "drawn", "ablation"))


def _fit(r, responses, tables, tol, twin: str = "sf_fit_people",
         columns=("source", "model", "method", "trial", "subject", "item", "condition", "response", "weight",
                  "ablation")) -> list[dict]:
    """Issue 39: every person's log-likelihoods (R/fit.R, from the tidy responses, not from Python's
    decision frame) and the pseudo-R^2 against the uniform choice, per model x ablation."""
    cols = [c for c in columns if c in responses.columns]
    people = r.env.find(twin)(r.to_r(responses[cols]))
    rp, rs = r.to_py(people), r.to_py(r.env.find("sf_fit_study")(people))
    py = tables["fit_people"]
    py = py[py["kind"] == "model"]
    keys = ["model", "ablation", "person"]
    fields = {f: f for f in ("n_decisions", "loglik", "loglik_mean", "loglik_uniform", "accuracy", "brier")}
    out = _rows("fit_people", _merge(py.assign(ablation=py["ablation"].fillna("")), _blank(rp), keys), keys, fields,
                tol, tol)
    st = tables["fit_study"]
    st = st[st["baseline"] == "uniform"]
    fields = {"estimate": "estimate", "loglik": "loglik", "loglik_baseline": "loglik_baseline", "n_people": "n_people",
              "n_decisions": "n_decisions"}
    return out + _rows("fit_study", _merge(st.assign(ablation=st["ablation"].fillna("")), _blank(rs), keys[:2]),
                       keys[:2], fields, tol, tol)


def _blank(df):
    return df.assign(ablation=df["ablation"].fillna("")) if df is not None and "ablation" in df else df


def _summaries(r, rd, ro, items, tables, tol) -> list[dict]:
    """`summaries` (issue 40, item 7): R's sf_summaries against selection_shares and numeric_means."""
    kinds = items[["item", "answer_kind"]].drop_duplicates("item").astype(str)
    got = r.env.find("sf_summaries")(rd, ro, r.to_r(kinds))
    names = list(got.names) if got.names is not r.ro.NULL else []
    # `interval` is a key: a row with Wilson's interval on one side and the t interval on the other is unmatched
    keys = ["source", "model", "condition", "item", "interval"]
    fields = {k: k for k in ("estimate", "std.error", "conf.low", "conf.high", "n")}
    out = []
    for name in ("selection_shares", "numeric_means"):
        if name not in tables and name not in names:
            continue
        py = tables.get(name, pd.DataFrame(columns=keys))
        rr = r.to_py(got.rx2(name)) if name in names else None
        py = py.assign(condition=py["condition"].fillna("")) if "condition" in py else py
        if rr is not None:
            rr["condition"] = rr["condition"].fillna("")
        out += _rows(f"{name} (summaries)", _merge(py, rr, keys), keys, fields, tol, tol)
    return out


def _nonempty(df):
    return None if df is None or not len(df) or not len(df.columns) else df


def _distribution(r, rd, ro, tables, tol) -> list[dict]:
    got = r.env.find("sf_distribution")(rd, ro)
    out = []
    names = list(got.names) if got.names is not r.ro.NULL else []
    keys = ["source", "model", "item", "condition"]
    from_r = {}
    for name in ("distribution", "estimates"):
        if name not in tables and name not in names:
            continue
        rr = r.to_py(got.rx2(name)) if name in names else None
        if rr is not None:
            from_r[name] = rr
        py = tables.get(name, pd.DataFrame(columns=keys))
        py = py.assign(condition=py["condition"].fillna("")) if "condition" in py else py
        if rr is not None and "condition" in rr:
            rr["condition"] = rr["condition"].fillna("")
        k = keys + (["response"] if name == "distribution" else [])
        fields = ({"share": "share", "validity": "validity", "n": "n"} if name == "distribution" else
                  {f: f for f in ("mean", "median", "sd", "q25", "q75", "validity", "n", "n_valid")})
        out += _rows(name, _merge(py, rr, k), k, fields, tol, tol)
    if "people_beside_model" in tables:  # R's shares and means, set side by side as the Python table is
        py, k = tables["people_beside_model"], ["item", "condition", "response", "measure"]
        rr = people_beside_model(from_r)
        fields = {c: c for c in py.columns if c not in k}
        out += _rows("people_beside_model", _merge(py.assign(condition=py["condition"].fillna("")), rr, k), k,
                     fields, tol, tol)
    return out


def _order_effects(r, study: Study, responses, tables, tol, tol_p) -> list[dict]:
    k = pd.DataFrame([{"item": it.id, "n_ordered": float(sum(not o.refusal for o in (
        (it.response.judge if it.response.kind == "free_text" else it.response) or it.response).options))}
        for it in study.items])
    cols = [c for c in ("source", "model", "run", "trial", "subject", "item", "response", "weight", "shown_position")
            if c in responses.columns]
    got = r.env.find("sf_order_effects")(r.to_r(responses[cols]), r.to_r(k))
    per_item, avg = r.to_py(got.rx2("per_item")), r.to_py(got.rx2("average"))
    keys = ["model", "item", "response"]
    fields = {f: f for f in ("p_first", "p_last", "estimate", "std.error", "statistic", "df", "p.value", "conf.low",
                             "conf.high", "n_first", "n_last")}  # the intervals too (issue 40, item 7)
    out = _rows("order_effects", _merge(tables["order_effects"], per_item, keys), keys, fields, tol, tol_p)
    out += _rows("order_effects_average", _merge(tables["order_effects_average"], avg, ["model"]), ["model"],
                 dict(BROOM), tol, tol_p)
    return out

