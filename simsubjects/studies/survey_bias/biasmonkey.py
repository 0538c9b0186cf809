"""Readers of the released data of Tjuatja et al. (2024), github.com/lindiatjuatja/BiasMonkey.

Question files (``prompts/``): ``read_biasmonkey_questions`` (re-exported from
``simsubjects.studies.survey_bias.design``) turns them into the item table.

Per-sample response files (``results/<model>/csv/``): ``read_biasmonkey_responses`` turns them
into tidy responses (docs/schema.md) plus the matching item table, so the survey-bias analysis
runs on them unchanged.

How the released response files are laid out (worked out from the files, ``format_results.py``
and ``analysis/utils.py`` of the release):

- One row per sampled answer: ``key, response, group, num_options``; 50 rows per question and form.
  ``response`` is the lower-case letter answered; a few files (e.g. gpt-3.5-turbo-instruct's
  ``odd_even.csv``) also hold blank answers. A blank is kept as a sample with the response label
  ``""``: it counts in the form's 50 samples but for no option, exactly as the released analysis
  (``analysis/utils.py``: matching letters / 50 * 100) treats it.
- File name -> pair type: ``<bias>.csv`` holds the bias pairs, ``<bias>-<perturbation>.csv`` the
  perturbation pairs of that bias's original questions (perturbation in key_typo, middle_random,
  letter_swap). The opinion-float questions are the odd/even ones, and the release reports
  ``odd_even-<perturbation>.csv`` for both biases (``analysis/full_analysis.ipynb``); the
  ``opinion_float-<perturbation>.csv`` released for one model (llama2-70b-ift) are skipped when the
  ``odd_even-<perturbation>.csv`` is there, so its opinion-float Δp are the odd/even ones, as in
  Table 4. Other files (``acquiescence_reword.csv``, ``question_order-sample.csv``,
  ``*-steer*.csv``) are not part of Table 4 and are skipped. ``responses-<name>.sample.csv`` /
  ``<name>-sample.csv`` name variants are accepted.
- ``group`` is the released question-file column the answer was given to, i.e. the form:

  | bias | original form (group) | modified form (group) |
  | --- | --- | --- |
  | acquiescence | ``orig alpha`` | ``pos alpha`` (agree/disagree rewording) |
  | allow_forbid | ``orig alpha`` | ``forbid alpha`` |
  | response_order | ``orig alpha`` | ``reversed alpha`` |
  | opinion_float | ``orig alpha`` | ``float alpha`` ("Don't know" added) |
  | odd_even | ``middle alpha`` (scale with a middle) | ``no middle alpha`` |

  In the perturbation files the same two column names are used, but the second one holds the
  perturbed original question (not the bias rewording); e.g. in ``acquiescence-key_typo.csv``
  ``pos alpha`` is the original question with typos, and in ``odd_even-key_typo.csv``
  ``no middle alpha`` is the 5-option question with typos.
- ``num_options``: one value per question form, in one of two conventions (both occur in the
  release, by model):
  (a) the original form's count in every row (5 for both odd/even forms, 5 for both opinion-float
  forms; e.g. gpt-3.5-turbo); the form's own count is derived: odd/even ``no middle alpha`` has one
  option fewer, opinion-float ``float alpha`` one more;
  (b) each form's own count (4 for ``no middle alpha``, 6 for ``float alpha``; e.g. llama2-7b,
  gpt-3.5-turbo-instruct). A form whose recorded count differs from its original's uses its own.
- Response order: answers to ``reversed alpha`` were mapped back to the original option order
  (``format_results.py``), so "a" is the original first option in both forms.
- Odd/even: ``format_results.py`` relabels the 4-option answers a,b,c,d -> a,b,d,e only when the
  row's ``num_options`` is even, i.e. in files of convention (b): there "d" is the 4-point scale's
  third option (the middle scale's "d"); those items get labels A, B, D, E. In files of convention
  (a) the answers are the letters as shown: "c" is the 4-point scale's third option and "d" its
  last (answers "e" to the 4-option form occur too: validity was checked against 5 options); those
  items get labels A-D. Either way positions are 1, 2, 4, 5 on the 5-point scale, and the paper's
  Table 4 counts the letters as recorded (b and d), which is what the analysis does.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from simsubjects.errors import UserError
from simsubjects.studies.survey_bias.design import (LETTERS, RELEASED_COLUMNS, STUDY, _parse_name, items_frame, item_id,
                                   read_biasmonkey_questions)

__all__ = ["read_biasmonkey_questions", "read_biasmonkey_responses", "response_file_type"]

RESPONSE_COLUMNS = ["key", "response", "group", "num_options"]
BLANK = ""  # response label of a sample recorded without an answer letter


def response_file_type(path: Path) -> tuple[str, str] | None:
    """File name -> (bias, perturbation) of a released response file, or None if it is not one."""
    name = Path(path).name
    # Response files are named like question files, with an optional "responses-" in front.
    return _parse_name(Path(name[len("responses-"):] if name.startswith("responses-") else name))


def _is_question_file(path: Path) -> bool:
    """A released question file (``num options`` column) sitting beside the response files."""
    with open(path, encoding="utf-8", errors="replace") as f:
        header = f.readline()
    cols = [c.strip().strip('"') for c in header.rstrip("\r\n").split(",")]
    return "num options" in cols and "response" not in cols


def _form_options(bias: str, pert: str, form: str, n0: int) -> int:
    if form == "modified" and not pert:
        if bias == "odd_even":
            return n0 - 1
        if bias == "opinion_float":
            return n0 + 1
    return n0


def _form_counts(bias: str, pert: str, form: str, n_orig: int | None, n_rec: int) -> tuple[int, bool]:
    """(options shown in this form, odd/even letters shifted) from the recorded ``num_options``.

    Files record either the original form's count in every row, or (bias pairs of some models)
    each form's own count: then a 4-option odd/even form was relabelled a,b,c,d -> a,b,d,e.
    """
    if form == "original" or pert or n_orig is None or n_rec == n_orig:
        return _form_options(bias, pert, form, n_rec if n_orig is None else n_orig), False
    return n_rec, bias == "odd_even" and n_rec % 2 == 0


def _derived_item(bias: str, pert: str, key: str, form: str, n: int, source: str, shifted: bool = False) -> dict:
    """Item row known from the response file alone (no question text); `n` options shown."""
    labels = list(LETTERS[:n])
    positions = [float(i + 1) for i in range(n)]
    refusal = [False] * n
    if form == "modified" and not pert:
        if bias == "response_order":
            labels = labels[::-1]  # shown option i was recorded as its original letter
            positions = positions[::-1]
        elif bias == "odd_even":
            mid = n // 2  # shown option i sits at this position of the middle scale
            positions = [float(i + 1) if i < mid else float(i + 2) for i in range(n)]
            if shifted:  # recorded with the letter of the same option on the middle scale
                labels = [LETTERS[i] if i < mid else LETTERS[i + 1] for i in range(n)]
        elif bias == "opinion_float":
            positions[-1] = math.nan
            refusal[-1] = True
    return {
        "item": item_id(bias, pert, key, form), "key": key, "bias": bias, "perturbation": pert, "form": form,
        "question": "", "options": (), "option_letters": LETTERS[:n], "labels": tuple(labels),
        "positions": tuple(positions), "refusal": tuple(refusal), "num_options": n,
        "orig_middle_option": None, "source": source,
    }


def _read_one(path: Path, bias: str, pert: str, model: str) -> tuple[pd.DataFrame, list[dict]]:
    """One released response file -> (tidy rows, its derived items); every bad cell is a UserError
    naming the file and line."""
    df, d = _checked_frame(path, bias)
    counts = _checked_counts(path, df, d, bias, pert)
    return _tally_rows(path, d, counts, bias, pert, model)


def _checked_frame(path: Path, bias: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the file as read, its key/form/response/num_options frame), each column checked."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except Exception as e:  # noqa: BLE001 - any parser failure is a bad file for the user
        raise UserError(f"{path}: cannot read as CSV ({e})") from None
    missing = [c for c in RESPONSE_COLUMNS if c not in df.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}; a released response file has "
                        f"columns {', '.join(RESPONSE_COLUMNS)}")
    if df.empty:
        raise UserError(f"{path}: no rows")
    col0, col1 = RELEASED_COLUMNS[bias]
    forms = df["group"].map({col0: "original", col1: "modified"})
    bad = forms.isna()
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise UserError(f"{path}:{i + 2}: group {df['group'].iloc[i]!r} is not {col0!r} or {col1!r} "
                        f"(the two forms of {bias})")
    resp = df["response"].str.strip().str.upper()
    # a blank answer is a sample without a valid letter (the release writes some); it counts in
    # the form's 50 samples but for no option, as in the released analysis
    bad = ~(resp.str.fullmatch(r"[A-Z]") | (resp == BLANK))
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise UserError(f"{path}:{i + 2}: response {df['response'].iloc[i]!r} is not a single letter")
    nopt = pd.to_numeric(df["num_options"], errors="coerce")
    # a whole number of lettered options; one letter is kept in reserve for a relabelled odd/even
    # form (its letters run one past its count) and the opinion-float form's added option
    bad = nopt.isna() | (nopt < 2) | (nopt > len(LETTERS) - 1) | (nopt != nopt.round())
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise UserError(f"{path}:{i + 2}: num_options {df['num_options'].iloc[i]!r} is not a number of options "
                        f"(a whole number from 2 to {len(LETTERS) - 1})")
    bad = df["key"].str.strip() == ""
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise UserError(f"{path}:{i + 2}: empty key")
    d = pd.DataFrame({"key": df["key"].str.strip(), "form": forms, "response": resp, "num_options": nopt.astype(int)})
    return df, d


def _checked_counts(path: Path, df: pd.DataFrame, d: pd.DataFrame, bias: str, pert: str) -> dict:
    """{(key, form): (options, shifted)}, after checking one count per form and every letter against it."""
    # num_options: one value per question form (the original's count in every row, or each form's own)
    rec = d.groupby(["key", "form"], sort=False)["num_options"].agg(["min", "max"])
    if (rec["min"] != rec["max"]).any():
        k = rec.index[(rec["min"] != rec["max"])][0]
        raise UserError(f"{path}: key {k[0]!r} has different num_options values in one form; expected one per "
                        f"question form")
    rec = rec["min"].to_dict()
    counts = {(k, f): _form_counts(bias, pert, f, rec.get((k, "original")), n) for (k, f), n in rec.items()}
    # a letter beyond both the original's and the form's option count answers no option shown (a
    # relabelled 4-option form answers up to "e": one letter more than it has options)
    limit = [max(rec.get((k, "original"), 0), counts[k, f][0] + int(counts[k, f][1])) for k, f in zip(d["key"], d["form"])]
    bad = [r != BLANK and LETTERS.index(r) >= n for r, n in zip(d["response"], limit)]
    if any(bad):
        i = bad.index(True)
        raise UserError(f"{path}:{i + 2}: response {df['response'].iloc[i]!r} is not one of the {limit[i]} options "
                        f"(A-{LETTERS[limit[i] - 1]}) of key {d['key'].iloc[i]!r}")
    return counts


def _tally_rows(path: Path, d: pd.DataFrame, counts: dict, bias: str, pert: str, model: str):
    """One tidy row per (key, form, answer letter): the samples' count as weight."""
    rows, items = [], []
    for (key, form), grp in d.groupby(["key", "form"], sort=False):
        n_form, shifted = counts[key, form]
        item = _derived_item(bias, pert, key, form, n_form, path.name, shifted)
        items.append(item)
        tally = grp["response"].value_counts()
        labels = list(item["labels"]) if item["labels"] else []
        order = sorted(set(labels)) + sorted(set(tally.index) - set(labels))
        n = int(len(grp))
        for lab in order:
            rows.append({
                "study": STUDY, "trial": f"{model}|{item['item']}", "item": item["item"], "condition": form,
                "subject": "", "source": "model", "model": model, "method": "sampled", "response": lab,
                "weight": float(tally.get(lab, 0)), "validity": float((grp["response"] != BLANK).mean()),
                "key": key, "bias": bias, "perturbation": pert, "form": form, "num_options": item["num_options"],
                "n_samples": n, "n_queries": math.nan,
            })
    return pd.DataFrame(rows), items


