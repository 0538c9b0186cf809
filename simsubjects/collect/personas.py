"""Personas from data: a table of respondents rendered into backstories, sampled or raked to margins.

* **Source.** A respondents table (.csv, .sav, .dta): demographic columns and an optional survey
  weight. Variable labels of .sav/.dta files are kept (they label the persona columns of exports).
* **Formats.** Each row becomes a text placed before the question:
  - ``argyle``: a first-person backstory, one sentence per attribute (Argyle et al. 2023, "Out of
    One, Many", §3: "Ideologically, I describe myself as conservative. Politically, I am a strong
    Republican. ...");
  - ``qa``, ``bio``, ``portray``: OpinionQA's three steering formats for one attribute (Santurkar
    et al. 2023, §4.2 and App. B.2): the attribute's survey question answered as a multiple-choice
    item (QA), a short first-person description (BIO), or an instruction to answer as a member of
    the group would (PORTRAY). With several attributes their sentences are joined;
  - any ``string.Template`` text naming columns as ``$COLUMN``.
* **Sample.** One subject per row, or a weighted resample (with replacement, probability
  proportional to the weight), optionally within each group of one attribute.
* **Panels from margins.** `rake` re-weights the rows so that the weighted shares of each
  attribute equal target margins (iterative proportional fitting by the maintained `ipfn`
  package); `panel` then resamples from the raked weights.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simsubjects.errors import UserError

FORMATS = ("argyle", "qa", "bio", "portray")
ID = "persona"  # column of the persona id in trials and responses

# The ATP demographic questions OpinionQA steers with (Santurkar et al. 2023, App. B.2): the QA
# question, the BIO sentence and the PORTRAY clause; {g} is the group. Attributes not listed get a
# generic wording built from the column name.
ATTRIBUTES: dict[str, dict[str, str]] = {
    "POLPARTY": {"question": "In politics today, do you consider yourself a",
                 "bio": "In politics today, I consider myself a {g}.",
                 "portray": "in politics today, you considered yourself a {g}",
                 "argyle": "Politically, I am a {g}.", "topic": "political affiliation"},
    "POLIDEOLOGY": {"question": "In general, would you describe your political views as",
                    "bio": "In general, I would describe my political views as {g}.",
                    "portray": "in general, you would describe your political views as {g}",
                    "argyle": "Ideologically, I describe myself as {g}.", "topic": "political ideology"},
    "SEX": {"question": "What is your sex?", "bio": "I am {gl}.", "portray": "you were {gl}",
            "argyle": "I am {gl}.", "topic": "sex"},
    "AGE": {"question": "How old are you?", "bio": "I am {g} years old.", "portray": "you were {g} years old",
            "argyle": "In terms of my age, I am {g} years old.", "topic": "age"},
    "EDUCATION": {"question": "What is the highest level of schooling or degree that you have completed?",
                  "bio": "The highest level of education I have completed is {g}.",
                  "portray": "the highest level of education you have completed was {g}",
                  "argyle": "In terms of education, the highest level I completed is {g}.", "topic": "education"},
    "CREGION": {"question": "Which part of the United States do you currently live in?",
                "bio": "I currently reside in the {g}.", "portray": "you currently resided in the {g}",
                "argyle": "I live in the {g} of the United States.", "topic": "region of residence"},
    "RACE": {"question": "What is your race or ethnicity?", "bio": "I am {g}.", "portray": "your race or ethnicity was {g}",
             "argyle": "Racially, I am {g}.", "topic": "race or ethnicity"},
    "INCOME": {"question": "Last year, what was your total family income from all sources, before taxes?",
               "bio": "Last year, my total family income from all sources, before taxes, was {g}.",
               "portray": "last year, your total family income from all sources, before taxes, was {g}",
               "argyle": "Financially, my family income last year was {g}.", "topic": "income"},
    "RELIG": {"question": "What is your present religion, if any?", "bio": "My present religion is {g}.",
              "portray": "your present religion was {g}", "argyle": "Religiously, I am {g}.", "topic": "religion"},
}
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Columns the tidy table already uses: a persona attribute must not shadow them.
RESERVED = {"study", "trial", "item", "condition", "subject", "source", "model", "method", "response", "weight",
            "validity", "key", "question", "position", "refusal", "attribute", "group", "order", "order_shown",
            "shown_position", "persona", "persona_text", "n_samples", "n_queries", "prompt", "options", "labels"}


@dataclass
class Respondents:
    """A respondents table: rows, the attribute columns, the weight column (or None), column labels."""

    data: pd.DataFrame
    attributes: list[str]
    weight: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    id_column: str | None = None
    source: str = ""
    info: dict = field(default_factory=dict)  # a panel's weights: Kish n, trimming, margin error (panel())


def _read_table(path: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    from simsubjects.studyfile.limits import table_file  # lazy: imports yaml; climbs (docs/architecture.md): one set of table bounds

    suffix = path.suffix.lower()
    why = table_file(path)  # size and special files, before any read (docs/robustness.md)
    if why:
        raise UserError(f"{path}: {why}")
    try:
        if suffix == ".csv":
            # keep_default_na=False: an answer such as "None" stays text (only empty cells are missing)
            return pd.read_csv(path, dtype=str, keep_default_na=False), {}
        if suffix in (".sav", ".dta"):
            import pyreadstat  # lazy: optional (narwhals, pyreadstat)

            reader = pyreadstat.read_sav if suffix == ".sav" else pyreadstat.read_dta
            df, meta = reader(str(path), apply_value_formats=True)
            labels = {k: v for k, v in (meta.column_names_to_labels or {}).items() if v}
            return df, labels
    except Exception as e:  # noqa: BLE001 - any reader failure is a bad file for the user
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UserError(f"{path}: cannot read the respondents table ({msg})") from None
    raise UserError(f"{path}: respondents table must be .csv, .sav or .dta")


def read_respondents(path, attributes=None, weight: str | None = None, id_column: str | None = None) -> Respondents:
    """Read a respondents table. `attributes`: the demographic columns (default: every column but the
    weight and id); `weight`: the survey-weight column (default: a column named WEIGHT*/weight if any)."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"--personas {p}: no such file (a .csv, .sav or .dta table of respondents)")
    df, labels = _read_table(p)
    if df.empty:
        raise UserError(f"{p}: the respondents table has no rows")
    cols = [str(c) for c in df.columns]
    if weight is None:
        found = [c for c in cols if re.fullmatch(r"(?i)weight(_w\d+)?|wt|wgt", c)]
        weight = found[0] if len(found) == 1 else None
    elif weight not in cols:
        raise UserError(f"{p}: no weight column {weight!r}; columns: {', '.join(cols)}")
    if id_column is None:
        id_column = next((c for c in cols if c.lower() in ("respondent", "id", "qkey", "caseid")), None)
    if attributes is None:
        attributes = [c for c in cols if c not in (weight, id_column)]
    attributes = list(attributes)
    missing = [a for a in attributes if a not in cols]
    if missing:
        raise UserError(f"{p}: no attribute column(s) {', '.join(missing)}; columns: {', '.join(cols)}")
    clash = sorted(set(attributes) & RESERVED)
    if clash:
        raise UserError(f"{p}: attribute column(s) {', '.join(clash)} would shadow a column of the tidy table; "
                        "rename them in the file")
    data = df.copy()
    for a in attributes:
        data[a] = data[a].map(lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else
                              (f"{v:g}" if isinstance(v, float) else str(v)))
    if weight is not None:
        w = pd.to_numeric(data[weight], errors="coerce")
        bad = (w.isna() | (w < 0)).to_numpy()
        if bad.any():
            i = int(bad.nonzero()[0][0])
            raise UserError(f"{p}:{i + 2}: weight {weight} is {str(data[weight].iloc[i])!r}, not a non-negative number")
        data[weight] = w.astype(float)
    ids = data[id_column].astype(str) if id_column else pd.Series([f"row{i + 1}" for i in range(len(data))])
    if ids.duplicated().any():
        raise UserError(f"{p}: respondent id {ids[ids.duplicated()].iloc[0]!r} appears twice in column {id_column}")
    data[ID] = ids.to_numpy()
    return Respondents(data.reset_index(drop=True), attributes, weight, labels, id_column, str(p))


