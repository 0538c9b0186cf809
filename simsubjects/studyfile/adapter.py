"""A study file as the package's study declaration (StudyDef): the one place that knows that shape.

The run folder gets a copy of the study file and of its tables under `study/`, and the manifest's
parameters name the file with its sha256 (so a changed file is a different run, never a resumed
one). `analyze`, `export` and `report` find the study again from that copy: no registration.
"""

from __future__ import annotations

from pathlib import Path
import hashlib

import pandas as pd

from ..collect.studies.registry import StudyDef
from ..errors import UserError
from .figures import plot_study
from .runcopy import COPY, copy_files
from .door import AnyStudy, load_any
from .spec import Study
from ..collect.store import RunStore
from ..collect.studies.registry import Paper, Plan
from simsubjects.collect.option_order import add_shown_position

KEY = "studyfile"  # the parameter a study file's run records (read back by origin.py)
# the parameter that says a study file's orders were drawn by simsubjects.collect.option_order
ORDERS = "option_orders"



def file_parameters(study: Study) -> dict:
    """What the manifest records of the file: its name, sha256, and each table's sha256 (of the bytes
    load_study read and parsed, not of the file as it is now)."""
    return {"file": f"{COPY}/{study.file.name}", "sha256": study.sha256,
            "tables": {rel: hashlib.sha256(study.raw[rel]).hexdigest()
                       for rel, p in study.files.items() if p != study.file}}


def order_parameters(study: Study, out) -> dict:
    """The run's record of who drew its option orders. A folder holding a study-file run made before
    one option-order module (its identity lacks ORDERS) is resumed as it was drawn: `study` is marked
    so that design.py re-makes its orders and order columns as recorded, and the identity stays the
    folder's. Every other run records ORDERS."""
    try:
        old = RunStore(Path(out)).read_manifest(missing_ok=True) if out is not None else None
    except UserError:  # not a run's manifest: RunStore.check_out says so, in its words
        old = None
    ident = old.get("identity") if isinstance(old, dict) else None
    mine = ident.get("parameters") if isinstance(ident, dict) else None
    recorded = mine.get(KEY) if isinstance(mine, dict) else None
    if isinstance(recorded, dict) and ORDERS not in mine and recorded.get("sha256") == study.sha256:
        study.orders_before = True
        return {}
    return {ORDERS: "simsubjects.collect.option_order"}


def check_out(study: Study, out) -> None:
    """--out is neither the study's own folder nor a folder that holds the study file or its tables:
    a run writes items.parquet, responses.parquet and study/ there, over what it would read."""
    o = Path(out).resolve()
    for rel, p in study.files.items():
        p = p.resolve()
        if (o / COPY) in p.parents:  # the run's own copy (collect RUN/study/x.yaml --out RUN resumes it):
            continue  # rewritten with the same bytes, which the manifest's sha256 checks
        if p.parent == o or o in p.parents:
            raise UserError(f"--out {out}: holds {rel}, a file of the study {study.file.name}; a run writes "
                            "into its folder, so choose a folder outside the study's (e.g. runs/NAME)")


def _scale(r) -> list[str]:
    """A response's option labels in scale order: ordinal options by position (declared order breaks
    ties), unordered ones as declared, refusals ("Don't know") last; a judged answer's judge scale."""
    if r is None:
        return []
    r = r.judge or r
    ordered = sorted((o for o in r.options if not o.refusal),
                     key=lambda o: (o.position is None, o.position if o.position is not None else 0))
    return [o.label for o in ordered] + [o.label for o in r.options if o.refusal]


def study_levels(study: Study) -> dict[str, list[str]]:
    """The export's level orders (issue 29): `response` in the scale's order (a Likert scale from its
    first to its last point, not alphabetically), each item's scales in turn; every factor in its
    declared level order (the first level is the baseline of R's treatment coding, as in the AMCEs)."""
    levels: list[str] = []
    for it in study.items:
        for r in (it.response, *it.responses.values()):
            levels += [lab for lab in _scale(r) if lab not in levels]
    out = {f.name: [str(v) for v in f.levels] for f in study.factors}
    if levels:
        out["response"] = levels
    return out


