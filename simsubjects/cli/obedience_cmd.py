"""`collect OBEDIENCE.yaml`: the command's part of a Milgram obedience study file (its options, the
run); the file itself is studyfile/obedience.py and its simulator studies/milgram/design.py. Here,
in cli/, because it reads the command's options (docs/architecture.md: studyfile/ imports no command)."""

from __future__ import annotations

from ..errors import UserError


def collect_obedience_file(path: str, kw: dict, seeded: bool) -> None:
    """`collect OBEDIENCE.yaml`: checked whole before the model loads; the same run as the built-in
    `collect milgram` with the file's settings (subjects, max stages, max tokens, judge rule, seed)."""
    from ..studyfile.adapter import KEY  # lazy: imports pandas, pyarrow
    from ..studyfile.obedience import file_parameters, load_obedience, obedience_def  # lazy: imports pandas, numpy
    from .options import _model_kwargs, _parse_model, echo_table  # lazy: imports click

    study = load_obedience(path, seed=kw["seed"] if seeded else None)  # every check that needs no model, first
    bad = [u for u in (kw["base_url"] or "").split(",") if u and not u.startswith(("http://", "https://"))]
    if bad:
        raise UserError(f"--base-url {bad[0]}: not an http(s) URL such as http://127.0.0.1:8000/v1")
    for flag in ("paths", "judge_model"):
        if kw.get(flag) is not None:
            raise UserError(f"--{flag.replace('_', '-')}: not available for a Milgram obedience file "
                            "(the subject's own model judges its sentences, as in Aher et al. 2023)")
    if kw.get("ablate"):  # issue 39's twins score people's answers; an obedience file has no people's rows
        raise UserError("--ablate: not available for a Milgram obedience file")
    method = kw["method"] or "exact"
    if method not in ("exact", "sampled"):
        raise UserError(f"--method {method}: a Milgram obedience file supports exact, sampled")
    if study.judge_rule == "scored" and method != "exact":
        from ..studies.milgram.design import SCORED_NEEDS_EXACT  # lazy: imports scipy, pandas

        raise UserError(f"{path}: design.judge_rule scored: {SCORED_NEEDS_EXACT.split('; ', 1)[1]}")
    # the built-in's parameters, plus the file (so a changed file is a different run, never a resumed one)
    params = {**study.settings(), "seed": study.seed, "chat_template": kw["chat_template"],
              KEY: file_parameters(study)}
    spec = _parse_model(kw["model"])  # the command's edge: parsed once
    if kw.get("out"):
        from ..studyfile.adapter import check_out  # lazy: imports pandas, pyarrow

        check_out(study, kw["out"])  # --out is not the study's own folder; before the model loads
    from .collection import collect_study  # lazy: imports click

    kw["model"] = spec
    planning = kw["dry_run"] or kw.get("batch_export") or kw.get("batch_import")
    sdef = obedience_def(study, out=None if planning else kw["out"])  # a dry run or batch file writes no copy

    def validate():
        from ..collect.models import load_model  # lazy: looked up per call (tests replace load_model)

        trials, _ = sdef.make(**params)
        model = load_model(spec, **_model_kwargs(kw))
        echo_table("validity rates (outcomes hidden)", sdef.validate(model, trials, params))

    collect_study(sdef, kw, params, method, validate=validate)
