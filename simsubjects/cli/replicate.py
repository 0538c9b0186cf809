"""`simsubjects replicate PAPER`: every study of a paper, collected, analyzed, exported and reported.

Papers and their studies come from the study declarations (simsubjects.papers): each study's
`Plan` turns `--scale` into its collect parameters. Scale 1.0 is the paper's own design (every
name pair, every name, every subject, every story, 50 samples per question form); a smaller scale
multiplies the sample sizes, with a floor per study so the analysis still has something to test.
A study declared in a file outside the package (SIMSUBJECTS_STUDIES) joins its paper the same way.

The output folder is a replication package: one run folder per study (collect + analyze + export),
`manifest.json` (papers, scale, command, every run's manifest), `README.md`, `analysis.R` (the R
twins on the exported data) and `report.html` (simsubjects.publish.report). The model is loaded once and
shared by every study. Re-running the same command resumes: each run folder answers from its
request cache.
"""

from __future__ import annotations

import json
import platform
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from simsubjects import __version__
from simsubjects.cli.collection import collect_study
from simsubjects.collect.defaults import BATCH_SIZE, SAMPLES
from simsubjects.collect.store import atomic_write_bytes, atomic_write_json
from simsubjects.errors import UserError
from simsubjects.papers import ALL, KIND, Paper, plan_studies, resolve_papers, size  # noqa: F401 - re-exported
from simsubjects.publish.rpackage import copy_r_package, r_package_version, source_commit
from simsubjects.redact import redact, redact_obj
from simsubjects.studyfile.origin import file_of
from simsubjects.collect.untrusted import shell_join
from simsubjects.publish.readme import readme
from simsubjects.publish.rscript import r_script
from simsubjects.collect.store import check_writable
from simsubjects.collect.untrusted import ALLOW_CODE
from simsubjects.studyfile import is_study_file
from simsubjects.studyfile.adapter import replicate_row
from simsubjects.studyfile.door import load_any

EXPORT_FORMATS = ["parquet", "csv", "rds", "dta", "sav"]


def canonical_command(papers: list[Paper], *, model: str, out, scale: float, seed: int = 0, method: str = "auto",
                      only: list[str] | None = None, chat_template: bool = False, base_url: str | None = None) -> str:
    """The command that re-creates the folder (what the README and the report print)."""
    args = ["simsubjects", "replicate", *[p.key for p in papers], "--model", model, "--scale", f"{scale:g}",
            "--out", str(out)]
    if seed:
        args += ["--seed", str(seed)]
    if method != "auto":
        args += ["--method", method]
    if only:
        args += ["--only", ",".join(only)]
    if chat_template:
        args.append("--chat-template")
    if base_url:
        args += ["--base-url", base_url]
    return shell_join(args)  # one line whatever a path holds: README, report and analysis.R quote it


def _check_folder(out: Path, papers: list[Paper], overwrite: bool) -> None:
    mpath = out / "manifest.json"
    if not mpath.is_file():
        return
    try:
        old = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    if old.get("kind") != KIND:
        if old.get("study"):
            raise UserError(f"--out {out}: holds a single `collect` run; choose another folder")
        return
    had = sorted(old.get("papers", []))
    if had != sorted(p.key for p in papers) and not overwrite:
        raise UserError(f"--out {out}: holds a replication of {', '.join(had)}; choose another folder or pass --overwrite")


@dataclass
class Replication:
    """What `plan` settles before the model loads: the papers, each study's row (paper, plan, study,
    parameters), the study files whose code may run, the model, the folder and the run settings."""

    papers: list
    rows: list
    code: dict
    model: object  # ModelSpec
    public: str  # the model as files and messages show it (no URL credentials, no key)
    out: Path
    command: str
    scale: float
    seed: int
    method: str
    n: int | None
    overwrite: bool
    model_options: dict
    batch_size: int
    show_progress: bool
    started: float = field(default_factory=time.perf_counter)


def replicate(paper_names, model, out, *, scale: float = 1.0, seed: int = 0, method: str = "auto",
              n: int | None = None, only: list[str] | None = None, overwrite: bool = False,
              model_options: dict | None = None, show_progress: bool = True, batch_size: int = BATCH_SIZE,
              cli_options: dict | None = None, log: Callable[[str], None] = print, loaded_model=None,
              allow_code: bool = False) -> dict:
    """Run, analyze and export every study of the papers into `out`; write manifest, README, R script, report:
    plan -> collect -> analyze -> export -> package, one function each.

    Returns the folder's manifest (also written to out/manifest.json). `loaded_model`: an already
    loaded model to use instead of loading `model` (tests share one).
    """
    rep = plan(paper_names, model, out, scale=scale, seed=seed, method=method, n=n, only=only, overwrite=overwrite,
               model_options=model_options, show_progress=show_progress, batch_size=batch_size, allow_code=allow_code)
    lm = loaded_model
    if lm is None and rep.rows:
        lm = _load(rep, log)
    rep.out.mkdir(parents=True, exist_ok=True)
    entries, analyses = [], {}
    for row in rep.rows:
        entry = collect(rep, row, lm, log)
        errors = analyze(rep, entry, analyses)
        errors.update(export(rep, entry))
        _finish(entry, errors, log)
        entries.append(entry)
    return package(rep, entries, analyses, lm, cli_options)


