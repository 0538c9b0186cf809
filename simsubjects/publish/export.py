"""`simsubjects export`: a run's tables as .csv, .parquet, .rds (R factors), .dta/.sav (value labels).

Text columns with few distinct values become R factors and labelled integers in Stata/SPSS;
variable labels come from the study's declaration (schema.labels) and the run's manifest (persona
attributes) and are set in .dta/.sav and .rds (export_rds, no R needed); a codebook (Markdown and
CSV) is written beside the data.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from simsubjects.collect.store import load_run
from simsubjects.errors import UserError
from simsubjects.collect.untrusted import md_text
from .export_rds import write_labelled
from simsubjects.collect.store import staged_folder
from simsubjects.collect.schema import CORE_COLUMNS, labels as study_labels
from simsubjects.collect.studies.registry import studies
from simsubjects.studyfile.origin import origin, study_def

FORMATS = ("csv", "parquet", "rds", "dta", "sav")
STATA_LABEL = 80  # Stata's variable labels hold 80 characters; the codebook keeps the full text
MAX_LEVELS = 200  # text columns with at most this many distinct values are categorical,
MAX_LABEL = 120  # if every value fits in an SPSS value label (120 bytes); longer text stays text


def flatten(df: pd.DataFrame) -> pd.DataFrame:
    """Make every cell a scalar: tuples/lists/dicts become JSON text; True/False/None become 1/0/NaN."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object:
            present = out[c].dropna()
            if len(present) and present.map(lambda v: isinstance(v, (bool, np.bool_))).all():
                out[c] = out[c].map(lambda v: float(v) if v is not None and v == v else np.nan)
                continue
        if out[c].dtype == object and out[c].map(lambda v: isinstance(v, (list, tuple, dict, np.ndarray))).any():
            out[c] = out[c].map(lambda v: json.dumps(list(v) if isinstance(v, (tuple, np.ndarray)) else v,
                                                     default=_json_scalar))
    return out


def _json_scalar(v):
    """numpy scalars (np.bool_, np.int64, ...) inside list cells, e.g. after a parquet round trip."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


# Identifier columns stay text in every study: whether a run has 150 or 250 trials must not decide
# whether R sees a character vector or a factor (issue 29: one type per schema column)
ALWAYS_TEXT = frozenset({"trial", "item", "subject"})


def json_columns(df: pd.DataFrame) -> set[str]:
    """Columns whose cells are lists/tuples/dicts: flatten() writes them as JSON text, never a factor."""
    return {c for c in df.columns if df[c].dtype == object
            and df[c].map(lambda v: isinstance(v, (list, tuple, dict, np.ndarray))).any()}


def categorical_columns(df: pd.DataFrame, text: set[str] | frozenset = frozenset()) -> list[str]:
    """Text columns exported as factors / value-labelled codes; `text` (and ALWAYS_TEXT) stay text."""
    cols = []
    for c in df.columns:
        if c in ALWAYS_TEXT or c in text:
            continue
        if pd.api.types.is_string_dtype(df[c]) or df[c].dtype == object:
            values = df[c].dropna().astype(str)
            if values.nunique() <= MAX_LEVELS and (values.str.len().max() if len(values) else 0) <= MAX_LABEL:
                cols.append(c)
    return cols


def stata_name(name: str, taken: set[str]) -> str:
    """Valid Stata/SPSS names: letters, digits, underscores; at most 32 characters; unique."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not re.match(r"[A-Za-z_]", base):
        base = "v_" + base
    elif base.startswith("_"):  # SPSS names start with a letter ("年齢" -> "__" -> "v__"; issue 28)
        base = "v" + base
    base = base[:32]
    new, k = base, 1
    while new.lower() in taken:
        suffix = f"_{k}"
        new, k = base[: 32 - len(suffix)] + suffix, k + 1
    taken.add(new.lower())
    return new


