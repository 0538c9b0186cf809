"""The `simsubjects` command: datasets, collect, analyze, export."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # annotations only: pandas is imported on first use
    import pandas as pd

from simsubjects import __version__
from simsubjects.cli.engines import engine_options
from simsubjects.cli.ppi import ppi_options, register as register_ppi
from simsubjects.cli.preload_cmd import preload_group
from simsubjects.cli.options import (  # noqa: F401 - the options collect STUDY, collect STUDY.yaml and replicate share
    BATCH_SIZE_OPTION, DEVICE_OPTION, MAX_N, N_OPTION, PAPER_N_OPTION, SEED, TIMEOUT_OPTION, _check_model, _dry_run_report, _model_kwargs,
    _pandas, _report_collection, _tokenizer, backend_options, dry_run_command, echo_table, model_options,
    run_options)
from simsubjects.errors import UserError
from simsubjects.collect.untrusted import term
from simsubjects.cli.ppi import check_ppi_inputs, ppi_requested, ppi_table


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="simsubjects")
def cli():
    """Language models as simulated participants, analyzed beside real people.

    \b
    Typical session:
      simsubjects collect ultimatum --model smollm2 --pairs 200 --out runs/ug
      simsubjects analyze runs/ug
      simsubjects export runs/ug --to rds,dta
    """


# --- datasets ----------------------------------------------------------------------------------
@cli.group()
def datasets():
    """Bundled stimuli and human reference data."""


@datasets.command("list")
def datasets_list():
    """List the bundled datasets with size, source and license."""
    from simsubjects.collect.studies.registry import declared_datasets  # lazy: off --help's path (collect.studies.registry, datasets)

    df = _pandas().DataFrame([{"name": d.name, "n": d.n, "license": d.license, "description": d.description}
                       for d in declared_datasets().values()])
    click.echo(df.to_string(index=False, max_colwidth=70))


@datasets.command("show")
@click.argument("name")
def datasets_show(name):
    """Show one dataset's description, files, source, license and citation."""
    from simsubjects.collect.studies.registry import declared_datasets  # lazy: off --help's path (collect.studies.registry, datasets)
    from simsubjects.datasets import checksum, get  # lazy: off --help's path (datasets.registry, datasets)

    d = declared_datasets().get(name) or get(name)
    click.echo(f"{d.name}: {d.description}\n  n: {d.n}\n  source: {d.source}\n  license: {d.license}\n"
               f"  citation: {d.citation}\n  files: {', '.join(str(p) for p in d.paths())}\n  checksum: {checksum(d)}")


@datasets.command("import")
@click.argument("kind", type=click.Choice(["biasmonkey", "opinionqa"]))
@click.argument("prompts_dir", type=click.Path())
@click.option("--out", default=None, type=click.Path(dir_okay=False),
              help="Write the item table here (.parquet or .csv); default: print a summary only.")
def datasets_import(kind, prompts_dir, out):
    """Read released files: BiasMonkey question files (PROMPTS_DIR) into the survey-bias item table, or an
    OpinionQA folder (<ATTRIBUTE>_data.json count files or a wave folder, with info.csv) into tidy human rows."""
    from simsubjects.studies.survey_bias.design import read_biasmonkey_questions  # lazy: off --help's path (scipy, pandas)

    if out and not Path(out).parent.is_dir():
        raise UserError(f"--out {out}: the folder {Path(out).parent} does not exist")
    if kind == "opinionqa":
        return _import_opinionqa(prompts_dir, out)
    items = read_biasmonkey_questions(prompts_dir)
    summary = items.groupby(["bias", "perturbation", "form"]).size().rename("items").reset_index()
    echo_table(f"{len(items)} items from {prompts_dir}", summary)
    if out:
        from simsubjects.collect.store import atomic_write_bytes, atomic_write_parquet  # lazy: off --help's path (pandas, numpy)
        from simsubjects.publish.export import flatten  # lazy: off --help's path (pandas, xarray)

        from simsubjects.collect.store import write_error  # lazy: off --help's path (pandas, numpy)

        try:
            if str(out).endswith(".csv"):
                atomic_write_bytes(Path(out), flatten(items).to_csv(index=False).encode("utf-8"))
            else:
                atomic_write_parquet(items, Path(out))
        except OSError as e:  # full disk, read-only folder: name --out, not the temporary file
            raise write_error(e, "--out", Path(out)) from None
        click.echo(f"wrote {out}; collect with: simsubjects collect survey-bias --questions {prompts_dir}")


