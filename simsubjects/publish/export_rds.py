""".rds export with variable labels: pyreadr writes the data and its factor levels, R adds the labels.

pyreadr (librdata) cannot write attributes, so on its own an .rds file loses the variable labels
that .dta/.sav carry (persona attributes: "Persona attribute POLPARTY (from respondents.csv)",
issue 15). When Rscript is on PATH, R reads pyreadr's files, sets attr(x, "label") on every labelled
column (the attribute haven, labelled and RStudio's viewer show) and saves them with saveRDS, all
files of one export in one R process (R's start costs about half a second); without R the unlabelled
files are kept and the caller notes it once. Every file is whole or absent: each step writes a
temporary file beside the target and renames it into place.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

R_TIMEOUT = 600  # seconds; saveRDS of a large run takes a few seconds

# args: triples (pyreadr's file, its labels as CSV column,label, the labelled file to write)
_LABEL_SCRIPT = r"""
a <- commandArgs(trailingOnly = TRUE)
for (k in seq(1, length(a), by = 3)) {
  x <- readRDS(a[[k]])
  lab <- utils::read.csv(a[[k + 1]], colClasses = "character", na.strings = character(0), encoding = "UTF-8")
  for (i in seq_len(nrow(lab))) {
    col <- lab$column[[i]]
    if (col %in% names(x)) attr(x[[col]], "label") <- enc2utf8(lab$label[[i]])
  }
  saveRDS(x, a[[k + 2]])
}
"""


def rscript() -> str | None:
    return shutil.which("Rscript")


def no_r_note() -> str:
    return ("note: Rscript is not on PATH, so the .rds files carry no variable labels "
            "(they are in codebook_*.csv; R's read_run() attaches them)")


def write_plain(df: pd.DataFrame, path: Path) -> None:
    """`df` (flat cells; pandas Categoricals become R factors) as .rds at `path`, without labels."""
    import pyreadr

    tmp = path.with_name(f".{path.name}.plain.tmp")
    try:
        pyreadr.write_rds(str(tmp), df)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def add_labels(jobs: list[tuple[Path, dict[str, str]]]) -> None:
    """Set attr(x, "label") in each written .rds file (path, {column: label}) through one R process.

    If R fails (a broken library, a full disk) the files stay as pyreadr wrote them and one note says why.
    """
    jobs = [(p, {c: lab for c, lab in labels.items() if lab}) for p, labels in jobs]
    jobs = [(p, labels) for p, labels in jobs if labels]
    exe = rscript()
    if not jobs or exe is None:
        return
    args, temps = [], []
    try:
        for path, labels in jobs:
            book = path.with_name(f".{path.name}.labels.csv")
            labelled = path.with_name(f".{path.name}.labelled.tmp")
            temps += [book, labelled]
            pd.DataFrame({"column": list(labels), "label": list(labels.values())}).to_csv(book, index=False,
                                                                                       encoding="utf-8")
            args += [str(path), str(book), str(labelled)]
        try:
            r = subprocess.run([exe, "--vanilla", "-e", _LABEL_SCRIPT, *args], capture_output=True, text=True,
                               timeout=R_TIMEOUT)
            err = "" if r.returncode == 0 else " ".join((r.stderr or "").split())[-200:] or f"exit {r.returncode}"
        except (OSError, subprocess.SubprocessError) as e:
            err = " ".join(str(e).split())[-200:]
        if err:
            print(f"note: the .rds files are written without variable labels: Rscript failed ({err})",
                  file=sys.stderr)
            return
        for path, _ in jobs:
            path.with_name(f".{path.name}.labelled.tmp").replace(path)
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
