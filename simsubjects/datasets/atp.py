"""Pew American Trends Panel (ATP) answers -> weighted human answer distributions (tidy human rows).

Two layouts are read:

- OpinionQA (Santurkar et al. 2023), ``human_resp/American_Trends_Panel_W<n>/``:
  ``info.csv`` (one row per question: ``key, question, references`` = all option texts as a
  Python list, ``option_ordinal`` = ordinal values of the first len(option_ordinal) references; the
  references after those are refusals such as "Refused"), ``metadata.csv`` (``key, options``:
  demographic attributes and their groups) and ``responses.csv`` (one row per respondent: one
  column per question key holding the answer text, demographic columns, and ``WEIGHT_W<n>``).
- Raw ATP SPSS files (``.sav``) read with pyreadstat: numeric answer codes with value labels,
  ``WEIGHT_W<n>`` survey weights, question wording in the variable labels. Codes in
  `refusal_codes` (Pew uses 99) or labelled "Refused"/"Don't know" are refusals; the other labelled
  codes, in ascending order, get ordinal positions 1..N.

Output: one row per question x (demographic group) x answer option with
``weight`` = summed survey weight of the respondents who chose it (0 for options nobody chose),
``n_respondents`` the unweighted count, ``position`` the option's ordinal value (NaN for refusals
and unknown answers), ``refusal``, ``attribute``/``group`` ("Overall"/"Overall" for the whole
sample), source "human", method "observed", model = the data set (e.g. "ATP W41"). Respondents
who were not asked a question (empty answer) are left out of that question.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from simsubjects.errors import UserError
from simsubjects.datasets.refusals import is_refusal

STUDY = "survey_bias"  # the study named on the human rows unless the caller names another
OVERALL = "Overall"
HUMAN_COLUMNS = ["study", "trial", "item", "condition", "subject", "source", "model", "method", "response", "weight",
                 "validity", "key", "question", "wave", "position", "refusal", "n_respondents", "attribute", "group"]


def _as_list(by) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def weighted_distributions(answers: pd.DataFrame, weight: pd.Series, options: dict[str, list[tuple[str, float, bool]]],
                           dataset: str, wave, questions: dict[str, str] | None = None, by=None, overall: bool = True,
                           groups: dict[str, list[str]] | None = None, study: str = STUDY) -> pd.DataFrame:
    """Weighted answer distribution of each question in `options`, overall and per group of `by`.

    `answers`: one row per respondent, answer texts in the question columns (NaN = not asked) and
    the `by` columns; `options[key]`: (text, position, refusal) of each offered option.
    `groups[attr]`: the groups to keep for an attribute (others, e.g. "Refused", are dropped).
    """
    by = _as_list(by)
    w = pd.to_numeric(weight, errors="coerce")
    if w.isna().any() or (w < 0).any():
        i = int((w.isna() | (w < 0)).to_numpy().nonzero()[0][0])
        raise UserError(f"{dataset}: survey weight of respondent row {i + 1} is missing or negative")
    for attr in by:
        if attr not in answers.columns:
            raise UserError(f"{dataset}: no demographic column {attr!r}; available: {', '.join(map(str, answers.columns[:20]))} ...")
    splits = ([(OVERALL, OVERALL, np.ones(len(answers), bool))] if overall or not by else [])
    for attr in by:
        col = answers[attr]
        keep = (groups or {}).get(attr)
        # refused / don't-know answers to a demographic question are not a group
        values = [v for v in pd.unique(col.dropna()) if (keep is None or v in keep) and not is_refusal(str(v))]
        if keep is not None:
            values = [v for v in keep if v in set(values)]
        splits += [(attr, str(v), (col == v).to_numpy()) for v in values]
    rows = []
    for key, opts in options.items():
        if key not in answers.columns:
            raise UserError(f"{dataset}: no answers column for question {key!r}")
        ans = answers[key]
        asked = ans.notna().to_numpy() & (ans.astype(str).str.strip() != "").to_numpy()
        texts = [t for t, _, _ in opts]
        extra = sorted(set(ans[asked].astype(str)) - set(texts))
        table = [*opts, *[(t, math.nan, is_refusal(t)) for t in extra]]
        for attr, group, mask in splits:
            m = asked & mask
            if not m.any():
                continue
            a = ans[m].astype(str).to_numpy()
            ww = w[m].to_numpy(float)
            for text, pos, ref in table:
                hit = a == text
                rows.append({
                    "study": study, "trial": f"{dataset}|{key}|{attr}={group}", "item": key, "condition": "",
                    "subject": "" if attr == OVERALL else f"{attr}={group}", "source": "human", "model": dataset,
                    "method": "observed", "response": text, "weight": float(ww[hit].sum()), "validity": 1.0,
                    "key": key, "question": (questions or {}).get(key, ""), "wave": wave, "position": pos,
                    "refusal": bool(ref), "n_respondents": int(hit.sum()), "attribute": attr, "group": group,
                })
    if not rows:
        raise UserError(f"{dataset}: no answers to the requested questions")
    return pd.DataFrame(rows, columns=HUMAN_COLUMNS)


def _literal_list(text, where: str) -> list:
    try:
        v = ast.literal_eval(str(text))
    except (ValueError, SyntaxError):
        raise UserError(f"{where}: {str(text)[:60]!r} is not a list like ['A', 'B']") from None
    if not isinstance(v, (list, tuple)):
        raise UserError(f"{where}: expected a list, got {str(text)[:60]!r}")
    return list(v)


def _read_csv(path: Path, **kw) -> pd.DataFrame:
    """pandas.read_csv with any parser failure (empty file, bad bytes, bad quoting) as a UserError."""
    try:
        return pd.read_csv(path, **kw)
    except Exception as e:  # noqa: BLE001 - any parser failure is a bad file for the user
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UserError(f"{path}: cannot read as UTF-8 CSV ({msg})") from None


def _check_weights(values: pd.Series, column: str, where) -> None:
    w = pd.to_numeric(values, errors="coerce")
    bad = (w.isna() | (w < 0)).to_numpy()
    if bad.any():
        i = int(bad.nonzero()[0][0])
        raise UserError(f"{where}: survey weight {column} of respondent row {i + 1} is {str(values.iloc[i])!r}, "
                        "not a non-negative number")


def _wave_of(name: str) -> int | None:
    m = re.search(r"W(\d+)", name, re.IGNORECASE)
    return int(m.group(1)) if m else None


def _weight_column(columns: Sequence[str], wave: int | None, where: str, weight: str | None) -> str:
    if weight is not None:
        if weight not in columns:
            raise UserError(f"{where}: no weight column {weight!r}")
        return weight
    cands = [c for c in columns if re.fullmatch(r"WEIGHT_W\d+", str(c), re.IGNORECASE)]
    if wave is not None and f"WEIGHT_W{wave}" in cands:
        return f"WEIGHT_W{wave}"
    if len(cands) == 1:
        return cands[0]
    raise UserError(f"{where}: cannot tell the survey weight column (found {cands or 'none'}); pass weight=")


def read_opinionqa_wave(wave_dir, keys: Sequence[str] | None = None, by=None, overall: bool = True,
                        weight: str | None = None) -> pd.DataFrame:
    """OpinionQA ``American_Trends_Panel_W<n>/`` folder -> weighted human distributions.

    `keys`: questions to read (default: every question in info.csv); `by`: demographic
    attribute(s) (columns of responses.csv, e.g. "POLPARTY"), whose groups are those listed in
    metadata.csv when it has the attribute.
    """
    root = Path(wave_dir)
    info_p, resp_p, meta_p = root / "info.csv", root / "responses.csv", root / "metadata.csv"
    for p in (info_p, resp_p):
        if not p.is_file():
            raise UserError(f"{p}: missing; an OpinionQA wave folder holds info.csv, metadata.csv and responses.csv")
    info = _read_csv(info_p, dtype=str, keep_default_na=False)
    for col in ("key", "references", "option_ordinal"):
        if col not in info.columns:
            raise UserError(f"{info_p}: missing column {col!r}")
    info = info.drop_duplicates("key")
    if keys is not None:
        unknown = [k for k in keys if k not in set(info["key"])]
        if unknown:
            raise UserError(f"{info_p}: question key(s) {', '.join(unknown)} not in info.csv")
        info = info.set_index("key").loc[list(keys)].reset_index()
    options, questions = _wave_options(info, info_p)
    wave = _wave_of(root.name)
    header = _read_csv(resp_p, nrows=0).columns
    wcol = _weight_column(list(header), wave, str(resp_p), weight)
    if wave is None:
        wave = _wave_of(wcol)
    missing = [k for k in options if k not in header]
    if missing:
        raise UserError(f"{resp_p}: no column for question(s) {', '.join(missing[:5])}")
    cols = [c for c in dict.fromkeys([*options, *_as_list(by), wcol])]
    missing = [c for c in _as_list(by) if c not in header]
    if missing:
        raise UserError(f"{resp_p}: no demographic column(s) {', '.join(missing)}")
    # Answers are text: an option worded "None" (28 ATP questions of W26-W54, e.g. GUNFRIEND_W26) or
    # "NA" must not turn into a missing value; an empty cell is a question not asked. Only the
    # weight column reads blanks as missing (then rejected by _check_weights).
    data = _read_csv(resp_p, usecols=cols, dtype={c: str for c in cols if c != wcol}, keep_default_na=False,
                     na_values={wcol: [""]})
    _check_weights(data[wcol], wcol, resp_p)
    groups = None
    if meta_p.is_file() and by is not None:
        meta = _read_csv(meta_p, dtype=str, keep_default_na=False)
        if {"key", "options"} <= set(meta.columns):
            groups = {r["key"]: [str(x) for x in _literal_list(r["options"], f"{meta_p} ({r['key']})")]
                      for r in meta.to_dict("records") if r["key"] in _as_list(by)}
    return weighted_distributions(data, data[wcol], options, f"ATP W{wave}" if wave is not None else root.name, wave,
                                  questions, by, overall, groups)


def _wave_options(info: pd.DataFrame, info_p: Path) -> tuple[dict, dict]:
    """({key: [(option text, ordinal position or NaN, refusal)]}, {key: question}) from info.csv: the
    references after the `option_ordinal` values are refusals."""
    options, questions = {}, {}
    for i, rec in enumerate(info.to_dict("records")):
        where = f"{info_p}:{i + 2} ({rec['key']})"
        refs = [str(r) for r in _literal_list(rec["references"], where + " references")]
        try:
            ordinal = [float(x) for x in _literal_list(rec["option_ordinal"], where + " option_ordinal")]
        except (TypeError, ValueError):
            raise UserError(f"{where} option_ordinal: {str(rec['option_ordinal'])[:60]!r} is not a list of numbers") from None
        if len(ordinal) > len(refs):
            raise UserError(f"{where}: {len(ordinal)} ordinal values for {len(refs)} references")
        options[rec["key"]] = ([(r, ordinal[j], False) for j, r in enumerate(refs[: len(ordinal)])]
                               + [(r, math.nan, True) for r in refs[len(ordinal):]])
        questions[rec["key"]] = rec.get("question", "")
    return options, questions


def read_atp_sav(path, keys: Sequence[str] | None = None, by=None, overall: bool = True, weight: str | None = None,
                 refusal_codes: Sequence[float] = (99,)) -> pd.DataFrame:
    """Raw ATP SPSS file -> weighted human distributions (value labels as option texts).

    `keys`: question variables (default: every labelled variable named like ``*_W<n>`` except
    weights); `by`: demographic variable(s), grouped by their value labels.
    """
    import pyreadstat  # lazy: about 0.4 s to import; only an ATP .sav file needs it

    p = Path(path)
    if not p.is_file():
        raise UserError(f"{p}: no such .sav file")
    try:
        _, meta = pyreadstat.read_sav(str(p), metadataonly=True)
    except Exception as e:  # noqa: BLE001 - any reader failure is a bad file for the user
        raise UserError(f"{p}: cannot read as an SPSS .sav file ({e})") from None
    names = list(meta.column_names)
    labels = meta.variable_value_labels
    wave = _wave_of(p.stem)
    wcol = _weight_column(names, wave, str(p), weight)
    if wave is None:
        wave = _wave_of(wcol)
    if keys is None:
        keys = [c for c in names if c in labels and re.search(r"_W\d+$", c) and not c.upper().startswith("WEIGHT")]
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise UserError(f"{p}: variable(s) {', '.join(unknown)} not in the file")
    unlabelled = [k for k in keys if k not in labels]
    if unlabelled:
        raise UserError(f"{p}: question variable(s) {', '.join(unlabelled)} have no value labels; pass keys= with labelled questions")
    by_cols = _as_list(by)
    missing = [c for c in by_cols if c not in names]
    if missing:
        raise UserError(f"{p}: no demographic variable(s) {', '.join(missing)}")
    try:
        df, _ = pyreadstat.read_sav(str(p), usecols=list(dict.fromkeys([*keys, *by_cols, wcol])),
                                    apply_value_formats=False)
    except Exception as e:  # noqa: BLE001 - a truncated file fails only when the rows are read
        raise UserError(f"{p}: cannot read as an SPSS .sav file ({e})") from None
    _check_weights(df[wcol], wcol, p)
    refusal_codes = {float(c) for c in refusal_codes}
    options, questions, data = {}, {}, pd.DataFrame(index=df.index)
    for k in keys:
        vl = {float(c): str(t) for c, t in labels[k].items()}
        valid = sorted(c for c, t in vl.items() if c not in refusal_codes and not is_refusal(t))
        pos = {c: float(i + 1) for i, c in enumerate(valid)}
        options[k] = [(vl[c], pos.get(c, math.nan), c not in pos) for c in sorted(vl)]
        codes = pd.to_numeric(df[k], errors="coerce")
        # unlabelled codes keep their number as text (no position)
        data[k] = [None if pd.isna(c) else vl.get(float(c), f"{c:g}") for c in codes]
        questions[k] = (meta.column_names_to_labels or {}).get(k) or ""
    for c in by_cols:
        vl = {float(a): str(b) for a, b in labels.get(c, {}).items()}
        data[c] = [None if pd.isna(v) else vl.get(float(v), f"{v:g}") if isinstance(v, (int, float)) else str(v)
                   for v in df[c]]
    return weighted_distributions(data, df[wcol], options, f"ATP W{wave}" if wave is not None else p.stem, wave,
                                  questions, by, overall)
