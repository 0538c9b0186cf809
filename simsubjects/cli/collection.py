"""The one collection of every collect entry point (issue 37): `collect STUDY`, `collect STUDY.yaml`
(an obedience file too), `collect SESSION.yaml` and each study of `replicate`.

Each entry point checks what is its own (the study's options, the file) and builds a StudyDef,
its parameters and its method; `collect_study` then owns the rest, in one order for all of them:
the large-run options (--batch-export/--batch-import, --max-cost, --engine: cli/engines.py),
batch files, the dry run, prompt validation, the collection (collect/pipeline.run_study) and its
summary line. So an option that README presents for `collect` works on every kind of study.
"""

from __future__ import annotations

from typing import Callable

import click

from .engines import batch_files, budget_of, check_engine_options, engine_of, report_fit
from .options import _model_kwargs, _report_collection, dry_run_command, echo_table


def collect_study(study, kw: dict, params: dict, method: str, *, validate: Callable[[], object] | None = None,
                  batch_study=None, model=None, model_options: dict | None = None,
                  report: bool = True, budget=None) -> dict | None:
    """Run `study` (a StudyDef) as the command's options `kw` say; the run's manifest, or None when a
    batch file, a dry run or a validation was all that was asked.

    `kw["model"]` is the parsed ModelSpec; `params` the run's parameters (chat_template included);
    `validate`: the study's own --validate (default: validity rates of a small sample);
    `batch_study`: the StudyDef that plans batch files (default `study`; a study file's writes no copy);
    `model`: an already loaded model (replicate loads one for every study), `model_options` its
    options (default: read from `kw`); `report`: print the summary; `budget`: a --max-cost budget shared
    by several studies (`bench run`: one cap over the corpus; default: this study's own from `kw`)."""
    check_engine_options(kw)  # conflicts and values, before anything loads
    if batch_files(batch_study or study, params, method, kw):
        return None
    if kw.get("dry_run"):  # counted by the tokenizer: no weights, nothing written
        report_fit(dry_run_command(study, kw["model"], params, method, kw), kw)
        return None
    if kw.get("validate"):
        (validate or (lambda: validity_rates(study, kw, params)))()
        return None
    from simsubjects.collect.pipeline import run_study  # lazy: imports pandas, numpy

    _, manifest = run_study(study, kw["model"], kw["out"], params=params, method=method, n=kw["n"],
                            overwrite=kw["overwrite"],
                            model_options=_model_kwargs(kw) if model_options is None else model_options,
                            show_progress=not kw["quiet"], batch_size=kw["batch_size"],
                            budget=budget_of(kw) if budget is None else budget,
                            engine=engine_of(kw), model=model)
    if report:
        _report_collection(kw["out"], manifest)
    return manifest


def validity_rates(study, kw: dict, params: dict, n: int = 20) -> None:
    """--validate: validity rates of a small sample, by condition (the study's own validate where it
    has one); outcomes are never shown (no p-hacking)."""
    from simsubjects.collect.models import ChoiceRequest, load_model  # lazy: looked up per call (tests replace load_model)

    trials, _ = study.make(**params)
    model = load_model(kw["model"], **_model_kwargs(kw))
    if study.validate is not None:
        echo_table("validity rates (outcomes hidden)", study.validate(model, trials, params))
        return

    sample = trials.sample(n=min(n, len(trials)), random_state=params["seed"])
    res = model.choose([ChoiceRequest(p, tuple(o)) for p, o in zip(sample["prompt"], sample["options"])])
    z = sample.assign(validity=[r.validity for r in res])
    table = z.groupby("condition")["validity"].agg(["mean", "min", "max", "size"]).reset_index()
    echo_table(f"validity rates on {len(sample)} sampled trials (outcomes hidden)", table)
    click.echo(f"overall mean validity: {z['validity'].mean():.4f}")
