"""Survey response biases (Tjuatja et al. 2024): question pairs, perturbations, prompt and trials.

A question pair is an original form q and a modified form q' of one multiple-choice question.
Five biases change q in ways known to move human answers (acquiescence, allow/forbid, response
order, opinion float, odd/even scale) and three perturbations change it in ways humans ignore
(key typo, middle random, letter swap). Everything lives in one tidy **item table**, one row per
(key, bias, perturbation, form):

| column | meaning |
| --- | --- |
| item | unique id: ``<bias>[-<perturbation>]/<key>/<form>`` |
| key | question id (e.g. ``HAPPEN2a_W41``) |
| bias | acquiescence, allow_forbid, response_order, opinion_float, odd_even |
| perturbation | "" for a bias pair, else key_typo, middle_random, letter_swap |
| form | original or modified |
| question | question stem (without the lettered options) |
| options | tuple of option texts in the order shown |
| option_letters | tuple of the letters shown ("A", "B", ...) |
| labels | tuple: the response label recorded for each shown option (see below) |
| positions | tuple: ordinal position of each shown option on the original scale (NaN: refusal) |
| refusal | tuple of bools: the option is a refusal / "Don't know" |
| num_options | number of options shown |
| orig_middle_option | odd_even/opinion_float: whether the surveyed (Pew) scale had the middle option |
| source | where the pair came from (file name, "generated", "bundled") |

Labels are the letters the analysis counts. They equal the shown letters except where the paper
maps answers back: the reversed form of response order records the letter of the same option in
the original order, and (by default) the no-middle form of odd/even records the letter the same
option has on the scale with a middle, so that "B" and "D" mean the same options in both forms
(Table 2). The released per-sample files did *not* apply that second relabelling (see
``simsubjects.studies.survey_bias.biasmonkey``); their items keep the shown letters.

Conventions taken from the release (github.com/lindiatjuatja/BiasMonkey):
- odd_even: ``original`` is always the scale **with** a middle option (released column
  ``middle alpha``), ``modified`` the one without (``no middle alpha``), whichever of the two the
  survey asked; ``orig_middle_option`` records which one that was.
- opinion_float: ``original`` is that same scale with a middle option, ``modified`` adds
  "Don't know".
- Perturbations change the question stem only, never the option texts; perturbation pairs of the
  odd/even + opinion-float questions are stored once, under bias ``odd_even`` (the release names
  their result files ``odd_even-<perturbation>.csv`` and reports them for both biases).
"""

from __future__ import annotations

import ast
import math
import random
import re
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from simsubjects.collect import option_order
from simsubjects.collect.seeds import seed_from_text
from simsubjects.datasets.refusals import is_refusal  # noqa: F401 - re-exported (one rule: datasets/)
from simsubjects.errors import UserError
from simsubjects.collect.studies.registry import size
from simsubjects.datasets.registry import data_path

STUDY = "survey_bias"
BIASES = ("acquiescence", "allow_forbid", "response_order", "opinion_float", "odd_even")
PERTURBATIONS = ("key_typo", "middle_random", "letter_swap")
FORMS = ("original", "modified")
LETTERS = tuple(chr(ord("A") + i) for i in range(26))

# Released column names of the two forms of each bias (bias files and perturbation files alike).
RELEASED_COLUMNS: dict[str, tuple[str, str]] = {
    "acquiescence": ("orig alpha", "pos alpha"),
    "allow_forbid": ("orig alpha", "forbid alpha"),
    "response_order": ("orig alpha", "reversed alpha"),
    "opinion_float": ("orig alpha", "float alpha"),
    "odd_even": ("middle alpha", "no middle alpha"),
}

ITEM_COLUMNS = ["item", "key", "bias", "perturbation", "form", "question", "options", "option_letters",
                "labels", "positions", "refusal", "num_options", "orig_middle_option", "source"]

INSTRUCTION = "Please answer the following question with one of the alphabetical options provided."
DONT_KNOW = "Don't know"
_OPTION_LINE = re.compile(r"^([A-Z])\.\s?(.*)$")


def item_id(bias: str, perturbation: str, key: str, form: str) -> str:
    return f"{bias}{'-' + perturbation if perturbation else ''}/{key}/{form}"


def _stable_seed(*parts) -> int:
    """Seed from the parts' text, so a question's perturbation does not depend on row order."""
    return seed_from_text(*parts, byteorder="big")


def _rng(seed) -> random.Random:
    return seed if isinstance(seed, random.Random) else random.Random(seed)


# ---------------------------------------------------------------------------------------------
# Option generators (response order, opinion float, odd/even)
# ---------------------------------------------------------------------------------------------

