"""analysis.do: the Stata side of a replication folder, where Stata's own commands express the analysis.

Stata users start from the `.dta` exports (value labels in the design's order). The do-file computes,
from `ultimatum/export/responses.dta`, P(accept) per trial, its mean and standard error per model and
offer (trials are the unit) and the Welch test "Mr-Ms minus Ms-Mr" over all offers on one value per
name pair, its mean over the offers (`collapse`, then `ttest ..., unequal`), and compares each with the Python table (`ultimatum/analysis/*.csv`), printing the largest
difference and stopping (`exit 9`) when one exceeds 1e-8 (p-values and df 1e-6). The other studies'
statistics (cluster-robust CR2 AMCEs with Satterthwaite df, cregg's constrained AMCE averaging,
Kaplan-Meier tables, Wasserstein representativeness) are left to R; the README says so.

The CSV columns are read by position (`import delimited, varnames(nonames)`), named here from the
table's header as written, because Stata turns names such as `std.error` into names of its own. Stata
is not needed to write the file; it was read-checked, not run (no Stata on the build machine).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

STUDIES_IN_STATA = ("ultimatum",)
TOL, TOL_P = 1e-8, 1e-6


def _s(text: str) -> str:
    """A Stata compound-quoted string literal: `"..."' holds any text but the closing `"'` pair."""
    text = str(text).replace("\n", " ").replace("\r", " ")
    if '"\'' in text:
        raise ValueError(f"{text!r}: cannot be a Stata string literal")
    return f'`"{text}"\''


def _import(csv: Path, rel: str, want: dict[str, str]) -> list[str]:
    """`import delimited` of a Python table by position, its columns renamed to `want` (csv name -> Stata)."""
    header = list(pd.read_csv(csv, nrows=0).columns)
    missing = [c for c in want if c not in header]
    if missing:
        raise KeyError(f"{csv}: no column(s) {', '.join(missing)}")
    lines = [f"import delimited using {_s(rel)}, varnames(nonames) rowrange(2) stringcols(_all) clear"]
    for i, name in enumerate(header, start=1):
        if name in want:
            lines.append(f"rename v{i} {want[name]}")
        else:
            lines.append(f"drop v{i}")
    return lines