def from_frame(df: pd.DataFrame, attributes, weight: str | None = None, id_column: str | None = None) -> Respondents:
    """A Respondents from a DataFrame already in memory (tests, YAML study files)."""
    data = df.copy()
    data[ID] = data[id_column].astype(str) if id_column else [f"row{i + 1}" for i in range(len(data))]
    for a in attributes:
        data[a] = data[a].astype(str)
    if weight is not None:
        data[weight] = pd.to_numeric(data[weight]).astype(float)
    return Respondents(data.reset_index(drop=True), list(attributes), weight, {}, id_column, "frame")


# ---------------------------------------------------------------- rendering

def _wording(attr: str, kind: str) -> str:
    spec = ATTRIBUTES.get(attr.upper())
    if spec is not None:
        return spec[kind]
    name = attr.replace("_", " ").lower()
    return {"question": f"What is your {name}?", "bio": f"My {name} is {{g}}.",
            "portray": f"your {name} was {{g}}", "argyle": f"My {name} is {{g}}.", "topic": name}[kind]


def qa_context(attr: str, group: str, groups: list[str]) -> str:
    """OpinionQA steer-qa: the attribute's question with lettered groups and the group's letter as the answer."""
    if group not in groups:
        groups = [*groups, group]
    lines = [f"Question: {_wording(attr, 'question')}"] + [f"{LETTERS[i]}. {g}" for i, g in enumerate(groups)]
    return "\n".join(lines + [f"Answer: {LETTERS[groups.index(group)]}"])


