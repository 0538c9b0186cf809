"""`simsubjects report DIR`: one self-contained HTML file for a run folder or a replication folder.

Every figure is embedded as a base64 PNG and every table written as HTML, so the file can be
mailed or attached to a paper's supplement and opened anywhere. Each study gets a section with
the model's results beside the human references and the numbers the paper printed, from the
study's declaration (its `title`, its `report` section and the papers of its plans); a study that
declares no section still gets the generic one (its analysis views and figures), so new studies
are reported the day they are declared. The HTML pieces live in htmlkit (which renders the blocks, data,
that a study folder's report.py returns: simsubjects/studies/<name>/), published numbers as data under datasets/.
"""

from __future__ import annotations

import html
import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from simsubjects import __version__
from simsubjects.collect.store import atomic_write_bytes
from simsubjects.collect.store import write_error
from simsubjects.collect.runcheck import check_manifest
from simsubjects.errors import UserError
from simsubjects.collect.untrusted import inside, shell_join
from .htmlkit import MAX_ROWS, NUMBER, Run, block, figure, fmt, pre, render, table  # noqa: F401 - re-exported
from simsubjects.collect.sample_kinds import sample_words
from simsubjects.papers import KIND, paper_of, papers, study_title, validity_reference
from simsubjects.studyfile.origin import title
from simsubjects.collect.studies.registry import studies
from simsubjects.collect.store import load_run
from simsubjects.studyfile.origin import collect_target, file_of, origin, without_file
from simsubjects.collect.studies.registry import get_study
from simsubjects.publish import analysis as analysis_step  # its functions looked up when called (tests replace them)


def studyfile_title(manifest: dict, folder: Path) -> str | None:
    """The title of a study-file run, or None for a built-in study's run (studyfile/origin.py).

    A study file may share a built-in study's name; its run still gets the generic section with the
    file's own title, never the built-in study's paper tables.
    """

    return title(manifest, folder)


def section(run: Run) -> str:
    m = run.manifest
    study = m.get("study", run.entry.get("study", "?"))
    file_title = studyfile_title(m, run.folder)
    title = file_title or study_title(study)
    c = m.get("counts", {})
    facts = {
        "folder": run.rel + "/", "model": m.get("model", {}).get("spec"), "method": m.get("parameters", {}).get("method"),
        "parameters": ", ".join(f"{k}={v}" for k, v in m.get("parameters", {}).items()
                                if k not in ("method", "n", "chat_template") and v not in (None, "")),
        "trials answered": (f"{c.get('answered', '–')} of {c.get('trials', '–')}" if m.get("status") == "complete"
                            else "– (the collection did not finish)"),
        "mean validity": fmt(c.get("mean_validity")),
        "collection time": f"{fmt(m.get('timings', {}).get('collection_seconds'))} s",
        "failures": len(m.get("failures", [])),
    }
    if m.get("short"):  # sampled trials that stopped at the draw budget with fewer valid answers
        facts["short of --n valid answers"] = len(m["short"])
    facts.update(_sample_facts(run))
    parts = [f'<section id="{html.escape(study)}"><h2>{html.escape(title)}</h2>',
             '<dl class="facts">' + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>"
                                            for k, v in facts.items()) + "</dl>"]
    if run.entry.get("error") and not run.error:
        parts.append(f'<p class="error">Not everything was written: {html.escape(run.entry["error"])}</p>')
    if run.error or run.analysis is None:
        parts.append(f'<p class="error">No analysis: {html.escape(run.error or "not analyzed")}</p></section>')
        return "".join(parts)
    a = run.analysis
    extra = _report_section(study) if file_title is None else None
    if extra is not None:
        try:
            refs = [render(b) for b in extra(run)]
        except Exception as e:  # noqa: BLE001 - a reference table must not hide the run's own results
            refs = [f'<p class="error">reference tables failed: {html.escape(type(e).__name__)}: {html.escape(str(e))}</p>']
        parts.append('<div class="refs"><h3>Beside people and the paper</h3>' + "".join(refs) + "</div>")
    if file_title is not None and "fit_study" in a.tables:  # issue 39: a study file's run that scored people
        from simsubjects.studyfile.people_fit import report_blocks

        parts.append("".join(render(b) for b in report_blocks(a.tables)))
    if a.figures:
        parts.append("<h3>Figures</h3>" + "".join(figure(p) for p in a.figures if Path(p).is_file()))
    parts.append("<h3>This run's analysis</h3>")
    names = {id(df): name for name, df in a.tables.items()}
    for name, df in a.shown.items():
        csv = f"{run.rel}/analysis/{names[id(df)]}.csv" if id(df) in names else None
        whole = name in WHOLE_TABLES  # people beside the model: every item and arm, not a first page
        parts.append(block(name, table(df, csv=csv, **({"max_rows": min(len(df), WHOLE_ROWS)} if whole else {}))))
    extra = _option_tables(run, a)
    for name, (caption, df) in extra.items():
        parts.append(block(caption, table(df, csv=f"{run.rel}/analysis/{name}.csv")))
    listing = ", ".join(f'<a href="{html.escape(run.rel)}/analysis/{html.escape(k)}.csv">{html.escape(k)}</a>'
                        for k in [*a.tables, *extra])
    parts.append(f'<p class="note">All tables as CSV: {listing}.</p></section>')
    return "".join(parts)


