"""`simsubjects replicate PAPER`: every study of a paper, collected, analyzed, exported and reported.

Papers and their studies come from the study declarations (simsubjects.papers): each study's
`Plan` turns `--scale` into its collect parameters. Scale 1.0 is the paper's own design (every
name pair, every name, every subject, every story, 50 samples per question form); a smaller scale
multiplies the sample sizes, with a floor per study so the analysis still has something to test.
A study declared in a file outside the package (SIMSUBJECTS_STUDIES) joins its paper the same way.

The output folder is a replication package: one run folder per study (collect + analyze + export),
`manifest.json` (papers, scale, command, every run's manifest), `README.md`, `analysis.R` (the R
twins on the exported data) and `report.html` (simsubjects.publish.report). The model is loaded once and
shared by every study. Re-running the same command resumes: each run folder answers from its
request cache.
"""

from __future__ import annotations

import json
import re
import platform
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from simsubjects import __version__
from simsubjects.collect.store import atomic_write_bytes, atomic_write_json
from simsubjects.errors import UserError
from simsubjects.collect.studies.registry import resolve
from simsubjects.papers import ALL, KIND, Paper, plan_studies, resolve_papers, size  # noqa: F401 - re-exported
from simsubjects.publish.rpackage import copy_r_package, r_package_version, source_commit
from simsubjects.redact import redact, redact_obj
from simsubjects.studyfile.origin import file_of
from simsubjects.collect.untrusted import md_code, md_text, r_comment, r_string, shell_join, term

EXPORT_FORMATS = ["parquet", "csv", "rds", "dta", "sav"]


def canonical_command(papers: list[Paper], *, model: str, out, scale: float, seed: int = 0, method: str = "auto",
                      only: list[str] | None = None, chat_template: bool = False, base_url: str | None = None) -> str:
    """The command that re-creates the folder (what the README and the report print)."""
    args = ["simsubjects", "replicate", *[p.key for p in papers], "--model", model, "--scale", f"{scale:g}",
            "--out", str(out)]
    if seed:
        args += ["--seed", str(seed)]
    if method != "auto":
        args += ["--method", method]
    if only:
        args += ["--only", ",".join(only)]
    if chat_template:
        args.append("--chat-template")
    if base_url:
        args += ["--base-url", base_url]
    return shell_join(args)  # one line whatever a path holds: README, report and analysis.R quote it


def _check_folder(out: Path, papers: list[Paper], overwrite: bool) -> None:
    mpath = out / "manifest.json"
    if not mpath.is_file():
        return
    try:
        old = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    if old.get("kind") != KIND:
        if old.get("study"):
            raise UserError(f"--out {out}: holds a single `collect` run; choose another folder")
        return
    had = sorted(old.get("papers", []))
    if had != sorted(p.key for p in papers) and not overwrite:
        raise UserError(f"--out {out}: holds a replication of {', '.join(had)}; choose another folder or pass --overwrite")


