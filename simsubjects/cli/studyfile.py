"""Commands for study files: `collect STUDY.yaml`, `study check STUDY.yaml`, `study new KIND DIR`."""

from __future__ import annotations

import shutil
from pathlib import Path
import tempfile

import click

from ..errors import UserError
from ..studyfile import is_study_file  # noqa: F401 - also named here by callers

STARTERS = Path(__file__).resolve().parents[1] / "studyfile" / "starters"  # the starters stayed in studyfile/
KINDS = ("survey", "vignette", "estimation")


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
    from simsubjects.cli.engines import engine_options  # lazy: off --help's path (collect.defaults, cli.engines)
    from simsubjects.cli.options import ABLATE_OPTION, N_OPTION, model_options  # lazy: off --help's path (cli.options, collect.defaults)

    def run(**kw):
        _collect_file(path, kw)

    f = engine_options(model_options(run))  # --batch-export/--batch-import, --max-cost, --engine as for a built-in
    f = click.option("--paths", default=None, type=click.IntRange(1, 10_000),
                     help="A session's paths per subject (each drawn from the exact distributions; default: the "
                          "file's session.paths).")(f)
    f = click.option("--judge-model", default=None,
                     help="Model that classifies free-text answers (default: the answering model).")(f)
    f = N_OPTION(f)
    f = ABLATE_OPTION(f)
    f = click.option("--method", type=click.Choice(["exact", "sampled", "generated"]), default=None,
                     help="exact: log-probabilities (default for k-choice); sampled: draw at temperature 1 until "
                          "--n valid answers; generated: a study of estimates or free text only.")(f)
    return click.command(path, help=f"Collect the study file {path} (see docs/studies.md).")(f)


def _collect_file(path: str, kw: dict) -> None:
    from simsubjects.cli.options import _model_kwargs, echo_table  # lazy: off --help's path (cli.options, collect.defaults)
    from simsubjects.studyfile.adapter import KEY, file_parameters, order_parameters, study_def  # lazy: off --help's path (pandas, pyarrow)
    from simsubjects.studyfile.design import build_trials  # lazy: off --help's path (pandas, pyarrow)
    from simsubjects.studyfile.door import load_any  # lazy: off --help's path (pandas, pyarrow)

    # --seed given: it replaces design.seed (before the seeded tables are drawn)
    seeded = click.get_current_context().get_parameter_source("seed").name != "DEFAULT"
    loaded = load_any(path, seed=kw["seed"] if seeded else None)  # every check that needs no model, first
    if loaded.kind == "session":
        from .session_cmd import collect_session_file  # lazy: off --help's path (cli.session_cmd)

        return collect_session_file(path, kw, seeded)
    if loaded.kind == "obedience":  # Milgram obedience (the built-in milgram studies are such files)
        from .obedience_cmd import collect_obedience_file  # lazy: off --help's path (cli.obedience_cmd)

        return collect_obedience_file(path, kw, seeded)
    if kw.get("paths") is not None:
        raise UserError(f"--paths: {path} is not a session (no session: key); see docs/studies.md")
    study = loaded.study
    bad = [u for u in (kw["base_url"] or "").split(",") if u and not u.startswith(("http://", "https://"))]
    if bad:
        raise UserError(f"--base-url {bad[0]}: not an http(s) URL such as http://127.0.0.1:8000/v1")
    kw["chat_template"] = kw["chat_template"] or study.chat_template
    options = _model_kwargs(kw)
    judge_loader = None
    if kw["judge_model"]:
        from ..collect.models import load_model  # lazy: looked up per call (tests replace load_model)
        from .options import _parse_model  # lazy: off --help's path (cli.options, collect.defaults)

        judge = _parse_model(kw["judge_model"])  # parsed once, here; the params keep the text

        def judge_loader():
            return load_model(judge, **options)
    from simsubjects.studyfile.adapter import check_out  # lazy: off --help's path (pandas, pyarrow)

    if kw.get("out"):
        check_out(study, kw["out"])  # before the model loads
    # a dry run or a batch file counts through the study's own collect: no `out`, so no copy is written
    planning = kw["dry_run"] or kw.get("batch_export") or kw.get("batch_import")
    sdef = study_def(study, out=None if planning else kw["out"], judge=judge_loader)
    method = kw["method"] or sdef.methods[0]
    if method not in sdef.methods:
        raise UserError(f"--method {method}: {path} supports {', '.join(sdef.methods)}")
    params = {KEY: file_parameters(study), "seed": study.seed, "chat_template": kw["chat_template"],
              "judge_model": kw["judge_model"], **order_parameters(study, None if kw["dry_run"] else kw["out"]),
              **_ablate(study, kw.get("ablate") or (), path)}
    from .collection import collect_study  # lazy: off --help's path (cli.options, cli.engines)
    from .options import _parse_model  # lazy: off --help's path (cli.options, collect.defaults)

    kw["model"] = _parse_model(kw["model"])  # the command's edge: parsed once, where run_study parsed it before

    def validate():
        from ..collect.models import load_model  # lazy: looked up per call (tests replace load_model)

        trials, _ = build_trials(study)
        model = load_model(kw["model"], **options)
        echo_table("validity rates (outcomes hidden)", sdef.validate(model, trials, {"seed": study.seed}))

    collect_study(sdef, kw, params, method, validate=validate)


