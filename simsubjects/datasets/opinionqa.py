"""OpinionQA (Santurkar et al. 2023) human data in both released formats -> tidy human rows.

1. The wave folder of the full data set, ``American_Trends_Panel_W<n>/`` with ``info.csv``,
   ``metadata.csv`` and ``responses.csv`` (one row per respondent): read by
   ``collect.human.atp.read_opinionqa_wave`` (used here unchanged).
2. The per-group count files of the OpinionQA GitHub repository, ``<ATTRIBUTE>_data.json`` beside
   ``info.csv``: for each question key ``MC_options``, ``question_text`` and, for each group of
   the attribute, ``{answer text: count}``. An overall distribution is the sum over the groups of
   one attribute (every respondent is in exactly one group, the "Refused" group included).

The options, their order and their ordinal values come from ``info.csv`` (``references``,
``option_ordinal``; references after the ordinal ones are refusals), because the released
``MC_options`` split an option at its commas ("Yes", "likely" for "Yes, likely") and keep quotes
around options with apostrophes. Answers in the count files are matched to the references
exactly, then with surrounding quotes removed; any other answer text is kept as an answer without
an ordinal position. Answer texts are never parsed as missing values: "None" stays an answer.

Output rows have the columns of ``collect.human.atp.HUMAN_COLUMNS`` (the same table the wave-folder
reader returns): one row per question x group x answer, ``weight`` = count, ``attribute``/``group``
("Overall"/"Overall" for the whole sample).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from simsubjects.errors import UserError
from simsubjects.datasets.refusals import is_refusal
from .atp import HUMAN_COLUMNS, OVERALL, _literal_list, _read_csv, _wave_of, read_opinionqa_wave

STUDY = "opinion_survey"
DATA_FILE = re.compile(r"^(?P<attr>.+)_data\.json$")


@dataclass(frozen=True)
class Question:
    key: str
    question: str
    references: tuple[str, ...]  # every option, ordinal ones first
    ordinal: tuple[float, ...]  # ordinal values of the first len(ordinal) references

    @property
    def positions(self) -> tuple[float, ...]:
        return tuple(self.ordinal) + (math.nan,) * (len(self.references) - len(self.ordinal))

    @property
    def refusal(self) -> tuple[bool, ...]:
        return tuple(i >= len(self.ordinal) for i in range(len(self.references)))


def read_info(path, keys: Sequence[str] | None = None) -> dict[str, Question]:
    """OpinionQA ``info.csv`` -> {key: Question}, in file order (or the order of `keys`)."""
    p = Path(path)
    if p.is_dir():
        p = p / "info.csv"
    if not p.is_file():
        raise UserError(f"{p}: missing; OpinionQA questions come as info.csv (key, question, references, option_ordinal)")
    info = _read_csv(p, dtype=str, keep_default_na=False)
    for col in ("key", "question", "references", "option_ordinal"):
        if col not in info.columns:
            raise UserError(f"{p}: missing column {col!r}; expected OpinionQA's info.csv")
    out: dict[str, Question] = {}
    for i, rec in enumerate(info.to_dict("records")):
        where = f"{p}:{i + 2} ({rec['key']})"
        if not rec["key"]:
            raise UserError(f"{p}:{i + 2}: empty question key")
        refs = tuple(str(r) for r in _literal_list(rec["references"], where + " references"))
        try:
            ordinal = tuple(float(x) for x in _literal_list(rec["option_ordinal"], where + " option_ordinal"))
        except (TypeError, ValueError):
            raise UserError(f"{where} option_ordinal: {rec['option_ordinal'][:60]!r} is not a list of numbers") from None
        if len(ordinal) > len(refs) or len(ordinal) < 2:
            raise UserError(f"{where}: {len(ordinal)} ordinal values for {len(refs)} references (need 2..{len(refs)})")
        if len(set(refs)) != len(refs):
            raise UserError(f"{where}: an option appears twice in references")
        out.setdefault(rec["key"], Question(rec["key"], rec["question"], refs, ordinal))
    if keys is not None:
        unknown = [k for k in keys if k not in out]
        if unknown:
            raise UserError(f"{p}: question key(s) {', '.join(unknown)} not in info.csv")
        out = {k: out[k] for k in keys}
    if not out:
        raise UserError(f"{p}: no questions")
    return out


def count_files(folder) -> dict[str, Path]:
    """{attribute: path} of the ``<ATTRIBUTE>_data.json`` files in `folder`."""
    root = Path(folder)
    return {m["attr"]: root / f.name for f in sorted(root.iterdir()) if f.is_file()
            and (m := DATA_FILE.match(f.name))} if root.is_dir() else {}


def _unquote(text: str) -> str:
    t = text.strip()
    return t[1:-1] if len(t) >= 2 and t[0] == t[-1] == '"' else t


def _load_counts(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: cannot read as JSON ({e})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected an object {{question key: {{MC_options, question_text, group: counts}}}}")
    return data


def _group_counts(entry, where: str) -> dict[str, dict[str, float]]:
    if not isinstance(entry, dict):
        raise UserError(f"{where}: expected an object with MC_options, question_text and one object per group")
    out = {}
    for group, counts in entry.items():
        if group in ("MC_options", "question_text"):
            continue
        if not isinstance(counts, dict):
            raise UserError(f"{where} group {group!r}: expected {{answer: count}}")
        clean = {}
        for answer, n in counts.items():
            try:
                v = float(n)
            except (TypeError, ValueError):
                v = math.nan
            if not v >= 0:
                raise UserError(f"{where} group {group!r} answer {answer!r}: count {n!r} is not a non-negative number")
            clean[str(answer)] = v
        out[str(group)] = clean
    return out


def _rows(q: Question, counts: dict[str, float], dataset: str, wave, attribute: str, group: str) -> list[dict]:
    refs = list(q.references)
    matched = {r: 0.0 for r in refs}
    extra: dict[str, float] = {}
    for answer, n in counts.items():
        if answer in matched:
            matched[answer] += n
        elif _unquote(answer) in matched:
            matched[_unquote(answer)] += n
        else:
            extra[answer] = extra.get(answer, 0.0) + n
    table = [(r, pos, ref, matched[r]) for r, pos, ref in zip(refs, q.positions, q.refusal)]
    table += [(t, math.nan, is_refusal(t), n) for t, n in sorted(extra.items())]
    return [{
        "study": STUDY, "trial": f"{dataset}|{q.key}|{attribute}={group}", "item": q.key, "condition": "",
        "subject": "" if attribute == OVERALL else f"{attribute}={group}", "source": "human", "model": dataset,
        "method": "observed", "response": text, "weight": float(n), "validity": 1.0, "key": q.key,
        "question": q.question, "wave": wave, "position": pos, "refusal": bool(ref),
        "n_respondents": int(round(n)), "attribute": attribute, "group": group,
    } for text, pos, ref, n in table]


def read_count_files(folder, attributes: Sequence[str] | None = None, keys: Sequence[str] | None = None,
                     overall_from: str | None = None, groups: dict[str, list[str]] | None = None,
                     info=None) -> pd.DataFrame:
    """A folder of ``<ATTRIBUTE>_data.json`` + ``info.csv`` -> tidy human rows, per group and overall.

    `attributes`: which count files (default all); `overall_from`: the attribute whose groups are
    summed into the Overall rows (default: the first of `attributes`); `groups[attr]`: the groups
    to report for an attribute (default: those of metadata.csv if it lists the attribute, else
    every group whose name is not a refusal such as "Refused"). `keys`: questions (default: every
    question of info.csv that the count files hold).
    """
    root = Path(folder)
    files = count_files(root)
    if not files:
        raise UserError(f"{root}: no <ATTRIBUTE>_data.json count files (OpinionQA's per-group format)")
    attributes = list(attributes) if attributes is not None else sorted(files)
    missing = [a for a in attributes if a not in files]
    if missing:
        raise UserError(f"{root}: no count file {missing[0]}_data.json; found {', '.join(f.name for f in files.values())}")
    questions = info if info is not None else read_info(root / "info.csv")
    overall_from = overall_from or attributes[0]
    if overall_from not in files:
        raise UserError(f"{root}: no count file {overall_from}_data.json to sum into the overall distribution")
    meta = _metadata_groups(root)
    wave = _wave_of(root.name)
    dataset = f"ATP W{wave}" if wave is not None else root.name
    rows: list[dict] = []
    for attr in dict.fromkeys([overall_from, *attributes]):
        data = _load_counts(files[attr])
        wanted = [k for k in (keys if keys is not None else questions) if k in data or keys is not None]
        for key in wanted:
            if key not in questions:
                raise UserError(f"{files[attr]}: question {key!r} is not in info.csv")
            if key not in data:
                raise UserError(f"{files[attr]}: no counts for question {key!r}")
            per_group = _group_counts(data[key], f"{files[attr]} ({key})")
            q = questions[key]
            if attr == overall_from:
                total: dict[str, float] = {}
                for counts in per_group.values():
                    for a, n in counts.items():
                        total[a] = total.get(a, 0.0) + n
                rows += _rows(q, total, dataset, wave, OVERALL, OVERALL)
            if attr not in attributes:
                continue
            keep = (groups or {}).get(attr) or meta.get(attr)
            names = [g for g in keep if g in per_group] if keep else [g for g in per_group if not is_refusal(g)]
            for g in names:
                rows += _rows(q, per_group[g], dataset, wave, attr, g)
    if not rows:
        raise UserError(f"{root}: the count files hold none of the questions of info.csv")
    return pd.DataFrame(rows, columns=HUMAN_COLUMNS)


def _metadata_groups(root: Path) -> dict[str, list[str]]:
    p = root / "metadata.csv"
    if not p.is_file():
        return {}
    meta = _read_csv(p, dtype=str, keep_default_na=False)
    if not {"key", "options"} <= set(meta.columns):
        return {}
    return {r["key"]: [str(x) for x in _literal_list(r["options"], f"{p} ({r['key']})")] for r in meta.to_dict("records")}


def read_opinionqa(folder, attributes: Sequence[str] | None = None, keys: Sequence[str] | None = None,
                   fmt: str = "auto", overall_from: str | None = None) -> pd.DataFrame:
    """Either released format: ``counts`` (``*_data.json``), ``wave`` (responses.csv) or ``auto``
    (the count files where present, else the wave folder)."""
    root = Path(folder)
    if not root.is_dir():
        raise UserError(f"{root}: no such folder (an OpinionQA American_Trends_Panel_W<n> folder)")
    if fmt == "auto":
        fmt = "counts" if count_files(root) else "wave"
    if fmt == "counts":
        return read_count_files(root, attributes, keys, overall_from)
    if fmt == "wave":
        if keys is None:
            keys = list(read_info(root / "info.csv"))
        human = read_opinionqa_wave(root, keys=list(keys), by=list(attributes) if attributes else None)
        return human.assign(study=STUDY)
    raise UserError(f"human data format {fmt!r}: choose counts, wave or auto")