def replicate(paper_names, model, out, *, scale: float = 1.0, seed: int = 0, method: str = "auto",
              n: int | None = None, only: list[str] | None = None, overwrite: bool = False,
              model_options: dict | None = None, show_progress: bool = True, batch_size: int = 64,
              cli_options: dict | None = None, log: Callable[[str], None] = print, loaded_model=None,
              allow_code: bool = False) -> dict:
    """Run, analyze and export every study of the papers into `out`; write manifest, README, R script, report.

    Returns the folder's manifest (also written to out/manifest.json). `loaded_model`: an already
    loaded model to use instead of loading `model` (tests share one).
    """
    from simsubjects.publish.analysis import analyze_runs
    from simsubjects.collect.models import load_model, model_spec
    from simsubjects.collect.pipeline import run_study, versions
    from simsubjects.publish.export import export_run
    from simsubjects.publish.report import render_report  # report never imports replicate (both read simsubjects.papers)

    if not (0 < scale <= 1):
        raise UserError(f"--scale {scale:g}: must be in (0, 1]; 1 is the paper's full design")
    if method not in ("auto", "exact", "sampled"):
        raise UserError(f"--method {method}: choose auto, exact or sampled")
    model = model_spec(model)  # parsed once here (the command line passes its ModelSpec through)
    public = redact(model.text)  # what files and messages show: no URL credentials, no key
    only = [o.strip().replace("-", "_") for o in (only or []) if o.strip()]
    out = Path(out)
    papers, rows = plan_all(paper_names, scale, only, out, seed)
    code = _code_files(rows, allow_code)  # before the model loads
    _check_folder(out, papers, overwrite)
    from simsubjects.collect.store import check_writable

    check_writable(out, f"--out {out}")  # before the model loads, like every check that needs no model
    command = canonical_command(papers, model=public, out=out, scale=scale, seed=seed, method=method, only=only,
                                chat_template=bool((model_options or {}).get("chat_template")),
                                base_url=redact((model_options or {}).get("base_url") or "") or None)
    started = time.perf_counter()
    lm = loaded_model
    if lm is None and rows:
        log(f"loading {public} ...")
        t0 = time.perf_counter()
        lm = load_model(model, **(model_options or {}))
        log(f"loaded {public} in {time.perf_counter() - t0:.0f}s")
    out.mkdir(parents=True, exist_ok=True)

    entries, analyses = [], {}
    for paper, plan, study, params in rows:
        entry = {"paper": paper.key, "study": study.name, "folder": study.name, "design_at_scale_1": plan.design,
                 "parameters": params}
        if file_of(params):  # the report and analysis.R treat it as a study file, not the built-in study
            entry["studyfile"] = file_of(params)
        entries.append(entry)
        m = study.methods[0] if method == "auto" or method not in study.methods else method
        k = n if n is not None else (plan.samples(scale) if plan.samples else 50)
        entry.update(method=m, n=k if m == "sampled" else None)
        folder = out / study.name
        log(f"{study.name}: collecting {json.dumps(params)} ({m}) into {folder}")
        timings = {}
        t0 = time.perf_counter()
        _, man = run_study(study, model, folder, params={"seed": seed, **params,
                                                          "chat_template": bool((model_options or {}).get("chat_template"))},
                           method=m, n=k, overwrite=overwrite, model_options=model_options,
                           show_progress=show_progress, model=lm, batch_size=batch_size)
        timings["collect"] = round(time.perf_counter() - t0, 1)
        entry.update(manifest=f"{study.name}/manifest.json", counts=man.get("counts", {}),
                     failures=len(man.get("failures", [])))
        errors = {}
        try:
            t0 = time.perf_counter()
            a = analyze_runs([folder], code_from=code.get(study.name))
            analyses[entry["folder"]] = a
            timings["analyze"] = round(time.perf_counter() - t0, 1)
            entry.update(tables=sorted(f"{study.name}/analysis/{k}.csv" for k in a.tables),
                         figures=[f"{study.name}/analysis/{p.name}" for p in a.figures])
        except Exception as e:  # noqa: BLE001 - one study's analysis must not lose the others' runs
            errors["analysis"] = f"{type(e).__name__}: {e}"
            entry["traceback"] = traceback.format_exc(limit=4)
        # every format in one export (the tables are read and prepared once); a format that fails costs
        # only itself
        t0 = time.perf_counter()
        failed: dict[str, str] = {}
        try:
            export_run(folder, list(EXPORT_FORMATS), failed=failed)
        except Exception as e:  # noqa: BLE001 - the run's tables could not be read: no format was written
            failed = {fmt: f"{type(e).__name__}: {e}" for fmt in EXPORT_FORMATS}
        exported = [fmt for fmt in EXPORT_FORMATS if fmt not in failed]
        errors.update({f"export {fmt}": msg for fmt, msg in failed.items()})
        timings["export"] = round(time.perf_counter() - t0, 1)
        entry.update(exported=exported, status="failed" if errors else "complete")
        if errors:
            entry["error"] = "; ".join(f"{k}: {v}" for k, v in errors.items())
            log(f"{study.name}: {entry['error']}")
        entry["timings"] = timings
        log(f"{study.name}: {entry['status']} ({', '.join(f'{k} {v:g}s' for k, v in timings.items())})")

    manifest = {
        "kind": KIND,
        "papers": [p.key for p in papers],
        "paper_titles": {p.key: f"{p.citation}: {p.title}" for p in papers},
        "scale": scale,
        "seed": seed,
        "method": method,
        "model": _model_info(lm, public),
        "command": command,
        "options": redact_obj(cli_options),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": versions() if lm is not None else {"simsubjects": __version__, "python": platform.python_version()},
        "studies": entries,
        "files": {"report": "report.html", "readme": "README.md", "r_script": "analysis.R", "do_file": "analysis.do"},
        "source": {"commit": source_commit(), "r_package_version": r_package_version()},
        "timings": {"seconds": round(time.perf_counter() - started, 1)},
    }
    manifest = redact_obj(manifest)  # every string a server or the command line supplied, scrubbed
    manifest["files"]["r_package"] = copy_r_package(out)  # analysis.R needs no checkout
    atomic_write_json(manifest, out / "manifest.json")
    atomic_write_bytes(out / "analysis.R", r_script(manifest, out).encode())
    from simsubjects.publish.stata import do_script

    atomic_write_bytes(out / "analysis.do", do_script(manifest, out).encode())
    atomic_write_bytes(out / "README.md", readme(manifest).encode())
    render_report(out, analyses=analyses)
    manifest["timings"]["seconds"] = round(time.perf_counter() - started, 1)
    atomic_write_json(manifest, out / "manifest.json")
    return manifest