def study_def(study: Study, out=None, judge=None) -> StudyDef:
    """`study` as a StudyDef; `out` (run folder) receives the copies when the collection finishes."""
    from .analyses import analyze_study  # lazy: imports scipy, numpy
    from .check_r import check_study_file  # lazy: imports scipy, numpy
    from .collect import collect_study, validity_sample  # lazy: imports tqdm, envwrap
    from .design import build_trials  # lazy: imports studyfile.design, collect.seeds

    kinds = {it.response.kind for it in study.items}
    methods = ("exact", "sampled") if "choice" in kinds else ("generated",)

    def finalize(responses: pd.DataFrame, params: dict) -> pd.DataFrame:
        if study.human is not None:
            responses = pd.concat([responses, study.human], ignore_index=True)
        if study.order_mode in ("randomized", "averaged"):  # the position each option was shown at
            responses = add_shown_position(responses)
        return responses

    return StudyDef(
        name=study.name,
        help=study.title,
        build=lambda **_: build_trials(study),
        collect=lambda model, cache, trials, params, show: (
            copy_files(study, Path(out)) if out is not None else None,  # once, at the start (as hashed)
            collect_study(study, model, cache, trials, params, show, judge=judge))[1],
        validate=lambda model, trials, params: validity_sample(study, model, trials, params, judge=judge),
        finalize=finalize,
        templates=lambda: [study.template],
        analyze=lambda responses, items: analyze_study(study, responses, items),
        summary=_summary,
        plot=plot_study,
        methods=methods,
        levels=lambda responses, items: study_levels(study),
        sample=study.subjects_sample,  # identical prompts, a census of its subjects table, or drawn
        # analyze --check-r: the file's analyses recomputed in R from the responses (R/studyfile.R)
        check_r=lambda r, responses, items, tables, tol, tol_p: check_study_file(
            study, r, responses, items, tables, tol, tol_p),
    )


def _summary(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Terminal view: every table but the per-trial scores (those are in trials.csv)."""
    return {k: v for k, v in tables.items() if k != "trials"}


def replicate_row(path: str, out, seed: int | None = None):
    """(paper, plan, study, params) of a study file for `simsubjects replicate STUDY.yaml --out DIR`.

    The file is its own "paper" (key: the path as given, so the package's command re-creates it);
    --scale leaves its design as written. `seed`: replicate's --seed when given (else design.seed).
    The run goes to DIR/<study name>, like a built-in study's.
    """
    loaded = load_any(path, seed=seed)
    if loaded.kind == "session":  # a session: its own declaration, the same place in the replication
        from ..collect.models.incremental import SCORER  # lazy: imports torch, transformers

        study = loaded.study
        paper = Paper(key=str(path), title=study.title, citation=study.citation or study.title, note="a session file")
        plan = Plan(paper, lambda scale: {}, f"the session file's own design ({path}; --scale does not change it)")
        params = {"studyfile": file_parameters(study), "seed": study.seed, "paths": None, "session_scorer": SCORER}
        return paper, plan, study_def_of(loaded, out=Path(out) / study.name), params
    if loaded.kind == "obedience":  # Milgram obedience: the built-in simulator on the file's scenario
        from .obedience import file_parameters as obedience_parameters  # lazy: imports studyfile.obedience

        study = loaded.study
        check_out(study, Path(out) / study.name)
        paper = Paper(key=str(path), title=study.title, citation=study.citation or study.title,
                      note="a Milgram obedience file")
        plan = Plan(paper, lambda scale: {}, f"the study file's own design ({path}; --scale does not change it)")
        params = {**study.settings(), "seed": study.seed, KEY: obedience_parameters(study)}
        return paper, plan, study_def_of(loaded, out=Path(out) / study.name), params
    study = loaded.study
    check_out(study, Path(out) / study.name)
    paper = Paper(key=str(path), title=study.title, citation=study.citation or study.title, note="a study file")
    plan = Plan(paper, lambda scale: {}, f"the study file's own design ({path}; --scale does not change it)")
    params = {KEY: file_parameters(study), "seed": study.seed, "judge_model": None,
              **order_parameters(study, Path(out) / study.name)}
    return paper, plan, study_def(study, out=Path(out) / study.name), params


def study_def_of(loaded: AnyStudy, out=None) -> StudyDef:
    """The package's StudyDef of a study file of any kind, as door.load_any read it (`out`: its run folder)."""
    if loaded.kind == "session":
        from .session_def import session_def  # lazy: imports studyfile.session, studyfile.session_def

        return session_def(loaded.study, out=out)
    if loaded.kind == "obedience":
        from .obedience import obedience_def  # lazy: imports studyfile.obedience

        return obedience_def(loaded.study, out=out)
    return study_def(loaded.study, out=out)
