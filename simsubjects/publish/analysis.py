"""`simsubjects analyze`: the study's analyses on a run folder, written as CSV tables and PNG figures."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from ..collect.store import load_manifest, load_run
from ..errors import UserError
from simsubjects.collect.store import staged_folder
from simsubjects.analyze.tidy import stack_runs
from simsubjects.collect.untrusted import check_table_name
from ..studyfile.origin import analysis_reusable
from . import saved
from ..studyfile.origin import study_def  # which study made the run: a study file or a declared one
from simsubjects.analyze.order_effects import order_effects
from simsubjects.analyze.estimand import MIN_VALIDITY, annotate, run_sample
from ..studyfile.origin import origin


@dataclass
class Analysis:
    study: str
    responses: pd.DataFrame
    items: pd.DataFrame
    tables: dict[str, pd.DataFrame]  # tidy, written as CSV
    shown: dict[str, pd.DataFrame]  # terminal-sized views
    outdir: Path
    figures: list[Path] = field(default_factory=list)


def analyze_runs(dirs: list[str | Path], out: str | Path | None = None, plots: bool = True,
                 extra: Callable[..., dict[str, pd.DataFrame]] | None = None, code_from=None,
                 min_validity: float = MIN_VALIDITY) -> Analysis:
    """Analyze one run folder, or several of the same study side by side (one model each).

    `code_from`: the user's own study file (analyze --allow-code FILE) whose `type: function` analyses
    may run; without it a study file's run is analyzed from its own copy, which never runs code.

    `extra`: (study's StudyDef, responses, items, tables) -> more tables written into the same set (e.g.
    --check-r's check_r.csv); it sees the tables as the analysis computed them (the R twins' numbers).

    `min_validity`: a test table's `low_validity` is True under it (analyze/estimand.py, --min-validity).
    """
    if not 0 <= min_validity <= 1:
        raise UserError(f"--min-validity {min_validity}: must be between 0 and 1")
    runs = [load_run(d) for d in dirs]
    outdir = _output_folder(dirs, out)
    studies = {m["study"] for m, _, _ in runs}
    if len(studies) > 1:
        raise UserError(f"cannot analyze runs of different studies together: {sorted(studies)}")
    study = studies.pop()

    spec = study_def(dirs[0], runs[0][0], code_from)
    if not spec.analyze:
        raise UserError(f"{dirs[0]}: no analysis registered for study {study!r}")
    responses = stack_runs([r for _, r, _ in runs], _run_labels(dirs))
    items = runs[0][2]
    try:
        tables = spec.analyze(responses, items)
    except KeyError as e:  # a design column the study's analysis needs is not in the tables
        raise UserError(f"{Path(dirs[0]) / 'responses.parquet'}: no column {e.args[0]!r}, which the {study} analysis "
                        "needs; the tables do not come from `simsubjects collect " + study.replace("_", "-") + "`") from None
    if "shown_position" in responses.columns and "order_effects" not in tables:
        # any k-choice study whose trials record the option order shown (simsubjects.collect.option_order)
        tables["order_effects"], tables["order_effects_average"] = order_effects(responses)
    computed = tables
    kind, tables = _estimand(spec, runs[0][0], responses, tables, min_validity)
    for name in tables:  # a name from the run's study copy or a function's dict: NAME.csv, never a path
        check_table_name(name, f"{dirs[0]}: analysis")
    # The set of tables and figures is written into a staging folder and swapped in whole: a killed
    # or failed analyze leaves the previous complete set (simsubjects.collect.store).
    figures: list[Path] = []
    with staged_folder(outdir) as stage:
        csv = {}
        for name, df in tables.items():
            csv[name] = df.to_csv(index=False).encode("utf-8")
            (stage / f"{name}.csv").write_bytes(csv[name])
        if plots and spec.plot:
            figures = [outdir / Path(p).name for p in spec.plot(tables, responses, stage)]
        more = extra(spec, responses, items, computed) if extra else {}
        for name, df in annotate(more, responses, kind, min_validity).items():  # ppi.csv is a test table too
            check_table_name(name, f"{dirs[0]}: analysis")
            (stage / f"{name}.csv").write_bytes(df.to_csv(index=False).encode("utf-8"))
        _write_methods(stage, study, spec, [m for m, _, _ in runs], responses, tables, kind, min_validity)
        reusable = len(dirs) == 1 and code_from is None and out is None and analysis_reusable(runs[0][0])
        record = saved.record(Path(dirs[0]), spec, tables, csv, stage, [p.name for p in figures],
                              plotted=plots and bool(spec.plot)) if reusable else {"reusable": False}
        (stage / saved.RECORD).write_bytes(json.dumps(record, indent=1).encode("utf-8"))
    shown = spec.summary(tables) if spec.summary else tables
    return Analysis(spec.name, responses, items, tables, shown, outdir, figures)


def _write_methods(stage: Path, study: str, spec, manifests: list[dict], responses, tables, kind: str,
                   min_validity: float) -> None:
    """METHODS.md beside the tables (publish/methods_md.py): the run's own methods paragraph."""
    from .methods_md import NAME, methods_text

    text = methods_text(study, getattr(spec, "title", "") or "", manifests, responses, tables, sample=kind,
                        min_validity=min_validity)
    (stage / NAME).write_bytes(text.encode("utf-8"))


def _estimand(spec, manifest: dict, responses: pd.DataFrame, tables: dict, min_validity: float) -> tuple[str, dict]:
    """(the run's `sample` kind, the tables with `sample` and `low_validity` in every test table): the estimand
    policy every analysis passes through (analyze/estimand.py; issue 40, items 1-2)."""
    model_rows = responses[responses["source"].astype(str) != "human"] if "source" in responses else responses
    kind = run_sample(spec.sample, manifest.get("parameters") or {}, model_rows)
    return kind, annotate(tables, responses, kind, min_validity)


def _output_folder(dirs, out) -> Path:
    """Where the analysis goes (the first run's analysis/ unless --out), checked before anything is computed."""
    outdir = Path(out) if out else Path(dirs[0]) / "analysis"
    if not out and outdir.is_symlink():  # a received run's analysis/ linking elsewhere: nothing written there
        raise UserError(f"{outdir}: is a link; a run folder's analysis is written inside it (remove the link or "
                        "pass --out)")
    for parent in (outdir, *outdir.parents):
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"--out {outdir}: {parent} is a file, not a folder")
            break
    return outdir


def saved_analysis(folder: str | Path) -> Analysis | None:
    """The analysis that `analyze` (or `replicate`) already wrote into FOLDER/analysis, read back instead
    of computed again, when it is current (see simsubjects.publish.saved); None when it is not."""
    folder = Path(folder)
    manifest = load_manifest(folder)  # the tables are read only for a record that is believed

    if not analysis_reusable(manifest):  # a study file's analyses come from the folder's copy: always computed
        return None

    spec = study_def(folder, manifest)
    got = saved.read(folder, spec)
    if got is None:
        return None
    tables, figures = got
    manifest, responses, items = load_run(folder)
    responses = stack_runs([responses], _run_labels([folder]))
    shown = spec.summary(tables) if spec.summary else tables
    return Analysis(spec.name, responses, items, tables, shown, folder / "analysis", figures)


def _run_labels(dirs) -> list[str]:
    """One label per run folder: its name, or its path where two folders share a name."""
    names = [Path(d).name or str(d) for d in dirs]
    return names if len(set(names)) == len(names) else [str(d) for d in dirs]