def blank_as_missing(df: pd.DataFrame) -> pd.DataFrame:
    """Empty text as a missing value in every text column: a model row's "no value" (no persona, no
    perturbation, an unparsed answer) was "" while the people's rows had NA, so R saw a "" factor level
    beside NA for the same absence (issue 29: missing is NA everywhere). Stata and SPSS write missing
    text as "" (their only missing string), and a factor's missing value as a missing code."""
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object or pd.api.types.is_string_dtype(out[c]):
            blank = out[c].map(lambda v: isinstance(v, str) and v == "")
            if blank.any():
                out[c] = out[c].astype(object).where(~blank, None)
    return out


def level_order(values: pd.Series, design: list[str] | None = None) -> list[str]:
    """A categorical column's levels: the design's order (baseline first) where the study declares one,
    then any other value, sorted; without a declaration, sorted (issue 29)."""
    seen = set(values.dropna().astype(str).unique())
    first = [str(v) for v in (design or [])]
    return list(dict.fromkeys(first)) + sorted(seen - set(first))


def _category(s: pd.Series, levels: list[str]) -> pd.Categorical:
    text = s.astype(object).where(s.isna(), s.astype(str))
    return pd.Categorical(text, categories=levels)


def short_label(text: str, limit: int = STATA_LABEL) -> str:
    """`text` within `limit` characters, cut at a word boundary with an ellipsis (Stata's labels)."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 3]
    if " " in cut and not text[limit - 3].isspace():
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:-") + "..."


def codebook(df: pd.DataFrame, names: dict[str, str], labels: dict[str, str] | None = None,
             design: dict[str, list[str]] | None = None) -> pd.DataFrame:
    labels = study_labels() if labels is None else labels
    design = design or {}
    rows = []
    cats = set(categorical_columns(df))  # once: per column it made the codebook quadratic in the columns
    for c in df.columns:
        s = df[c]
        levels = level_order(s, design.get(c))
        rows.append({
            "column": c, "exported_as": names.get(c, c), "type": str(s.dtype), "label": labels.get(c, ""),
            "missing": int(s.isna().sum()), "distinct": len(levels),
            "values": "; ".join(levels[:12]) + (" ..." if len(levels) > 12 else "") if c in cats
            else (f"{s.min()} .. {s.max()}" if pd.api.types.is_numeric_dtype(s) and len(s) else ""),
        })
    return pd.DataFrame(rows)


class _Prepared:
    """One table made ready for every format once: its flat cells, factor columns and their levels,
    and the factor-coded copy .rds and .dta write. Computed per table, not per format: `replicate`
    writes five formats, and flattening and level-finding were most of an export's time."""

    def __init__(self, df: pd.DataFrame, design: dict[str, list[str]] | None = None):
        design = design or {}
        json_text = json_columns(df)
        self.flat = flatten(df)
        self.cats = categorical_columns(self.flat, json_text)
        self.order = {c: level_order(self.flat[c], design.get(c)) for c in self.cats}
        self._coded: pd.DataFrame | None = None

    @property
    def coded(self) -> pd.DataFrame:
        """The flat table with its categorical columns as pd.Categorical (R factors, Stata value labels)."""
        if self._coded is None:
            out = self.flat.copy()
            for c in self.cats:
                out[c] = _category(out[c], self.order[c])
            self._coded = out
        return self._coded