def _phrases(row: dict, attrs: list[str], kind: str) -> list[str]:
    """Each attribute's `kind` wording (argyle, bio, portray) filled with the row's group ({gl}: lower case)."""
    return [_wording(a, kind).format(g=row[a], gl=str(row[a]).lower()) for a in attrs]


def render(row: dict, attributes: list[str], fmt: str, groups: dict[str, list[str]] | None = None) -> str:
    """One persona's text in format `fmt` (argyle, qa, bio, portray or a $COLUMN template)."""
    attrs = [a for a in attributes if str(row.get(a, "")) != ""]
    if fmt == "argyle":
        return " ".join(_phrases(row, attrs, "argyle"))
    if fmt == "bio":
        topics = " and ".join(_wording(a, "topic") for a in attrs)
        return (f"Below you will be asked to provide a short description of your {topics} and then answer some "
                f"questions.\nDescription: {' '.join(_phrases(row, attrs, 'bio'))}")
    if fmt == "portray":
        return "Answer the following question as if " + " and ".join(_phrases(row, attrs, "portray")) + "."
    if fmt == "qa":
        return "\n\n".join(qa_context(a, str(row[a]), list((groups or {}).get(a, [row[a]]))) for a in attrs)
    from simsubjects.collect.studies.registry import fill_template  # lazy: imports collect.studies.registry, datasets

    return fill_template(fmt, "--persona-format template", **{k: str(v) for k, v in row.items()})


def check_format(fmt: str) -> None:
    if fmt not in FORMATS and "$" not in fmt:
        raise UserError(f"--persona-format {fmt!r}: choose {', '.join(FORMATS)} or give a template with $COLUMN fields")


def personas(resp: Respondents, fmt: str = "argyle", attributes=None) -> pd.DataFrame:
    """One row per respondent: persona id, the attribute columns, its weight and `persona_text`."""
    check_format(fmt)
    attrs = list(attributes or resp.attributes)
    missing = [a for a in attrs if a not in resp.data.columns]
    if missing:
        raise UserError(f"--attribute {','.join(missing)}: not a column of {resp.source}; "
                        f"columns: {', '.join(resp.attributes)}")
    groups = {a: list(dict.fromkeys(resp.data[a])) for a in attrs}
    out = resp.data[[ID, *resp.attributes]].copy()
    out["persona_weight"] = resp.data[resp.weight].to_numpy() if resp.weight else 1.0
    out["persona_text"] = [render(r, attrs, fmt, groups) for r in resp.data.to_dict("records")]
    return out


# ---------------------------------------------------------------- sampling and raking

DRAW_WEIGHT = "draw_weight"  # the weight column of a resample from a table without one


