"""`simsubjects bench list|run|report` (docs/bench.md): a corpus of published findings, run on a model through
the ordinary study-file collection and scored against the people."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from simsubjects.cli.engines import budget_of, check_engine_options, engine_of, engine_options
from simsubjects.cli.options import _check_model, _model_kwargs, echo_table, model_options
from simsubjects.errors import UserError
from simsubjects.collect.defaults import SAMPLES
from simsubjects.cli.engines import report_fit
from simsubjects.cli.options import _dry_run_report, _tokenizer

RECORD = "bench.json"  # OUT/bench.json: which corpora and findings `bench run` ran (read by `bench report`)


@click.group("bench")
def bench_group():
    """A corpus of published findings: list it, run it on a model, score the model (docs/bench.md)."""


@bench_group.command("list")
@click.argument("corpus", required=False, default="all")
def list_cmd(corpus):
    """Every finding of CORPUS (default: all bundled corpora; or a folder of finding files)."""
    from simsubjects.bench.corpus import load_corpus  # lazy: off --help's path (pandas, pyarrow)

    fs = load_corpus(corpus)
    import pandas as pd  # lazy: off --help's path (pandas, pyarrow)

    df = pd.DataFrame([{"finding": f.id, "corpus": f.corpus, "citation": f.citation, "year": f.year,
                        "runnable": "yes" if f.runnable else "no", "why not": f.reason or ""} for f in fs])
    echo_table(f"{len(fs)} findings ({sum(f.runnable for f in fs)} runnable)", df)


def _load(corpora: tuple[str, ...]) -> list:
    from simsubjects.bench.corpus import load_corpus  # lazy: off --help's path (pandas, pyarrow)

    found, seen = [], set()
    for c in corpora:
        for f in load_corpus(c):
            if f.id not in seen:
                seen.add(f.id)
                found.append(f)
    return found


def _run(corpora, findings, **kw):
    from simsubjects.bench import run as bench_run  # lazy: off --help's path (bench)

    if not corpora:
        raise UserError("bench run: name a corpus (all, a bundled name, or a folder of finding files)")
    ids = [i.strip() for i in findings.split(",") if i.strip()] if findings else None
    chosen = bench_run.select(_load(corpora), ids)
    if not chosen:
        raise UserError(f"{', '.join(corpora)}: no runnable finding")
    if kw.get("validate"):
        raise UserError("--validate: not a bench option; check one finding's prompts with "
                        "`simsubjects collect FINDING/study.yaml --validate`")
    _check_model(kw)  # the spec, --base-url and --timeout, before anything is written
    check_engine_options(kw)  # --batch-export, --max-cost, --engine: before anything loads
    out = Path(kw["out"])
    seeded = click.get_current_context().get_parameter_source("seed").name != "DEFAULT"
    planned = bench_run.plan(chosen, None if kw["dry_run"] else out, kw["chat_template"],
                             seed=kw["seed"] if seeded else None)
    if kw["dry_run"]:
        return _dry(bench_run, planned, kw)
    if kw.get("batch_export") or kw.get("batch_import"):
        return _batch_files(planned, kw)
    bench_run.check_folders(planned, kw["model"], kw["overwrite"])
    _record(out, corpora, chosen)
    done = collect_planned(planned, kw)
    failed = sum(r["failures"] for r in done)
    click.echo(f"wrote {out}: {len(planned)} findings ({len(done)} collected now, "
               f"{len(planned) - len(done)} already finished){f', {failed} trials failed' if failed else ''}; "
               f"next: simsubjects bench report {out}")


def _record(out: Path, corpora, chosen) -> None:
    from simsubjects.collect.store import atomic_write_json  # lazy: off --help's path (pandas, numpy)

    out.mkdir(parents=True, exist_ok=True)
    where = [c if c == "all" or not Path(c).is_dir() else str(Path(c).resolve()) for c in corpora]
    old = {}
    try:
        old = json.loads((out / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    ids = list(dict.fromkeys([*(old.get("findings") or []), *[f.id for f in chosen]]))
    atomic_write_json({"corpora": list(dict.fromkeys([*(old.get("corpora") or []), *where])), "findings": ids},
                      out / RECORD)


def _dry(bench_run, planned, kw) -> None:
    from simsubjects.collect.dryrun import check_prices  # lazy: off --help's path (pandas, pyarrow)

    check_prices(kw["price_in"], kw["price_out"])
    rows, model = bench_run.dry_run(planned, kw["model"], _tokenizer(kw), kw["batch_size"])
    _dry_run_report(rows, model, kw["model"], kw)
    report_fit(rows, kw)


def _per_finding(path, finding_id: str) -> Path:
    base = Path(path)
    return base.with_name(f"{base.stem}-{finding_id}{base.suffix or '.jsonl'}")


def _batch_files(planned, kw) -> None:
    """--batch-export FILE: each finding's requests into FILE-<finding id>.jsonl (one set per run folder);
    --batch-import FILE...: each finding's results from FILE-<finding id>.jsonl, the same naming, every
    file checked to exist before any is read. Both through the one collection (cli/collection.py)."""
    from .collection import collect_study  # lazy: off --help's path (cli.collection: pandas, numpy)

    if kw.get("batch_import"):
        missing = [str(_per_finding(f, p.finding.id)) for p in planned for f in kw["batch_import"]
                   if not _per_finding(f, p.finding.id).is_file()]
        if missing:
            raise UserError(f"--batch-import: {missing[0]} does not exist ({len(missing)} finding result files "
                            "missing; bench reads FILE-<finding id>.jsonl, the names --batch-export wrote)")
    for p in planned:
        click.echo(f"{p.finding.id}:")
        one = {**kw, "out": p.out, "n": SAMPLES,
               "batch_export": _per_finding(kw["batch_export"], p.finding.id) if kw.get("batch_export") else None,
               "batch_import": [_per_finding(f, p.finding.id) for f in kw.get("batch_import") or ()]}
        collect_study(p.sdef, one, p.params, p.sdef.methods[0])
    if kw.get("batch_export"):
        click.echo(f"bench: save each finding's results as {_per_finding('RESULTS.jsonl', '<finding id>')} and "
                   "run the same command with --batch-import RESULTS.jsonl")


def collect_planned(planned, kw: dict) -> list[dict]:
    """Every planned finding not yet finished, each through the one collection of every collect entry point
    (cli/collection.collect_study: store, resume, --max-cost, --engine), one progress bar (trials) over the
    corpus. The model loads once, and only when some finding needs it; --max-cost caps the whole corpus
    (one budget shared by the findings)."""
    from tqdm.auto import tqdm  # lazy: off --help's path (tqdm)

    from simsubjects.bench import run as bench_run  # lazy: off --help's path (pandas, yaml)
    from simsubjects.collect.models import load_model  # lazy: looked up per call (tests replace load_model)

    from .collection import collect_study  # lazy: off --help's path (cli.collection: pandas, numpy)

    todo = [p for p in planned if kw["overwrite"] or not bench_run.done(p.out)]
    total = sum(len(p.sdef.make(**p.params)[0]) for p in todo)
    budget, engine, model, results = budget_of(kw), engine_of(kw), None, []
    with tqdm(total=total, desc=f"bench ({len(todo)} of {len(planned)} findings to run)", unit="trial",
              disable=kw["quiet"], file=sys.stderr) as bar:
        for p in todo:
            if model is None and engine is None:
                model = load_model(kw["model"], **_model_kwargs(kw))
            one = {**kw, "out": p.out, "n": SAMPLES, "quiet": True}
            manifest = collect_study(p.sdef, one, p.params, p.sdef.methods[0], model=model, report=False,
                                     budget=budget)
            n = len(p.sdef.make(**p.params)[0])
            bar.update(n)
            results.append({"finding": p.finding.id, "trials": n, "failures": len(manifest.get("failures") or [])})
    return results


def _run_command():
    def run(corpora, findings, **kw):
        _run(corpora, findings, **kw)

    f = engine_options(model_options(run))
    f = click.option("--findings", default=None, metavar="ID,...", help="Run only these findings.")(f)
    f = click.argument("corpora", nargs=-1)(f)
    return click.command("run", help="Run every finding of CORPUS... (all, a bundled corpus, or a folder of "
                                     "finding files) on --model into --out (resumable).")(f)


bench_group.add_command(_run_command())


@bench_group.command("report")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--cutoff", type=click.IntRange(1000, 3000), default=None, metavar="YYYY",
              help="The model's training cutoff year: findings published up to it and after it are scored apart.")
@click.option("--check-r", is_flag=True, help="Recompute the effect sizes and across-finding statistics in R.")
def report_cmd(folder, cutoff, check_r):
    """Score the runs in FOLDER: FOLDER/scorecard.csv, across.csv and bench_report.html."""
    from simsubjects.bench import run as bench_run  # lazy: off --help's path (bench)
    from simsubjects.bench import score  # lazy: off --help's path (scipy, pandas)

    out = Path(folder)
    try:
        rec = json.loads((out / RECORD).read_text(encoding="utf-8"))
        corpora, ids = list(rec["corpora"]), set(rec["findings"])
    except (OSError, ValueError, KeyError, TypeError):
        raise UserError(f"{out / RECORD}: missing or unreadable; {out} is not a `simsubjects bench run` "
                        "folder") from None
    findings = [f for f in _load(tuple(corpora)) if f.id in ids]
    card = score.scorecard(findings, bench_run.finished_folders(findings, out))
    table = score.across(card, cutoff)
    check = None
    if check_r:
        from simsubjects.bench.check_r import check_bench  # lazy: off --help's path (scipy, pandas)

        check = check_bench(card, table)
    from simsubjects.publish.bench_report import write_report  # lazy: off --help's path (scipy, pandas)

    paths = write_report(out, card, table, check)
    click.echo(f"scored {len(card)} of {len(findings)} findings; wrote {', '.join(map(str, paths))}")
    if check is not None and not check["ok"].all():
        raise SystemExit(1)
