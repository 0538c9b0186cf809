"""Qualtrics import: a survey file (.qsf) and its response export become a study file (docs/qualtrics.md).

`qsf` reads the survey into a small model (questions, blocks, flow), `responses` reads the
export (CSV with three, two or one header rows, or SPSS .sav), and `build` writes DIR/study.yaml,
its tables and DIR/IMPORT_NOTES.md.
"""
