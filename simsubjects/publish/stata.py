"""analysis.do: the Stata side of a replication folder, where Stata's own commands express the analysis.

Stata users start from the `.dta` exports (value labels in the design's order). Each block computes a
study's statistics from its `<study>/export/*.dta` and compares them with the Python table
(`<study>/analysis/*.csv`), printing the largest difference and counting a failure when one exceeds
1e-8 (p-values and df 1e-6); the file ends with `exit 9` when any table differs.

* ultimatum: P(accept) per trial, its mean and standard error per model and offer (trials are the
  unit) and the Welch test "Mr-Ms minus Ms-Mr" over all offers on one value per name pair, its mean
  over the offers (`collapse`, then `ttest ..., unequal`; the name pair is the unit, issue 25).
* garden_path: P(ungrammatical) per trial, averaged over the names per sentence and version
  (`collapse`), and the paired t-test of garden path vs control across sentences (`ttest gp == control`)
  per model, set and verb type (sentences are the unit).
* conjoint_immigration: the marginal means of every attribute level per source (the model, HHY's
  respondents), `svy: regress chosen ibn.<attribute>, noconstant` with `svyset` respondent clusters:
  Stata's linearization is survey::svyglm's (cregg), so estimate and standard error agree.

What Stata has no command for stays in R, and the README says so: cluster-robust CR2 errors with
Satterthwaite df (MoCa's AMCEs), cregg's constrained AMCE averaging (the conjoint's AMCEs), the exact
Wilcoxon signed-rank p-value, Kaplan-Meier tables with R's intervals (Milgram), type-7 quantiles
(Wisdom of Crowds), the survey-bias deltas and the Wasserstein representativeness (opinion survey).

The CSV columns are read by position (`import delimited, varnames(nonames)`), named here from the
table's header as written, because Stata turns names such as `std.error` into names of its own. Stata
is not needed to write the file; it was read-checked, not run (no Stata on the build machine):
tests/test_stata_do.py checks that every file it reads is in the folder and every variable it names is
in that .dta.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from simsubjects.studies.conjoint.analysis import features

STUDIES_IN_STATA = ("ultimatum", "garden_path", "conjoint_immigration")
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


def _decode(variables: list[str]) -> list[str]:
    """Value-labelled variables back to their text (the labels), so `if` conditions compare text."""
    return [
        f"foreach v of varlist {' '.join(variables)} {{",
        "    capture confirm numeric variable `v'",
        "    if !_rc {",
        "        decode `v', generate(`v'_text)",
        "        drop `v'",
        "        rename `v'_text `v'",
        "    }",
        "}",
    ]


def _verdict(label: str, diff: str, tol: float, diff_p: str | None = None) -> list[str]:
    """After a merge of the Python table (master) with Stata's results (using): one line with the largest
    difference; a failure when a row has no twin or a difference is over its tolerance (`diff_p`: the
    p-value and df differences, tolerance 1e-6)."""
    lines = ["count if _merge != 3", "local unmatched = r(N)", f"generate double diff = {diff}"]
    if diff_p:
        lines += [f"generate double diff_p = {diff_p}", "quietly summarize diff_p", "local worst_p = r(max)",
                  "if missing(`worst_p') local worst_p = 0"]
    loose = f" | `worst_p' > {TOL_P}" if diff_p else ""
    lines += [
        "quietly summarize diff",
        f"display as text {_s('check ' + label)} _col(50) r(N) \" rows, max |Stata - Python| = \" %9.3g r(max)",
        f"if `unmatched' > 0 | r(max) > {tol} | missing(r(max)){loose} local failed = `failed' + 1",
    ]
    return lines


def _ultimatum(out: Path, folder: str) -> list[str]:
    a = out / folder / "analysis"
    lines = [
        "",
        "* ---- Ultimatum Game (Aher et al. 2023): P(accept) per trial, mean by model x offer, Welch test of",
        "*      the pairing Mr-Ms minus Ms-Mr over all offers; the name pair is the unit (its mean over offers)",
        f"use {_s(f'{folder}/export/responses.dta')}, clear",
        *_decode(["source", "model", "response", "pairing", "pair"]),
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
        *_verdict("ultimatum/acceptance_by_offer",
                  "max(abs(mean - py_mean), abs(std_error - py_std_error), abs(n - py_n))", TOL),
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
        *_verdict("ultimatum/pairing_tests (Welch, all offers)",
                  "max(abs(estimate - py_estimate), abs(std_error - py_std_error), abs(statistic - py_statistic))",
                  TOL, "max(abs(df - py_df), abs(p_value - py_p_value))"),
    ]
    return lines


def _garden_path(out: Path, folder: str) -> list[str]:
    a = out / folder / "analysis"
    key = "model set type item"
    return [
        "",
        "* ---- Garden Path sentences (Aher et al. 2023, Appendix C): P(ungrammatical) per trial, mean over the",
        "*      names per sentence and version; paired t-test garden path vs control across sentences (the unit)",
        f"use {_s(f'{folder}/export/responses.dta')}, clear",
        *_decode(["source", "model", "response", "condition", "set", "type", "item"]),
        'keep if source == "model"',
        "bysort model trial: egen double total = total(weight)",
        'generate double hit = cond(response == "ungrammatical", weight / total, 0)',
        "bysort model trial: egen double p = total(hit)",
        "bysort model trial: keep if _n == 1",
        'keep if inlist(condition, "garden_path", "control")',
        f"collapse (mean) p, by({key} condition)",
        f"reshape wide p, i({key}) j(condition) string",
        "rename pgarden_path garden_path",
        "rename pcontrol control",
        "generate double difference = garden_path - control",
        f"save {_s('stata_results/garden_path_per_sentence.dta')}, replace",
        *_import(a / "per_sentence.csv", f"{folder}/analysis/per_sentence.csv",
                 {"model": "model", "set": "set", "type": "type", "item": "item", "garden_path": "py_garden_path",
                  "control": "py_control"}),
        "destring py_garden_path py_control, replace",
        f"merge 1:1 {key} using {_s('stata_results/garden_path_per_sentence.dta')}",
        *_verdict(f"{folder}/per_sentence", "max(abs(garden_path - py_garden_path), abs(control - py_control))",
                  TOL),
        *_garden_path_tests(a, folder),
    ]


def _garden_path_tests(a: Path, folder: str) -> list[str]:
    """The paired t-tests of _garden_path's per-sentence table, by model, set and verb type."""
    return [
        "",
        f"use {_s('stata_results/garden_path_per_sentence.dta')}, clear",
        "tempname g",
        f"postfile `g' str244(model set type) double(mean_difference statistic df p_value n_sentences) using "
        f"{_s('stata_results/garden_path_paired_tests.dta')}, replace",
        "levelsof model, local(models)",
        "foreach m of local models {",
        "    levelsof set if model == `\"`m'\"', local(sets)",
        "    local nsets : word count `sets'",
        "    * the Python table pools two sets as set \"both\"",
        "    if `nsets' > 1 local sets `\"`sets' \"both\"\"'",
        "    foreach s of local sets {",
        "        levelsof type if model == `\"`m'\"', local(types)",
        "        foreach t in all `types' {",
        "            quietly count if model == `\"`m'\"' & (set == `\"`s'\"' | `\"`s'\"' == \"both\") & "
        "(type == `\"`t'\"' | `\"`t'\"' == \"all\") & !missing(difference)",
        "            if r(N) < 2 continue",
        "            quietly ttest garden_path == control if model == `\"`m'\"' & (set == `\"`s'\"' | "
        "`\"`s'\"' == \"both\") & (type == `\"`t'\"' | `\"`t'\"' == \"all\")",
        "            post `g' (`\"`m'\"') (`\"`s'\"') (`\"`t'\"') (r(mu_1) - r(mu_2)) (r(t)) (r(df_t)) (r(p)) (r(N_1))",
        "        }",
        "    }",
        "}",
        "postclose `g'",
        *_import(a / "paired_tests.csv", f"{folder}/analysis/paired_tests.csv",
                 {"model": "model", "set": "set", "type": "type", "n_sentences": "py_n", "mean_difference":
                  "py_mean_difference", "test": "test", "statistic": "py_statistic", "df": "py_df",
                  "p.value": "py_p_value"}),
        'keep if test == "Paired t-test"',
        "destring py_n py_mean_difference py_statistic py_df py_p_value, replace",
        "* a subset with fewer than two sentences has no test in Stata (Python writes it with missing values)",
        "drop if py_n < 2",
        f"merge 1:1 model set type using {_s('stata_results/garden_path_paired_tests.dta')}",
        *_verdict(f"{folder}/paired_tests (paired t-test)",
                  "max(abs(mean_difference - py_mean_difference), abs(statistic - py_statistic), "
                  "abs(n_sentences - py_n))", TOL, "max(abs(df - py_df), abs(p_value - py_p_value))"),
    ]


