"""analysis.R of a replication folder: the R side of every study, written from the folder's manifest.

Each built-in study's block calls the R function its declaration names (`r_function`, R/ of the R
package) or includes its `r_code`; a study file's run gets replicate_study_file() (R/studyfile.R) with
the file's analyses as R literals. User text reaches R only as escaped comments and string literals
(collect/untrusted.py). Its Stata sibling is stata.py (analysis.do); `replicate` writes both.
"""

from __future__ import annotations

import re
from pathlib import Path

from simsubjects import __version__
from simsubjects.collect.untrusted import r_comment, r_string
from simsubjects.studyfile.origin import file_of
from simsubjects.publish.rpackage import package_root
from simsubjects.studyfile.analyses import declared_levels
from simsubjects.studyfile.door import load_any
from simsubjects.studyfile.analyses import options_table
from simsubjects.collect.studies.registry import studies


def r_imports() -> list[str]:
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
        return code() if callable(code) else code
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

    run = (Path(out) / entry["folder"]).resolve()
    rel = file_of(entry.get("parameters") or {})
    path = (run / rel).resolve()
    if not rel or not path.is_relative_to(run) or not path.is_file():
        return None  # a manifest's path leads nowhere outside the study's own folder
    loaded = load_any(path)
    return loaded.study if loaded.plain else None


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

    opts = options_table(spec)
    cols = ", ".join(f"{c} = {_r_value(list(opts[c]))}" if len(opts) else f"{c} = {empty}"
                     for c, empty in (("item", "character(0)"), ("response", "character(0)"),
                                      ("position", "numeric(0)"), ("refusal", "logical(0)")))
    analyses = []
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


def _safe_token(text) -> str:
    """A version or commit hash from a manifest, reduced to the characters such names use."""
    return re.sub(r"[^0-9A-Za-z._+-]", "?", str(text))[:64]