def _import_opinionqa(folder, out) -> None:
    from simsubjects.datasets.opinionqa import read_opinionqa  # lazy: off --help's path (pandas, numpy)

    human = read_opinionqa(folder)
    summary = human.groupby(["attribute", "group"], sort=False).agg(questions=("key", "nunique"),
                                                                     respondents=("weight", "sum")).reset_index()
    summary["respondents"] = summary["respondents"] / summary["questions"]  # mean weight per question
    echo_table(f"{human['key'].nunique()} questions from {folder}", summary.rename(columns={"respondents": "mean weight"}))
    if out:
        from simsubjects.collect.store import atomic_write_bytes, atomic_write_parquet  # lazy: off --help's path (pandas, numpy)

        if str(out).endswith(".csv"):
            atomic_write_bytes(Path(out), human.to_csv(index=False).encode("utf-8"))
        else:
            atomic_write_parquet(human, Path(out))
        click.echo(f"wrote {out}; ask a model the same questions: simsubjects collect opinion-survey --questions {folder}")


@cli.command("import-responses")
@click.argument("kind", type=click.Choice(["biasmonkey"]))
@click.argument("results_dir", type=click.Path())
@click.option("--model", required=True, help="Name of the model these responses come from.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Run folder to write.")
@click.option("--prompts", default=None, type=click.Path(), help="Released prompts/ folder, for question texts.")
@click.option("--overwrite", is_flag=True, help="Replace a run folder that holds a different run.")
def import_responses(kind, results_dir, model, out, prompts, overwrite):
    """Turn released per-sample response files into a run folder, so `analyze` runs unchanged."""
    from simsubjects.studies.survey_bias.biasmonkey import read_biasmonkey_responses  # lazy: off --help's path (scipy, pandas)
    from simsubjects.collect.store import RunStore, stable_hash  # lazy: off --help's path (pandas, numpy)
    from simsubjects.collect.schema import check_responses  # lazy: off --help's path (pandas, numpy)

    identity = {"study": "survey_bias", "imported": kind, "model": model, "files": stable_hash(str(results_dir))}
    RunStore.check_out(out, identity, overwrite=overwrite)
    responses, items = read_biasmonkey_responses(results_dir, model, prompts)
    store = RunStore.open(out, identity, overwrite=overwrite)
    store.finish(check_responses(responses), items, {
        "study": "survey_bias", "identity": identity, "model": {"spec": model, "backend": "imported"},
        "source": {"kind": kind, "results_dir": str(results_dir), "prompts_dir": prompts},
        "counts": {"rows": len(responses), "trials": int(responses["trial"].nunique())}})
    click.echo(f"wrote {out}: {responses['trial'].nunique()} question forms, {len(responses)} rows; "
               f"now run: simsubjects analyze {out}")


# --- collect -----------------------------------------------------------------------------------
from simsubjects.cli.studyfile import CollectGroup, study_group  # noqa: E402 - study files (docs/studies.md)

cli.add_command(study_group)
from simsubjects.cli.bench import bench_group  # noqa: E402 - `simsubjects bench` (docs/bench.md)

cli.add_command(bench_group)


class StudyGroup(CollectGroup):
    """`collect <study>`: one command per declared study, built when asked for, so a study declared
    in a Python file named by SIMSUBJECTS_STUDIES is a command with no edit anywhere else; a path to
    a STUDY.yaml study file is one too (CollectGroup)."""

    def list_commands(self, ctx):
        from simsubjects.collect.studies.registry import studies  # lazy: off --help's path (collect.studies.registry, datasets)

        return sorted({*super().list_commands(ctx), *(s.name.replace("_", "-") for s in studies().values())})

    def get_command(self, ctx, name):
        cmd = super().get_command(ctx, name)
        if cmd is not None:
            return cmd
        from simsubjects.collect.studies.registry import get_study  # lazy: looked up per call (tests replace get_study)

        try:
            study = get_study(name)
        except UserError:
            return None
        return _collect_command(study, name)


