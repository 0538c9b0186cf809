"""`simsubjects analyze`: the study's analyses on a run folder, written as CSV tables and PNG figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..collect.store import atomic_write_bytes, load_run
from ..collect.studies.registry import get_study, resolve
from ..errors import UserError


@dataclass
class Analysis:
    study: str
    responses: pd.DataFrame
    items: pd.DataFrame
    tables: dict[str, pd.DataFrame]  # tidy, written as CSV
    shown: dict[str, pd.DataFrame]  # terminal-sized views
    outdir: Path
    figures: list[Path] = field(default_factory=list)


def analyze_runs(dirs: list[str | Path], out: str | Path | None = None, plots: bool = True) -> Analysis:
    """Analyze one run folder, or several of the same study side by side (one model each)."""
    runs = [load_run(d) for d in dirs]
    outdir = Path(out) if out else Path(dirs[0]) / "analysis"
    for parent in (outdir, *outdir.parents):
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"--out {outdir}: {parent} is a file, not a folder")
            break
    studies = {m["study"] for m, _, _ in runs}
    if len(studies) > 1:
        raise UserError(f"cannot analyze runs of different studies together: {sorted(studies)}")
    study = studies.pop()
    from ..studyfile.adapter import study_for_run

    spec = study_for_run(dirs[0], runs[0][0]) or get_study(study)
    if not spec.analyze:
        raise UserError(f"{dirs[0]}: no analysis registered for study {study!r}")
    responses = pd.concat([r for _, r, _ in runs], ignore_index=True)
    items = runs[0][2]
    tables = resolve(spec.analyze)(responses, items)
    if "shown_position" in responses.columns and "order_effects" not in tables:
        # any k-choice study whose trials record the option order shown (simsubjects.option_order)
        from .order_effects import order_effects

        tables["order_effects"], tables["order_effects_average"] = order_effects(responses)
    outdir.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():  # each table whole or not at all (a killed analyze leaves no half CSV)
        atomic_write_bytes(outdir / f"{name}.csv", df.to_csv(index=False).encode("utf-8"))
    figures = resolve(spec.plot)(tables, responses, outdir) if plots and spec.plot else []
    shown = resolve(spec.summary)(tables) if spec.summary else tables
    return Analysis(spec.name, responses, items, tables, shown, outdir, figures)