def _code_files(rows, allow_code: bool) -> dict[str, str]:
    """{study name: its study file} whose `type: function` analyses run (--allow-code: the user's own files);
    without the flag, a study file that names code is refused before the model loads."""
    from simsubjects.studyfile.spec import load_study, study_kind
    from simsubjects.collect.untrusted import ALLOW_CODE

    code = {}
    for paper, _, study, params in rows:
        # a session (session.py) or a Milgram obedience file (obedience.py) names no code
        if "studyfile" not in params or study_kind(paper.key) != "plain":
            continue
        if not allow_code:
            s = load_study(paper.key)
            for i, a in enumerate(s.analyses):
                if a["type"] == "function":
                    raise s.source.error(("analyses", i, "function"), f"type: function runs Python code "
                                                                      f"({a['function']}); pass {ALLOW_CODE} to run "
                                                                      "your own study file's code")
        code[study.name] = paper.key
    return code if allow_code else {}


def _model_info(lm, spec: str) -> dict:
    if lm is None:
        return {"spec": spec}
    i = lm.info
    return {"spec": i.spec, "backend": i.backend, "name": i.name, "revision": i.revision}


# ------------------------------------------------------------------ README.md and analysis.R

def readme(manifest: dict) -> str:
    done = [e for e in manifest["studies"] if e.get("status") == "complete"]
    lines = [
        # user text (titles, paths, model names, errors) is escaped Markdown on one line (simsubjects.collect.untrusted)
        f"# Replication package: {md_text(', '.join(manifest['papers']))}",
        "",
        *[f"- {md_text(t)}" for t in manifest["paper_titles"].values()],
        "",
        f"Written by simsubjects {md_text(manifest['versions'].get('simsubjects', __version__))} on "
        f"{md_text(manifest['created'])} with model {md_code(manifest['model']['spec'])} (revision "
        f"{md_code(manifest['model'].get('revision', '?'))}) at scale {manifest['scale']:g} (1 = the paper's full design).",
        "",
        "## Re-run",
        "",
        "```sh",
        term(manifest["command"]) + "   # collect, analyze, export, report (resumes if interrupted)",
        "Rscript analysis.R                 # from this folder: the R side on the exported data",
        "simsubjects report .               # re-render report.html from the run folders",
        "```",
        "",
        *_readme_r(manifest),
        "",
        "## What is where",
        "",
        "| path | what |",
        "| --- | --- |",
        "| `report.html` | one self-contained report: the model beside the human references and the papers' numbers |",
        "| `manifest.json` | papers, scale, model, command, versions, and every study's parameters, counts, timings |",
        "| `analysis.R` | the R twins (t-tests, AMCE, response-bias deltas, obedience survival) from `*/export/`, "
        "each table compared with its Python twin in `*/analysis/` |",
        "| `r-package/simsubjects/` | the R package's source (`R CMD INSTALL r-package/simsubjects`) |",
        "| `analysis.do` | the Stata side where Stata's commands express it (Ultimatum Game, Garden Path paired t-tests, "
        "conjoint marginal means), checked against `*/analysis/` |",
    ]
    for e in manifest["studies"]:
        status = e.get("status")
        what = md_text(f"{e['design_at_scale_1']} at scale 1; here {json.dumps(e['parameters'])}")
        if status != "complete":
            what = f"**{md_text(status)}**: {md_text(e.get('error', ''))}"
        lines.append(f"| {md_code(e['folder'] + '/')} | {md_text(e['study'])} ({md_text(e['paper'])}): {what} |")
    if done:
        lines += [
            "",
            "Inside each study folder: `manifest.json` (versions, model revision, parameters, seed, dataset",
            "checksums, prompt-template hashes, counts, validity, timings), `responses.parquet` (the tidy long",
            "table, docs/schema.md of simsubjects), `items.parquet`, `records.jsonl` (free-text transcripts, Milgram),",
            "`cache.sqlite` (the request cache a re-run resumes from), `analysis/` (tables as CSV, figures as PNG)",
            "and `export/` (responses and items as .parquet, .csv, .rds with R factors, .dta/.sav with value labels,",
            "plus `codebook_*.md/.csv`).",
        ]
    return "\n".join(lines) + "\n"


