"""Original and replication effects of the bench's findings, read from the bundled raw files by key.

Every number of a bundled finding comes from here: a finding file names a corpus and a key (an ML2
analysis such as "Tversky.1", an ML1 study id such as "study3a", a HumanStudy-Bench study/sub-study/
finding/test path), never the numbers. The files are the projects' own (SOURCE.md in each folder):

- Many Labs 2 (Klein et al. 2018): the original from `ML2_OrignalEffects_Masterkey.csv` (the row that
  `table5data_RM.csv`'s `ori_ML2analysis` names), the pooled replication from `table5data_RM.csv`, its 95%
  interval from `global_results/<analysis>_..._RESULTS.csv` only where that file's d agrees with table 5
  (SOURCE.md: the two disagree for some analyses; table 5 is the primary source).
- Many Labs 1 (Klein et al. 2014): the original from `ML_Original_ES95CI.csv`, the pooled replication d
  and interval from `ML_ESCIfromR.csv` ("Overall" row), its Ns and test statistic from the effect's
  `MLforR_sheets/<sheet>.csv` "Overall" row.
- HumanStudy-Bench (Liu et al. 2026): the original publication's result from the study's
  `ground_truth.json` (no replication exists).
- The seeds (the built-in studies' findings): the human counts of the package's own bundled files
  (`datasets/aher2023/milgram1963_breakoff.json`, `datasets/moca/`), an effect and interval computed
  from them by the formulas of `seeds.py` (no replication exists).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from ...errors import UserError

ROOT = Path(__file__).resolve().parent
CORPORA = ("manylabs1", "manylabs2", "humanstudy_bench", "seeds")


@dataclass(frozen=True)
class Effect:
    """One published result as the source gives it. `scale` names the scale of `value` (and of the
    interval): 'd' (standardized mean difference), 'q' (Cohen's q), 'r', 'diff_prop' (difference of two
    proportions), 'log_or'. `source` is "<file>:<row or key>[:<column>]"."""
    scale: str
    value: float
    ci_low: float | None
    ci_high: float | None
    n: int | None
    test: str | None
    statistic: float | None
    df: float | None
    p: float | None
    n_groups: tuple[int, ...] | None
    source: str


class ReaderError(UserError):
    """A key that names no row of the corpus' files (exit code 2)."""