@cli.group(cls=StudyGroup)
def collect():
    """Collect model responses into a run folder (resumable).

    STUDY is a declared study (below; docs/declaring.md: the bundled ones, installed packages' entry
    points simsubjects.studies, Python files named by SIMSUBJECTS_STUDIES) or the path of your own
    study file, STUDY.yaml: simsubjects collect my_study/study.yaml --model smollm2 --out runs/my_study
    """


def _collect_command(study, name: str | None = None):
    """`collect <study>`: built from the study's declaration."""

    unset_omitted = {o.param: o.omit_unset for o in study.options}

    def run(**kw):
        from simsubjects.cli.collection import collect_study  # lazy: off --help's path (cli.collection)

        _check_model(kw)
        params = {o.param: kw.pop(o.param) for o in study.options}
        params = {k: v for k, v in params.items() if v is not None or not unset_omitted.get(k)}
        params["seed"] = kw["seed"]
        if params.get("as_sample") and kw["method"] != "exact":  # checked before the model loads
            raise UserError(f"--as-sample {params['as_sample']}: turns exact distributions into samples, so it needs "
                            f"--method exact; with --method {kw['method']} give the sample size as --n")
        collect_study(study, kw, {**params, "chat_template": kw["chat_template"]}, kw["method"])

    f = engine_options(model_options(run))
    f = N_OPTION(f)
    f = click.option("--method", type=click.Choice(study.methods), default=study.methods[0], show_default=True,
                     help="exact: log-probabilities; sampled: draw at temperature 1 until --n valid answers.")(f)
    for o in reversed(study.options):
        f = click.option(*o.flags, **o.kwargs)(f)
    return click.command(name or study.name, help=study.help)(f)


# --- analyze / export ----------------------------------------------------------------------------
@cli.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path())
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="Folder for tables and figures (default: DIR/analysis).")
@click.option("--no-plots", is_flag=True, help="Tables only.")
@click.option("--check-r", is_flag=True,
              help="Recompute every statistic with an R twin in R (rpy2) and compare; exit 1 on a difference.")
@click.option("--allow-code", "allow_code", default=None, metavar="STUDY.yaml", type=click.Path(dir_okay=False),
              help="Run the `type: function` analyses of STUDY.yaml, your own study file (the same bytes as the "
                   "run's copy); a run folder's copy never runs code (docs/robustness.md).")
@click.option("--min-validity", "min_validity", default=None, type=click.FloatRange(0, 1),
              help="Flag a test (`low_validity` column) whose model rows put less than this mean probability on the "
                   "answer options; default 0.5 (docs/conventions.md, \"Validity and refusals in every denominator\").")
@ppi_options
def analyze(dirs, out, no_plots, check_r, allow_code, min_validity, **ppi):
    """Analyze one run folder (or several of one study, to compare models)."""
    from simsubjects.publish.analysis import analyze_runs  # lazy: looked up per call (tests replace analyze_runs)

    check_ppi_inputs(ppi)
    mixed = ppi_table(list(dirs), ppi) if ppi_requested(ppi) else None  # bad input fails before any output
    checked = {}

    def extra_tables(study, responses, items, tables):  # written into the same set as the tables
        more = {} if mixed is None else {"ppi": mixed}
        if check_r:
            from simsubjects.analyze.check_r import check_r as run_check  # lazy: off --help's path (scipy, pandas)

            checked["table"] = more["check_r"] = run_check(study, responses, items, tables)
        checked["more"] = more  # written beside the tables: counted with them below
        return more

    a = analyze_runs(list(dirs), out, plots=not no_plots, extra=extra_tables, code_from=allow_code,
                     **({} if min_validity is None else {"min_validity": min_validity}))
    for name, df in a.shown.items():
        echo_table(name, df)
    if mixed is not None:  # ppi.csv is in the analysis set
        echo_table("mixed subjects: human-only, model-only and prediction-powered (PPI++), 95% intervals", mixed)
    click.echo(f"\ntables and figures in {a.outdir}: {len(a.tables) + len(checked.get('more', {}))} CSV, "
               f"{len(a.figures)} PNG")
    if check_r:
        table = checked["table"]
        bad = table[~table["ok"]]
        echo_table(f"R cross-check: {len(table)} statistics, largest difference {table['abs_diff'].max():.3g}",
                   bad if len(bad) else table.sort_values("abs_diff", ascending=False).head(15), "{:.6g}")
        if len(bad):
            raise click.exceptions.Exit(1)


