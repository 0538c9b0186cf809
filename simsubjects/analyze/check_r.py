"""Cross-check of the Python statistics against their R twins (`simsubjects analyze DIR --check-r`).

Every statistic that has an R twin is computed both ways: in Python by the analysis modules, in R
by the functions of the repository's R package (R/*.R, read from the source tree so a checkout
needs no installed R package; the installed package `simsubjects` otherwise) or by R's own stats,
called through rpy2. The R side starts from the tidy responses, not from Python's intermediate
results, wherever its package has the step (P(accept) per trial, Δ per question).

`check_r(study, responses, items, tables)` returns one row per compared number: ``statistic``
(what, for which system and group), ``python``, ``r``, ``abs_diff``, ``tolerance`` and ``ok``.
Tolerances: `tol` (1e-8) for estimates, standard errors, test statistics and interval bounds;
`tol_p` (1e-6) for p-values and the degrees of freedom they rest on. Two missing values (NaN/NA)
or two equal infinities agree.

Study pieces (each study's declaration names its own in `check_r`; a study declared outside the
package may also name an `r_source` file, sourced into the session first):

* ultimatum — P(accept) per trial; mean and SE of P(accept) by model x offer (R:
  one_sample_test); the Welch tests "Mr-Ms minus Ms-Mr" of `pairing_tests`, with Lakens' d_av
  (R: welch_test); the
  Kruskal-Wallis tests across the four pairings (R: kruskal.test); the name-pair correlations
  between offers (R: cor, pairwise complete).
* moca — the AMCE of every factor for people and each model, OLS with story-clustered errors,
  for se_type CR0, stata, cregg and CR2 (R: amce, i.e. estimatr::lm_robust).
* survey_bias — Δ per question (R: delta_bias), the one-sample and Welch t-tests across questions
  and their effect sizes, d and d_av (R: delta_tests), and, when the responses carry human rows with ordinal positions and the item
  table the option positions, the normalized Wasserstein distance per question and the
  representativeness (R: wasserstein_by_question, representativeness).
* opinion_survey — the normalized Wasserstein distance per question and the representativeness of
  the default prompt and of the personas to every human group and Overall (R:
  wasserstein_by_question, representativeness with by = attribute, group), and the table's bootstrap
  columns on the resamples Python drew (R: .rep_boot_multinomial).
* garden_path — the per-sentence mean P(ungrammatical) of each version; mean and SEM across
  sentences by set, type and version (R: one_sample_test); the paired t-test and Wilcoxon
  signed-rank test of garden path vs control (R: garden_path_sentences, garden_path_tests).
* wisdom — per model and question: valid estimates, median, quartiles, IQR, median over the truth,
  share exactly right (R: wisdom_questions, quantile type 7).
* milgram, milgram_novel — per model and for Milgram's humans, the share still obeying, the number
  at risk and the refusals at each shock level (R: milgram_survival, Kaplan-Meier through
  survival::survfit), and the log-rank test of each model against the humans (R:
  survival::survdiff), from the per-subject break-off levels of `analyze.milgram.breakoffs`.
* conjoint_immigration — the AMCE (with the two restriction interactions) and MM of every level for
  each model and HHY's respondents, estimate, standard error and z (R: conjoint_amce, conjoint_mm on
  survey::svyglm; studies/conjoint/analysis.py:check_conjoint), and per model against the people (group
  people/model) the by= tables: mm_diff_model_minus_people (R: conjoint_mm_diffs), the clustered
  anova_model_vs_people (cj_anova; R: conjoint_wald), AMCEs and MMs by group (R: conjoint_amce / conjoint_mm with
  by =) and AMCE differences (R: conjoint_amce_diffs).
* every study — each Holm / Benjamini-Hochberg adjusted p-value column of its tables (R: adjust_p,
  i.e. p.adjust within the table's `family`), tolerance 1e-12 (analyze.multiplicity).
"""

from __future__ import annotations

import functools
import os
import math
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from ..errors import UserError

TOL = 1e-8
TOL_P = 1e-6
COLUMNS = ["statistic", "python", "r", "abs_diff", "tolerance", "ok"]