def _conjoint(out: Path, folder: str) -> list[str]:

    a = out / folder / "analysis"
    feats = features()
    return [
        "",
        "* ---- Immigration conjoint (Hainmueller, Hopkins & Yamamoto 2014): marginal means of every level per",
        "*      source, errors clustered by respondent (svy linearization = survey::svyglm, as cregg); the",
        "*      AMCEs with cregg's averaging over the restricted pairs are left to analysis.R",
        f"use {_s(f'{folder}/export/profiles.dta')}, clear",
        *_decode(["source", "outcome_kind"]),
        'keep if outcome_kind == "choice"',
        "egen long respondent = group(id)",
        "svyset respondent",
        "tempname c",
        f"postfile `c' str244(source feature level) double(estimate std_error) using "
        f"{_s('stata_results/conjoint_mm.dta')}, replace",
        "levelsof source, local(sources)",
        "foreach src of local sources {",
        f"    foreach f in {' '.join(feats)} {{",
        "        quietly svy: regress chosen ibn.`f' if source == `\"`src'\"', noconstant",
        "        quietly levelsof `f' if source == `\"`src'\"', local(codes)",
        "        foreach k of local codes {",
        "            local lab : label (`f') `k'",
        "            post `c' (`\"`src'\"') (\"`f'\") (`\"`lab'\"') (_b[`k'.`f']) (_se[`k'.`f'])",
        "        }",
        "    }",
        "}",
        "postclose `c'",
        *_import(a / "mm.csv", f"{folder}/analysis/mm.csv",
                 {"source": "source", "feature": "feature", "level": "level", "estimate": "py_estimate",
                  "std.error": "py_std_error"}),
        "destring py_estimate py_std_error, replace",
        "* the sources Stata estimated (a rating run's sources have h0 = 4 marginal means of another outcome)",
        "generate byte mine = 0",
        "foreach src of local sources {",
        "    replace mine = 1 if source == `\"`src'\"'",
        "}",
        "keep if mine",
        f"merge 1:1 source feature level using {_s('stata_results/conjoint_mm.dta')}",
        "count if missing(std_error) != missing(py_std_error)",
        "local one_sided = r(N)",
        *_verdict(f"{folder}/mm", "max(abs(estimate - py_estimate), abs(std_error - py_std_error))", TOL),
        "if `one_sided' > 0 local failed = `failed' + 1",
    ]


BLOCKS = {"ultimatum": (_ultimatum, "pairing_tests.csv"), "garden_path": (_garden_path, "paired_tests.csv"),
          "conjoint_immigration": (_conjoint, "mm.csv")}


def do_script(manifest: dict, out: Path) -> str:
    """analysis.do for the replication folder `out` (its analysis/*.csv are read for their column order)."""
    lines = [
        "* Stata side of a simsubjects replication: the statistics Stata's own commands express, from the",
        "* .dta exports (value labels in the design's order), each compared with the Python table in",
        "* <study>/analysis/*.csv; exits with an error when one differs. Run from this folder:",
        "*   do analysis.do",
        "* Here: the Ultimatum Game, the Garden Path sentences, the conjoint's marginal means. The other",
        "* statistics have no Stata command and are computed by analysis.R (README.md says which).",
        "version 16",
        "clear all",
        "set more off",
        'capture mkdir "stata_results"',
        "local failed = 0",
    ]
    done = []
    for e in manifest["studies"]:
        block = BLOCKS.get(e["study"])
        if block and "dta" in e.get("exported", []) and e.get("status") == "complete" \
                and (out / e["folder"] / "analysis" / block[1]).is_file():
            lines += block[0](out, e["folder"])
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
