"""`simsubjects analyze`: the study's analyses on a run folder, written as CSV tables and PNG figures."""

from __future__ import annotations

from pathlib import Path
import pandas as pd

from ..collect.store import load_run
from ..collect.studies.registry import get_study, resolve
from ..errors import UserError


def analyze_runs(dirs: list[str | Path], out: str | Path | None = None, plots: bool = True
                 ) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame], list[Path], Path]:
    """Analyze one run folder, or several of the same study side by side (one model each).

    Returns (tidy tables written as CSV, terminal-sized tables, figure paths, output folder).
    """
    runs = [load_run(d) for d in dirs]
    studies = {m["study"] for m, _, _ in runs}
    if len(studies) > 1:
        raise UserError(f"cannot analyze runs of different studies together: {sorted(studies)}")
    study = studies.pop()
    spec = get_study(study)
    if not spec.analyze:
        raise UserError(f"{dirs[0]}: no analysis registered for study {study!r}")
    responses = pd.concat([r for _, r, _ in runs], ignore_index=True)
    items = runs[0][2]
    tables = resolve(spec.analyze)(responses, items)
    outdir = Path(out) if out else Path(dirs[0]) / "analysis"
    outdir.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_csv(outdir / f"{name}.csv", index=False)
    figures = resolve(spec.plot)(tables, responses, outdir) if plots and spec.plot else []
    shown = resolve(spec.summary)(tables) if spec.summary else tables
    return tables, shown, figures, outdir