@cli.command()
@click.argument("run_dir", type=click.Path())
@click.option("--to", "to", default="csv,parquet", show_default=True,
              help="Comma-separated formats: csv, parquet, rds, dta, sav.")
@click.option("--out", default=None, type=click.Path(file_okay=False), help="Folder (default: RUN_DIR/export).")
def export(run_dir, to, out):
    """Export a run's tables for R, Stata, SPSS or spreadsheets, with a codebook."""
    from simsubjects.publish.export import export_run  # lazy: off --help's path (pandas, xarray)

    paths = export_run(run_dir, [f.strip() for f in to.split(",") if f.strip()], out)
    click.echo("\n".join(str(p) for p in paths))


# --- replicate / report --------------------------------------------------------------------------
@cli.command()
@click.argument("papers", nargs=-1, required=True)
@click.option("--model", "-m", default="smollm2", show_default=True,
              help="Model spec: smollm2 (embedded), hf:/path, openai:MODEL or openai:MODEL@URL.")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="Folder of the replication package (re-running the same command resumes it).")
@click.option("--scale", default=1.0, show_default=True, type=float,
              help="Sample sizes x SCALE, 0 < SCALE <= 1; 1 = the paper's full design (README of the folder says what).")
@click.option("--only", default=None, help="Comma-separated studies of the paper(s) to run (default: every one).")
@click.option("--method", type=click.Choice(["auto", "exact", "sampled"]), default="auto", show_default=True,
              help="auto: each study's default (exact log-probabilities); sampled: for servers without them.")
@PAPER_N_OPTION
@backend_options
@run_options
@click.option("--overwrite", is_flag=True, help="Replace run folders that hold different runs.")
@click.option("--seed", default=0, show_default=True, type=SEED, help="Seed of every study's design: 0 to 4294967295.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
@BATCH_SIZE_OPTION
@click.option("--allow-code", is_flag=True,
              help="Run the `type: function` analyses of the study files named here (your own files; "
                   "docs/robustness.md).")
def replicate(papers, **kw):
    """Replicate a paper (aher2023, tjuatja2024, nie2023, santurkar2023 or all) into one folder, ending with its report.

    \b
    Every study of the paper is collected at --scale with one model load, analyzed and exported
    (parquet, csv, rds, dta + codebooks); the folder gets report.html, README.md, analysis.R
    (the R twins: Rscript analysis.R) and manifest.json. A study file (STUDY.yaml, docs/studies.md)
    may stand in for a paper: it runs its own design (--scale leaves it as written; --seed other
    than 0 replaces its design.seed) into OUT/<its study name>. Examples:
      simsubjects replicate aher2023 --model smollm2 --scale 0.002 --out runs/aher2023
      simsubjects replicate my_study/study.yaml --model smollm2 --out runs/my_replication
    """
    from .replicate import replicate as run_replicate  # lazy: off --help's path (scipy, pandas)

    _check_model(kw)
    only = [s for s in (kw["only"] or "").split(",") if s.strip()]
    if kw["dry_run"]:
        from simsubjects.cli.dryrun import check_prices, dry_run_replicate  # lazy: off --help's path (pandas, numpy)

        check_prices(kw["price_in"], kw["price_out"])
        rows, model = dry_run_replicate(list(papers), kw["model"], scale=kw["scale"], seed=kw["seed"],
                                        method=kw["method"], n=kw["n"], only=only, batch_size=kw["batch_size"],
                                        chat_template=kw["chat_template"], tokenizer=_tokenizer(kw))
        return _dry_run_report(rows, model, kw["model"], kw)
    man = run_replicate(list(papers), kw["model"], kw["out"], scale=kw["scale"], seed=kw["seed"], method=kw["method"],
                        n=kw["n"], only=only, overwrite=kw["overwrite"], model_options=_model_kwargs(kw),
                        show_progress=not kw["quiet"], batch_size=kw["batch_size"], allow_code=kw["allow_code"],
                        cli_options={"papers": list(papers), **kw, "model": kw["model"].text},
                        log=lambda m: click.echo(m, err=True))
    rows = [{"study": e["study"], "status": e.get("status"), "trials": e.get("counts", {}).get("trials"),
             "validity": e.get("counts", {}).get("mean_validity"),
             "seconds": sum(e.get("timings", {}).values()) if e.get("timings") else None}
            for e in man["studies"]]
    echo_table(f"{', '.join(man['papers'])} at scale {man['scale']:g} on {man['model']['spec']}", _pandas().DataFrame(rows))
    out = Path(kw["out"])
    click.echo(f"\nR side: cd {out} && Rscript analysis.R\nreport: {out / 'report.html'}")
    if any(e.get("status") == "failed" for e in man["studies"]):
        raise click.exceptions.Exit(1)


@cli.command()
@click.argument("run_dir", type=click.Path())
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="HTML file (default: RUN_DIR/report.html).")
def report(run_dir, out):
    """Render a run folder or a replication folder as one self-contained HTML report; prints its path."""
    from simsubjects.publish.report import render_report  # lazy: off --help's path (scipy, pandas)

    click.echo(str(render_report(run_dir, out=out)))


