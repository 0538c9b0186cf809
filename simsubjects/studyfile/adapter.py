"""A study file as the package's study declaration (StudyDef): the one place that knows that shape.

The run folder gets a copy of the study file and of its tables under `study/`, and the manifest's
parameters name the file with its sha256 (so a changed file is a different run, never a resumed
one). `analyze`, `export` and `report` find the study again from that copy: no registration.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..collect.store import atomic_write_bytes
from ..collect.studies.registry import StudyDef
from ..errors import UserError
from .spec import Study, load_study

COPY = "study"  # folder of the run that holds the study file and its tables


def file_parameters(study: Study) -> dict:
    """What the manifest records of the file: its name, sha256, and each table's sha256."""
    import hashlib

    return {"file": f"{COPY}/{study.file.name}", "sha256": study.sha256,
            "tables": {rel: hashlib.sha256(p.read_bytes()).hexdigest()
                       for rel, p in study.files.items() if p != study.file}}


def copy_files(study: Study, out: Path) -> None:
    """The study file and its tables into RUN/study/ (each written whole: atomic)."""
    for rel, p in study.files.items():
        atomic_write_bytes(Path(out) / COPY / rel, p.read_bytes())


def study_def(study: Study, out=None, judge=None) -> StudyDef:
    """`study` as a StudyDef; `out` (run folder) receives the copies when the collection finishes."""
    from .analyses import analyze_study
    from .collect import collect_study, validity_sample
    from .design import build_trials

    kinds = {it.response.kind for it in study.items}
    methods = ("exact", "sampled") if "choice" in kinds else ("generated",)

    def finalize(responses: pd.DataFrame, params: dict) -> pd.DataFrame:
        from simsubjects.collect.option_order import add_shown_position

        if out is not None:
            copy_files(study, Path(out))
        if study.human is not None:
            responses = pd.concat([responses, study.human], ignore_index=True)
        if study.order_mode in ("randomized", "averaged"):  # the position each option was shown at
            responses = add_shown_position(responses)
        return responses

    return StudyDef(
        name=study.name,
        help=study.title,
        build=lambda **_: build_trials(study),
        collect=lambda model, cache, trials, params, show: collect_study(study, model, cache, trials, params, show,
                                                                         judge=judge),
        validate=lambda model, trials, params: validity_sample(study, model, trials, params, judge=judge),
        finalize=finalize,
        templates=lambda: [study.template],
        analyze=lambda responses, items: analyze_study(study, responses, items),
        summary=_summary,
        methods=methods,
    )


def _summary(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Terminal view: every table but the per-trial scores (those are in trials.csv)."""
    return {k: v for k, v in tables.items() if k != "trials"}


def study_for_run(run_dir, manifest: dict) -> StudyDef | None:
    """The StudyDef of a run collected from a study file (None for a built-in study's run)."""
    params = manifest.get("parameters") or {}
    info = params.get("studyfile") if isinstance(params, dict) else None
    if not isinstance(info, dict) or not info.get("file"):
        return None
    path = Path(run_dir) / info["file"]
    if not path.is_file():
        raise UserError(f"{run_dir}: the copy of the study file ({info['file']}) is missing; re-run the collection")
    seed = params.get("seed")  # the run's seed (collect --seed), so seeded tables are drawn as collected
    return study_def(load_study(path, seed=seed if isinstance(seed, int) else None))


def replicate_row(path: str, out, seed: int | None = None):
    """(paper, plan, study, params) of a study file for `simsubjects replicate STUDY.yaml --out DIR`.

    The file is its own "paper" (key: the path as given, so the package's command re-creates it);
    --scale leaves its design as written. `seed`: replicate's --seed when given (else design.seed).
    The run goes to DIR/<study name>, like a built-in study's.
    """
    from ..collect.studies.registry import Paper, Plan

    study = load_study(path, seed=seed)
    paper = Paper(key=str(path), title=study.title, citation=study.citation or study.title, note="a study file")
    plan = Plan(paper, lambda scale: {}, f"the study file's own design ({path}; --scale does not change it)")
    params = {"studyfile": file_parameters(study), "seed": study.seed, "judge_model": None}
    return paper, plan, study_def(study, out=Path(out) / study.name), params