WHOLE_TABLES = {"people_beside_model"}  # shown whole in the page (studyfile/analyses.py)
WHOLE_ROWS = 5000  # ... up to this many rows (a survey of 200 items x 2 arms x 5 answers: 2000)

# tables that `analyze` writes only when asked (its options), kept beside the analysis by later runs of it
OPTION_TABLES = {"ppi": "mixed subjects: human-only, model-only and prediction-powered (PPI++), from analyze --ppi-human",
                 "check_r": "R cross-check, from analyze --check-r"}


def _option_tables(run: Run, a) -> dict[str, tuple[str, pd.DataFrame]]:
    """ppi.csv and check_r.csv of the run's analysis folder when an earlier `analyze` wrote them (the
    report's own analysis has no --ppi-human): shown and listed with the rest (issue 25, smaller item).
    Read as data from inside the run folder only."""
    out = {}
    for name, caption in OPTION_TABLES.items():
        if name in a.tables:
            continue
        try:
            path = inside(a.outdir, f"{name}.csv", f"{a.outdir}")
            if path.is_file():
                out[name] = (caption, pd.read_csv(path))
        except (UserError, OSError, ValueError, pd.errors.ParserError):
            continue  # a damaged or linked file: not shown (the run's own tables still are)
    return out


def _report_section(study: str):
    """The study's declared report section, or None (an unknown study gets the generic section)."""

    decl = studies().get(study)
    return decl.report if decl is not None and decl.report else None


# ---------------------------------------------------------------- finding runs