# Python column -> R column of the tidy results
# Python and R tables share broom's names; a field maps a Python column to its R column
FIELDS = {k: k for k in ("estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high")}
LOOSE = {"df", "p.value"}  # compared with tol_p


# ---------------------------------------------------------------- R session

def _package_root() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    desc = root / "DESCRIPTION"
    if desc.is_file() and (root / "R").is_dir() and "Package: simsubjects" in desc.read_text(encoding="utf-8"):
        return root
    return None


def _import_rpy2():
    """rpy2.robjects, without the LD_LIBRARY_PATH that rpy2 exports while starting R.

    The variable only reaches child processes (the loader read it when this process started), and
    there it does harm: R's list puts the system library folder first, so a child Python of another
    build (pyenv, conda) loads the system libpython and cannot import its own packages.
    """
    before = os.environ.get("LD_LIBRARY_PATH")
    try:
        import rpy2.robjects as ro  # lazy: starts R itself (seconds); only --check-r needs it
    finally:
        if before is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = before
    return ro


class RSession:
    """The R functions of simsubjects in one R environment, and conversions both ways."""

    def __init__(self):
        try:
            ro = _import_rpy2()
        except ImportError:
            raise UserError("--check-r needs rpy2 and R: pip install 'rpy2==3.5.17' "
                            "(rpy2 3.6 does not work with R 4.2)") from None
        except Exception as e:  # rpy2 raises when it cannot find or start R

            advice = fit_advice(installed_rpy2_version(), installed_r_version())
            if advice:  # R is there, but this rpy2 cannot start it (e.g. rpy2 3.6 with R 4.2)
                raise UserError(f"--check-r: {advice}") from None
            raise UserError(f"--check-r: rpy2 cannot start R ({type(e).__name__}: {e}); install R "
                            "(apt-get install r-base-core) and set R_HOME if it is not found") from None
        self.ro = ro
        for pkg, deb in (("estimatr", "r-cran-estimatr"), ("survival", "r-cran-survival")):
            if not ro.r(f'isTRUE(requireNamespace("{pkg}", quietly = TRUE))')[0]:
                raise UserError(f"--check-r: the R package {pkg} is missing; apt-get install {deb}")
        root = _package_root()
        if root is not None:
            # the checkout's own R code, so the check needs no installed R package
            self.env = ro.r("new.env(parent = globalenv())")
            for f in sorted((root / "R").glob("*.R")):
                ro.r["sys.source"](str(f), envir=self.env, **{"keep.source": False})
            self.origin = str(root / "R")
        elif ro.r('isTRUE(requireNamespace("simsubjects", quietly = TRUE))')[0]:
            self.env = ro.r('asNamespace("simsubjects")')
            self.origin = "installed R package simsubjects"
        else:
            raise UserError("--check-r: the R functions of simsubjects were not found; run from a checkout "
                            "(R/ beside simsubjects/) or install the R package: R CMD INSTALL <checkout>")
        self._norm = ro.r("function(d) { d[] <- lapply(d, function(x) if (is.numeric(x) || is.logical(x)) "
                          "as.double(x) else as.character(x)); d }")
        # kruskal.test counts ties with table(x), i.e. on values printed to 15 significant digits, but
        # ranks exact values; on ranks (same statistic) both steps see the exact ties scipy sees
        self.kruskal = ro.r("function(x, g) { r <- stats::kruskal.test(rank(x), factor(g)); "
                            "data.frame(statistic = unname(r$statistic), df = unname(r$parameter), "
                            "p.value = r$p.value) }")
        # log-rank (Mantel-Cox) of break-off levels: refusing level L + 1 is the event, completers
        # and runs cut short are censored at their last level
        self.logrank = ro.r(
            "function(level, censored, group, max_level) { cens <- censored > 0 | level >= max_level; "
            "r <- survival::survdiff(survival::Surv(ifelse(cens, level, level + 1), !cens) ~ group); "
            "data.frame(statistic = r$chisq, df = length(r$n) - 1, "
            "p.value = stats::pchisq(r$chisq, length(r$n) - 1, lower.tail = FALSE)) }")
        self.cor_offers = ro.r(
            "function(p, pair, offer) { w <- tapply(p, list(pair, offer), mean); "
            "r <- suppressWarnings(stats::cor(w, use = 'pairwise.complete.obs')); "
            "data.frame(offer_a = rep(as.numeric(rownames(r)), ncol(r)), "
            "offer_b = rep(as.numeric(colnames(r)), each = nrow(r)), r = as.vector(r)) }")

    def source(self, path: str) -> None:
        """Define the functions of an R file (a study's r_source) in the session's environment."""
        self.ro.r["sys.source"](str(path), envir=self.env, **{"keep.source": False})

    def __call__(self, name: str, *args, **kwargs) -> pd.DataFrame:
        """Call the R function `name` of the package; data frames in and out."""
        fn = self.env.find(name)
        conv = lambda v: self.to_r(v) if isinstance(v, pd.DataFrame) else self.vector(v)  # noqa: E731
        res = fn(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})
        return self.to_py(res)

    def vector(self, v):
        ro = self.ro
        if isinstance(v, (list, tuple, np.ndarray, pd.Series)):
            vals = list(v)
            if all(isinstance(x, str) for x in vals):
                return ro.StrVector(vals)
            return ro.FloatVector([float(x) for x in vals])
        if isinstance(v, bool):
            return ro.BoolVector([v])
        if isinstance(v, (int, float, np.integer, np.floating)):
            return ro.FloatVector([float(v)])
        if isinstance(v, str):
            return ro.StrVector([v])
        return v

    def to_r(self, df: pd.DataFrame):
        ro = self.ro
        cols = {}
        for c in df.columns:
            s = df[c]
            present = s[~s.map(_missing)] if s.dtype == object else s
            if pd.api.types.is_bool_dtype(s) or (s.dtype == object and len(present)
                                                  and present.map(lambda v: isinstance(v, (bool, np.bool_))).all()):
                cols[c] = ro.BoolVector([ro.NA_Logical if pd.isna(v) else bool(v) for v in s])
            elif pd.api.types.is_numeric_dtype(s):
                cols[c] = ro.FloatVector([ro.NA_Real if math.isnan(x) else x for x in s.astype(float).tolist()])
            else:
                cols[c] = ro.StrVector([ro.NA_Character if _missing(v) else str(v) for v in s])
        return ro.r["data.frame"](**cols, stringsAsFactors=False, **{"check.names": False})

    def to_py(self, rdf) -> pd.DataFrame:
        ro = self.ro
        d = self._norm(rdf)
        out = {}
        for name, col in zip(d.names, d):
            if isinstance(col, ro.vectors.FloatVector):
                out[name] = np.asarray(list(col), dtype=float)
            else:
                out[name] = [None if x is ro.NA_Character else str(x) for x in col]
        return pd.DataFrame(out)