def _readme_r(manifest: dict) -> list[str]:
    """The README's lines on running analysis.R: what it needs, what it writes, what it checks."""
    imports = _r_imports()
    where = ("`R CMD INSTALL r-package/simsubjects` installs it from this folder; without it analysis.R sources "
             "`r-package/simsubjects/R/`" if manifest["files"].get("r_package") else
             "this folder carries no copy of it (written from an install without the R package): "
             "`R CMD INSTALL <simsubjects checkout>` or `SIMSUBJECTS_R_SOURCE=<checkout>/R`")
    return [
        f"`analysis.R` needs R and the R package simsubjects ({where}); the package's Imports: "
        f"{', '.join(imports) or '?'} (Debian: `apt-get install " + " ".join(
            f"r-cran-{i.lower()}" for i in imports if i not in ('stats', 'utils')) + "`).",
        "It writes `r_results/<study>/<table>.csv` under the names and columns of the Python tables, prints one "
        "line per table with the largest difference from `<study>/analysis/<table>.csv`, exits with status 1 "
        "when one differs, and records `sessionInfo()`, the R package version and the commit in "
        "`r_results/session.txt`. `Rscript analysis.R <study folder> ...` re-runs those studies only. With "
        "the suggested package clubSandwich installed, the conjoint's clustered CR2 test uses it (the same "
        "numbers as estimatr's; 2 s instead of 17 s for HHY's 13,960 profiles).",
        "",
        "Stata users: the exports are `*/export/*.dta` with value labels in the design's order (baseline first). "
        "`do analysis.do` computes with Stata's own commands the Ultimatum Game's acceptance by offer and the "
        "pairing Welch test (`ttest, unequal`), the Garden Path per-sentence means and paired t-tests (`collapse`, "
        "`ttest gp == control`) and the conjoint's marginal means with respondent-clustered errors "
        "(`svy: regress`), and compares each with the Python table the same way (exit 9 on a difference).",
        "",
        "No Stata version here, because Stata has no built-in command for them: MoCa's AMCEs (CR2 errors with "
        "Satterthwaite df), the conjoint's AMCEs (cregg's averaging over restricted pairs) and its clustered Wald "
        "test, the exact Wilcoxon signed-rank p-values, the Milgram Kaplan-Meier tables, the Wisdom of Crowds "
        "type-7 quartiles, the survey-bias deltas and the opinion survey's Wasserstein representativeness: use "
        "analysis.R. analysis.do was read-checked, not run (no Stata where it was written).",
    ]


def _r_imports() -> list[str]:
    from simsubjects.publish.rpackage import package_root

    root = package_root()
    if root is None:
        return []
    text = (root / "DESCRIPTION").read_text(encoding="utf-8").replace("\n ", " ")
    for line in text.splitlines():
        if line.startswith("Imports:"):
            return [p.strip().split(" ")[0] for p in line.split(":", 1)[1].split(",") if p.strip()]
    return []