def find_runs(path: Path) -> tuple[dict | None, list[Run]]:
    """(replicate manifest or None, the complete study runs under `path`)."""
    mpath = path / "manifest.json"
    top = _read_json(mpath) if mpath.is_file() else None
    if mpath.exists() and not isinstance(top, dict):
        raise UserError(f"{mpath}: not a JSON object; is this a folder written by simsubjects?")
    if top is not None:
        check_manifest(top, mpath)
    if top is not None and top.get("kind") == KIND:
        runs = []
        for i, e in enumerate(top.get("studies", [])):  # each folder inside this one, links included
            folder = inside(path, e.get("folder", e["study"]), f"{mpath}: studies[{i}].folder")
            man = _read_json(folder / "manifest.json") if (folder / "manifest.json").is_file() else None
            try:
                man = check_manifest(man, folder / "manifest.json") if isinstance(man, dict) else None
            except UserError as bad:  # shown in this study's section; the others still render
                e = {**e, "error": str(bad)}
                man = None
            if man is None or man.get("status") != "complete":
                runs.append(Run(folder, e.get("folder", e["study"]), man or {"study": e["study"]}, e,
                                error=e.get("error") or "the collection did not finish"))
            else:
                runs.append(Run(folder, e.get("folder", e["study"]), man, e))
        return top, runs
    if top is not None and top.get("study"):

        load_run(path)  # a single run that is unfinished, damaged or mistyped is an error, not a page
        return None, [Run(path, ".", top)]
    runs = []
    # a link to a folder elsewhere is not one of this folder's runs: nothing is written through it
    for sub in sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink()) if path.is_dir() else []:
        man = _read_json(sub / "manifest.json") if (sub / "manifest.json").is_file() else None
        try:
            man = check_manifest(man, sub / "manifest.json") if isinstance(man, dict) else None
        except UserError:
            man = None  # not listed, like any folder that holds no finished run
        if man and isinstance(man.get("study"), str) and man.get("status") == "complete":
            runs.append(Run(sub, sub.name, man))
    if not runs:
        raise UserError(f"{path}: no run folder here (no manifest.json of a finished `simsubjects collect` or "
                        "`simsubjects replicate`)")
    return None, runs


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def collect_command(man: dict, folder: str) -> str:
    """An equivalent `simsubjects collect` command for a single run folder."""
    study = man.get("study", "?")
    params = without_file(dict(man.get("parameters", {})))
    args = ["simsubjects", "collect", collect_target(man, folder), "--model", man.get("model", {}).get("spec", "?")]
    if origin(man).is_study_file:  # a study file: the command names its copy in the run folder
        args += ["--judge-model", params["judge_model"]] if params.get("judge_model") else []
    try:

        options = get_study(study).options
    except Exception:  # noqa: BLE001 - an unregistered study still gets its parameters listed
        options = []
    for o in options:
        flag = o.flags[0]
        key = flag.lstrip("-").replace("-", "_")
        if key in params and params[key] not in (None, o.kwargs.get("default")):
            args += [flag] if o.kwargs.get("is_flag") else [flag, str(params[key])]
    if params.get("method") and params["method"] not in ("exact", "generated"):
        args += ["--method", params["method"]] + (["--n", str(params["n"])] if params.get("n") else [])
    if params.get("seed"):
        args += ["--seed", str(params["seed"])]
    if params.get("chat_template"):
        args.append("--chat-template")
    return shell_join(args + ["--out", folder])


# ---------------------------------------------------------------- the page

CSS = """
body{font:15px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1d1d1f;margin:0;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:24px 28px 60px;background:#fff}
h1{font-size:26px;margin:0 0 4px}h2{font-size:21px;margin:34px 0 8px;padding-top:14px;border-top:3px solid #2f5d8a}
h3{font-size:17px;margin:22px 0 6px;color:#2f5d8a}h4{font-size:14px;margin:14px 0 4px}
.paper{margin-top:40px;padding:10px 14px;background:#eef3f8;border-left:5px solid #2f5d8a}
.paper h2{border:0;margin:0;padding:0}.sub{color:#555;margin:0 0 14px}
.tw{overflow-x:auto;margin:4px 0 10px}table{border-collapse:collapse;font-size:12.5px}
th,td{border:1px solid #d5d9de;padding:3px 7px;text-align:left;white-space:nowrap}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f0f2f5;text-align:center}
tbody tr:nth-child(even){background:#fafbfc}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:13px;margin:6px 0}
dl.facts dt{color:#555}dl.facts dd{margin:0;font-family:ui-monospace,Menlo,Consolas,monospace;word-break:break-all;white-space:pre-line}
.refs{background:#fbfaf4;border:1px solid #e8e2c8;padding:4px 14px 8px;margin:10px 0}
figure{margin:10px 0;display:inline-block;max-width:100%;vertical-align:top}
figure img{max-width:100%;max-height:560px;border:1px solid #ddd}figcaption{font-size:12px;color:#666}
pre{background:#f3f4f6;padding:10px 12px;overflow-x:auto;font-size:12.5px;white-space:pre-wrap}
.note{font-size:12.5px;color:#555;margin:2px 0 6px}.error{color:#a40000;font-weight:600}
details{margin:6px 0 10px}summary{cursor:pointer;color:#2f5d8a}nav ul{columns:2;font-size:14px}
"""


def _sample_facts(run: Run) -> dict:
    """The test tables' `sample` in words and their `low_validity` count (issue 40; the same as the CSVs say)."""
    tables = [t for t in (run.analysis.tables.values() if run.analysis is not None else ()) if "sample" in t]
    if not tables:
        return {}
    kinds = dict.fromkeys(k for t in tables for k in t["sample"].dropna().astype(str))
    rows = sum(len(t) for t in tables)
    low = sum(int(t["low_validity"].astype(bool).sum()) for t in tables if "low_validity" in t)
    return {"sample of the tests": "\n".join(sample_words(k) for k in kinds),
            "tests flagged low validity": f"{low} of {rows} (the model's mean probability on the answer options "
                                          "behind the test under analyze --min-validity; column low_validity)"}