register_ppi(cli)  # `simsubjects plan`
cli.add_command(preload_group)  # `simsubjects preload start|stop|status` (simsubjects/cli/preload.py)


# CPython's cyclic collector runs a full collection (every tracked object) whenever a quarter more
# objects have survived; a command's process holds about a million long-lived objects from torch,
# transformers, pandas and matplotlib, so each full collection costs 0.3-0.5 s, and a tiny `replicate`
# ran ten of them (6.3 of its 89 CPU seconds in the collector). Ten times fewer young collections and
# ten times fewer full ones: 0.9 s. Cyclic garbage that outlived two young collections waits longer for
# the full one; the process is a batch job that exits when done.
GC_THRESHOLDS = (10_000, 20, 100)


def batch_gc() -> None:
    """The collector's thresholds for a command's process (the CLI's, not a script's that imports the package)."""
    gc.set_threshold(*GC_THRESHOLDS)


def main(argv=None) -> int:
    """Exit codes: 0 done; 1 a finding (--check-r differences, a failed study in replicate);
    2 bad input or a refused write (one line naming what to fix); 70 an internal error (one line
    with the path of a log holding the traceback; see simsubjects.cli.crash); 130 interrupted."""
    from .crash import INTERNAL_ERROR, one_line, os_error_line, redact, single_line, write_log  # lazy: off --help's path (redact, cli.crash)

    batch_gc()
    try:
        code = cli.main(args=argv, prog_name="simsubjects", standalone_mode=False)
        if type(code) is int:  # click returns an explicit Exit's code (analyze --check-r, preload status)
            return code
    except UserError as e:
        click.echo(redact(single_line(f"error: {e}")), err=True)
        return 2
    except click.ClickException as e:
        ctx = getattr(e, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx else ""
        click.echo(redact(single_line(f"error: {e.format_message()}{hint}")), err=True)
        return 2
    except click.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.exceptions.Exit as e:
        return e.exit_code
    except OSError as e:  # the file system refused (disk full, read-only, permissions): one line, not a traceback
        click.echo(single_line(f"error: {os_error_line(e)}"), err=True)
        return 2
    except Exception as e:  # noqa: BLE001 - the top-level guard: one line and a log, never a traceback
        log = write_log(e, sys.argv[1:] if argv is None else list(argv))
        click.echo(f"error: {one_line(e, log)}", err=True)
        return INTERNAL_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