def _missing(v) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # lists, tuples
        return False


@functools.lru_cache(maxsize=1)
def r_session() -> RSession:
    return RSession()


# ---------------------------------------------------------------- comparison rows

def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def compare(label: str, python, r, tolerance: float) -> dict:
    a, b = _num(python), _num(r)
    if (math.isnan(a) and math.isnan(b)) or (math.isinf(a) and a == b):
        diff = 0.0
    elif math.isnan(a) or math.isnan(b):
        diff = math.inf
    else:
        diff = abs(a - b)
    return {"statistic": label, "python": a, "r": b, "abs_diff": diff, "tolerance": tolerance,
            "ok": bool(diff <= tolerance)}


def compare_fields(label: str, py: Mapping, r: Mapping, tol: float, tol_p: float,
                   fields: Mapping[str, str] = FIELDS) -> list[dict]:
    return [compare(f"{label} {rf}", py.get(pf), r.get(rf), tol_p if pf in LOOSE else tol)
            for pf, rf in fields.items() if pf in py]


def compare_worst(label: str, both: pd.DataFrame, col: str, tol: float) -> dict:
    """One row for a whole column: the row where `col` (Python) and `col_r` (R) differ most."""
    diff = (both[col] - both[f"{col}_r"]).abs().fillna(math.inf)
    worst = both.loc[diff.idxmax()] if len(both) else pd.Series({col: math.nan, f"{col}_r": math.nan})
    return compare(label, worst[col], worst[f"{col}_r"], tol)


