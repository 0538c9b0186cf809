"""Commands for study files: `collect STUDY.yaml`, `study check STUDY.yaml`, `study new KIND DIR`."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from ..errors import UserError

STARTERS = Path(__file__).parent / "starters"
KINDS = ("survey", "vignette", "estimation")


def is_study_file(name: str) -> bool:
    return str(name).lower().endswith((".yaml", ".yml"))


class CollectGroup(click.Group):
    """`collect` with its registered studies, plus any path to a study file as a command name."""

    def get_command(self, ctx, cmd_name):
        cmd = super().get_command(ctx, cmd_name)
        if cmd is None and is_study_file(cmd_name):
            return file_command(cmd_name)
        return cmd

    def format_usage(self, ctx, formatter):
        formatter.write_usage(ctx.command_path, "[STUDY | STUDY.yaml] [OPTIONS]")


def file_command(path: str) -> click.Command:
    """`collect STUDY.yaml`: the options of every collection, plus --method, --n and --judge-model."""
    from simsubjects.cli.commands import model_options

    def run(**kw):
        _collect_file(path, kw)

    f = model_options(run)
    f = click.option("--judge-model", default=None,
                     help="Model that classifies free-text answers (default: the answering model).")(f)
    f = click.option("--n", default=50, show_default=True, type=click.IntRange(1),
                     help="Valid answers per trial when --method sampled.")(f)
    f = click.option("--method", type=click.Choice(["exact", "sampled", "generated"]), default=None,
                     help="exact: log-probabilities (default for k-choice); sampled: draw at temperature 1 until "
                          "--n valid answers; generated: a study of estimates or free text only.")(f)
    return click.command(path, help=f"Collect the study file {path} (see docs/studies.md).")(f)


def _collect_file(path: str, kw: dict) -> None:
    from simsubjects.cli.commands import _model_kwargs, _report_collection, echo_table
    from ..collect.pipeline import run_study
    from simsubjects.studyfile.adapter import file_parameters, study_def
    from simsubjects.studyfile.design import build_trials
    from simsubjects.studyfile.spec import load_study

    # --seed given: it replaces design.seed (before the seeded tables are drawn)
    seeded = click.get_current_context().get_parameter_source("seed").name != "DEFAULT"
    study = load_study(path, seed=kw["seed"] if seeded else None)  # every check that needs no model, first
    bad = [u for u in (kw["base_url"] or "").split(",") if u and not u.startswith(("http://", "https://"))]
    if bad:
        raise UserError(f"--base-url {bad[0]}: not an http(s) URL such as http://127.0.0.1:8000/v1")
    kw["chat_template"] = kw["chat_template"] or study.chat_template
    options = _model_kwargs(kw)
    judge_loader = None
    if kw["judge_model"]:
        from ..collect.models import load_model, parse_spec

        parse_spec(kw["judge_model"])

        def judge_loader():
            return load_model(kw["judge_model"], **options)
    sdef = study_def(study, out=kw["out"], judge=judge_loader)
    method = kw["method"] or sdef.methods[0]
    if method not in sdef.methods:
        raise UserError(f"--method {method}: {path} supports {', '.join(sdef.methods)}")
    params = {"studyfile": file_parameters(study), "seed": study.seed, "chat_template": kw["chat_template"],
              "judge_model": kw["judge_model"]}
    if kw["dry_run"]:  # as for a built-in study: counted by the tokenizer, no weights, nothing written
        from simsubjects.cli.commands import _dry_run_report
        from simsubjects.cli.dryrun import check_prices, dry_run_study

        check_prices(kw["price_in"], kw["price_out"])
        rows, model = dry_run_study(sdef, kw["model"], params, method=method, n=kw["n"], batch_size=kw["batch_size"],
                                    chat_template=kw["chat_template"], tokenizer=kw["tokenizer"])
        return _dry_run_report(rows, model, kw["model"], kw)
    if kw["validate"]:
        from ..collect.models import load_model

        trials, _ = build_trials(study)
        model = load_model(kw["model"], **options)
        return echo_table("validity rates (outcomes hidden)", sdef.validate(model, trials, {"seed": study.seed}))
    _, manifest = run_study(sdef, kw["model"], kw["out"], params=params, method=method, n=kw["n"],
                            overwrite=kw["overwrite"], model_options=options, show_progress=not kw["quiet"],
                            batch_size=kw["batch_size"])
    _report_collection(kw["out"], manifest)


# ------------------------------------------------------------------------------------------ study

@click.group("study")
def study_group():
    """Your own study in a YAML file: check it, or start one (docs/studies.md).

    \b
      simsubjects study new survey my_study      # a commented, runnable starting point
      simsubjects study check my_study/study.yaml
      simsubjects collect my_study/study.yaml --model smollm2 --out runs/my_study
      simsubjects analyze runs/my_study
    """


@study_group.command("check")
@click.argument("study_file", type=click.Path(dir_okay=False))
@click.option("--show", default=3, show_default=True, type=click.IntRange(0), help="Rendered prompts to print.")
def check(study_file, show):
    """Validate STUDY_FILE and print its design (trials, requests, prompt tokens, prompts); no model loads."""
    from simsubjects.studyfile.check import describe

    click.echo(describe(study_file, show))


@study_group.command("new")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("folder", type=click.Path(file_okay=False))
def new(kind, folder):
    """Write a commented, runnable study of KIND (survey, vignette, estimation) into FOLDER."""
    src = STARTERS / kind
    dest = Path(folder)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UserError(f"{folder}: exists and is not an empty folder; choose a new folder")
    for parent in dest.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{folder}: {parent} is a file, not a folder")
            break
    tmp = dest.parent / f".{dest.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    if dest.exists():
        dest.rmdir()
    tmp.rename(dest)  # whole or not at all
    click.echo(f"wrote {dest}/study.yaml and its tables; next:\n"
               f"  simsubjects study check {dest}/study.yaml\n"
               f"  simsubjects collect {dest}/study.yaml --model smollm2 --out runs/{dest.name}\n"
               f"  simsubjects analyze runs/{dest.name}")