def _write(df: pd.DataFrame, path: Path, fmt: str, labels: dict[str, str] | None = None,
           design: dict[str, list[str]] | None = None, prepared: _Prepared | None = None) -> dict[str, str]:
    """Write one table; returns {original column: exported name}. Variable labels (.rds/.dta/.sav) are
    `labels` (the study's, from export_run), else the core columns' labels; `design` orders factor
    levels. Passed as arguments, not in df.attrs: pandas deep-copies attrs on every column access
    (11 s of a tiny `replicate all`). `prepared`: the table already made ready (export_run, once per table)."""
    labels = labels or study_labels()
    p = prepared if prepared is not None else _Prepared(df, design)
    df, cats, order = p.flat, p.cats, p.order
    tmp = path.with_name(f".{path.name}.tmp")
    names = {c: c for c in df.columns}
    try:
        if fmt == "csv":
            df.to_csv(tmp, index=False)
        elif fmt == "parquet":
            df.to_parquet(tmp, index=False)
        elif fmt == "rds":
            write_labelled(p.coded, tmp, labels)  # attr(x, "label") on every labelled column
        elif fmt in ("dta", "sav"):
            taken: set[str] = set()
            names = {c: stata_name(c, taken) for c in df.columns}
            var_labels = {names[c]: short_label(labels.get(c, c)) for c in df.columns}
            if fmt == "dta":
                out = p.coded.rename(columns=names)
                for c in out.columns:  # Stata has no nullable string: empty text for missing
                    if c not in {names[k] for k in cats} and not pd.api.types.is_numeric_dtype(out[c]):
                        out[c] = out[c].astype(object).where(out[c].notna(), "").astype(str)
                strl = [c for c in out.columns if out[c].dtype == object and out[c].str.len().max() > 2045]
                out.to_stata(tmp, write_index=False, version=118, variable_labels=var_labels, convert_strl=strl)
            else:
                import pyreadstat  # lazy: about 0.4 s to import; only .dta/.sav need it

                out = df.rename(columns=names)
                value_labels = {}
                for c in cats:  # codes 1..k in the levels' order (the factor's codes + 1), missing as NaN
                    codes = p.coded[c].cat.codes.to_numpy()
                    out[names[c]] = np.where(codes >= 0, codes + 1.0, np.nan)
                    value_labels[names[c]] = {float(i + 1): v for i, v in enumerate(order[c])}
                for c in out.columns:
                    if out[c].dtype != float and not pd.api.types.is_numeric_dtype(out[c]):
                        out[c] = out[c].astype(object).where(out[c].notna(), "").astype(str)
                pyreadstat.write_sav(out, str(tmp), column_labels=[var_labels[c] for c in out.columns],
                                     variable_value_labels=value_labels)
        tmp.replace(path)
    except (ValueError, TypeError, OverflowError) as e:  # a value the format cannot hold (Stata: inf, ...)
        raise UserError(f"--to {fmt}: the {path.stem} table cannot be written as .{fmt} "
                        f"({' '.join(str(e).split())[:200]})") from None
    finally:
        tmp.unlink(missing_ok=True)
    return names


def _declaration(run_dir, manifest: dict):
    """The StudyDef that made the run: a study file's copy in the folder (read as data; its Likert
    scales and factor levels give the export's orders), else the built-in study; None when unknown."""

    if run_dir is not None and origin(manifest).is_study_file:
        try:
            return study_def(run_dir, manifest)
        except UserError:  # a missing or damaged copy: the export still writes, in sorted order
            return None
    study = manifest.get("study")
    return studies().get(study) if study else None


def scale_levels(responses: pd.DataFrame) -> list[str]:
    """`response` in scale order where the table records each option's ordinal `position` (OpinionQA's
    option_ordinal, a study file's scale points): each item's options by position in turn, items in
    first-seen order, options without a position (refusals) after them; [] without a numeric position."""
    if not {"response", "position", "item"} <= set(responses.columns) or \
            not pd.api.types.is_numeric_dtype(responses["position"]):
        return []
    rows = responses[["item", "response", "position"]].dropna(subset=["response"]).drop_duplicates(["item", "response"])
    rows = rows.assign(first=pd.factorize(rows["item"])[0])
    ordered = rows.dropna(subset=["position"]).sort_values(["first", "position"], kind="stable")
    out = list(dict.fromkeys(ordered["response"].astype(str)))
    return out + [v for v in dict.fromkeys(rows["response"].astype(str)) if v not in out]


def design_hooks(study: str | None, responses: pd.DataFrame, items: pd.DataFrame, run_dir=None,
                 manifest: dict | None = None) -> tuple[dict[str, list[str]], dict[str, pd.DataFrame]]:
    """The study's declared level orders ({column: levels, baseline first}) and extra tables
    ({name: table}, e.g. the conjoint's profiles), from its declaration (StudyDef.levels/export_tables)."""
    decl = _declaration(run_dir, manifest if manifest is not None else {"study": study})
    levels = dict(decl.levels(responses, items) or {}) if decl is not None and decl.levels else {}
    extra = decl.export_tables(responses, items) if decl is not None and decl.export_tables else {}
    if "response" not in levels and scale_levels(responses):  # an ordinal scale the study does not declare
        levels["response"] = scale_levels(responses)
    return levels, dict(extra or {})