def plan(paper_names, model, out, *, scale: float, seed: int, method: str, n: int | None, only, overwrite: bool,
         model_options: dict | None, show_progress: bool, batch_size: int, allow_code: bool) -> Replication:
    """Every check that needs no model, in order: scale, method, the model's spec, the papers' studies,
    code in study files, the folder (docs/robustness.md: bad input fails before the model loads)."""
    from simsubjects.collect.models import model_spec  # lazy: imports collect.models.hf, collect.models

    if not (0 < scale <= 1):
        raise UserError(f"--scale {scale:g}: must be in (0, 1]; 1 is the paper's full design")
    if method not in ("auto", "exact", "sampled"):
        raise UserError(f"--method {method}: choose auto, exact or sampled")
    model = model_spec(model)  # parsed once here (the command line passes its ModelSpec through)
    public = redact(model.text)  # what files and messages show: no URL credentials, no key
    only = [o.strip().replace("-", "_") for o in (only or []) if o.strip()]
    out = Path(out)
    papers, rows = plan_all(paper_names, scale, only, out, seed)
    code = _code_files(rows, allow_code)  # before the model loads
    _check_folder(out, papers, overwrite)
    check_writable(out, f"--out {out}")  # before the model loads, like every check that needs no model
    options = model_options or {}
    command = canonical_command(papers, model=public, out=out, scale=scale, seed=seed, method=method, only=only,
                                chat_template=bool(options.get("chat_template")),
                                base_url=redact(options.get("base_url") or "") or None)
    return Replication(papers, rows, code, model, public, out, command, scale, seed, method, n, overwrite, options,
                       batch_size, show_progress)


def _load(rep: Replication, log):
    from simsubjects.collect.models import load_model  # lazy: looked up per call (tests replace load_model)

    log(f"loading {rep.public} ...")
    t0 = time.perf_counter()
    lm = load_model(rep.model, **rep.model_options)
    log(f"loaded {rep.public} in {time.perf_counter() - t0:.0f}s")
    return lm


def collect(rep: Replication, row, lm, log) -> dict:
    """One study's collection into out/<study>/ (resumed when interrupted); returns its manifest entry."""
    paper, plan_, study, params = row
    entry = {"paper": paper.key, "study": study.name, "folder": study.name, "design_at_scale_1": plan_.design,
             "parameters": params}
    if file_of(params):  # the report and analysis.R treat it as a study file, not the built-in study
        entry["studyfile"] = file_of(params)
    m = study.methods[0] if rep.method == "auto" or rep.method not in study.methods else rep.method
    k = rep.n if rep.n is not None else (plan_.samples(rep.scale) if plan_.samples else SAMPLES)
    entry.update(method=m, n=k if m == "sampled" else None)
    folder = rep.out / study.name
    log(f"{study.name}: collecting {json.dumps(params)} ({m}) into {folder}")
    t0 = time.perf_counter()
    run = {"model": rep.model, "out": folder, "n": k, "overwrite": rep.overwrite, "quiet": not rep.show_progress,
           "batch_size": rep.batch_size}  # the one collection of every entry point (cli/collection.py)
    man = collect_study(study, run, {"seed": rep.seed, **params,
                                     "chat_template": bool(rep.model_options.get("chat_template"))},
                        m, model=lm, model_options=rep.model_options, report=False)
    entry["timings"] = {"collect": round(time.perf_counter() - t0, 1)}
    entry.update(manifest=f"{study.name}/manifest.json", counts=man.get("counts", {}),
                 failures=len(man.get("failures", [])))
    return entry


def analyze(rep: Replication, entry: dict, analyses: dict) -> dict:
    """The study's analysis into out/<study>/analysis/; returns {step: error} (one study's failure must not
    lose the others' runs)."""
    from simsubjects.publish.analysis import analyze_runs  # lazy: looked up per call (tests replace analyze_runs)

    name, errors = entry["study"], {}
    try:
        t0 = time.perf_counter()
        a = analyze_runs([rep.out / entry["folder"]], code_from=rep.code.get(name))
        analyses[entry["folder"]] = a
        entry["timings"]["analyze"] = round(time.perf_counter() - t0, 1)
        entry.update(tables=sorted(f"{name}/analysis/{k}.csv" for k in a.tables),
                     figures=[f"{name}/analysis/{p.name}" for p in a.figures])
    except Exception as e:  # noqa: BLE001 - one study's analysis must not lose the others' runs
        errors["analysis"] = f"{type(e).__name__}: {e}"
        entry["traceback"] = traceback.format_exc(limit=4)
    return errors