def resample(resp: Respondents, n: int, seed: int = 0, by: str | None = None,
             weights: np.ndarray | None = None) -> Respondents:
    """A weighted resample (with replacement) of `n` rows, or `n` rows within each group of `by`.

    Probabilities are proportional to `weights` (default: the table's weight column, else equal).
    Drawn rows get ids ``<id>#<k>`` so a respondent drawn twice is two subjects.
    """
    if n < 1:
        raise UserError(f"--sample {n}: must be at least 1 (or all)")
    w = np.asarray(weights if weights is not None else
                   (resp.data[resp.weight] if resp.weight else np.ones(len(resp.data))), dtype=float)
    rng = np.random.default_rng(seed)
    strata = [np.arange(len(resp.data))] if by is None else \
        [np.flatnonzero(resp.data[by].to_numpy() == g) for g in dict.fromkeys(resp.data[by])]
    picks, shares = [], []
    for idx in strata:
        p = w[idx]
        if p.sum() <= 0:
            continue
        picks.append(idx[rng.choice(len(idx), size=n, replace=True, p=p / p.sum())])
        shares.append(p.sum() / w.sum())
    rows = resp.data.iloc[np.concatenate(picks)].copy()
    rows[ID] = [f"{pid}#{k + 1}" for k, pid in enumerate(rows[ID])]
    # A weighted draw: each drawn subject counts once within its group. Drawn n per group, the groups
    # would count equally in the pooled persona prompt (1/3 each of three parties, where the people are
    # 0.40/0.27/0.33: issue 25, audit finding 5), so each row carries its group's share of the weight
    # over n, scaled to a mean of 1: the pooled prompt keeps the people's group shares.
    weight = resp.weight or DRAW_WEIGHT
    rows[weight] = np.repeat([s * len(rows) / n for s in shares], n)
    return Respondents(rows.reset_index(drop=True), resp.attributes, weight, resp.labels, resp.id_column,
                       resp.source)


def read_margins(path) -> dict[str, dict[str, float]]:
    """Target margins from a CSV with columns attribute, group, share (shares of one attribute sum to 1)."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"--margins {p}: no such file (CSV with columns attribute, group, share)")
    df = pd.read_csv(p, dtype={"attribute": str, "group": str}, keep_default_na=False)
    missing = {"attribute", "group", "share"} - set(df.columns)
    if missing:
        raise UserError(f"{p}: missing column(s) {', '.join(sorted(missing))}; expected attribute, group, share")
    out: dict[str, dict[str, float]] = {}
    for i, r in enumerate(df.to_dict("records")):
        try:
            share = float(r["share"])
        except (TypeError, ValueError):
            share = math.nan
        if not share >= 0:
            raise UserError(f"{p}:{i + 2}: share {r['share']!r} is not a non-negative number")
        out.setdefault(r["attribute"], {})[r["group"]] = share
    return out


def _check_margins(resp: Respondents, margins: dict[str, dict[str, float]]) -> None:
    for attr, shares in margins.items():
        if attr not in resp.data.columns:
            raise UserError(f"margins: attribute {attr!r} is not a column of {resp.source}")
        total = sum(shares.values())
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise UserError(f"margins: the shares of {attr} sum to {total:.6g}, not 1")
        present = set(resp.data[attr])
        lacking = [g for g, s in shares.items() if s > 0 and g not in present]
        if lacking:
            raise UserError(f"margins: no respondent has {attr} = {lacking[0]!r}; raking cannot reach that margin")
        extra = sorted(present - set(shares))
        if extra:
            raise UserError(f"margins: {attr} = {extra[0]!r} occurs in {resp.source} but has no target share")


def rake(resp: Respondents, margins: dict[str, dict[str, float]], tol: float = 1e-12,
         max_iter: int = 10_000) -> np.ndarray:
    """Raking weights (summing to 1) whose weighted shares of each attribute equal `margins`.

    Iterative proportional fitting by ipfn (a maintained implementation), started from the table's
    weights. Raises when it does not converge (margins that contradict each other in the sample).
    """
    from ipfn import ipfn  # lazy: imports ipfn

    _check_margins(resp, margins)
    attrs = list(margins)
    base = resp.data[resp.weight].to_numpy(float) if resp.weight else np.ones(len(resp.data))
    df = resp.data[attrs].copy()
    df["total"] = base / base.sum()
    aggregates = [pd.Series(margins[a]).rename_axis(a) for a in attrs]
    # ipfn fits the aggregated cells; every row of a cell is scaled by the cell's factor
    # ipfn prints its convergence message and uses pandas' deprecated inplace= (warnings not ours to fix)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted, flag, _ = ipfn.ipfn(df.copy(), aggregates, [[a] for a in attrs], weight_col="total",
                                    convergence_rate=tol, max_iteration=max_iter, rate_tolerance=0,
                                    verbose=2).iteration()
    w = fitted["total"].to_numpy(float)
    worst = max_margin_error(resp.data, w, margins)
    if not flag or worst > 1e-9:
        raise UserError(f"margins: raking did not converge (largest margin error {worst:.3g}); the targets cannot be "
                        "reached together with these respondents")
    return w / w.sum()


def max_margin_error(data: pd.DataFrame, weights: np.ndarray, margins: dict[str, dict[str, float]]) -> float:
    w = np.asarray(weights, float) / np.sum(weights)
    worst = 0.0
    for attr, shares in margins.items():
        got = pd.Series(w).groupby(data[attr].to_numpy()).sum()
        worst = max(worst, *(abs(float(got.get(g, 0.0)) - s) for g, s in shares.items()))
    return worst


def kish_n(weights) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2: how many equally weighted respondents the weights
    are worth (Kish 1965). One line, hand-written: ipfn (the raking package) does not report it."""
    w = np.asarray(weights, float)
    return float(w.sum() ** 2 / (w ** 2).sum()) if (w ** 2).sum() > 0 else math.nan