def _ultimatum(out: Path, folder: str) -> list[str]:
    a = out / folder / "analysis"
    lines = [
        "",
        "* ---- Ultimatum Game (Aher et al. 2023): P(accept) per trial, mean by model x offer, Welch test of",
        "*      the pairing Mr-Ms minus Ms-Mr over all offers; the name pair is the unit (its mean over offers)",
        f"use {_s(f'{folder}/export/responses.dta')}, clear",
        "foreach v of varlist source model response pairing pair {",
        "    capture confirm numeric variable `v'",
        "    if !_rc {",
        "        decode `v', generate(`v'_text)",
        "        drop `v'",
        "        rename `v'_text `v'",
        "    }",
        "}",
        'keep if source == "model"',
        "bysort model trial: egen double total = total(weight)",
        'generate double hit = cond(response == "accept", weight / total, 0)',
        "bysort model trial: egen double p_accept = total(hit)",
        "bysort model trial: keep if _n == 1",
        "keep model trial offer pairing pair p_accept",
        f"save {_s('stata_results/ultimatum_trials.dta')}, replace",
        "",
        "tempname h",
        f"postfile `h' str244 model double(offer mean std_error n) using {_s('stata_results/ultimatum_acceptance_by_offer.dta')}, replace",
        "levelsof model, local(models)",
        "foreach m of local models {",
        "    levelsof offer if model == `\"`m'\"', local(offers)",
        "    foreach o of local offers {",
        "        quietly summarize p_accept if model == `\"`m'\"' & offer == `o'",
        "        post `h' (`\"`m'\"') (`o') (r(mean)) (r(sd) / sqrt(r(N))) (r(N))",
        "    }",
        "}",
        "postclose `h'",
        *_import(a / "acceptance_by_offer.csv", f"{folder}/analysis/acceptance_by_offer.csv",
                 {"model": "model", "offer": "offer", "mean": "py_mean", "std.error": "py_std_error", "n": "py_n"}),
        'drop if offer == "all"',
        "destring offer py_mean py_std_error py_n, replace",
        f"merge 1:1 model offer using {_s('stata_results/ultimatum_acceptance_by_offer.dta')}",
        "count if _merge != 3",
        "local unmatched = r(N)",
        "generate double diff = max(abs(mean - py_mean), abs(std_error - py_std_error), abs(n - py_n))",
        "quietly summarize diff",
        f"display as text {_s('check ultimatum/acceptance_by_offer')} _col(50) r(N) \" rows, max |Stata - Python| = \" %9.3g r(max)",
        f"if `unmatched' > 0 | r(max) > {TOL} | missing(r(max)) local failed = `failed' + 1",
        "",
        f"use {_s('stata_results/ultimatum_trials.dta')}, clear",
        "collapse (mean) p_accept, by(model pairing pair)",
        "tempname w",
        f"postfile `w' str244 model double(estimate std_error statistic df p_value) using {_s('stata_results/ultimatum_pairing_tests.dta')}, replace",
        "levelsof model, local(models)",
        "foreach m of local models {",
        "    * groups sort as Mr-Ms < Ms-Mr, so mu_1 - mu_2 is Mr-Ms minus Ms-Mr",
        "    quietly ttest p_accept if model == `\"`m'\"' & inlist(pairing, \"Mr-Ms\", \"Ms-Mr\"), by(pairing) unequal",
        "    post `w' (`\"`m'\"') (r(mu_1) - r(mu_2)) (r(se)) (r(t)) (r(df_t)) (r(p))",
        "}",
        "postclose `w'",
        *_import(a / "pairing_tests.csv", f"{folder}/analysis/pairing_tests.csv",
                 {"model": "model", "offer": "offer", "test": "test", "estimate": "py_estimate",
                  "std.error": "py_std_error", "statistic": "py_statistic", "df": "py_df", "p.value": "py_p_value"}),
        'keep if offer == "all" & strpos(test, "Welch") == 1',
        "destring py_estimate py_std_error py_statistic py_df py_p_value, replace",
        f"merge 1:1 model using {_s('stata_results/ultimatum_pairing_tests.dta')}",
        "count if _merge != 3",
        "local unmatched = r(N)",
        "generate double diff = max(abs(estimate - py_estimate), abs(std_error - py_std_error), "
        "abs(statistic - py_statistic))",
        "generate double diff_p = max(abs(df - py_df), abs(p_value - py_p_value))",
        "quietly summarize diff_p",
        "local worst_p = r(max)",
        "quietly summarize diff",
        f"display as text {_s('check ultimatum/pairing_tests (Welch, all offers)')} _col(50) r(N) \" rows, max |Stata - Python| = \" %9.3g r(max)",
        f"if `unmatched' > 0 | r(max) > {TOL} | `worst_p' > {TOL_P} | missing(r(max)) local failed = `failed' + 1",
    ]
    return lines


def do_script(manifest: dict, out: Path) -> str:
    """analysis.do for the replication folder `out` (its analysis/*.csv are read for their column order)."""
    lines = [
        "* Stata side of a simsubjects replication: the statistics Stata's own commands express, from the",
        "* .dta exports (value labels in the design's order), each compared with the Python table in",
        "* <study>/analysis/*.csv; exits with an error when one differs. Run from this folder:",
        "*   do analysis.do",
        "* The other studies' statistics are computed by analysis.R (see README.md).",
        "version 16",
        "clear all",
        "set more off",
        'capture mkdir "stata_results"',
        "local failed = 0",
    ]
    done = []
    for e in manifest["studies"]:
        if e["study"] in STUDIES_IN_STATA and "dta" in e.get("exported", []) and e.get("status") == "complete" \
                and (out / e["folder"] / "analysis" / "pairing_tests.csv").is_file():
            lines += _ultimatum(out, e["folder"])
            done.append(e["folder"])
    lines += [
        "",
        "if `failed' > 0 {",
        '    display as error "`failed\' table(s) differ from the Python tables"',
        "    exit 9",
        "}",
        f"display as text {_s('all Stata tables agree with the Python tables (' + ', '.join(done) + ')')}",
    ]
    return "\n".join(lines) + "\n"
