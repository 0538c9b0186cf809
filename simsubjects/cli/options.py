"""The options that `collect STUDY`, `collect STUDY.yaml` and `replicate` share, and the helpers that
read them and print what a command did (tables, the collection summary, the dry-run report).

Below every command module (commands.py, studyfile.py, ppi.py): they import from here, never from
each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # annotations only: pandas is imported on first use
    import pandas as pd


def _pandas():
    """pandas with the CLI's display options, imported on first use: `--help`, `--version` and
    `preload` never pay its ~0.8 s import."""
    import pandas as pd  # lazy: off --help's path (pandas, pyarrow)

    pd.set_option("display.width", 160)
    pd.set_option("display.max_columns", 20)
    pd.set_option("display.max_rows", 200)
    return pd


from simsubjects.collect.defaults import BATCH_SIZE, MAX_N, SAMPLES  # the one home of the defaults

SEED = click.IntRange(0, 2**32 - 1)  # numpy's and pandas' seeds are unsigned 32-bit integers

DEVICE_OPTION = click.option("--device", default="auto", show_default=True,
                             help="Where a local model runs: auto (a CUDA GPU if there is one), cpu, cuda, cuda:N.")


TIMEOUT_OPTION = click.option(
    "--timeout", default=None, type=float, metavar="SECONDS",
    help="openai: models only: the deadline of one request (connect, send, read; default 60). A server "
         "that does not answer the first request within it stops the run.")


# how the model is reached and run: the same options, in this order, for collect and replicate
BACKEND_OPTIONS = (
    click.option("--base-url", default=None, help="OpenAI-compatible server URL(s), comma-separated."),
    TIMEOUT_OPTION,
    click.option("--chat-template", is_flag=True, help="Wrap prompts in the model's chat template."),
    click.option("--trust-remote-code", is_flag=True, help="Allow a local model's own Python code (off by default)."),
    DEVICE_OPTION,
)
BATCH_SIZE_OPTION = click.option("--batch-size", default=BATCH_SIZE, show_default=True, type=click.IntRange(1),
                                 help="Trials per batch; each finished batch is saved before the next starts.")
N_OPTION = click.option("--n", default=SAMPLES, show_default=True, type=click.IntRange(1, MAX_N),
                        help=f"Valid answers per trial when --method sampled (1 to {MAX_N:,}).")
# issue 39: ablation twins of the same decisions, collected into the same run folder (rows: `ablation`);
# `collect STUDY.yaml` (studyfile/design.py) and `collect SESSION.yaml` (sessions: also history) share it
ABLATIONS = ("instructions", "labels", "history")
ABLATE_OPTION = click.option(
    "--ablate", "ablate", multiple=True, type=click.Choice(ABLATIONS),
    help="Also collect a twin of every decision without the task's instructions (instructions), with neutral "
         "option labels (labels) or, in a session, without the earlier rounds (history); repeatable. The twins' "
         "rows carry `ablation`; analyze shows the fit to people with and without each.")
# replicate: no default of its own; each paper's sample size, scaled (else SAMPLES: cli/replicate.py)
PAPER_N_OPTION = click.option("--n", default=None, type=click.IntRange(1, MAX_N),
                              help="Valid answers per trial with --method sampled (default: the paper's, scaled).")


def with_options(f, options):
    """`f` with click's `options` applied so that --help lists them in the order given."""
    for o in reversed(options):
        f = o(f)
    return f


def backend_options(f):
    """--base-url, --timeout, --chat-template, --trust-remote-code, --device (collect and replicate)."""
    return with_options(f, BACKEND_OPTIONS)


def run_options(f):
    """Precision, placement, the weight cache, and --dry-run: options of collect and replicate."""
    opts = [
        click.option("--dtype", type=click.Choice(["auto", "float32", "bfloat16", "float16"]), default="auto",
                     show_default=True, help="A local model's weight precision. auto: bfloat16 on a GPU that "
                     "supports it, float32 on CPU. Scoring's log-softmax is float64 either way."),
        click.option("--device-map", type=click.Choice(["auto"]), default=None,
                     help="auto: accelerate spreads a local model over the GPUs (then CPU memory), for a model "
                     "larger than one GPU."),
        click.option("--cache-weights", is_flag=True,
                     help="Keep a safetensors copy of an hf: model in the weight cache ($SIMSUBJECTS_CACHE, else "
                     "~/.cache/simsubjects) for fast later loads (GGUF files always are)."),
        click.option("--dry-run", is_flag=True,
                     help="Load no weights, answer nothing, write nothing: print the trials, requests, forward "
                     "passes or generations and prompt tokens the run would take (and its price with --price-in/out)."),
        click.option("--price-in", type=float, default=None,
                     help="With --dry-run or --max-cost: price per million prompt tokens (no prices are built in)."),
        click.option("--price-out", type=float, default=None,
                     help="With --dry-run or --max-cost: price per million completion tokens."),
        click.option("--tokenizer", "tokenizer", default=None,
                     help="With --dry-run on an API model: a local model (smollm2, hf:/path) whose tokenizer "
                     "counts the tokens (default: smollm2's, an approximation)."),
    ]
    return with_options(f, opts)