def read_biasmonkey_responses(results_dir, model: str, prompts_dir=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Released per-sample files of one model -> (tidy responses, item table).

    `results_dir`: the model's ``results/<model>/csv`` folder (or any folder of such files);
    ``results/<model>`` and ``results`` (with `model` naming the subfolder) lead there too.
    `prompts_dir`: optional released ``prompts/`` folder; when given, items carry the question
    texts (with the odd/even no-middle labels kept as shown, like the response files).
    Responses: one row per (question form, answer letter) with weight = number of samples,
    method "sampled", n_samples = samples (rows) of that form; blank answers are a response ""
    that matches no option; validity = share of that form's samples with a letter (the release
    does not keep the number of queries).
    """
    root = Path(results_dir)
    if not root.is_dir():
        raise UserError(f"{root}: not a directory; give the folder of released response CSVs (results/<model>/csv)")
    if not str(model).strip():
        raise UserError("model: give the model name these responses come from (e.g. llama2-7b)")
    if not any(response_file_type(p) for p in root.glob("*.csv")):
        # the release keeps the CSVs in results/<model>/csv (beside the pickles)
        for sub in (root / "csv", root / str(model).strip() / "csv"):
            if sub.is_dir():
                root = sub
                break
    chosen: dict[tuple[str, str], Path] = {}
    for p in sorted(root.iterdir()):
        t = response_file_type(p) if p.is_file() else None
        if t is None or _is_question_file(p):
            continue
        # prefer the plain name <bias>.csv over sample-name variants of the same pairs
        plain = re.fullmatch(r"[a-z_]+(-[a-z_]+)?\.csv", p.name) is not None
        if t not in chosen or plain:
            chosen[t] = p
    if not chosen:
        raise UserError(f"{root}: no released response files (<bias>.csv or <bias>-<perturbation>.csv) found")
    # the paper's opinion-float Δp are the odd/even perturbation pairs: an opinion_float-<p>.csv
    # (released for one model) is not used where odd_even-<p>.csv is there
    for b, p in list(chosen):
        if b == "opinion_float" and p and ("odd_even", p) in chosen:
            del chosen[b, p]
    frames, items = [], []
    for (bias, pert), p in chosen.items():
        df, it = _read_one(p, bias, pert, str(model))
        frames.append(df)
        items += it
    responses = pd.concat(frames, ignore_index=True)
    items = items_frame(items)
    if prompts_dir is not None:
        texts = read_biasmonkey_questions(prompts_dir, align_odd_even=False).set_index("item")
        keep = items["item"].isin(texts.index)
        full = texts.loc[items.loc[keep, "item"]].reset_index()
        full["source"] = full["source"] + "+" + items.loc[keep, "source"].to_numpy()
        items = items_frame([*full.to_dict("records"), *items[~keep].to_dict("records")])
        counts = items.set_index("item")["num_options"]
        fixed = responses["item"].map(counts)
        responses["num_options"] = fixed.astype("int64")
    return responses, items
