"""METHODS.md: a methods paragraph for a paper, written by `analyze` beside the tables (issue 40, item 8).

Everything in it comes from the run itself: the models and their revisions (manifest), the subjects,
items and trials (responses), how answers were read (the `method` column), validity (the `validity`
column) and the tests with their units and multiplicity families (the tables). Text a user wrote (a
study's title, a model's or a column's name) is escaped as Markdown text (collect.untrusted.md_text),
so a name cannot open a heading, a link or an HTML tag in the page it is pasted into.
"""

from __future__ import annotations

import pandas as pd

from simsubjects.analyze.estimand import MIN_VALIDITY
from simsubjects.collect.sample_kinds import sample_words
from simsubjects.collect.untrusted import md_text

NAME = "METHODS.md"
READ = {"exact": "the exact probability the model gives each answer option (its next-token distribution, "
                 "renormalized over the options)",
        "sampled": "answers sampled from the model and parsed into the options"}


def _list(names) -> str:
    names = [md_text(n) for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _models(manifests: list[dict], model_rows: pd.DataFrame) -> str:
    parts = []
    for m in manifests:
        info = m.get("model") or {}
        info = info if isinstance(info, dict) else {"name": str(info)}  # a manifest is input: any shape
        name = info.get("name") or info.get("spec") or "the model"
        rev = str(info.get("revision") or "")
        parts.append(md_text(name) + (f" (revision {md_text(rev[:19])})" if rev else ""))
    names = sorted(model_rows["model"].dropna().astype(str).unique()) if "model" in model_rows else []
    return ", ".join(dict.fromkeys(parts)) or _list(names) or "a language model"


def _design(model_rows: pd.DataFrame) -> str:
    count = {c: model_rows[c].nunique() for c in ("subject", "item", "trial") if c in model_rows}
    words = [f"{count[c]:,} {w}{'s' if count[c] != 1 else ''}" for c, w in
             (("subject", "subject"), ("item", "item"), ("trial", "trial")) if c in count]
    return f"The design had {', '.join(words)}." if words else ""


def _sample(kind: str) -> str:
    """The run's `sample` kind in words (collect/sample_kinds.py, the column of every test table)."""
    return f"The subjects' sample (the `sample` column of every test table) is {sample_words(kind)}." if kind else ""


def _reading(model_rows: pd.DataFrame) -> str:
    methods = sorted(model_rows["method"].dropna().astype(str).unique()) if "method" in model_rows else []
    said = [READ.get(m, md_text(m)) for m in methods]
    if not said:
        return ""
    noise = (" For sampled answers the within-subject sampling noise is part of every variance."
             if "sampled" in methods else "")
    return f"Answers were read as {'; and as '.join(said)}.{noise}"


def _validity(model_rows: pd.DataFrame, threshold: float) -> str:
    if "validity" not in model_rows or "trial" not in model_rows:
        return ""
    v = pd.to_numeric(model_rows.groupby("trial")["validity"].first(), errors="coerce").dropna()
    if v.empty:
        return ""
    low = int((v < threshold).sum())
    return (f"Validity, the model's probability on the answer options, averaged {v.mean():.3f} over trials "
            f"(minimum {v.min():.3f}; {low:,} of {len(v):,} trials below {threshold:g}); shares are "
            "renormalized over the options, so every test is conditional on a valid answer. A test whose model "
            f"rows average a validity below {threshold:g} is flagged (`low_validity` = True, threshold set by "
            "`analyze --min-validity`).")


def _people(responses: pd.DataFrame) -> str:
    if "source" not in responses:
        return ""
    h = responses[responses["source"] == "human"]
    if h.empty:
        return ""
    n = h["subject"].nunique() if "subject" in h else h["trial"].nunique() if "trial" in h else len(h)
    return f"People's answers ({n:,} respondents) were analyzed beside the model's with the same estimators."


def _tests(tables: dict[str, pd.DataFrame]) -> tuple[str, str]:
    """(the tests sentence, the multiplicity sentence) from every table with a p-value."""
    rows, families = [], []
    for name, df in tables.items():
        if "p.value" not in df or df.empty:
            continue
        kinds = sorted(df["test"].dropna().astype(str).unique()) if "test" in df else []
        units = sorted(df["unit"].dropna().astype(str).unique()) if "unit" in df else []
        what = f"{len(df):,} test{'s' if len(df) != 1 else ''}" + (f": {_list(kinds)}" if kinds else "")
        unit = f"; unit: {_list(units)}" if units else ""
        samples = sorted(df["sample"].dropna().astype(str).unique()) if "sample" in df else []
        unit += f"; sample: {_list(samples)}" if samples else ""
        low = int(df["low_validity"].astype(bool).sum()) if "low_validity" in df else 0
        unit += f"; {low:,} flagged low validity" if low else ""
        rows.append(f"{md_text(name)} ({what}{unit})")
        if "family" in df and "p.value.holm" in df:
            fam = df["family"].dropna().astype(str)
            k = fam[~fam.str.startswith("not counted")].nunique()
            families.append(f"{md_text(name)} ({k:,} famil{'ies' if k != 1 else 'y'}: {_list(sorted(fam.unique())[:3])}"
                            f"{' ...' if fam.nunique() > 3 else ''})")
    if not rows:
        return "", ""
    tests = "Tests, per table: " + "; ".join(rows) + "."
    mult = ("Within each family of tests the p-values were adjusted by Holm's method and by Benjamini and "
            "Hochberg's false discovery rate (columns p.value.holm and p.value.bh): " + "; ".join(families) + "."
            if families else "")
    return tests, mult


ESTIMAND = ("The estimand is the model's expected answer over the declared distribution of subjects; intervals "
            "and tests treat the subjects as a sample from that distribution, so their uncertainty comes only "
            "from it, not from a population of people.")


def methods_text(study: str, title: str, manifests: list[dict], responses: pd.DataFrame,
                 tables: dict[str, pd.DataFrame], sample: str = "", min_validity: float = MIN_VALIDITY) -> str:
    """The Markdown of METHODS.md for one analysis."""
    model_rows = responses[responses["source"] != "human"] if "source" in responses else responses
    if "method" in model_rows:  # a session's path and round records (method `session`) are no answers: count decisions
        model_rows = model_rows[model_rows["method"].astype(str) != "session"]
    versions = (manifests[0].get("versions") if manifests else None) or {}
    version = str(versions.get("simsubjects", "")) if isinstance(versions, dict) else ""
    head = (f"We ran the study {md_text(title or study)} with simsubjects{' ' + md_text(version) if version else ''}"
            f", with {_models(manifests, model_rows)} as subjects.")
    tests, mult = _tests(tables)
    body = " ".join(s for s in (head, _design(model_rows), _sample(sample), _reading(model_rows),
                                _validity(model_rows, min_validity), ESTIMAND,
                                _people(responses), tests, mult) if s)
    return (f"# Methods: {md_text(title or study)}\n\n"
            "Written by `simsubjects analyze` from this run's own manifest, responses and tables; paste the "
            "paragraph below into a paper's methods section (conventions: docs/conventions.md).\n\n"
            f"{body}\n")