def _analyze(run: Run, analyses: dict | None) -> None:
    """The run's analysis: replicate's own, else the one the run folder holds when it is current
    (analysis/analysis.json, simsubjects.publish.saved), else computed (and written) here."""

    if run.error:
        return
    key = run.entry.get("folder") or run.entry.get("study") or run.manifest.get("study")
    if analyses and key in analyses:
        run.analysis = analyses[key]
        return
    try:
        run.analysis = analysis_step.saved_analysis(run.folder) or analysis_step.analyze_runs([run.folder])
    except Exception as e:  # noqa: BLE001 - the report still shows the other studies
        if run.rel == ".":  # a report of one run has no other studies: its failure is the command's
            raise
        run.error = f"{type(e).__name__}: {e}"


def render_report(path, analyses: dict | None = None, out=None) -> Path:
    """Write the HTML report of a run folder or a replicate folder; returns its path.

    `analyses`: {study: Analysis} already computed (replicate passes its own); other runs are analyzed here.
    """
    path = Path(path)
    if not path.is_dir():
        raise UserError(f"{path}: no such folder")
    target = Path(out) if out else path / "report.html"
    what = "--out" if out else "report"
    check_target_file(target, what)
    top, runs = find_runs(path)
    for run in runs:
        _analyze(run, analyses)
    page = _page(path, top, runs)
    for stale in target.parent.glob(f".{target.name}.*.tmp"):  # left by a report killed while writing
        stale.unlink(missing_ok=True)
    try:
        atomic_write_bytes(target, page.encode("utf-8"))
    except OSError as e:
        raise write_error(e, what, target) from None
    return target


def check_target_file(target: Path, what: str) -> None:
    """The report's file: not a folder, and no file in the way of its folder."""
    if target.is_dir():
        raise UserError(f"{what} {target}: is a folder; give the HTML file's name")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{what} {target}: {parent} is a file, not a folder")
            break


def _scale_note(top: dict | None) -> list[str]:
    """Below scale 1 the report says so first: small designs give noisy estimates (issue 27)."""
    scale = (top or {}).get("scale")
    if not isinstance(scale, (int, float)) or scale >= 1:
        return []
    return [f'<p class="note"><b>Demo scale ({html.escape(fmt(scale))}):</b> every study ran on a small design '
            "(sizes in README.md), so every statistic is computed but estimates are noisy and intervals wide: a "
            "check that each step runs, not a replication. <code>--scale 1</code> runs the papers' full designs.</p>"]


def _validity_table(runs: list[Run]) -> pd.DataFrame:
    """One row per study: trials, answered, mean validity, beside the paper's rates where it has them."""
    vrows = []
    for r in runs:
        c = r.manifest.get("counts", {}) if r.manifest.get("status") == "complete" else {}  # no stale counts
        study = r.manifest.get("study", r.entry.get("study"))
        ref = validity_reference(study) if studyfile_title(r.manifest, r.folder) is None else {}
        vrows.append({"study": study, "method": r.manifest.get("parameters", {}).get("method", "–"),
                      "trials": c.get("trials"), "answered": c.get("answered"),
                      "mean validity (%)": None if c.get("mean_validity") is None else round(100 * c["mean_validity"], 1),
                      **{f"paper {k} (%)": v for k, v in ref.items()},
                      "status": "complete" if not r.error else "no analysis"})
    return pd.DataFrame(vrows)


def _reproduce(path: Path, top: dict | None, command: str) -> list[str]:
    """The commands that re-create and re-render the folder."""
    repro = []
    if top:
        where = "" if " --out /" in command else f" from the folder that holds {path.name}/"
        repro += [f"# re-run{where}: it resumes from each study's request cache, so finished work is not redone",
                  command, "", f"cd {shell_join([str(path)])}", "Rscript analysis.R        # R twins on export/*.rds -> r_results/",
                  "simsubjects report .      # re-render this report"]
    else:
        repro += ["# the run's parameters, seed and model revision are in manifest.json", command, "",
                  *(shell_join(["simsubjects", cmd, str(path), *more]) for cmd, more in
                    (("analyze", []), ("export", ["--to", "rds,dta"]), ("report", [])))]
    return repro