def _num(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _int(v) -> int | None:
    f = _num(v)
    return None if f is None else int(round(f))


def _groups(*ns) -> tuple[int, ...] | None:
    got = [_int(n) for n in ns]
    return tuple(got) if got and all(g is not None for g in got) else None


def _row(table: pd.DataFrame, column: str, key: str, file: str) -> pd.Series:
    hit = table[table[column].astype(str) == key]
    if hit.empty:
        raise ReaderError(f"{file}: no row with {column} = {key!r}")
    return hit.iloc[0]


# ------------------------------------------------------------------------------------------ Many Labs 2

@lru_cache(maxsize=None)
def _ml2(name: str) -> pd.DataFrame:
    return pd.read_csv(ROOT / "manylabs2" / name, encoding="utf-8-sig")


ML2_TESTS = {"t": "t", "X2": "chi2", "f": "F", "OR": "odds_ratio", "Z": "z", "t.p": "paired_t",
             "t.r": "t_correlation", "Z.f": "fisher_z", "lm.OR": "glm_odds_ratio", "lm.t": "glm_t"}


def manylabs2_original(key: str) -> Effect:
    """The original effect of ML2 analysis `key`: the masterkey row table 5 maps it to (Huang.1 -> Huang.3,
    ...). d with its interval; Cohen's q where the source gives no d (difference of correlations)."""
    t5 = _ml2("table5data_RM.csv")
    hit = t5[t5["analysis"] == key]
    row_key = str(hit.iloc[0]["ori_ML2analysis"]) if len(hit) else key
    file = "manylabs2/ML2_OrignalEffects_Masterkey.csv"
    r = _row(_ml2("ML2_OrignalEffects_Masterkey.csv"), "study.analysis", row_key, file)
    kind = str(r["orig.stat.type"])
    df = _num(r["orig.stat.df2"]) if kind == "f" and _num(r["orig.stat.df2"]) is not None else _num(r["orig.stat.df1"])
    scale, col = ("d", "orig.ES.d") if _num(r["orig.ES.d"]) is not None else ("q", "orig.ES.cohensQ")
    lo, hi = (f"{col}.ciL", f"{col}.ciU")
    if _num(r[col]) is None:
        raise ReaderError(f"{file}: row {row_key}: neither orig.ES.d nor orig.ES.cohensQ holds a number")
    return Effect(scale=scale, value=_num(r[col]), ci_low=_num(r[lo]), ci_high=_num(r[hi]),
                  n=_int(r["orig.stat.N"]), test=ML2_TESTS.get(kind, kind), statistic=_num(r["orig.stat.ncp"]),
                  df=df, p=_num(r["orig.stat.p.value"]), n_groups=_groups(r["orig.stat.n1"], r["orig.stat.n2"]),
                  source=f"{file}:study.analysis={row_key}:{col}")


def _ml2_interval(key: str, d: float) -> tuple[float | None, float | None]:
    """The pooled 95% interval of d from the analysis' global results, where its d equals table 5's to
    the 3 decimals table 5 rounds to; else none (SOURCE.md: Graham.1, Gati.2, ... disagree)."""
    f = ROOT / "manylabs2" / "global_results" / f"{key.replace('.', '_')}_study_global_include_all_RESULTS.csv"
    if not f.exists():
        return None, None
    g = pd.read_csv(f).iloc[0]
    gd = _num(g["ESCI.d"])
    if gd is None or abs(gd - d) > 5e-4:
        return None, None
    return _num(g["ESCI.l.d"]), _num(g["ESCI.u.d"])


def manylabs2_replication(key: str) -> Effect:
    """The pooled replication (all samples) of ML2 analysis `key`, from table 5."""
    file = "manylabs2/table5data_RM.csv"
    r = _row(_ml2("table5data_RM.csv"), "analysis", key, file)
    d = _num(r["ML2_d"])
    if d is not None:
        scale, value, col = "d", d, "ML2_d"
        lo, hi = _ml2_interval(key, d)
    else:
        scale, value, col, lo, hi = "q", _num(r["ML2_Q"]), "ML2_Q", None, None
    if value is None:
        raise ReaderError(f"{file}: row {key}: neither ML2_d nor ML2_Q holds a number")
    kind = str(r["ML2_stattype"])
    return Effect(scale=scale, value=value, ci_low=lo, ci_high=hi, n=_int(r["ML2_N"]), test=ML2_TESTS.get(kind, kind),
                  statistic=_num(r["ML2_teststat"]), df=_num(r["ML2_df"]), p=_num(r["ML2_pval"]),
                  n_groups=_groups(r["ML2_n1"], r["ML2_n2"]), source=f"{file}:analysis={key}:{col}")


# ------------------------------------------------------------------------------------------ Many Labs 1

ML1_SHEETS = {"study1": "Sunk_Costs", "study2": "Gain_Loss", "study3a": "Anchoring1", "study3b": "Anchoring2",
              "study3c": "Anchoring3", "study3d": "Anchoring4", "study4": "Gamblers_Fallacy", "study5": "Scales",
              "study6": "Reciprocity", "study7": "Allowed_forbidden", "study8": "Quote_Attribution",
              "study9": "Flag_Priming", "study10": "Money_Priming", "study11": "Imagined_Contact",
              "study12a": "Math_Art_Gender", "study12b": "IAT_correlation"}


@lru_cache(maxsize=None)
def _ml1(name: str) -> pd.DataFrame:
    return pd.read_csv(ROOT / "manylabs1" / name)


def _ml1_test(result: str) -> tuple[str | None, float | None]:
    """(test, df) from the "Result.used" text, e.g. "F(1,211) = 2.74" -> ("F", 211)."""
    m = re.match(r"\s*([Ft])\((?:1,\s*)?(\d+)\)", result)
    if m:
        return m.group(1), float(m.group(2))
    low = result.lower()
    if low.startswith("chi^2"):
        return "chi2", 1.0
    if "correlation" in low or low.startswith("r ="):
        return "r", None
    if low.startswith("cohen's d"):
        return "d", None
    return None, None


def manylabs1_original(key: str) -> Effect:
    """The original effect of ML1 study `key` (e.g. "study3a"): d with its exact 95% interval."""
    file = "manylabs1/ML_Original_ES95CI.csv"
    r = _row(_ml1("ML_Original_ES95CI.csv"), "Unnamed: 0", key, file)
    test, df = _ml1_test(str(r["Result.used"]))
    n1, n2 = _int(r["N1"]), _int(r["N2"])
    return Effect(scale="d", value=_num(r["d"]), ci_low=_num(r["X95.Lower"]), ci_high=_num(r["X95.Upper"]),
                  n=None if n1 is None else n1 + (n2 or 0), test=test, statistic=_num(r["Statistic"]), df=df, p=None,
                  n_groups=_groups(n1, n2), source=f"{file}:{key}:d")


def _ml1_sheet(key: str) -> tuple[int | None, tuple[int, ...] | None, str | None, float | None, float | None]:
    """(N, per-group Ns, test, statistic, df) from the "Overall" row of the effect's MLforR sheet: the
    Welch t for two means, the chi-square(1) for a 2x2 table (Ns: the four cells' counts summed)."""
    sheet = _ml1(f"MLforR_sheets/{ML1_SHEETS[key]}.csv")
    r = sheet[sheet["Site"].astype(str).str.startswith("Overall")].iloc[0]
    if "t (unequal var)" in sheet.columns:
        ns = [c for c in sheet.columns if c.startswith("N (") and "Excluded" not in c]
        g = _groups(*(r[c] for c in ns))
        return (sum(g) if g else None), g, "welch_t", _num(r["t (unequal var)"]), _num(r["df (unequal var)"])
    if "X2(1)" in sheet.columns:
        counts = [_int(r[c]) for c in sheet.columns if c.startswith("Count")]
        return sum(counts), None, "chi2", _num(r["X2(1)"]), 1.0
    return None, None, None, None, None


def manylabs1_replication(key: str) -> Effect:
    """The pooled replication of ML1 study `key`: d (smd) and its interval from the first "Overall" row
    of ML_ESCIfromR; N, test and statistic from the effect's sheet."""
    file = "manylabs1/ML_ESCIfromR.csv"
    t = _ml1("ML_ESCIfromR.csv")
    hit = t[(t[".id"] == key) & t["id1"].astype(str).str.startswith("Overall")]
    if hit.empty or key not in ML1_SHEETS:
        raise ReaderError(f"{file}: no Overall row for {key!r}")
    r = hit.iloc[0]
    if _num(r["smd"]) is None:
        raise ReaderError(f"{file}: {key}: the Overall row holds no d (smd)")
    n, groups, test, stat, df = _ml1_sheet(key)
    return Effect(scale="d", value=_num(r["smd"]), ci_low=_num(r["Lower.Conf.Limit.smd"]),
                  ci_high=_num(r["Upper.Conf.Limit.smd"]), n=n, test=test, statistic=stat, df=df, p=None,
                  n_groups=groups, source=f"{file}:{key}/{r['id1']}:smd")


# ------------------------------------------------------------------------------------ HumanStudy-Bench

@lru_cache(maxsize=None)
def _hsb(study: str) -> dict:
    f = ROOT / "humanstudy_bench" / "studies" / study / "ground_truth.json"
    if not re.fullmatch(r"study_\d{3}", study) or not f.exists():
        raise ReaderError(f"humanstudy_bench: no study {study!r} (study_001 ... study_014)")
    return json.loads(f.read_text(encoding="utf-8"))


def _hsb_finding(key: str) -> tuple[dict, dict, str]:
    """(finding, its test, file) for a key "study_NNN:<sub-study id>:<finding id>:<test index>"."""
    parts = key.split(":")
    if len(parts) != 4 or not parts[3].isdigit():
        raise ReaderError(f"humanstudy_bench key {key!r}: give study_NNN:<sub-study>:<finding>:<test index>")
    study, sub, finding, test = parts
    file = f"humanstudy_bench/studies/{study}/ground_truth.json"
    for s in _hsb(study)["studies"]:
        for f in s["findings"] if s["study_id"] == sub else ():
            if f["finding_id"] == finding and int(test) < len(f["statistical_tests"]):
                return f, f["statistical_tests"][int(test)], file
    raise ReaderError(f"{file}: no sub-study {sub!r} with finding {finding!r} and test {test}")


STAT = [("chi2", re.compile(r"chi2\((\d+),\s*N\s*=\s*(\d+)\)\s*=\s*([\d.]+)")),
        ("t", re.compile(r"\bt\((\d+)\)\s*=\s*(-?[\d.]+)")),
        ("r", re.compile(r"\br\((\d+)\)\s*=\s*(-?[\d.]+)")),
        ("r_n", re.compile(r"\br\s*=\s*(-?[\d.]+),\s*n\s*=\s*(\d+)")),
        ("F", re.compile(r"\bF\(1,\s*(\d+)\)\s*=\s*([\d.]+)"))]


def _hsb_stat(text: str) -> tuple[str | None, float | None, float | None, int | None, float | None]:
    """(test, statistic, df, N, p) parsed from the ground truth's "reported_statistics" text."""
    m_p = re.search(r"\bp\s*[=<]\s*(0?\.\d+)", text)
    p = float(m_p.group(1)) if m_p else None
    for name, rx in STAT:
        m = rx.search(text)
        if not m:
            continue
        if name == "chi2":
            return name, float(m.group(3)), float(m.group(1)), int(m.group(2)), p
        if name == "r_n":  # "r=0.42, n=103"
            return "r", float(m.group(1)), float(m.group(2)) - 2, int(m.group(2)), p
        df = float(m.group(1))
        return name, float(m.group(2)), df, int(df) + 2, p  # t(df), F(1, df): N = df + 2 (two groups); r(df): N = df + 2
    return None, None, None, None, p


def _cell(finding: dict, path: str, file: str) -> tuple[float, int | None]:
    """(proportion, n) of one group's percentage, "<group>/<field>" in original_data_points.data."""
    group, _, field = path.rpartition("/")
    data = (finding.get("original_data_points") or {}).get("data") or {}
    if group not in data or _num(data[group].get(field)) is None:
        raise ReaderError(f"{file}: original_data_points has no percentage {path!r}")
    return _num(data[group][field]) / 100.0, _int(data[group].get("n"))


def _hsb_group_f(finding: dict, path: str, file: str, source: str, p) -> Effect:
    """One group's F(1, n1 + n2 - 2) of two groups whose Ns the same entry gives (its first two `n_*`
    fields, e.g. n_choice_1/n_choice_2): d = sqrt(F) * sqrt(1/n1 + 1/n2), the two-group t's d
    (Rosenthal 1994), in the direction the original found."""
    group, _, field = path.rpartition("/")
    data = ((finding.get("original_data_points") or {}).get("data") or {}).get(group) or {}
    ns = [_int(v) for k, v in data.items() if k.startswith("n_")][:2]
    f = _num(data.get(field))
    if f is None or len(ns) != 2 or None in ns:
        raise ReaderError(f"{file}: original_data_points has no F {path!r} with two group Ns (n_...)")
    n1, n2 = ns
    return Effect(scale="d", value=math.sqrt(f) * math.sqrt(1 / n1 + 1 / n2), ci_low=None, ci_high=None, n=n1 + n2,
                  test="F", statistic=f, df=float(n1 + n2 - 2), p=p, n_groups=(n1, n2), source=f"{source}:{path}")


def humanstudy_bench_original(key: str, cells: list[str] | None = None) -> Effect:
    """The published result of a HumanStudy-Bench test. With `cells` (two "<group>/<field>" percentages):
    the difference of the two proportions (scale diff_prop) and its Wald 95% interval from statsmodels,
    the test statistic beside it where the text reports one. Without: a t or F(1, df) as d = 2t/sqrt(df)
    (equal groups: Rosenthal 1994, the conversion HumanStudy-Bench's ECS uses), an r as r."""
    finding, test, file = _hsb_finding(key)
    name, stat, df, n, p = _hsb_stat(str(test.get("reported_statistics", "")))
    source = f"{file}:{key}"
    if cells and len(cells) == 1:
        return _hsb_group_f(finding, cells[0], file, source, p)
    if cells:
        from statsmodels.stats.proportion import confint_proportions_2indep

        if len(cells) != 2:
            raise ReaderError(f"{file}: {key}: `cells` names two percentages, not {len(cells)}")
        (p1, n1), (p2, n2) = (_cell(finding, c, file) for c in cells)
        lo = hi = None
        if n1 and n2:  # counts are the percentages times n, as the source rounds them
            lo, hi = confint_proportions_2indep(p1 * n1, n1, p2 * n2, n2, method="wald", compare="diff")
        return Effect(scale="diff_prop", value=p1 - p2, ci_low=_num(lo), ci_high=_num(hi),
                      n=(n1 + n2) if n1 and n2 else n, test=name, statistic=stat, df=df, p=p,
                      n_groups=_groups(n1, n2) if n1 and n2 else None, source=f"{source}:{'|'.join(cells)}")
    if name in ("t", "F"):
        t = stat if name == "t" else math.sqrt(stat) * (-1 if test.get("expected_direction") == "negative" else 1)
        return Effect(scale="d", value=2 * t / math.sqrt(df), ci_low=None, ci_high=None, n=n, test=name,
                      statistic=stat, df=df, p=p, n_groups=None, source=source)
    if name == "r":
        return Effect(scale="r", value=stat, ci_low=None, ci_high=None, n=n, test=name, statistic=stat, df=df, p=p,
                      n_groups=None, source=source)
    raise ReaderError(f"{file}: {key}: no t, F(1, df), r or two percentages to read an effect from "
                      f"({test.get('reported_statistics')!r}); name two percentages with `cells`")


# ------------------------------------------------------------------------------------------------ seeds

def seeds_original(key: str) -> Effect:
    """The human result of a seed finding (keys and formulas: seeds.py)."""
    from .seeds import SeedKeyError
    from .seeds import seeds_original as read

    try:
        return Effect(**read(key))
    except SeedKeyError as err:
        raise ReaderError(str(err)) from None


# ------------------------------------------------------------------------------------------------ door

READERS = {("manylabs2", "original"): manylabs2_original, ("manylabs2", "replication"): manylabs2_replication,
           ("manylabs1", "original"): manylabs1_original, ("manylabs1", "replication"): manylabs1_replication,
           ("humanstudy_bench", "original"): humanstudy_bench_original, ("seeds", "original"): seeds_original}


def read_effect(corpus: str, which: str, key: str, cells: list[str] | None = None) -> Effect:
    """The `which` ('original' | 'replication') effect of `key` in `corpus`."""
    reader = READERS.get((corpus, which))
    if reader is None:
        raise ReaderError(f"no {which} effects in corpus {corpus!r} (readers: "
                          f"{', '.join(f'{c} {w}' for c, w in READERS)})")
    return reader(str(key), cells) if cells is not None else reader(str(key))