def export(rep: Replication, entry: dict) -> dict:
    """Every format in one export (the tables are read and prepared once); a format that fails costs only
    itself. Returns {"export FORMAT": error}."""
    from simsubjects.publish.export import export_run  # lazy: imports xarray, rdata

    t0 = time.perf_counter()
    failed: dict[str, str] = {}
    try:
        export_run(rep.out / entry["folder"], list(EXPORT_FORMATS), failed=failed)
    except Exception as e:  # noqa: BLE001 - the run's tables could not be read: no format was written
        failed = {fmt: f"{type(e).__name__}: {e}" for fmt in EXPORT_FORMATS}
    entry["exported"] = [fmt for fmt in EXPORT_FORMATS if fmt not in failed]
    entry["timings"]["export"] = round(time.perf_counter() - t0, 1)
    return {f"export {fmt}": msg for fmt, msg in failed.items()}


def _finish(entry: dict, errors: dict, log) -> None:
    name, timings = entry["study"], entry.pop("timings")
    entry["status"] = "failed" if errors else "complete"
    if errors:
        entry["error"] = "; ".join(f"{k}: {v}" for k, v in errors.items())
        log(f"{name}: {entry['error']}")
    entry["timings"] = timings  # after status and error, where the manifest has always had it
    log(f"{name}: {entry['status']} ({', '.join(f'{k} {v:g}s' for k, v in timings.items())})")


def package(rep: Replication, entries: list[dict], analyses: dict, lm, cli_options: dict | None) -> dict:
    """The folder's manifest, R package copy, analysis.R, analysis.do, README.md and report.html."""
    from simsubjects.collect.pipeline import versions  # lazy: imports tqdm, envwrap
    from simsubjects.publish.report import render_report  # lazy: imports collect.models.hf, analyze.order_effects; report never imports replicate (both read simsubjects.papers)
    from simsubjects.publish.stata import do_script  # lazy: imports tqdm, envwrap

    out = rep.out
    manifest = {
        "kind": KIND,
        "papers": [p.key for p in rep.papers],
        # the citation, then the title after a dash: a citation ends in its own punctuation ("... 32 pairs).")
        "paper_titles": {p.key: p.title if p.citation == p.title else f"{p.citation} — {p.title}" for p in rep.papers},
        "scale": rep.scale,
        "seed": rep.seed,
        "method": rep.method,
        "model": _model_info(lm, rep.public),
        "command": rep.command,
        "options": redact_obj(cli_options),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": versions() if lm is not None else {"simsubjects": __version__, "python": platform.python_version()},
        "studies": entries,
        "files": {"report": "report.html", "readme": "README.md", "r_script": "analysis.R", "do_file": "analysis.do"},
        "source": {"commit": source_commit(), "r_package_version": r_package_version()},
        "timings": {"seconds": round(time.perf_counter() - rep.started, 1)},
    }
    manifest = redact_obj(manifest)  # every string a server or the command line supplied, scrubbed
    manifest["files"]["r_package"] = copy_r_package(out)  # analysis.R needs no checkout
    atomic_write_json(manifest, out / "manifest.json")
    atomic_write_bytes(out / "analysis.R", r_script(manifest, out).encode())
    atomic_write_bytes(out / "analysis.do", do_script(manifest, out).encode())
    atomic_write_bytes(out / "README.md", readme(manifest).encode())
    render_report(out, analyses=analyses)
    manifest["timings"]["seconds"] = round(time.perf_counter() - rep.started, 1)
    atomic_write_json(manifest, out / "manifest.json")
    return manifest


def _code_files(rows, allow_code: bool) -> dict[str, str]:
    """{study name: its study file} whose `type: function` analyses run (--allow-code: the user's own files);
    without the flag, a study file that names code is refused before the model loads."""
    code = {}
    for paper, _, study, params in rows:
        loaded = load_any(paper.key) if "studyfile" in params else None
        # a session (session.py) or a Milgram obedience file (obedience.py) names no code
        if loaded is None or not loaded.plain:
            continue
        if not allow_code:
            s = loaded.study
            for i, a in enumerate(s.analyses):
                if a["type"] == "function":
                    raise s.source.error(("analyses", i, "function"), f"type: function runs Python code "
                                                                      f"({a['function']}); pass {ALLOW_CODE} to run "
                                                                      "your own study file's code")
        code[study.name] = paper.key
    return code if allow_code else {}


def _model_info(lm, spec: str) -> dict:
    if lm is None:
        return {"spec": spec}
    i = lm.info
    return {"spec": i.spec, "backend": i.backend, "name": i.name, "revision": i.revision}


def plan_all(paper_names, scale: float, only: list[str], out: Path, seed: int = 0):
    """(papers, rows) for replicate's names: the papers' studies at `scale`, then each study file as its
    own paper (its own design; every check done before the model loads, docs/studies.md)."""
    papers, rows = [], []
    files = [str(n) for n in paper_names if _is_study_file(n)]
    if len(files) < len(paper_names) or not files:
        papers = resolve_papers([n for n in paper_names if not _is_study_file(n)])
        rows = plan_studies(papers, scale, only)
    for f in files:

        row = replicate_row(f, out, seed or None)
        if any(r[2].name == row[2].name for r in rows):
            raise UserError(f"{f}: study {row[2].name!r} is already in this replication; give the file another "
                            "study: name")
        papers.append(row[0])
        rows.append(row)
    return papers, rows


def _is_study_file(name) -> bool:
    return is_study_file(name)
