"""A session study file as the package's study declaration (StudyDef), and its `study check` view."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..collect.schema import SESSION_COLUMNS
from ..collect.studies.registry import StudyDef
from .runcopy import copy_files, shown_spec
from .design import items_table
from .session import SessionStudy, decisions_per_path, leaves


def session_trials(study: SessionStudy, paths: int | None = None) -> pd.DataFrame:
    """One row per subject x path: what a collection starts (decisions are made as the paths run)."""
    sess = study.session
    k = 1 if sess.enumerate else int(paths or sess.paths)
    rows = [{"trial": f"{s}|p{p}", "item": "session", "condition": "", "subject": s, "prompt": "", "options": (),
             "labels": (), "path": p} for s in study.subjects["subject"] for p in range(1, k + 1)]
    return pd.DataFrame(rows)


def session_items(study: SessionStudy) -> pd.DataFrame:
    items = items_table(study)
    block = {it.id: b.id for b in study.session.blocks for it in b.items}
    return items.assign(block=items["item"].map(block))


def session_def(study: SessionStudy, out=None) -> StudyDef:
    from .session_run import collect_session
    from .session_analysis import analyze_session, plot_session

    def finalize(responses: pd.DataFrame, params: dict) -> pd.DataFrame:
        if out is not None:
            copy_files(study, Path(out))
        return responses

    return StudyDef(
        name=study.name,
        help=study.title,
        build=lambda paths=None, **_: (session_trials(study, paths), session_items(study)),
        collect=lambda model, cache, trials, params, show: collect_session(study, model, cache, params, show),
        finalize=finalize,
        templates=lambda: [study.template],
        analyze=lambda responses, items: analyze_session(study, responses, items),
        plot=plot_session,
        summary=lambda tables: {k: v for k, v in tables.items() if k in ("rounds_by_round", "paths", "subject_tests",
                                                                            "model_and_people", "beside_people_tests")},
        methods=("exact", "sampled"),
        columns=dict(SESSION_COLUMNS),  # their codebook labels
    )


def describe_session(study: SessionStudy) -> str:
    """`study check` of a session: blocks, rounds, players, paths; no model loads."""
    sess = study.session
    lines = [f"{study.file}: valid (a session)", f"study: {study.name} - {study.title}"]
    if study.citation:
        lines.append(f"citation: {study.citation}")
    lines.append(f"subjects: {len(study.subjects)}; memory: {sess.memory}; paths: {sess.paths}"
                 f"{f' (at most {leaves(sess):g} leaves per subject)' if sess.enumerate else ''}; seed: {study.seed}")
    for b in sess.blocks:
        cont = b.cont_expr.text if b.cont_expr is not None else f"{b.cont:g}" if b.cont is not None else ""
        rounds = f"{b.rounds} rounds" + (f", continuing with probability {cont}" if cont else "")
        moves = "sequential: " + " -> ".join(b.sequence) if b.sequence else "simultaneous"
        lines.append(f"block {b.id}: {len(b.items)} items ({', '.join(it.id for it in b.items)}); {rounds}; "
                     f"order {b.order}; players {', '.join(b.players) or 'none'} ({moves})"
                     + ("; payoffs: matrix" if b.matrix else "; payoffs: rules" if b.rules else ""))
    for name, p in sess.players.items():
        lines.append(f"player {name}: {p.kind}" + (f" (responds to {p.responds_to})" if p.responds_to else "")
                     + (f" ({shown_spec(p.spec) if p.spec else p.model}; options {', '.join(p.labels)})"
                        if p.kind == "model" else ""))
    if sess.variables:
        lines.append("variables: " + ", ".join(f"{k} = {v!r}" for k, v in sess.variables.items()))
    lines.append(f"decisions per path: at most {decisions_per_path(sess)}")
    from .bounds import summary

    lines += summary(study)
    if study.people is not None:
        lines.append(f"people: {len(study.people)} person-level values of {study.people['respondent'].nunique()} "
                     f"persons ({study.human_name}), by {', '.join(study.people_by) or 'nothing'}")
    return "\n".join(lines)
