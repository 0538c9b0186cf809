"""A session study file as the package's study declaration (StudyDef), and its `study check` view."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from ..collect.sample_kinds import RECORDED
from ..collect.schema import SESSION_COLUMNS
from ..collect.store import TRANSCRIPTS, atomic_write_bytes
from ..collect.studies.registry import StudyDef
from .check_r import check_session_fit
from .runcopy import copy_files, shown_spec
from .design import items_table
from .session import SessionStudy, decisions_per_path, leaves
from .bounds import summary


def session_trials(study: SessionStudy, paths: int | None = None) -> pd.DataFrame:
    """One row per subject x path: what a collection starts (decisions are made as the paths run)."""
    sess = study.session
    k = 1 if sess.enumerate or sess.people else int(paths or sess.paths)
    rows = [{"trial": f"{s}|p{p}", "item": "session", "condition": "", "subject": s, "prompt": "", "options": (),
             "labels": (), "path": p} for s in study.subjects["subject"] for p in range(1, k + 1)]
    out = pd.DataFrame(rows)
    out.attrs["column_labels"] = column_labels(study)  # the manifest keeps them for exports
    return out


def column_labels(study: SessionStudy) -> dict[str, str]:
    """Variable labels of a session's columns (.rds/.dta/.sav, codebooks): the fixed ones, one column per
    item (its text), per player (its moves), per payoff and per variable."""
    sess = study.session
    out = dict(SESSION_COLUMNS)
    for b in sess.blocks:
        out.update({it.id: f"Answer to {it.id}: {it.item.text}" for it in b.items})
        out.update({n: f"Payoff {n} (block {b.id})" for n in b.payoff_names()})
    out.update({n: f"Move of player {n} ({p.kind})" for n, p in sess.players.items()})
    out.update({n: f"Variable {n} after the round" for n in sess.variables})
    return out


def session_levels(study: SessionStudy, responses: pd.DataFrame) -> dict[str, list[str]]:
    """Factor levels in the declared order: each item's column its options as listed, each player's
    its moves (a chance player's outcomes, a model player's options), and `response` when every item
    and player shares one option list (e.g. J, F); the export keeps these orders (issue 41)."""
    sess = study.session
    out = {it.id: it.labels for b in sess.blocks for it in b.items}
    for n, p in sess.players.items():
        moves = p.moves_of(sess, None)
        if moves:
            out[n] = list(moves)
    lists = {tuple(v) for v in out.values()}
    if len(lists) == 1:
        out["response"] = list(next(iter(lists)))
    return {k: v for k, v in out.items() if k in responses.columns}


def session_items(study: SessionStudy) -> pd.DataFrame:
    items = items_table(study)
    block = {it.id: b.id for b in study.session.blocks for it in b.items}
    return items.assign(block=items["item"].map(block))


# what the terminal and the report say above a summary table (docs/studies.md, "Paths and rows")
CAPTIONS = {
    "rounds_by_round": "rounds_by_round: each answer's share among the answers drawn on the paths (not the model's "
                       "probabilities: choice_by_round), unconditional (a round where the item was not shown counts as "
                       "not that answer); means over subjects",
    "subject_tests": "subject_tests: round L - round 1, L the last round at least half of the subjects reached "
                     "(unit: subject; `note` where n < 3 or no variance)",
    "beside_people_tests": "beside_people_tests: Welch t-tests, model - people (unit: subject / person; `note` where "
                           "a side has n < 3 or no variance)",
}


def session_def(study: SessionStudy, out=None) -> StudyDef:
    from .session_run import collect_session  # lazy: imports tqdm, envwrap
    from .session_analysis import analyze_session, plot_session  # lazy: imports scipy, numpy

    kept: list[dict] = []  # the collection's transcript records (collect_session's sink)

    def finalize(responses: pd.DataFrame, params: dict) -> pd.DataFrame:
        if out is not None:
            copy_files(study, Path(out))
            write_transcripts(Path(out), kept)
        return responses

    return StudyDef(
        name=study.name,
        help=study.title,
        build=lambda paths=None, **_: (session_trials(study, paths), session_items(study)),
        collect=lambda model, cache, trials, params, show: collect_session(study, model, cache, params, show, kept),
        finalize=finalize,
        templates=lambda: [study.template],
        analyze=lambda responses, items: analyze_session(study, responses, items),
        plot=plot_session,
        summary=lambda tables: {CAPTIONS.get(k, k): v for k, v in tables.items()
                                if k in ("rounds_by_round", "paths", "subject_tests", "model_and_people",
                                         "beside_people_tests")},
        methods=("exact", "sampled"),
        columns=dict(SESSION_COLUMNS),  # their codebook labels
        levels=lambda responses, items: session_levels(study, responses),
        # identical prompts, a census of its subjects table, or drawn; paths: people follows recorded people
        sample=RECORDED if study.session.people else study.subjects_sample,
        # analyze --check-r of paths: people: the fit tables against R/fit.R (other session tables have no twin)
        check_r=(lambda r, responses, items, tables, tol, tol_p: check_session_fit(r, responses, tables, tol))
        if study.session.people else None,
    )


def write_transcripts(out: Path, records: list[dict]) -> None:
    """transcripts.jsonl: one JSON record per decision, in the order the run asked them (docs/studies.md,
    "Transcripts"); whole or absent (atomic), and rebuilt identically by a resumed run (the same
    distributions from the request cache, the same seeded draws)."""
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    atomic_write_bytes(out / TRANSCRIPTS, data.encode())


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
                        if p.kind == "model" else "")
                     + (f" ({', '.join(f'{k} {v:g}' for k, v in p.outcomes.items())}; drawn "
                        f"{'once per path' if p.draw == 'once' else 'every round'})" if p.kind == "nature" else ""))
    if sess.variables:
        lines.append("variables: " + ", ".join(f"{k} = {v!r}" for k, v in sess.variables.items()))
    lines.append(f"decisions per path: at most {decisions_per_path(sess)}")
    if sess.people:
        rec = sess.recorded
        lines.append(f"people (paths: people): {len(rec)} recorded rounds of {rec['person'].nunique()} persons in "
                     f"{sess.people_file}, replayed (every decision scored)")

    lines += summary(study)
    if study.people is not None:
        lines.append(f"people: {len(study.people)} person-level values of {study.people['respondent'].nunique()} "
                     f"persons ({study.human_name}), by {', '.join(study.people_by) or 'nothing'}")
    return "\n".join(lines + first_prompts(study))


def first_prompts(study: SessionStudy, show: int = 3) -> list[str]:
    """The first subject's first `show` decisions on path 1, as `study check` prints them: each prompt
    (or chat turns) and the completions scored. No model: each answer is drawn by the path's seeded
    generator as if every option were equally likely (as `--dry-run` walks a session), so a later
    prompt shows one possible history; a real run draws from the model's distribution."""
    from .session_run import SessionRun, _advance, _draw  # lazy: imports tqdm, envwrap

    run = SessionRun(study, SimpleNamespace(info=SimpleNamespace(spec="check")), "exact", 1, 1,
                     chat=bool(study.chat_template))
    st, rng = run.initial()[0], None
    lines = []
    for k in range(1, show + 1):
        states, decisions = _advance(run, st)
        if not decisions:
            lines.append(f"(the path ends after {k - 1} decision{'s' if k != 2 else ''} in this preview)")
            break
        d = decisions[0]
        st = d.state
        rng = st.rng or rng or np.random.default_rng(0)
        who = f"player {d.player}" if d.player else f"item {d.item.id}"
        lines += ["", f"--- subject {st.subject}, path 1, decision {k} ({who}, round {st.round}) ---"]
        lines += [f"[{role}] {text}" for role, text in d.messages] if d.messages else [d.prompt]
        scored = zip(d.completions, d.shown)
        lines.append("completions scored: " + ", ".join(f"{c!r} = {x[0].label}" for c, x in scored))
        j = run.recorded_index(d) if run.people is not None else _draw([1 / len(d.shown)] * len(d.shown),
                                                                       float(rng.random()))
        st.parent, st.step = run.node(st), st.step + 1
        label, completion = run.chosen(d, j)
        run.answer(d, label, completion)
        lines.append(f"({'the person recorded' if run.people is not None else 'drawn for this preview'}: {label})")
    return lines