def _ablate(study, ablate, path: str) -> dict:
    """--ablate of a plain study file: its twins (studyfile/design.py), checked before the model loads; the
    run's parameter (absent without twins, so a run made before resumes)."""
    ablate = tuple(dict.fromkeys(ablate))
    if "history" in ablate:
        raise UserError(f"--ablate history: {path} is not a session (no session: key); a plain study file has no "
                        "earlier rounds to remove")
    if ablate and not any(it.response.kind == "choice" for it in study.items):
        raise UserError(f"--ablate: {path} has no k-choice item; the twins score options")
    study.ablate = ablate
    return {"ablate": list(ablate)} if ablate else {}


# ------------------------------------------------------------------------------------------ study

@click.group("study")
def study_group():
    """Your own study in a YAML file: check it, or start one (docs/studies.md).

    \b
      simsubjects study new survey my_study      # a commented, runnable starting point
      simsubjects study check my_study/study.yaml
      simsubjects study schema > study.schema.json  # for your editor
      simsubjects collect my_study/study.yaml --model smollm2 --out runs/my_study
      simsubjects analyze runs/my_study
    """


@study_group.command("check")
@click.argument("study_file", type=click.Path(dir_okay=False))
@click.option("--show", default=3, show_default=True, type=click.IntRange(0), help="Rendered prompts to print.")
def check(study_file, show):
    """Validate STUDY_FILE and print its design (trials, requests, prompt tokens, prompts); no model loads."""
    from simsubjects.studyfile.check import describe  # lazy: off --help's path (pandas, pyarrow)

    from simsubjects.collect.untrusted import term  # lazy: off --help's path (collect.untrusted, collect)

    click.echo(term(describe(study_file, show), keep_newlines=True))  # study text never drives the terminal


@study_group.command("schema")
def schema():
    """Print the JSON Schema of the study-file format (for VS Code's YAML extension; docs/studies.md).

    It is generated from the definitions `study check` uses (simsubjects/studyfile/schema.py).

    \b
      simsubjects study schema > study.schema.json
    """
    import json  # lazy: off --help's path (json)

    from simsubjects.studyfile.schema import schema as study_schema  # lazy: off --help's path (pandas, pyarrow)

    click.echo(json.dumps(study_schema(), indent=1, sort_keys=True))


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

    dest.parent.mkdir(parents=True, exist_ok=True)
    # a fresh staging folder of our own: a user's `.NAME.tmp` beside it is never touched (issue 28)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".new", dir=dest.parent)) / "s"
    shutil.copytree(src, tmp)
    if dest.exists():
        dest.rmdir()
    tmp.rename(dest)  # whole or not at all
    tmp.parent.rmdir()
    click.echo(f"wrote {dest}/study.yaml and its tables; next:\n"
               f"  simsubjects study check {dest}/study.yaml\n"
               f"  simsubjects collect {dest}/study.yaml --model smollm2 --out runs/{dest.name}\n"
               f"  simsubjects analyze runs/{dest.name}")


@study_group.group("import")
def import_group():
    """Turn another tool's instrument into a study file (docs/qualtrics.md)."""


def _echo_arms(conv) -> None:
    """Parallel arms (merged or not) and, with --merge-arms, the crossed factors the arms' block names
    declare (Gain_Low ... Loss_High) or why the arms stay one factor."""
    for fname, positions in conv.parallel:
        click.echo(f"parallel arms of {fname}: {len(positions)} question(s) asked in every arm"
                   + (" (merged by --merge-arms)" if conv.merged else
                      " under their own export tags; not merged (--merge-arms makes one item each)"))
    for f in conv.factors:
        if f.split or f.unsplit:
            click.echo(f"arms of {f.name}: " + (f"crossed factors {', '.join(f.split)} (columns tested one by one)"
                                                if f.split else f"one factor ({f.unsplit})"))


@import_group.command("qualtrics")
@click.argument("survey", type=click.Path(dir_okay=False))
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--responses", default=None, type=click.Path(dir_okay=False),
              help="The survey's response export (.csv with 1, 2 or 3 header rows, or SPSS .sav): the human rows.")
@click.option("--finished-only", is_flag=True, help="Drop unfinished and preview responses.")
@click.option("--subjects", default=None, type=click.IntRange(1),
              help="Model subjects (default: one per randomizer cell, at least one; with --demographics: every "
                   "respondent's profile, or a seeded sample of this many).")