def _tag(*parts) -> str:
    return " | ".join(str(p) for p in parts if str(p) not in ("", "nan", "None"))


# ---------------------------------------------------------------- ultimatum


# ---------------------------------------------------------------- moca


# ---------------------------------------------------------------- survey_bias


# ---------------------------------------------------------------- milgram


# ---------------------------------------------------------------- garden path


# ---------------------------------------------------------------- wisdom of crowds


def check_r(study, responses: pd.DataFrame, items: pd.DataFrame | None = None,
            tables: Mapping[str, pd.DataFrame] | None = None, tol: float = TOL, tol_p: float = TOL_P) -> pd.DataFrame:
    """Every statistic of `study` (a built-in study's name, or a StudyDef) with an R twin, computed in Python and in R; one row per number.

    `tables`: the Python analysis tables of the run (as `simsubjects analyze` computes them); the
    pieces recompute what they need from `responses`/`items` when a table is absent.
    Columns: statistic, python, r, abs_diff, tolerance, ok.
    """

    declared = studies()
    # a StudyDef: the run's own declaration (a study file's, whose twins are R/studyfile.R); a name: a built-in study
    decl = study if isinstance(study, StudyDef) else declared.get(study)
    if decl is None or not decl.check_r:
        study = getattr(study, "name", study)
        have = sorted(n for n, d in declared.items() if d.check_r)
        raise UserError(f"--check-r: no R twins for study {study!r}; available: {', '.join(have)}")
    session = r_session()
    if decl.r_source:
        session.source(decl.r_source)
    rows = decl.check_r(session, responses, items, dict(tables or {}), tol, tol_p)

    rows += check_r_rows(session, dict(tables or {}))
    return pd.DataFrame(rows, columns=COLUMNS)


# Holm/BH columns of any table against R's p.adjust (here, not in methods/multiplicity.py: the method
# needs nothing of R, and check_r imports every analysis)
from simsubjects.analyze.methods.multiplicity import METHODS, _wide_families, adjusted_columns  # noqa: E402
from ..collect.studies.registry import StudyDef, studies
from .r_versions import fit_advice, installed_r_version, installed_rpy2_version


def check_r_rows(r, tables: dict[str, pd.DataFrame], tol: float = 1e-12) -> list[dict]:
    """`--check-r`: every adjusted column recomputed by R's p.adjust (R: adjust_p), the worst row each."""
    rows = []
    for name, df in tables.items():
        pairs = adjusted_columns(df)
        if not pairs or df.empty:
            continue
        if "family" in df:  # long: one family per value of `family`
            # a row that repeats another's test (a two-option order effect's mirror) is in no family
            df = df[~df["family"].astype(str).str.startswith("not counted")]
            for pcol, m in pairs:
                res = r("adjust_p", df[pcol].to_numpy(float), df["family"].astype(str).tolist(),
                        "holm" if m == "holm" else "BH")
                rows.append(_worst(f"{name} {pcol}.{m} (p.adjust)", df[f"{pcol}.{m}"], res["p.adjusted"], tol))
        else:  # wide: one family per model (WIDE_BY)
            base = sorted({pc for pc, _ in pairs}, key=list(df.columns).index)
            flat = df[base].to_numpy(float).ravel()
            for m in METHODS:
                res = r("adjust_p", flat, _wide_families(df, len(base)), "holm" if m == "holm" else "BH")
                py = df[[f"{c}.{m}" for c in base]].to_numpy(float).ravel()
                rows.append(_worst(f"{name} p-values .{m} (p.adjust)", pd.Series(py), res["p.adjusted"], tol))
    return rows


def _worst(label, py, r, tol) -> dict:
    py, r = np.asarray(py, float), np.asarray(r, float)
    both_nan = np.isnan(py) & np.isnan(r)
    diff = np.where(both_nan, 0.0, np.abs(py - r))
    diff = np.where(np.isnan(diff), np.inf, diff)
    i = int(np.argmax(diff)) if diff.size else 0
    return compare(label, py[i] if py.size else np.nan, r[i] if r.size else np.nan, tol)
