"""`collect` options for large runs: batch files (--batch-export/--batch-import), a budget cap
(--max-cost) and the Ray engine (--engine ray). Kept apart from cli/commands.py, which only applies them.

docs/scaling.md describes each; the work is done in collect/batch.py, collect/budget.py and
collect/ray_engine.py.
"""

from __future__ import annotations

from pathlib import Path

import click

from simsubjects.cli.options import with_options
from simsubjects.errors import UserError
from .options import _tokenizer


def engine_options(f):
    opts = [
        click.option("--batch-export", "batch_export", default=None, type=click.Path(dir_okay=False),
                     help="openai: models: write every request the run's cache lacks as OpenAI Batch input JSONL "
                          "(custom_id = cache key), split at 50,000 requests / 200 MB; sends nothing, needs no key."),
        click.option("--batch-format", default="auto", show_default=True,
                     type=click.Choice(["auto", "chat-top", "completions-top", "completions-echo",
                                        "completions-prompt-logprobs"]),
                     help="Body of k-choice lines: *-top: next-token top-20 log-probabilities (exact for one-token "
                          "options); completions-echo / completions-prompt-logprobs (vLLM): exact for any option. "
                          "auto: chat-top for the OpenAI API, else completions-top."),
        click.option("--batch-max-requests", default=50_000, show_default=True, type=click.IntRange(1, 50_000),
                     help="Lines per exported file (the OpenAI Batch API's limit is 50,000)."),
        click.option("--batch-import", "batch_import", multiple=True, type=click.Path(dir_okay=False),
                     help="A batch output file (OpenAI Batch API or vllm run-batch) to check and add to the run's "
                          "cache; repeat for several. Then run the same command without it to finish."),
        click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="ray: a local model on a pool of Ray actors (one per GPU, else --ray-actors CPU actors), "
                          "with the same rows as local; resumes either way."),
        click.option("--ray-address", default=None,
                     help="With --engine ray: the cluster to join (auto: the running one; default: start a local one)."),
        click.option("--ray-actors", default=None, type=int,
                     help="With --engine ray: actors to start (default: one per GPU, else 2 CPU actors)."),
        click.option("--ray-threads", default=1, show_default=True, type=int,
                     help="With --engine ray: CPU threads (and CPUs reserved) per actor."),
        click.option("--max-cost", default=None, type=float, metavar="USD",
                     help="Stop before this command's usage, priced by --price-in/--price-out, would pass USD; "
                          "what is done is kept (resume with a larger cap). With --dry-run: say whether the run fits."),
    ]
    return with_options(f, opts)


def check_engine_options(kw: dict) -> None:
    """Conflicts and values, before anything loads."""
    from simsubjects.collect.budget import check_budget  # lazy: off --help's path (collect.budget)

    exclusive = [name for name, on in (("--batch-export", kw.get("batch_export")), ("--batch-import", kw.get("batch_import")),
                                       ("--dry-run", kw.get("dry_run")), ("--validate", kw.get("validate"))) if on]
    if len(exclusive) > 1:
        raise UserError(f"{' and '.join(exclusive)}: give one of them")
    if kw.get("max_cost") is not None and (kw.get("batch_export") or kw.get("batch_import")):
        raise UserError("--max-cost: a batch file is priced by its provider; use --dry-run --max-cost to check it fits")
    check_budget(kw.get("max_cost"), kw.get("price_in"), kw.get("price_out"))
    from simsubjects.collect.ray_engine import check_engine  # lazy: off --help's path (collect.ray_engine)

    if kw.get("engine") == "ray" and (kw.get("batch_export") or kw.get("batch_import") or kw.get("validate")):
        raise UserError("--engine ray: collects; drop it with --batch-export, --batch-import or --validate")
    if not kw.get("dry_run"):
        check_engine(kw.get("engine", "local"), kw["model"], kw.get("ray_actors"), kw.get("ray_threads", 1),
                     kw.get("ray_address"))


def engine_of(kw: dict) -> dict | None:
    if kw.get("engine") != "ray":
        return None
    return {"name": "ray", "address": kw.get("ray_address"), "actors": kw.get("ray_actors"),
            "threads": kw.get("ray_threads", 1)}


def budget_of(kw: dict):
    from simsubjects.collect.budget import Budget  # lazy: off --help's path (collect.budget)

    if kw.get("max_cost") is None:
        return None

    return Budget(kw["max_cost"], kw.get("price_in") or 0.0, kw.get("price_out") or 0.0, _tokenizer(kw))


def report_fit(rows, kw: dict) -> None:
    """--dry-run --max-cost: does the whole run fit under the cap?"""
    if kw.get("max_cost") is None:
        return
    from simsubjects.collect.budget import Budget  # lazy: off --help's path (collect.budget)

    b = Budget(kw["max_cost"], kw.get("price_in") or 0.0, kw.get("price_out") or 0.0)
    price = b.price(sum(r["prompt_tokens"] for r in rows), sum(r["completion_tokens_max"] for r in rows))
    verdict = "fits" if price <= b.cap else "does not fit"
    click.echo(f"--max-cost {b.cap:g}: the run {verdict} (price_max ${price:.6g}, an upper bound; answers already "
               f"cached in --out are not subtracted)")


def batch_files(study, params: dict, method: str, kw: dict) -> bool:
    """--batch-export / --batch-import; True when one of them ran (the command is then done).
    `params`: the run's parameters, chat_template included (cli/collection.py)."""
    if not (kw.get("batch_export") or kw.get("batch_import")):
        return False
    from simsubjects.collect.batch import export_batch, import_batch, plan_requests  # lazy: off --help's path (pandas, numpy)

    plan = plan_requests(study, kw["model"], kw["out"], params=params, method=method, n=kw["n"],
                         batch_size=kw["batch_size"], base_url=kw.get("base_url"))
    if kw.get("batch_export"):
        paths, n = export_batch(plan, kw["batch_export"], kw["batch_format"], max_requests=kw["batch_max_requests"],
                                overwrite=kw.get("overwrite", False))
        if not paths:
            click.echo(f"nothing to export: the cache in {kw['out']} holds every request; run the same command "
                       "without --batch-export to finish")
            return True
        click.echo(f"wrote {n} requests to {', '.join(map(str, paths))}; run them (docs/scaling.md: OpenAI Batch API "
                   f"or vllm run-batch), then: the same command with --batch-import RESULTS.jsonl")
        return True
    got = import_batch(plan, kw["out"], [Path(p) for p in kw["batch_import"]])
    click.echo(f"imported {len(got.answers)} answers into {kw['out']} ({got.lines} result lines"
               + (f", {got.already} already cached and kept" if got.already else "") + ")")
    for what, keys in (("failed", list(got.failed)), ("missing", got.missing)):
        if keys:
            reasons = got.failed if what == "failed" else {}
            shown = "; ".join(f"{k[:16]}…{': ' + reasons[k] if k in reasons else ''}" for k in keys[:5])
            click.echo(f"{len(keys)} requests {what} ({shown}{'; ...' if len(keys) > 5 else ''})", err=True)
    click.echo("now run the same command without --batch-import: it finishes from the cache"
               + (" and asks the server only for the failed and missing requests" if got.failed or got.missing else ""))
    return True