def reverse_options(options: Sequence[str]) -> tuple[str, ...]:
    """Response order: the same options in reverse order."""
    return tuple(options)[::-1]


def map_reversed_answer(letter: str, num_options: int) -> str:
    """Letter answered on the reversed form -> letter of that option in the original order."""
    i = LETTERS.index(letter.upper())
    if i >= num_options:
        raise UserError(f"answer {letter!r} is not one of the {num_options} options")
    return LETTERS[num_options - 1 - i]


def add_dont_know(options: Sequence[str], label: str = DONT_KNOW) -> tuple[str, ...]:
    """Opinion float: append an explicit "Don't know" option."""
    if any(is_refusal(o) for o in options):
        raise UserError(f"options {list(options)} already offer a refusal/don't-know option")
    return (*options, label)


def remove_middle(options: Sequence[str]) -> tuple[str, ...]:
    """Odd/even: drop the middle option of an odd-length scale."""
    n = len(options)
    if n % 2 == 0 or n < 3:
        raise UserError(f"remove_middle needs an odd scale of 3 or more options, got {n}")
    return tuple(options[: n // 2]) + tuple(options[n // 2 + 1:])


def add_middle(options: Sequence[str], middle_label: str) -> tuple[str, ...]:
    """Odd/even: insert `middle_label` in the middle of an even-length scale."""
    n = len(options)
    if n % 2 == 1 or n < 2:
        raise UserError(f"add_middle needs an even scale of 2 or more options, got {n}")
    if not str(middle_label or "").strip():
        raise UserError("add_middle needs a middle label (column middle_label) for an even scale")
    return tuple(options[: n // 2]) + (str(middle_label).strip(),) + tuple(options[n // 2:])


# ---------------------------------------------------------------------------------------------
# Non-bias perturbations (Rawlinson 2007): words of >= 4 ASCII letters only, no digits/punctuation
# ---------------------------------------------------------------------------------------------

_ELIGIBLE = re.compile(r"[A-Za-z]{4,}")
_QWERTY = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _qwerty_neighbours() -> dict[str, str]:
    out = {}
    for r, row in enumerate(_QWERTY):
        for i, ch in enumerate(row):
            near = []
            if i > 0:
                near.append(row[i - 1])
            if i + 1 < len(row):
                near.append(row[i + 1])
            # staggered rows: the row above is shifted half a key right, the row below half a key left
            for rr, idx in ((r - 1, (i, i + 1)), (r + 1, (i - 1, i))):
                if 0 <= rr < len(_QWERTY):
                    near += [_QWERTY[rr][j] for j in idx if 0 <= j < len(_QWERTY[rr])]
            out[ch] = "".join(near)
    return out


QWERTY_NEIGHBOURS = _qwerty_neighbours()


def eligible_word(word: str) -> bool:
    """Perturbations touch only words of 4+ letters with no digit or punctuation."""
    return bool(_ELIGIBLE.fullmatch(word))


def _map_words(text: str, fn) -> str:
    # split on whitespace but keep it, so line breaks and spacing survive
    parts = re.split(r"(\s+)", text)
    return "".join(fn(p) if p and not p.isspace() and eligible_word(p) else p for p in parts)


def key_typo(text: str, seed=0, p: float = 0.2, replacement: str = "neighbour") -> str:
    """Each eligible word, with probability `p`, gets one letter replaced by a typo.

    replacement="neighbour": a neighbouring key on a QWERTY keyboard; "random": any other letter
    (the wording of the paper's Appendix A.2 and what the released files show).
    """
    if replacement not in ("neighbour", "random"):
        raise UserError(f"key_typo replacement {replacement!r}: use 'neighbour' or 'random'")
    rng = _rng(seed)

    def typo(word: str) -> str:
        if rng.random() >= p:
            return word
        i = rng.randrange(len(word))
        low = word[i].lower()
        pool = QWERTY_NEIGHBOURS[low] if replacement == "neighbour" else "".join(
            c for c in "abcdefghijklmnopqrstuvwxyz" if c != low)
        new = rng.choice(pool)
        new = new.upper() if word[i].isupper() else new
        return word[:i] + new + word[i + 1:]

    return _map_words(text, typo)


def middle_random(text: str, seed=0) -> str:
    """Each eligible word: one inner letter swapped with its inner neighbour (ends stay)."""
    rng = _rng(seed)

    def swap(word: str) -> str:
        i = rng.randrange(1, len(word) - 2)  # i and i+1 are both inner letters
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]

    return _map_words(text, swap)


def letter_swap(text: str, seed=0) -> str:
    """Each eligible word: inner letters shuffled, first and last letters stay."""
    rng = _rng(seed)

    def shuffle(word: str) -> str:
        inner = list(word[1:-1])
        rng.shuffle(inner)
        return word[0] + "".join(inner) + word[-1]

    return _map_words(text, shuffle)


PERTURBERS = {"key_typo": key_typo, "middle_random": middle_random, "letter_swap": letter_swap}


def perturb(text: str, perturbation: str, seed=0, **kw) -> str:
    if perturbation not in PERTURBERS:
        raise UserError(f"unknown perturbation {perturbation!r}; use one of {', '.join(PERTURBATIONS)}")
    return PERTURBERS[perturbation](text, seed, **kw)


# ---------------------------------------------------------------------------------------------
# Item rows
# ---------------------------------------------------------------------------------------------

def _positions(options: Sequence[str], orig_middle_option=None) -> tuple[float, ...]:
    """Ordinal positions 1..N of the non-refusal options; an added middle sits half-way."""
    valid = [i for i, o in enumerate(options) if not is_refusal(o)]
    pos = [math.nan] * len(options)
    n = len(valid)
    if orig_middle_option is False and n % 2 == 1 and n >= 3:
        # the surveyed scale had no middle: keep its 1..N-1 and put the added middle between
        rank = 1.0
        for j, i in enumerate(valid):
            if j == n // 2:
                pos[i] = rank - 0.5
            else:
                pos[i] = rank
                rank += 1
    else:
        for r, i in enumerate(valid, start=1):
            pos[i] = float(r)
    return tuple(pos)


def _row(key, bias, perturbation, form, question, options, labels, positions, source,
         orig_middle_option=None) -> dict:
    options = tuple(str(o) for o in options)
    return {
        "item": item_id(bias, perturbation, key, form), "key": str(key), "bias": bias,
        "perturbation": perturbation, "form": form, "question": str(question), "options": options,
        "option_letters": LETTERS[: len(options)], "labels": tuple(labels), "positions": tuple(positions),
        "refusal": tuple(is_refusal(o) for o in options), "num_options": len(options),
        "orig_middle_option": orig_middle_option, "source": source,
    }


def _match_labels(original: Sequence[str], modified: Sequence[str]) -> list[str] | None:
    """Letter in `original` of each `modified` option with the same text, or None if any is missing."""
    norm = [o.strip().lower() for o in original]
    out = []
    for o in modified:
        try:
            out.append(LETTERS[norm.index(o.strip().lower())])
        except ValueError:
            return None
    return out


def _carry_positions(o0: Sequence[str], pos0: Sequence[float], o1: Sequence[str]) -> tuple[float, ...]:
    """Positions of the modified options: the original's where the text is the same.

    If any non-refusal option is new (a reworded Yes/No), the modified form gets its own 1..N.
    """
    norm = [o.strip().lower() for o in o0]
    own = _positions(o1)
    out = []
    for o, p in zip(o1, own):
        k = o.strip().lower()
        if k in norm:
            out.append(pos0[norm.index(k)])
        elif is_refusal(o):
            out.append(math.nan)
        else:
            return own
    return tuple(out)


def make_pair(key: str, bias: str, original: tuple[str, Sequence[str]], modified: tuple[str, Sequence[str]],
              perturbation: str = "", source: str = "", orig_middle_option=None,
              align_odd_even: bool = True) -> list[dict]:
    """Two item rows (original, modified) with labels and ordinal positions worked out.

    `original` and `modified` are (question stem, options). Labels of the modified form map back
    to the original order for response order (always) and odd/even (if `align_odd_even`).
    """
    if bias not in BIASES:
        raise UserError(f"unknown bias {bias!r}; use one of {', '.join(BIASES)}")
    if perturbation and perturbation not in PERTURBATIONS:
        raise UserError(f"unknown perturbation {perturbation!r}; use one of {', '.join(PERTURBATIONS)}")
    (q0, o0), (q1, o1) = original, modified
    o0, o1 = tuple(o0), tuple(o1)
    if bias not in ("odd_even", "opinion_float"):
        orig_middle_option = None
    pos0 = _positions(o0, orig_middle_option)
    letters0 = list(LETTERS[: len(o0)])
    labels1 = list(LETTERS[: len(o1)])
    matched = _match_labels(o0, o1)
    pos1 = _carry_positions(o0, pos0, o1)
    if perturbation:
        if len(o1) != len(o0):
            raise UserError(f"{source or key}: perturbed form of {key} has {len(o1)} options, original {len(o0)}")
    elif bias == "response_order":
        if len(o1) != len(o0):
            raise UserError(f"{source or key}: reversed form of {key} has {len(o1)} options, original {len(o0)}")
        # map answers back to the original order: by option text, else by position (pure reversal)
        labels1 = matched if matched is not None and len(set(matched)) == len(o0) else letters0[::-1]
        pos1 = tuple(pos0[LETTERS.index(m)] for m in labels1)
    elif bias == "odd_even":
        if len(o0) != len(o1) + 1:
            raise UserError(f"{source or key}: odd/even forms of {key} need N and N-1 options, got {len(o0)} and {len(o1)}")
        mid = len(o0) // 2
        skip = [c for i, c in enumerate(letters0) if i != mid]  # letters of the middle scale minus its middle
        if matched is None:
            matched = skip
        pos1 = tuple(pos0[LETTERS.index(m)] for m in matched)
        if align_odd_even:
            labels1 = matched
    elif bias == "opinion_float":
        if len(o1) != len(o0) + 1:
            raise UserError(f"{source or key}: opinion-float form of {key} needs one more option than the original")
    return [
        _row(key, bias, perturbation, "original", q0, o0, letters0, pos0, source, orig_middle_option),
        _row(key, bias, perturbation, "modified", q1, o1, labels1, pos1, source, orig_middle_option),
    ]


def items_frame(rows: Iterable[dict]) -> pd.DataFrame:
    df = pd.DataFrame(list(rows), columns=ITEM_COLUMNS)
    if df["item"].duplicated().any():
        dup = df.loc[df["item"].duplicated(), "item"].iloc[0]
        raise UserError(f"item {dup!r} appears twice; each (bias, perturbation, key, form) must be unique")
    df["num_options"] = df["num_options"].astype("int64")
    df["orig_middle_option"] = pd.array(df["orig_middle_option"].tolist(), dtype="boolean")
    return df.reset_index(drop=True)


def _as_options(value, where: str) -> tuple[str, ...]:
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(str(v) for v in value)
    text = str(value).strip()
    if text[:1] in ("(", "["):  # a tuple/list written out, as parquet/CSV round trips leave it
        try:
            return tuple(str(v) for v in ast.literal_eval(text))
        except (ValueError, SyntaxError):
            pass
    out = tuple(o.strip() for o in text.split("|") if o.strip())
    if len(out) < 2:
        raise UserError(f"{where}: options {text!r} must list 2 or more options separated by '|'")
    return out


def generate_pairs(questions: pd.DataFrame, biases: Sequence[str] = ("response_order", "opinion_float", "odd_even"),
                   source: str = "generated") -> pd.DataFrame:
    """Item table of the systematic biases built from plain questions.

    `questions`: columns key, question, options (tuple or "a | b | c") and optionally
    middle_label (needed to add a middle option to an even scale). A question enters a bias
    when it fits: response order needs 3+ options; odd/even a 4- or 5-option scale (an even one
    with a middle_label); opinion float the same scales, asked with their middle option.
    Acquiescence and allow/forbid need hand-written rewordings: read them from released-format
    files (``read_biasmonkey_questions``).
    """
    for col in ("key", "question", "options"):
        if col not in questions.columns:
            raise UserError(f"questions: missing column {col!r}; expected key, question, options[, middle_label]")
    bad = [b for b in biases if b not in ("response_order", "opinion_float", "odd_even")]
    if bad:
        raise UserError(f"generate_pairs: {bad} cannot be generated; acquiescence/allow_forbid come from files")
    rows = []
    for i, rec in enumerate(questions.to_dict("records")):
        where = f"questions row {i + 1} ({rec['key']})"
        opts = _as_options(rec["options"], where)
        q = str(rec["question"]).strip()
        middle = rec.get("middle_label")
        middle = None if middle is None or (isinstance(middle, float) and math.isnan(middle)) or not str(middle).strip() else str(middle)
        if "response_order" in biases and len(opts) >= 3:
            rows += make_pair(rec["key"], "response_order", (q, opts), (q, reverse_options(opts)), source=source)
        n = len(opts)
        scale = None
        if n == 5:
            scale, had_middle = opts, True
        elif n == 4 and middle:
            scale, had_middle = add_middle(opts, middle), False
        if scale is not None:
            if "odd_even" in biases:
                rows += make_pair(rec["key"], "odd_even", (q, scale), (q, remove_middle(scale)),
                                  source=source, orig_middle_option=had_middle)
            if "opinion_float" in biases and not any(is_refusal(o) for o in scale):
                rows += make_pair(rec["key"], "opinion_float", (q, scale), (q, add_dont_know(scale)),
                                  source=source, orig_middle_option=had_middle)
    return items_frame(rows)


def perturbation_pairs(items: pd.DataFrame, perturbations: Sequence[str] = PERTURBATIONS, seed: int = 0,
                       replacement: str = "neighbour") -> pd.DataFrame:
    """Perturbation pairs of every bias pair's original question: (original, perturbed stem).

    Opinion-float originals are the odd/even originals (same questions), so they get no pairs of
    their own; the analysis reports the odd/even pairs for both, as the release does.
    """
    base = items[(items["perturbation"] == "") & (items["form"] == "original") & (items["bias"] != "opinion_float")]
    rows = []
    for rec in base.to_dict("records"):
        for p in perturbations:
            kw = {"replacement": replacement} if p == "key_typo" else {}
            q1 = perturb(rec["question"], p, _stable_seed(seed, rec["bias"], rec["key"], p), **kw)
            rows += make_pair(rec["key"], rec["bias"], (rec["question"], rec["options"]), (q1, rec["options"]),
                              perturbation=p, source=f"{rec['source']}+{p}(seed={seed})",
                              orig_middle_option=_none_if_na(rec["orig_middle_option"]))
    return items_frame(rows)


def _none_if_na(v):
    return None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else bool(v)


def build_items(questions: pd.DataFrame, perturbations: Sequence[str] = PERTURBATIONS, seed: int = 0) -> pd.DataFrame:
    """Generated bias pairs plus their perturbation pairs."""
    bias = generate_pairs(questions)
    return items_frame([*bias.to_dict("records"), *perturbation_pairs(bias, perturbations, seed).to_dict("records")])


# ---------------------------------------------------------------------------------------------
# Released question files (PROMPTS_DIR of github.com/lindiatjuatja/BiasMonkey)
# ---------------------------------------------------------------------------------------------

def split_question(cell: str, where: str) -> tuple[str, tuple[str, ...]]:
    """'stem\\nA. opt\\nB. opt' -> (stem, options). Options are the trailing lettered lines A, B, ..."""
    lines = str(cell).replace("\r\n", "\n").split("\n")
    opts: list[str] = []
    j = len(lines)
    while j > 0:
        line = lines[j - 1].rstrip()
        if not line and not opts:
            j -= 1
            continue
        m = _OPTION_LINE.match(line)
        if not m:
            break
        opts.insert(0, (m.group(1), m.group(2).strip()))
        j -= 1
    letters = [l for l, _ in opts]
    if len(opts) < 2 or letters != list(LETTERS[: len(opts)]):
        raise UserError(f"{where}: expected the question followed by lettered options 'A. ...', 'B. ...' "
                        f"on separate lines; found letters {letters or 'none'}")
    stem = "\n".join(lines[:j]).strip()
    return stem, tuple(t for _, t in opts)


def _parse_name(path: Path) -> tuple[str, str] | None:
    """File name -> (bias, perturbation), or None for files that are not question pairs."""
    name = path.name
    if not name.endswith(".csv") or name.startswith("responses-"):
        return None
    stem = name[: -len(".csv")]
    for suffix in (".sample", "-sample"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    bias, _, pert = stem.partition("-")
    if bias not in BIASES or (pert and pert not in PERTURBATIONS):
        return None
    return bias, pert


def _bool_cell(v, where) -> bool | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise UserError(f"{where}: 'orig middle option' must be True or False, got {v!r}")


def _option_count(cell, where: str) -> int:
    """A released 'num options' cell: a whole number of lettered options (3.5, inf or 1e30 are not)."""
    try:
        v = float(cell)
    except (TypeError, ValueError):
        raise UserError(f"{where} {cell!r} is not a number") from None
    if not (2 <= v <= len(LETTERS) - 1) or v != int(v):
        raise UserError(f"{where} {cell!r} is not a number of options (a whole number from 2 to {len(LETTERS) - 1})")
    return int(v)


def read_question_file(path: Path, align_odd_even: bool = True, orig_middle: dict | None = None) -> pd.DataFrame:
    """One released-format question file -> item rows."""
    parsed = _parse_name(path)
    if parsed is None:
        raise UserError(f"{path}: not a question-pair file name (<bias>.csv or <bias>-<perturbation>.csv)")
    bias, pert = parsed
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except Exception as e:  # noqa: BLE001 - any parser failure is a bad file for the user
        raise UserError(f"{path}: cannot read as CSV ({e})") from None
    df = df.drop(columns=[c for c in df.columns if c == "" or c.startswith("Unnamed")])
    col0, col1 = RELEASED_COLUMNS[bias]
    # the release stores opinion-float perturbations as the same question twice in orig/float columns
    need = ["key", "num options", col0, col1]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(repr(m) for m in missing)}; "
                        f"a {bias} file has columns {', '.join(need)}")
    # opinion-float perturbation pairs are analysed as odd_even ones (same questions, see module doc)
    item_bias = "odd_even" if (bias == "opinion_float" and pert) else bias
    rows = []
    for i, rec in enumerate(df.to_dict("records")):
        rec_no = i + 1  # data record number: cells span several lines, so line numbers would mislead
        where0 = f"{path.name} record {rec_no} (key {rec['key']}), column {col0!r}"
        where1 = f"{path.name} record {rec_no} (key {rec['key']}), column {col1!r}"
        q0, o0 = split_question(rec[col0], where0)
        q1, o1 = split_question(rec[col1], where1)
        n0 = _option_count(rec["num options"], f"{path.name} record {rec_no}: 'num options'")
        if n0 != len(o0):
            raise UserError(f"{where0}: {len(o0)} lettered options but 'num options' says {n0}")
        if not pert and "num options new" in rec and str(rec["num options new"]).strip():
            n1 = _option_count(rec["num options new"], f"{path.name} record {rec_no}: 'num options new'")
            if n1 != len(o1):
                raise UserError(f"{where1}: {len(o1)} lettered options but 'num options new' says {n1}")
        om = None
        if bias == "odd_even" and "orig middle option" in rec:
            om = _bool_cell(rec["orig middle option"], f"{path.name} record {rec_no}")
        elif orig_middle:
            om = orig_middle.get(rec["key"])
        rows += make_pair(rec["key"], item_bias, (q0, o0), (q1, o1), perturbation=pert, source=path.name,
                          orig_middle_option=om, align_odd_even=align_odd_even)
    return items_frame(rows)


def read_biasmonkey_questions(prompts_dir, align_odd_even: bool = True) -> pd.DataFrame:
    """Every released-format question file in `prompts_dir` -> one item table.

    Reads ``<bias>.csv`` and ``<bias>-<perturbation>.csv`` (also ``*.sample.csv``); other files
    (``responses-*``, ``acquiescence_reword.csv``, ...) are skipped. ``opinion_float-<p>.csv``
    pairs become bias ``odd_even`` perturbation pairs (see module doc); if the same pairs also
    come from an ``odd_even-<p>.csv`` file, that one wins.
    """
    root = Path(prompts_dir)
    if not root.is_dir():
        raise UserError(f"{root}: not a directory; give the folder holding the released question CSVs")
    files = sorted(p for p in root.iterdir() if p.is_file() and _parse_name(p) is not None)
    if not files:
        raise UserError(f"{root}: no question files (<bias>.csv, <bias>-<perturbation>.csv) found")
    # orig middle option lives in the odd_even file; opinion-float items reuse it for positions
    orig_middle: dict[str, bool | None] = {}
    for p in files:
        if _parse_name(p) == ("odd_even", ""):
            try:
                d = pd.read_csv(p, dtype=str, keep_default_na=False)
            except Exception as e:  # noqa: BLE001 - any parser failure is a bad file for the user
                raise UserError(f"{p}: cannot read as CSV ({e})") from None
            if "orig middle option" in d.columns and "key" in d.columns:
                orig_middle = {k: _bool_cell(v, p.name) for k, v in zip(d["key"], d["orig middle option"])}
    frames = [read_question_file(p, align_odd_even, orig_middle) for p in files]
    items = pd.concat(frames, ignore_index=True)
    # prefer odd_even-<p> files over the opinion_float-<p> copies of the same pairs
    from_oe = items["source"].str.startswith("odd_even")
    items = pd.concat([items[from_oe], items[~from_oe]]).drop_duplicates("item", keep="first")
    order = {b: i for i, b in enumerate(BIASES)}
    items = items.assign(_b=items["bias"].map(order), _f=items["form"].map({f: i for i, f in enumerate(FORMS)}),
                         _p=items["perturbation"].map({"": 0, **{p: i + 1 for i, p in enumerate(PERTURBATIONS)}}))
    # keys keep their file order within a bias/perturbation; original before modified
    items = items.assign(_k=items.groupby(["bias", "perturbation"], sort=False).cumcount())
    first = items.groupby(["bias", "perturbation", "key"], sort=False)["_k"].transform("min")
    items = items.assign(_k=first).sort_values(["_b", "_p", "_k", "_f"], kind="stable")
    items = items.drop(columns=["_b", "_p", "_k", "_f"])
    return items_frame(items.to_dict("records"))


def _cell(question: str, options: Sequence[str]) -> str:
    return "\n".join([question, *(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))])


def write_biasmonkey_questions(items: pd.DataFrame, directory) -> list[Path]:
    """Write the item table as released-format files (one per bias/perturbation); returns the paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for (bias, pert), grp in items.groupby(["bias", "perturbation"], sort=False):
        col0, col1 = RELEASED_COLUMNS[bias]
        recs = []
        for key, pair in grp.groupby("key", sort=False):
            o = pair[pair["form"] == "original"]
            m = pair[pair["form"] == "modified"]
            if len(o) != 1 or len(m) != 1:
                raise UserError(f"items: {bias}/{pert or '-'}/{key} needs exactly one original and one modified form")
            o, m = o.iloc[0], m.iloc[0]
            rec = {"key": key, "num options": int(o["num_options"])}
            if bias in ("odd_even", "opinion_float"):
                rec["num options new"] = int(m["num_options"]) if not pert else int(o["num_options"]) + (1 if bias == "opinion_float" else -1)
            rec[col0] = _cell(o["question"], o["options"])
            rec[col1] = _cell(m["question"], m["options"])
            if bias == "odd_even":
                rec["orig middle option"] = _none_if_na(o["orig_middle_option"])
            recs.append(rec)
        df = pd.DataFrame(recs)
        path = out / f"{bias}{'-' + pert if pert else ''}.csv"
        df.to_csv(path, index=bool(pert))  # the release's perturbation files carry an index column
        written.append(path)
    return written


def load_bundled_items(perturbations: Sequence[str] = PERTURBATIONS, seed: int = 0) -> pd.DataFrame:
    """The package's own question set (datasets/survey_bias) with generated perturbation pairs."""

    bias = read_biasmonkey_questions(data_path("survey_bias"))
    bias = bias.assign(source="bundled:" + bias["source"])
    pert = perturbation_pairs(bias, perturbations, seed) if perturbations else bias.iloc[:0]
    return items_frame([*bias.to_dict("records"), *pert.to_dict("records")])


# ---------------------------------------------------------------------------------------------
# Prompt (Appendix B.2) and trials
# ---------------------------------------------------------------------------------------------

def format_prompt(question: str, options: Sequence[str], instruction: str = INSTRUCTION) -> str:
    """Appendix B.2: instruction, 'Question: ...', lettered options, 'Answer:'."""
    lines = [instruction, f"Question: {question}"]
    lines += [f"{LETTERS[i]}. {o}" for i, o in enumerate(options)]
    lines.append("Answer:")
    return "\n".join(lines)


def build_trials(items: pd.DataFrame, instruction: str = INSTRUCTION, subject: str = "") -> pd.DataFrame:
    """Trials table (docs/schema.md): one k-choice observation per item.

    options: the letters as the model writes them after "Answer:" (" A", " B", ...);
    labels: the item's response labels (mapped back for reversed / no-middle forms).
    """
    missing = [c for c in ("item", "key", "bias", "perturbation", "form", "question", "options", "labels") if c not in items.columns]
    if missing:
        raise UserError(f"items: missing column(s) {', '.join(missing)}; build them with simsubjects' survey_bias readers")
    rows = []
    for rec in items.to_dict("records"):
        opts = tuple(rec["options"])
        labels = tuple(rec["labels"])
        if len(labels) != len(opts):
            raise UserError(f"item {rec['item']}: {len(labels)} labels for {len(opts)} options")
        rows.append({
            "trial": rec["item"] if not subject else f"{rec['item']}|{subject}", "item": rec["item"],
            "condition": rec["form"], "subject": subject,
            "prompt": format_prompt(rec["question"], opts, instruction),
            "options": tuple(f" {LETTERS[i]}" for i in range(len(opts))), "labels": labels,
            "key": rec["key"], "bias": rec["bias"], "perturbation": rec["perturbation"], "form": rec["form"],
            "num_options": len(opts),
        })
    return pd.DataFrame(rows, columns=["trial", "item", "condition", "subject", "prompt", "options", "labels",
                                       "key", "bias", "perturbation", "form", "num_options"])


def exact_to_sample(responses: pd.DataFrame, n: int = 50, seed: int = 0) -> pd.DataFrame:
    """Exact option probabilities -> a seeded multinomial sample of `n` answers per trial.

    Rows keep their columns; weight becomes the count, method "sampled_from_exact",
    n_samples = n. Each trial's draw is seeded by (seed, trial), so it does not depend on row order.
    """
    if n < 1:
        raise UserError(f"exact_to_sample: n must be >= 1, got {n}")
    need = ["trial", "weight", "method"]
    missing = [c for c in need if c not in responses.columns]
    if missing:
        raise UserError(f"responses: missing column(s) {', '.join(missing)}")
    bad = sorted(set(responses["method"]) - {"exact"})
    if bad:
        raise UserError(f"exact_to_sample: only method 'exact' rows can be sampled, found {bad}")
    out = responses.copy()
    counts = np.zeros(len(out), dtype=np.int64)
    labels = out["response"].astype(str).to_numpy() if "response" in out.columns else None
    weights = pd.to_numeric(out["weight"], errors="coerce").to_numpy(dtype=float)
    for trial, idx in out.groupby("trial", sort=False).indices.items():
        if labels is not None:
            idx = idx[np.argsort(labels[idx], kind="stable")]  # draw in label order, whatever the row order
        p = weights[idx]
        if not np.isfinite(p).all() or (p < 0).any() or p.sum() <= 0:
            raise UserError(f"trial {trial!r}: weights are not a probability distribution")
        rng = np.random.default_rng([seed, _stable_seed(trial) % (2**32)])
        counts[idx] = rng.multinomial(n, p / p.sum())
    out["weight"] = counts.astype(float)
    out["method"] = "sampled_from_exact"
    out["n_samples"] = n
    return out


# ---------------------------------------------------------------------------------------------
# Declaration: `simsubjects collect survey-bias`
# ---------------------------------------------------------------------------------------------

def _names(value: str, known: Sequence[str], flag: str) -> list[str]:
    if value in ("", "none"):
        return []
    if value == "all":
        return list(known)
    names = [v.strip().replace("-", "_") for v in value.split(",") if v.strip()]
    bad = [v for v in names if v not in known]
    if bad:
        raise UserError(f"{flag} {','.join(bad)}: unknown; choose from {', '.join(known)}, all or none")
    return names


def reorder(trials: pd.DataFrame, items: pd.DataFrame, order: str = "fixed", seed: int = 0,
            instruction: str = INSTRUCTION) -> pd.DataFrame:
    """`--order` (simsubjects.collect.option_order) on the question forms: one trial per form and ordering shown.

    "fixed" returns the trials untouched: the forms exactly as the paper built them, so the
    response-order bias (original vs reversed form, Tjuatja et al. 2024 §3) is measured as before.
    Otherwise the option texts move with their response labels while the letters stay in place
    ("A." is always the first line), and refusals ("Don't know") stay last, as surveys list them.
    """
    if order not in option_order.MODES:
        raise UserError(f"--order {order!r}: choose {', '.join(option_order.MODES)}")
    if order == "fixed":
        return trials
    forms = {rec["item"]: rec for rec in items.to_dict("records")}
    for it, rec in forms.items():
        if len(set(rec["labels"])) != len(rec["labels"]):
            raise UserError(f"--order {order}: item {it} records one label for two options; its order cannot vary")

    def render(rec, shown):
        form = forms[rec["item"]]
        text = dict(zip(form["labels"], form["options"]))
        return format_prompt(form["question"], [text[lab] for lab in shown], instruction)

    out = option_order.reorder_trials(trials, render, order, seed,
                                      fixed_last=lambda rec: list(forms[rec["item"]]["refusal"]))
    out.attrs["column_labels"] = dict(option_order.COLUMN_LABELS)
    return out


def study_items(bias: str = "all", perturbation: str = "all", questions: str | None = None, seed: int = 0,
                order: str = "fixed"):
    if order not in option_order.MODES:  # before the questions are read: a bad flag fails first
        raise UserError(f"--order {order!r}: choose {', '.join(option_order.MODES)}")
    biases = _names(bias, BIASES, "--bias")
    perts = _names(perturbation, PERTURBATIONS, "--perturbation")
    if questions:
        items = read_biasmonkey_questions(questions)
        items = items[items["perturbation"].isin(["", *perts])]
    else:
        items = load_bundled_items(perts, seed)
    items = items[items["bias"].isin(biases)].reset_index(drop=True)
    if items.empty:
        raise UserError("no question pairs left for this --bias/--perturbation selection")
    return reorder(build_trials(items), items, order, seed), items


def _finalize(responses: pd.DataFrame, params: dict) -> pd.DataFrame:
    k = params.get("as_sample") or 0
    if k and params.get("method") == "exact":
        responses = exact_to_sample(responses, n=k, seed=params.get("seed", 0))
    # with --order other than fixed: the position each answer was shown at (analyze's order-effect table)
    return option_order.add_shown_position(responses)


def _replicate_params(s: float) -> dict:
    # exact distributions, each replaced by a seeded sample of 50 answers per form as the paper drew
    return {"bias": "all", "perturbation": "all", "as_sample": size(50, s, floor=10)}