def dry_run_command(study, spec, params: dict, method: str, kw: dict) -> list[dict]:
    """`collect ... --dry-run` for a built-in study, a study file or a session: the prices checked, the
    collection counted by the tokenizer (no weights, nothing written), the table printed; its rows."""
    from simsubjects.collect.dryrun import check_prices, dry_run_study  # lazy: off --help's path (pandas, pyarrow)

    check_prices(kw["price_in"], kw["price_out"])
    rows, model = dry_run_study(study, spec, params, method=method, n=kw["n"], batch_size=kw["batch_size"],
                                chat_template=kw["chat_template"], tokenizer=_tokenizer(kw))
    _dry_run_report(rows, model, spec, kw)
    return rows


def _dry_run_report(rows, model, spec: str, kw: dict) -> None:
    from simsubjects.collect.dryrun import describe, price_table  # lazy: off --help's path (pandas, pyarrow)

    from simsubjects.redact import redact  # lazy: off --help's path (redact)

    spec = redact(str(spec))  # a URL's credentials are never shown
    df = price_table(rows, model.local, kw["price_in"], kw["price_out"])
    echo_table(f"dry run of {spec}", df, "{:.6g}")
    click.echo(describe(df, spec, model.local, kw["tokenizer"]))


def model_options(f):
    """Options shared by every collection: which model, and how to run it."""
    opts = [
        click.option("--model", "-m", "model", default="smollm2", show_default=True,
                     help="Model spec: smollm2 (embedded), hf:/path, openai:MODEL or openai:MODEL@URL."),
        click.option("--out", "-o", "out", required=True, type=click.Path(file_okay=False),
                     help="Run folder to write (re-running the same command resumes it)."),
        *BACKEND_OPTIONS,
        click.option("--overwrite", is_flag=True, help="Replace a run folder that holds a different run."),
        click.option("--seed", default=0, show_default=True, type=SEED,
                     help="Seed of the design (names, samples): 0 to 4294967295."),
        click.option("--validate", is_flag=True,
                     help="Prompt validation: run a small sample and report validity rates only, never outcomes."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar."),
        BATCH_SIZE_OPTION,
    ]
    return run_options(with_options(f, opts))


def _model_kwargs(kw: dict) -> dict:
    out = {"chat_template": kw["chat_template"], "trust_remote_code": kw["trust_remote_code"], "device": kw["device"]}
    # only what was asked for: the defaults leave every backend's own defaults in place
    if kw.get("dtype", "auto") != "auto":
        out["dtype"] = kw["dtype"]
    if kw.get("device_map"):
        out["device_map"] = kw["device_map"]
    if kw.get("cache_weights"):
        out["cache_weights"] = True
    if kw.get("base_url"):
        out["base_url"] = kw["base_url"]
    if kw.get("timeout") is not None:
        out["timeout"] = kw["timeout"]
    return out


def _check_model(kw: dict) -> None:
    """The model spec, --base-url and --timeout, checked before anything is built or loaded. The command's
    edge: kw["model"] is parsed here, once, into a ModelSpec that everything below takes."""
    kw["model"] = _parse_model(kw["model"])
    from simsubjects.collect.models import check_model_options  # lazy: off --help's path (numpy)

    check_model_options(kw["model"], kw.get("base_url"), kw.get("timeout"))


def _parse_model(spec):
    """--model (or --judge-model, --tokenizer) text -> a ModelSpec; parsed only in the command layer."""
    from simsubjects.collect.models import ModelSpec, parse_spec  # lazy: off --help's path (numpy)

    return spec if isinstance(spec, ModelSpec) else parse_spec(spec)


def _tokenizer(kw: dict):
    """--tokenizer, parsed (None when not given)."""
    return _parse_model(kw["tokenizer"]) if kw.get("tokenizer") else None


def echo_table(title: str, df: pd.DataFrame, floatfmt: str = "{:.4g}") -> None:
    _pandas()
    from simsubjects.collect.untrusted import term  # lazy: off --help's path (collect.untrusted, errors)

    click.echo(f"\n== {term(title)} ==")
    if df.empty:
        click.echo("(empty)")
        return
    # cells hold study text: control characters (escape sequences) are shown escaped, never sent raw
    click.echo(term(df.to_string(index=False, float_format=lambda v: floatfmt.format(v)), keep_newlines=True))


def _report_collection(out, manifest: dict) -> None:
    c = manifest["counts"]
    click.echo(f"wrote {out}: {c['answered']}/{c['trials']} trials, {c['rows']} rows, "
               f"mean validity {c['mean_validity']:.4f}, {manifest['timings']['collection_seconds']:.1f}s")
    if c.get("tasks_per_second") is not None:  # conjoint studies: choice tasks, not trials
        click.echo(f"{c['tasks']} tasks in {c['task_orders']} task orders: {c['tasks_per_second']:g} tasks/s"
                   + (f", {c['forward_passes']} forward passes" if "forward_passes" in c else ""))
    if manifest.get("short"):
        click.echo(f"{len(manifest['short'])} trials reached the sampling budget (20 x --n draws) with fewer than "
                   f"--n valid answers; their rows hold the valid answers found (n_samples; listed in "
                   f"manifest.json under short)", err=True)
    if manifest["failures"]:
        click.echo(f"{len(manifest['failures'])} trials failed (listed in manifest.json); "
                   "run the same command again to retry only them", err=True)