@click.option("--demographics", default=None, metavar="TAG,...",
              help="Export tags of single-answer questions that describe the respondent (age, party): group "
                   "columns of the human rows, and the model subjects become the respondents' profiles.")
@click.option("--dedupe", default=None, type=click.Choice(["first", "last"]),
              help="A respondent id that repeats in the export: keep its first or last row (listed in "
                   "IMPORT_NOTES.md). Without it a repeated id is an error naming its lines.")
@click.option("--id-column", "id_column", default=None, metavar="NAME",
              help="The respondent id column of a cleaned export whose id column is not ResponseId.")
@click.option("--merge-arms", "merge_arms", is_flag=True,
              help="Parallel arms (one block per arm under a randomizer, asking the same questions): one item per "
                   "question with the arm as its factor, so the arms are compared (listed in IMPORT_NOTES.md).")
@click.option("--people", is_flag=True,
              help="The subjects are the respondents (design.subjects: people): each is asked the items they "
                   "answered, in their arm, and analyze scores every answer under the model (fit_*.csv).")
def import_qualtrics_cmd(survey, folder, responses, finished_only, subjects, demographics, dedupe, id_column,
                         merge_arms, people):
    """Write FOLDER/study.yaml and its tables from a Qualtrics SURVEY (.qsf) and, with --responses, its export.

    \b
    Elements that cannot be converted are listed on screen and in FOLDER/IMPORT_NOTES.md.
      simsubjects study import qualtrics survey.qsf my_study --responses export.csv
      simsubjects study check my_study/study.yaml
    """
    from ..studyfile.qualtrics.write import import_qualtrics  # lazy: off --help's path (yaml)

    tags = [t.strip() for t in demographics.split(",") if t.strip()] if demographics else None
    if (dedupe or id_column) and not responses:
        raise click.UsageError("--dedupe and --id-column need --responses")
    dest, conv, human = import_qualtrics(survey, folder, responses, finished_only, subjects, tags, dedupe, id_column,
                                         merge_arms, people)
    kinds: dict = {}
    for it in conv.items:
        kinds[it.kind] = kinds.get(it.kind, 0) + 1
    click.echo(f"imported {conv.survey.name!r}: {len(conv.items)} items "
               f"({', '.join(f'{n} {k}' for k, n in kinds.items())}) from {len(conv.survey.questions)} questions"
               + (f"; randomizers: {', '.join(f.name for f in conv.factors)}" if conv.factors else ""))
    if human is not None:
        click.echo(f"responses: {human.respondents} respondents, {len(human.rows)} answer rows"
                   + (f"; dropped {human.dropped_unfinished} unfinished, {human.dropped_preview} preview"
                      if finished_only else
                      f"; kept {human.unfinished} unfinished and {human.preview} preview (--finished-only drops them)")
                   + (f"; excluded {human.dropped_test} test responses (Status = 2)" if human.dropped_test else "")
                   + ("; every response is a test response (Status = 2): kept, see IMPORT_NOTES.md"
                      if human.all_test else "")
                   + (f"; {len(human.duplicates)} repeated ids de-duplicated (--dedupe {human.dedupe})"
                      if human.duplicates else "")
                   + f"; {len(human.unmatched)} answers match no option"
                   + (f"; {len(human.missing_items)} items have no column in the export (listed in IMPORT_NOTES.md)"
                      if human.missing_items else ""))
    _echo_arms(conv)
    click.echo(f"not converted: {len(conv.notes)} element(s) (also in {dest}/IMPORT_NOTES.md)")
    for n in conv.notes:
        click.echo(f"  {n.qid}  {n.type}: {n.reason}")
    for qid, ref in conv.piped_refs:
        click.echo(f"  {qid}  piped text {ref}: shown as [piped: ...]")
    if human is not None:
        for n in human.notes:
            click.echo(f"  {n.qid}  {n.type}: {n.reason}")
        for u in human.unmatched[:20]:
            click.echo(f"  unmatched: {u['respondent']} {u['item'] or u['column']} = {u['value']!r}: {u['reason']}")
        if len(human.unmatched) > 20:
            click.echo(f"  ... {len(human.unmatched) - 20} more unmatched answers in IMPORT_NOTES.md")
    if conv.session_notes is not None:
        click.echo(f"session: {dest}/session.yaml (blocks in order, display and skip logic); "
                   f"{len(conv.session_notes)} element(s) left out of it, listed in IMPORT_NOTES.md")
    click.echo(f"wrote {dest}/study.yaml; next:\n  simsubjects study check {dest}/study.yaml\n"
               f"  simsubjects collect {dest}/study.yaml --model smollm2 --out runs/{dest.name}")