def _paper_sections(runs: list[Run], top: dict | None, known: dict) -> list[str]:
    """Each paper's heading (with several papers, or a replication) and its studies' sections."""
    body = []
    by_paper: dict[str, list[Run]] = {}
    for r in runs:
        key = r.entry.get("paper") or ("" if studyfile_title(r.manifest, r.folder) else paper_of(r.manifest.get("study")))
        by_paper.setdefault(key, []).append(r)
    for key, group in by_paper.items():
        p = known.get(key)
        if p is not None and (top or len(by_paper) > 1):
            body.append(f'<div class="paper"><h2>{html.escape(p.citation)}</h2>'
                        f'<p class="sub">{html.escape(p.title)}. {html.escape(p.note)}</p></div>')
        body += [section(r) for r in group]
    return body


def _page(path: Path, top: dict | None, runs: list[Run]) -> str:
    known = papers()
    first = next((r.manifest for r in runs if r.manifest.get("model")), {})
    model = (top or {}).get("model") or first.get("model", {})
    if top:
        shown = [known[k].citation if k in known else top.get("paper_titles", {}).get(k, k)
                 for k in top.get("papers", [])]  # a study file: its citation and title as replicate wrote them
        command = top.get("command", "")
        # several papers: a short heading, with each citation on its own line below it (a first screen
        # that shows the results, not a paragraph of references)
        heading = "Replication: " + (shown[0] if len(shown) == 1 else f"{len(shown)} papers and studies")
        created = top.get("created", "")
    else:
        study_names = [r.manifest.get("study") for r in runs]
        command = "\n".join(collect_command(r.manifest, r.rel if r.rel != "." else str(path)) for r in runs)
        heading = "Run report: " + ", ".join(studyfile_title(r.manifest, r.folder) or study_title(s)
                                             for r, s in zip(runs, study_names))
        created = first.get("created", "")
    versions = (top or first).get("versions", {})
    meta = {
        "simsubjects": versions.get("simsubjects", __version__),
        "model": model.get("spec", "?"),
        "model revision": model.get("revision", "?"),
        "run finished": created,
        "report written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **({"papers": "\n".join(shown)} if top and len(shown) > 1 else {}),
        "command": command,
        "scale": fmt(top.get("scale")) + " (1 = the paper's full design)" if top else "–",
        "seed": (top or first).get("seed", "–"),
        "software": ", ".join(f"{k} {v}" for k, v in versions.items() if k != "simsubjects"),
    }
    vt = _validity_table(runs)
    repro = _reproduce(path, top, command)
    nav = "".join(f'<li><a href="#{html.escape(r.manifest.get("study", ""))}">'
                  f'{html.escape(studyfile_title(r.manifest, r.folder) or study_title(r.manifest.get("study", "")))}'
                  '</a></li>' for r in runs)
    body = [
        f"<h1>{html.escape(heading)}</h1>",
        f'<p class="sub">Language-model participants beside people, written by simsubjects {html.escape(meta["simsubjects"])}'
        f" from {html.escape(str(path))}.</p>",
        '<dl class="facts">' + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(str(v))}</dd>"
                                       for k, v in meta.items()) + "</dl>",
        *_scale_note(top),
        "<h3>Validity rates</h3>",
        table(vt),
        '<p class="note">Validity: the probability mass (k-choice, exact) or share of samples (sampled, free text) on '
        "valid answers; the paper's columns are Aher et al. (2023) Table 1 where it applies. A low rate means the "
        "prompt does not elicit the answer format from this model, and its results should not be read.</p>",
        "<h3>How to reproduce</h3>", pre("\n".join(repro)),
        f"<nav><h3>Studies</h3><ul>{nav}</ul></nav>",
    ]
    body += _paper_sections(runs, top, known)
    title = html.escape(heading)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>'
            f"<body><main>{''.join(body)}</main></body></html>\n")
