""".rds export with variable labels: pyreadr writes the data and its factor levels, R adds the labels.

pyreadr (librdata) cannot write attributes, so on its own an .rds file loses the variable labels
that .dta/.sav carry (persona attributes: "Persona attribute POLPARTY (from respondents.csv)",
issue 15). When Rscript is on PATH, R reads pyreadr's file, sets attr(x, "label") on every labelled
column (the attribute haven, labelled and RStudio's viewer show) and saves it with saveRDS; without R
the unlabelled file is kept and `note` says so once. Either way the file at `path` is whole or absent:
both steps write temporary files beside it and the last one is renamed into place.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

R_TIMEOUT = 300  # seconds; saveRDS of a large run takes a few seconds, R's start about half of one

# args: pyreadr's file, the labels (CSV column,label), the labelled file to write
_LABEL_SCRIPT = r"""
a <- commandArgs(trailingOnly = TRUE)
x <- readRDS(a[[1]])
lab <- utils::read.csv(a[[2]], colClasses = "character", na.strings = character(0), encoding = "UTF-8")
for (i in seq_len(nrow(lab))) {
  col <- lab$column[[i]]
  if (col %in% names(x)) attr(x[[col]], "label") <- enc2utf8(lab$label[[i]])
}
saveRDS(x, a[[3]])
"""


def rscript() -> str | None:
    return shutil.which("Rscript")


def no_r_note() -> str:
    return ("note: Rscript is not on PATH, so the .rds files carry no variable labels "
            "(they are in codebook_*.csv; R's read_run() attaches them)")


def write_rds(df: pd.DataFrame, path: Path, labels: dict[str, str], use_r: bool = True) -> None:
    """Write `df` (flat cells; pandas Categoricals become R factors) to `path` as .rds, labelled via R."""
    import pyreadr

    plain = path.with_name(f".{path.name}.plain.tmp")
    labelled = path.with_name(f".{path.name}.labelled.tmp")
    book = path.with_name(f".{path.name}.labels.csv")
    try:
        pyreadr.write_rds(str(plain), df)
        keep = {c: labels[c] for c in df.columns if labels.get(c)}
        exe = rscript() if use_r and keep else None
        if exe is None:
            plain.replace(path)
            return
        pd.DataFrame({"column": list(keep), "label": list(keep.values())}).to_csv(book, index=False,
                                                                                   encoding="utf-8")
        try:
            r = subprocess.run([exe, "--vanilla", "-e", _LABEL_SCRIPT, str(plain), str(book), str(labelled)],
                               capture_output=True, text=True, timeout=R_TIMEOUT)
            err = "" if r.returncode == 0 else " ".join((r.stderr or "").split())[-200:] or f"exit {r.returncode}"
        except (OSError, subprocess.SubprocessError) as e:
            err = " ".join(str(e).split())[-200:]
        if err or not labelled.is_file():
            # R is there but failed (a broken library, a full disk): keep the data, say what happened
            print(f"note: {path.name} written without variable labels: Rscript failed ({err})", file=sys.stderr)
            plain.replace(path)
            return
        labelled.replace(path)
    finally:
        for tmp in (plain, labelled, book):
            tmp.unlink(missing_ok=True)