R_HEADER = r'''# R side of a simsubjects replication: the R twins of the Python statistics, computed from the
# exported data of each study folder (<study>/export/), then compared with the tables Python wrote
# (<study>/analysis/*.csv): one line per table with the largest difference; the script exits with
# status 1 when a table differs. Run from this folder, with no checkout and no Python:
#   Rscript analysis.R
# or, for some study folders only (their R twins and checks): Rscript analysis.R ultimatum moca
# It uses the R package simsubjects: installed (R CMD INSTALL r-package/simsubjects, from this folder),
# or SIMSUBJECTS_R_SOURCE=<checkout>/R, or else the package source in r-package/simsubjects/R.
# Results go to r_results/<study>/<table>.csv (the Python table's name and columns);
# r_results/session.txt records sessionInfo(), the R package version and the commit.
# Folder written by simsubjects __VERSION__ at commit __COMMIT__
# Command that made this folder: __COMMAND__

if (requireNamespace("simsubjects", quietly = TRUE)) {
  suppressPackageStartupMessages(library(simsubjects))
  r_package <- paste("simsubjects", utils::packageVersion("simsubjects"), "(installed)")
} else {
  src <- Sys.getenv("SIMSUBJECTS_R_SOURCE", "r-package/simsubjects/R")
  if (!dir.exists(src)) {
    stop("the R package simsubjects is not installed and ", src, " is missing: ",
         "R CMD INSTALL r-package/simsubjects (or set SIMSUBJECTS_R_SOURCE=<checkout>/R)", call. = FALSE)
  }
  for (f in sort(list.files(src, pattern = "[.]R$", full.names = TRUE))) source(f)
  desc <- file.path(dirname(normalizePath(src)), "DESCRIPTION")
  r_package <- paste0("simsubjects ", if (file.exists(desc)) read.dcf(desc, "Version")[1, 1] else "?",
                      " (sourced from ", src, ")")
}
options(width = 160)
dir.create("r_results", showWarnings = FALSE)
cat("R package:", r_package, "| folder written by simsubjects __VERSION__ at commit __COMMIT__\n")
checks <- list()
only <- commandArgs(trailingOnly = TRUE)
unknown <- setdiff(only, list.dirs(".", full.names = FALSE, recursive = FALSE))
if (length(unknown)) {
  cat(sprintf("error: no study folder '%s' here; name study folders of this replication\n", unknown[1]),
      file = stderr())
  quit(status = 2)
}
# one study: its R tables written to r_results/<folder>/ and compared with <folder>/analysis/*.csv
study <- function(folder, results) {
  if (length(only) && !folder %in% only) return(invisible())  # `results` is then never computed
  write_results(results, file.path("r_results", folder))
  checks[[folder]] <<- check_results(results, folder)
}
# helpers of blocks written in the script itself (a study's r_code)
keep <- function(df, name, show = 40) write_results(stats::setNames(list(df), name), "r_results", show)
chr <- function(d) { for (c in names(d)) if (is.factor(d[[c]])) d[[c]] <- as.character(d[[c]]); d }
rows <- function(lst) { lst <- Filter(Negate(is.null), lst); if (length(lst)) do.call(rbind, lst) else data.frame() }
'''

R_FOOTER = r'''
# after the analyses, so that sessionInfo() lists every package they loaded
writeLines(c(paste("R package:", r_package), "Folder written by simsubjects __VERSION__",
             "Commit: __COMMIT__", "", utils::capture.output(utils::sessionInfo())),
           file.path("r_results", "session.txt"))
cat("\nR results written to r_results/ (versions: r_results/session.txt)\n")
checked <- do.call(rbind, Filter(function(x) !is.null(x) && nrow(x) > 0, checks))
if (!is.null(checked) && !all(checked$ok)) {
  cat(sprintf("%d of %d tables differ from the Python tables\n", sum(!checked$ok), nrow(checked)))
  quit(status = 1)
}
cat(sprintf("all %d tables agree with the Python tables\n", if (is.null(checked)) 0L else nrow(checked)))
'''


def _r_block(study, entry: dict, out: Path | None = None) -> str:
    """The lines of analysis.R for one study: the R function its declaration names, on its folder."""
    folder = entry["folder"]
    if file_of(entry.get("parameters") or {}):  # a study file's run (even one named like a built-in study)
        spec = _study_file_spec(entry, out)
        if spec is not None:
            return _r_study_file(spec, folder)
        study = None
    if study is not None and study.r_code and not study.r_function:
        code = study.r_code
        return resolve(code)() if callable(code) or ":" in code.split("\n")[0] else code
    # user text in R: comments on one line, strings as escaped literals (simsubjects.collect.untrusted)
    if study is None or not study.r_function:
        return f"\n# ---- {r_comment(entry['study'])}: no R twin yet; the exported data is in {r_comment(folder)}/export/\n"
    src = f"source({r_string(study.r_source)})\n" if study.r_source else ""
    return (f"\n# ---- {r_comment(study.heading)}\n{src}"
            f'study({r_string(folder)}, {study.r_function}({r_string(folder)}))\n')



def _study_file_spec(entry: dict, out: Path | None):
    """The study file of a study-file run, as its run folder's copy holds it (what was collected), or None
    for a session or obedience file (no R twins of their analyses yet) or without the replication folder."""
    if out is None:
        return None
    from simsubjects.studyfile.spec import load_study, study_kind

    run = (Path(out) / entry["folder"]).resolve()
    rel = file_of(entry.get("parameters") or {})
    path = (run / rel).resolve()
    if not rel or not path.is_relative_to(run) or not path.is_file():
        return None  # a manifest's path leads nowhere outside the study's own folder
    if study_kind(path) != "plain":
        return None
    return load_study(path)