def export_run(run_dir: str | Path, formats: list[str], out: str | Path | None = None,
               failed: dict[str, str] | None = None) -> list[Path]:
    """Write the run's tables in `formats` into `out` (default RUN/export), all or nothing.

    `failed`: a dict to collect formats that cannot be written ({format: message}) instead of raising;
    the other formats are still written, and a failed format's files of an earlier export are kept
    (replicate: a format that fails costs only itself)."""
    formats = list(dict.fromkeys(formats))
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise UserError(f"--to {','.join(bad)}: unknown format; choose from {', '.join(FORMATS)}")
    if not formats:
        raise UserError(f"--to: give at least one format of {', '.join(FORMATS)}")
    manifest, responses, items = load_run(run_dir)
    # the study's declaration labels its design columns; columns a run adds of its own (persona
    # attributes of a respondents table) carry their labels in the manifest
    labels = {**study_labels(manifest.get("study")), **(manifest.get("column_labels") or {})}
    levels, extra = design_hooks(manifest.get("study"), responses, items, run_dir, manifest)
    outdir = Path(out) if out else Path(run_dir) / "export"
    if not out and outdir.is_symlink():  # a received run's export/ linking elsewhere: nothing written there
        raise UserError(f"{outdir}: is a link; a run folder's export is written inside it (remove the link or "
                        "pass --out)")
    # Everything is written into a staging folder beside outdir and swapped in whole
    # (simsubjects.collect.store): a failed or killed export leaves the earlier export as it was, and
    # the files of formats not asked for this time are kept.
    names_out: list[str] = []
    with staged_folder(outdir) as stage:
        # the core columns' labels describe the responses table; an item table's own `source` (where
        # a question comes from) is not "model or human" (issue 29)
        side = {c: lab for c, lab in labels.items() if c not in CORE_COLUMNS or c == "item"}
        for name, df in (("responses", responses), ("items", items), *extra.items()):
            df = blank_as_missing(df)
            df.attrs.clear()  # see _write: labels and levels travel as arguments
            table_labels = labels if name == "responses" else side
            names = {}
            prepared = _Prepared(df, levels)
            for fmt in formats:
                if failed is not None and fmt in failed:
                    continue
                try:
                    names.update(_write(df, stage / f"{name}.{fmt}", fmt, table_labels, levels, prepared))
                except Exception as e:  # noqa: BLE001 - collected for the caller, who asked for it
                    if failed is None:
                        raise
                    failed[fmt] = f"{type(e).__name__}: {e}"
                    for done in list(names_out):  # none of this format's new files: the earlier ones are kept
                        if done.endswith(f".{fmt}"):
                            (stage / done).unlink(missing_ok=True)
                            names_out.remove(done)
                    continue
                names_out.append(f"{name}.{fmt}")
            names_out += _write_codebook(stage, name, codebook(prepared.flat, names, table_labels, levels))
    return [outdir / n for n in names_out]


def _write_codebook(stage: Path, name: str, book: pd.DataFrame) -> list[str]:
    """codebook_NAME.csv and .md of one exported table; returns their file names."""
    (stage / f"codebook_{name}.csv").write_bytes(book.to_csv(index=False).encode("utf-8"))
    md = [f"# Codebook: {name}", "", "| column | exported as | type | label | distinct | missing | values |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
    # cells are user text (column names, labels, answers): escaped Markdown, HTML and `|` included
    md += ["| " + " | ".join(md_text(v) for v in (r.column, r.exported_as, r.type, r.label, r.distinct,
                                                    r.missing, r.values)) + " |" for r in book.itertuples()]
    (stage / f"codebook_{name}.md").write_bytes(("\n".join(md) + "\n").encode())
    return [f"codebook_{name}.csv", f"codebook_{name}.md"]