def trim_weights(weights, cap: float, max_iter: int = 100) -> np.ndarray:
    """Weights capped at `cap` times their mean, the excess spread over the others in proportion to their
    weights, repeated until none exceeds the cap (summing to 1). Trimming trades the margins' exactness
    for a larger Kish n; `panel` reports both."""
    if not cap >= 1:
        raise UserError(f"--trim {cap}: must be at least 1 (a cap in multiples of the mean weight)")
    w = np.asarray(weights, float) / np.sum(weights)
    limit = cap / len(w)
    for _ in range(max_iter):
        over = w > limit * (1 + 1e-12)
        if not over.any():
            break
        excess = (w[over] - limit).sum()
        w[over] = limit
        free = ~over & (w < limit)
        w[free] += excess * w[free] / w[free].sum()
    return w / w.sum()


def panel_weights(resp: Respondents, margins: dict[str, dict[str, float]], trim: float | None = None):
    """(raking weights, possibly trimmed, summing to 1; a record of their Kish n and margin error)."""
    w = rake(resp, margins)
    info = {"respondents": len(w), "kish_n_raked": kish_n(w)}
    if trim is not None:
        w = trim_weights(w, trim)
        info.update(trim=float(trim), kish_n_trimmed=kish_n(w))
    info["max_margin_error"] = max_margin_error(resp.data, w, margins)
    return w, info


def panel(resp: Respondents, margins: dict[str, dict[str, float]], n: int, seed: int = 0,
          trim: float | None = None) -> Respondents:
    """A panel of `n` subjects drawn from the respondents with raked weights (so it matches the margins in
    expectation), optionally trimmed at `trim` times the mean weight; `info` records Kish's effective n of
    the weights (the respondents the panel's draws are worth) and the margins' largest error."""
    w, info = panel_weights(resp, margins, trim)
    out = resample(resp, n, seed, weights=w)
    out.info = info
    return out


def column_labels(resp: Respondents) -> dict[str, str]:
    """Variable labels of the persona columns in the tidy table and its exports."""
    src = Path(resp.source).name
    out = {a: (resp.labels.get(a) or f"Persona attribute {a} (from {src})")[:80] for a in resp.attributes}
    out.update({ID: "Persona (respondent id; '' for the default prompt)",
                "persona_weight": "Survey weight of the persona's respondent (1 after a weighted resample)",
                "persona_text": "Persona text placed before the question"})
    return out
