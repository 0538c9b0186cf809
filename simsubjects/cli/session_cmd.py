"""`collect SESSION.yaml`: the command's part of a session study file (its options, the run, the
summary line); the session itself is studyfile/session_def.py and studyfile/session_run.py. Here,
in cli/, because it reads the command's options (docs/architecture.md: studyfile/ imports no command)."""

from __future__ import annotations

from ..errors import UserError


def collect_session_file(path: str, kw: dict, seeded: bool) -> None:
    """`collect SESSION.yaml`: checked whole before the model loads; the run resumes like any other."""
    from ..studyfile.adapter import file_parameters  # lazy: imports pandas, pyarrow
    from ..studyfile.session import load_session  # lazy: imports pandas, numpy
    from ..studyfile.session_def import session_def  # lazy: imports pandas, numpy

    study = load_session(path, seed=kw["seed"] if seeded else None)
    bad = [u for u in (kw["base_url"] or "").split(",") if u and not u.startswith(("http://", "https://"))]
    if bad:
        raise UserError(f"--base-url {bad[0]}: not an http(s) URL such as http://127.0.0.1:8000/v1")
    if kw.get("paths") is not None and study.session.enumerate:
        raise UserError(f"--paths: {path} enumerates its paths (session.paths: enumerate)")
    if kw.get("paths") is not None and study.session.people:
        raise UserError(f"--paths: {path} replays recorded people (session.paths: people): one path each")
    ablate = list(dict.fromkeys(kw.get("ablate") or ()))
    _check_ablate(path, study, ablate)
    from ..studyfile.session import size_error  # lazy: imports pandas, numpy

    why = size_error(study.session, len(study.subjects), kw.get("paths"))
    if why:
        raise UserError(f"--paths {kw.get('paths')}: {path}: {why}")
    for flag in ("validate", "judge_model"):
        if kw.get(flag):
            raise UserError(f"--{flag.replace('_', '-')}: not available for a session yet")
    # with a chat template, memory is chat turns (studyfile/session_run.py); the model loads with it
    kw = {**kw, "chat_template": bool(kw["chat_template"] or study.chat_template)}
    method = kw["method"] or "exact"
    if method not in ("exact", "sampled"):
        raise UserError(f"--method {method}: a session supports exact, sampled")
    from ..collect.models.incremental import SCORER  # lazy: imports torch, transformers

    # a local model scores a session's growing prompts with reused keys/values: another order of
    # float sums than the packed scorer, so the scorer is part of the run's identity
    params = {"studyfile": file_parameters(study), "seed": study.seed, "paths": kw.get("paths"),
              "session_scorer": SCORER, **({"chat_template": True} if kw["chat_template"] else {}),
              **({"ablate": ablate} if ablate else {})}  # absent without --ablate: old runs keep their identity
    from .collection import collect_study  # lazy: imports click
    from .options import _parse_model  # lazy: imports click

    kw["model"] = _parse_model(kw["model"])  # the command's edge: parsed once
    if kw.get("engine") == "ray":
        # a Ray actor scores with the packed scorer, not with keys/values reused along each path: another
        # order of float sums, so another run identity (never a resume of a local run)
        params["session_scorer"] = "packed"
    planning = kw["dry_run"] or kw.get("batch_export") or kw.get("batch_import")
    # a dry run or a batch file is counted through the session with no `out`: no copy is written
    collect_study(session_def(study, out=None if planning else kw["out"]), kw, params, method)


def _check_ablate(path: str, study, ablate: list[str]) -> None:
    """--ablate on a session: each twin must remove something this session has (docs/people.md)."""
    sess = study.session
    if "history" in ablate and sess.memory == "none":
        raise UserError(f"--ablate history: {path} has session.memory: none (no earlier rounds to remove)")
    if "labels" in ablate and any(p.kind == "model" for p in sess.players.values()):
        raise UserError(f"--ablate labels: {path} has a model player, whose options keep their labels; "
                        "relabeling the subject's only would mix the two")