def _r_value(v) -> str:
    """An analysis's option as an R literal; user text only as escaped string literals (issue 28)."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int, float)):
        return repr(float(v)) if v == v else "NA_real_"
    if isinstance(v, (list, tuple)):
        return f"c({', '.join(_r_value(x) for x in v)})" if v else "character(0)"
    return r_string(v)


# an analysis's options that R/studyfile.R's replicate_study_file reads
_R_ANALYSIS_KEYS = ("type", "name", "factor", "levels", "mu", "by", "factors")


def _r_study_file(spec, folder: str) -> str:
    """analysis.R's block of a study file's run: replicate_study_file() (R/studyfile.R) on its export, with
    the file's options and analyses written as R literals (the twins `analyze --check-r` uses)."""
    from simsubjects.studyfile.check_r import options_table

    opts = options_table(spec)
    cols = ", ".join(f"{c} = {_r_value(list(opts[c]))}" if len(opts) else f"{c} = {empty}"
                     for c, empty in (("item", "character(0)"), ("response", "character(0)"),
                                      ("position", "numeric(0)"), ("refusal", "logical(0)")))
    analyses = []
    from simsubjects.studyfile.analyses import declared_levels

    for a in spec.analyses:
        fields = ", ".join(f"{k} = {_r_value(a[k])}" for k in _R_ANALYSIS_KEYS if a.get(k) is not None)
        if a["type"] == "amce":  # the declared first levels: the AMCE's baselines (R/studyfile.R's sf_amce)
            declared = declared_levels(spec, a["factors"])
            fields += f", baselines = {_r_value([declared.get(str(f), [''])[0] for f in a['factors']])}"
        analyses.append(f"  list({fields})")
    return (f"\n# ---- {r_comment(spec.title or folder)}: the study file's analyses (R/studyfile.R, the twins of "
            "analyze --check-r)\n"
            f"study({r_string(folder)}, replicate_study_file({r_string(folder)},\n"
            f"  data.frame({cols}, stringsAsFactors = FALSE),\n"
            f"  list(\n{(',' + chr(10)).join(analyses)})))\n")


def r_script(manifest: dict, out: Path | None = None) -> str:
    from simsubjects.collect.studies.registry import studies

    declared = studies()
    source = manifest.get("source") or {}
    # version and commit sit inside R comments and string literals: only their own characters pass
    version = _safe_token(manifest.get("versions", {}).get("simsubjects", __version__))
    commit = _safe_token(source.get("commit") or "unknown")
    parts = [R_HEADER.replace("__COMMAND__", r_comment(manifest["command"])).replace("__VERSION__", version)
             .replace("__COMMIT__", commit)]
    for e in manifest["studies"]:
        if "rds" not in e.get("exported", []):
            parts.append(f"\n# ---- {r_comment(e['study'])}: left out, its export/responses.rds was not written "
                         f"({r_comment(e.get('error', ''))})\n")
            continue
        parts.append(_r_block(declared.get(e["study"]), e, out))
    parts.append(R_FOOTER.replace("__VERSION__", version).replace("__COMMIT__", commit))
    return "".join(parts)


def plan_all(paper_names, scale: float, only: list[str], out: Path, seed: int = 0):
    """(papers, rows) for replicate's names: the papers' studies at `scale`, then each study file as its
    own paper (its own design; every check done before the model loads, docs/studies.md)."""
    papers, rows = [], []
    files = [str(n) for n in paper_names if _is_study_file(n)]
    if len(files) < len(paper_names) or not files:
        papers = resolve_papers([n for n in paper_names if not _is_study_file(n)])
        rows = plan_studies(papers, scale, only)
    for f in files:
        from simsubjects.studyfile.adapter import replicate_row

        row = replicate_row(f, out, seed or None)
        if any(r[2].name == row[2].name for r in rows):
            raise UserError(f"{f}: study {row[2].name!r} is already in this replication; give the file another "
                            "study: name")
        papers.append(row[0])
        rows.append(row)
    return papers, rows


def _is_study_file(name) -> bool:
    from simsubjects.studyfile import is_study_file

    return is_study_file(name)


def _safe_token(text) -> str:
    """A version or commit hash from a manifest, reduced to the characters such names use."""
    return re.sub(r"[^0-9A-Za-z._+-]", "?", str(text))[:64]
