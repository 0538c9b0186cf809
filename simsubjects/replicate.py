"""`simsubjects replicate PAPER`: every study of a paper, collected, analyzed, exported and reported.

A paper is data (`PAPERS`): its studies, each with a sizing rule that turns `--scale` into the
study's collect parameters. Scale 1.0 is the paper's own design (every name pair, every name,
every subject, every story, 50 samples per question form); a smaller scale multiplies the sample
sizes, with a floor per study so the analysis still has something to test. Studies that are not
registered (a module not written yet) are skipped and listed, so a paper grows with the registry.

The output folder is a replication package: one run folder per study (collect + analyze + export),
`manifest.json` (papers, scale, command, every run's manifest), `README.md`, `analysis.R` (the R
twins on the exported data) and `report.html` (simsubjects.report). The model is loaded once and
shared by every study. Re-running the same command resumes: each run folder answers from its
request cache.
"""

from __future__ import annotations

import json
import math
import platform
import shlex
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from . import __version__
from .collect.store import atomic_write_bytes, atomic_write_json
from .errors import UserError

KIND = "simsubjects-replication"  # marks a replicate folder's manifest.json
EXPORT_FORMATS = ["parquet", "csv", "rds", "dta"]


def size(full: int, scale: float, floor: int = 1) -> int:
    """ceil(full * scale), at least `floor`, at most `full`."""
    return min(full, max(floor, math.ceil(full * scale - 1e-9)))


@dataclass(frozen=True)
class Plan:
    """One study of a paper: its parameters at a scale, and what scale 1.0 means."""

    study: str
    params: Callable[[float], dict]  # scale -> collect parameters (without seed)
    design: str  # scale 1.0, in words
    samples: Callable[[float], int] | None = None  # valid answers per trial when --method sampled


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    citation: str
    plans: tuple[Plan, ...]
    note: str = ""


def _survey_params(s: float) -> dict:
    # exact distributions, each replaced by a seeded sample of 50 answers per form as the paper drew
    return {"bias": "all", "perturbation": "all", "as_sample": size(50, s, floor=10)}


PAPERS: dict[str, Paper] = {
    "aher2023": Paper(
        key="aher2023",
        title="Using Large Language Models to Simulate Multiple Humans and Replicate Human Subject Studies",
        citation="Aher, Arriaga & Kalai (2023), ICML, PMLR 202:337-371",
        plans=(
            Plan("ultimatum", lambda s: {"pairs": size(10_000, s, floor=8)},
                 "10,000 name pairs x 11 offers (at least 8 pairs: two per gender pairing)"),
            Plan("garden_path", lambda s: {"names": size(1_000, s), "set": "both"},
                 "48 sentences x 2 versions x 1,000 names"),
            Plan("wisdom", lambda s: {"participants": size(1_500, s, floor=2), "questions": "all"},
                 "1,500 participants (Mr./Ms./Mx.) x 10 questions"),
            Plan("milgram", lambda s: {"subjects": size(100, s), "max_stages": 30},
                 "100 subjects, all 30 shock levels"),
            Plan("milgram_novel", lambda s: {"subjects": size(100, s), "max_stages": 30},
                 "100 subjects, all 30 submersions"),
        ),
        note="Turing Experiments: Ultimatum Game, Garden Path sentences, Wisdom of Crowds, Milgram obedience "
             "(classic and novel scenario).",
    ),
    "tjuatja2024": Paper(
        key="tjuatja2024",
        title="Do LLMs Exhibit Human-like Response Biases? A Case Study in Survey Design",
        citation="Tjuatja, Chen, Wu, Talwalkar & Neubig (2024), TACL 12",
        plans=(
            Plan("survey_bias", _survey_params,
                 "every bundled question form (5 biases, 3 perturbations), 50 answers per form "
                 "(exact distributions sampled; at least 10)",
                 samples=lambda s: size(50, s, floor=10)),
        ),
        note="Survey response biases. The bundled question set is small and runs in full at every scale; "
             "the paper's own 2,578 pairs come from the BiasMonkey release "
             "(simsubjects collect survey-bias --questions PROMPTS_DIR).",
    ),
    "nie2023": Paper(
        key="nie2023",
        title="MoCa: Measuring Human-Language Model Alignment on Causal and Moral Judgment Tasks",
        citation="Nie, Zhang, Wang, Gerstenberg & Icard (2023), NeurIPS 36",
        plans=(
            Plan("moca", lambda s: {"task": "all", "stories": _moca_stories(s), "template": "both",
                                    "personas": "none"},
                 "all 206 stories (144 causal, 62 moral), both prompt templates pooled, beside 25 human votes "
                 "per story"),
        ),
        note="Causal and moral judgments; AMCE per factor for people and the model.",
    ),
    "santurkar2023": Paper(
        key="santurkar2023",
        title="Whose Opinions Do Language Models Reflect?",
        citation="Santurkar, Durmus, Ladhak, Lee, Liang & Hashimoto (2023), ICML, PMLR 202:29971-30004",
        plans=(
            Plan("opinion_survey", lambda s: {"personas": "bundled", "sample": str(size(20, s, floor=1)),
                                              "persona_format": "argyle", "steer": "POLPARTY", "order": "random",
                                              "groups": "POLPARTY"},
                 "the bundled 20-question ATP-style survey beside its synthetic respondents by party (both OpinionQA "
                 "formats), asked with the default prompt and with 20 Argyle-style personas per party drawn from the "
                 "bundled respondents by weight, options in a random order per subject"),
        ),
        note="Opinion surveys beside people by demographic group (OpinionQA): representativeness heatmap, "
             "steerability with personas from a respondents table (Argyle et al. 2023), refusals, and the order "
             "effect of randomized options. The bundled survey and its people are synthetic; point "
             "`simsubjects collect opinion-survey --questions/--human` at OpinionQA's released folders for the real ones.",
    ),
}
ALL = "all"


def _moca_stories(s: float) -> int:
    n = size(144, s, floor=6)  # --stories caps each task; 0 = every story
    return 0 if n >= 144 else n


def resolve_papers(names) -> list[Paper]:
    names = [n.strip().lower() for n in names if n.strip()]
    if not names:
        raise UserError(f"name a paper: {', '.join(PAPERS)} or {ALL}")
    if ALL in names:
        return list(PAPERS.values())
    out = []
    for n in names:
        if n not in PAPERS:
            raise UserError(f"unknown paper {n!r}; choose from {', '.join(PAPERS)} or {ALL}")
        if PAPERS[n] not in out:
            out.append(PAPERS[n])
    return out


def plan_studies(papers: list[Paper], scale: float, only: list[str] | None = None):
    """[(paper, plan, StudyDef or None, params)], None where the study is not registered."""
    from .collect.studies.registry import get_study, studies

    registered = studies()
    rows = []
    for paper in papers:
        for plan in paper.plans:
            study = registered.get(plan.study)
            if only and plan.study not in only:
                continue
            rows.append((paper, plan, study, plan.params(scale)))
    if only:
        wanted = {get_study(o).name for o in only} if registered else set(only)
        known = {plan.study for p in papers for plan in p.plans}
        bad = sorted(wanted - known)
        if bad:
            raise UserError(f"--only {','.join(bad)}: not a study of {', '.join(p.key for p in papers)}; "
                            f"choose from {', '.join(sorted(known))}")
    return rows


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
    return shlex.join(args)


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


def replicate(paper_names, model: str, out, *, scale: float = 1.0, seed: int = 0, method: str = "auto",
              n: int | None = None, only: list[str] | None = None, overwrite: bool = False,
              model_options: dict | None = None, show_progress: bool = True, batch_size: int = 64,
              cli_options: dict | None = None, log: Callable[[str], None] = print, loaded_model=None) -> dict:
    """Run, analyze and export every study of the papers into `out`; write manifest, README, R script, report.

    Returns the folder's manifest (also written to out/manifest.json). `loaded_model`: an already
    loaded model to use instead of loading `model` (tests share one).
    """
    from .analyze.run import analyze_runs
    from .collect.models import load_model, parse_spec
    from .collect.pipeline import run_study, versions
    from .export import export_run
    from .report import render_report

    if not (0 < scale <= 1):
        raise UserError(f"--scale {scale:g}: must be in (0, 1]; 1 is the paper's full design")
    if method not in ("auto", "exact", "sampled"):
        raise UserError(f"--method {method}: choose auto, exact or sampled")
    parse_spec(model)
    papers = resolve_papers(paper_names)
    only = [o.strip().replace("-", "_") for o in (only or []) if o.strip()]
    rows = plan_studies(papers, scale, only)
    out = Path(out)
    _check_folder(out, papers, overwrite)
    from .collect.store import check_writable

    check_writable(out, f"--out {out}")  # before the model loads, like every check that needs no model
    command = canonical_command(papers, model=model, out=out, scale=scale, seed=seed, method=method, only=only,
                                chat_template=bool((model_options or {}).get("chat_template")),
                                base_url=(model_options or {}).get("base_url"))
    started = time.perf_counter()
    runnable = [r for r in rows if r[2] is not None]
    lm = loaded_model
    if lm is None and runnable:
        log(f"loading {model} ...")
        t0 = time.perf_counter()
        lm = load_model(model, **(model_options or {}))
        log(f"loaded {model} in {time.perf_counter() - t0:.0f}s")
    out.mkdir(parents=True, exist_ok=True)

    entries, analyses = [], {}
    for paper, plan, study, params in rows:
        entry = {"paper": paper.key, "study": plan.study, "folder": plan.study, "design_at_scale_1": plan.design,
                 "parameters": params}
        entries.append(entry)
        if study is None:
            entry.update(status="skipped", error="study not registered in this version of simsubjects")
            log(f"{plan.study}: skipped (not registered)")
            continue
        m = study.methods[0] if method == "auto" or method not in study.methods else method
        k = n if n is not None else (plan.samples(scale) if plan.samples else 50)
        entry.update(method=m, n=k if m == "sampled" else None)
        folder = out / plan.study
        log(f"{plan.study}: collecting {json.dumps(params)} ({m}) into {folder}")
        timings = {}
        t0 = time.perf_counter()
        _, man = run_study(study, model, folder, params={**params, "seed": seed,
                                                          "chat_template": bool((model_options or {}).get("chat_template"))},
                           method=m, n=k, overwrite=overwrite, model_options=model_options,
                           show_progress=show_progress, model=lm, batch_size=batch_size)
        timings["collect"] = round(time.perf_counter() - t0, 1)
        entry.update(manifest=f"{plan.study}/manifest.json", counts=man.get("counts", {}),
                     failures=len(man.get("failures", [])))
        errors = {}
        try:
            t0 = time.perf_counter()
            a = analyze_runs([folder])
            analyses[plan.study] = a
            timings["analyze"] = round(time.perf_counter() - t0, 1)
            entry.update(tables=sorted(f"{plan.study}/analysis/{k}.csv" for k in a.tables),
                         figures=[f"{plan.study}/analysis/{p.name}" for p in a.figures])
        except Exception as e:  # noqa: BLE001 - one study's analysis must not lose the others' runs
            errors["analysis"] = f"{type(e).__name__}: {e}"
            entry["traceback"] = traceback.format_exc(limit=4)
        # one format at a time, so a format that fails costs only itself
        t0 = time.perf_counter()
        exported = []
        for fmt in EXPORT_FORMATS:
            try:
                export_run(folder, [fmt])
                exported.append(fmt)
            except Exception as e:  # noqa: BLE001
                errors[f"export {fmt}"] = f"{type(e).__name__}: {e}"
        timings["export"] = round(time.perf_counter() - t0, 1)
        entry.update(exported=exported, status="failed" if errors else "complete")
        if errors:
            entry["error"] = "; ".join(f"{k}: {v}" for k, v in errors.items())
            log(f"{plan.study}: {entry['error']}")
        entry["timings"] = timings
        log(f"{plan.study}: {entry['status']} ({', '.join(f'{k} {v:g}s' for k, v in timings.items())})")

    manifest = {
        "kind": KIND,
        "papers": [p.key for p in papers],
        "paper_titles": {p.key: f"{p.citation}: {p.title}" for p in papers},
        "scale": scale,
        "seed": seed,
        "method": method,
        "model": _model_info(lm, model),
        "command": command,
        "options": cli_options,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": versions() if lm is not None else {"simsubjects": __version__, "python": platform.python_version()},
        "studies": entries,
        "files": {"report": "report.html", "readme": "README.md", "r_script": "analysis.R"},
        "timings": {"seconds": round(time.perf_counter() - started, 1)},
    }
    atomic_write_json(manifest, out / "manifest.json")
    atomic_write_bytes(out / "analysis.R", r_script(manifest).encode())
    atomic_write_bytes(out / "README.md", readme(manifest).encode())
    render_report(out, analyses=analyses)
    manifest["timings"]["seconds"] = round(time.perf_counter() - started, 1)
    atomic_write_json(manifest, out / "manifest.json")
    return manifest


def _model_info(lm, spec: str) -> dict:
    if lm is None:
        return {"spec": spec}
    i = lm.info
    return {"spec": i.spec, "backend": i.backend, "name": i.name, "revision": i.revision}


# ------------------------------------------------------------------ README.md and analysis.R

def readme(manifest: dict) -> str:
    done = [e for e in manifest["studies"] if e.get("status") == "complete"]
    lines = [
        f"# Replication package: {', '.join(manifest['papers'])}",
        "",
        *[f"- {t}" for t in manifest["paper_titles"].values()],
        "",
        f"Written by simsubjects {manifest['versions'].get('simsubjects', __version__)} on {manifest['created']} "
        f"with model `{manifest['model']['spec']}` (revision `{manifest['model'].get('revision', '?')}`) "
        f"at scale {manifest['scale']:g} (1 = the paper's full design).",
        "",
        "## Re-run",
        "",
        "```sh",
        manifest["command"] + "   # collect, analyze, export, report (resumes if interrupted)",
        "Rscript analysis.R                 # from this folder: the R side on the exported data",
        "simsubjects report .               # re-render report.html from the run folders",
        "```",
        "",
        "`analysis.R` needs the R package simsubjects (`R CMD INSTALL <simsubjects checkout>`; its Imports:",
        "estimatr, survival) or `SIMSUBJECTS_R_SOURCE=<checkout>/R`; it writes `r_results/*.csv`.",
        "",
        "## What is where",
        "",
        "| path | what |",
        "| --- | --- |",
        "| `report.html` | one self-contained report: the model beside the human references and the papers' numbers |",
        "| `manifest.json` | papers, scale, model, command, versions, and every study's parameters, counts, timings |",
        "| `analysis.R` | the R twins (t-tests, AMCE, response-bias deltas, obedience survival) from `*/export/` |",
    ]
    for e in manifest["studies"]:
        status = e.get("status")
        what = f"{e['design_at_scale_1']} at scale 1; here {json.dumps(e['parameters'])}"
        if status != "complete":
            what = f"**{status}**: {e.get('error', '')}"
        lines.append(f"| `{e['folder']}/` | {e['study']} ({e['paper']}): {what} |")
    if done:
        lines += [
            "",
            "Inside each study folder: `manifest.json` (versions, model revision, parameters, seed, dataset",
            "checksums, prompt-template hashes, counts, validity, timings), `responses.parquet` (the tidy long",
            "table, docs/schema.md of simsubjects), `items.parquet`, `records.jsonl` (free-text transcripts, Milgram),",
            "`cache.sqlite` (the request cache a re-run resumes from), `analysis/` (tables as CSV, figures as PNG)",
            "and `export/` (responses and items as .parquet, .csv, .rds with R factors, .dta with value labels,",
            "plus `codebook_*.md/.csv`).",
        ]
    return "\n".join(lines) + "\n"


R_HEADER = r'''# R side of a simsubjects replication: the R twins of the Python statistics, computed from the
# exported data of each study folder (export/responses.rds). Run from this folder:
#   Rscript analysis.R
# Needs the R package simsubjects (R CMD INSTALL <simsubjects checkout>), or its R/ folder through
# SIMSUBJECTS_R_SOURCE=<checkout>/R. Results go to r_results/*.csv and are printed.
# Command that made this folder: __COMMAND__

if (requireNamespace("simsubjects", quietly = TRUE)) {
  suppressPackageStartupMessages(library(simsubjects))
} else if (nzchar(Sys.getenv("SIMSUBJECTS_R_SOURCE"))) {
  for (f in sort(list.files(Sys.getenv("SIMSUBJECTS_R_SOURCE"), pattern = "[.]R$", full.names = TRUE))) source(f)
} else {
  stop("the R package simsubjects is not installed: R CMD INSTALL <simsubjects checkout> ",
       "(or set SIMSUBJECTS_R_SOURCE=<checkout>/R)", call. = FALSE)
}
options(width = 160)
dir.create("r_results", showWarnings = FALSE)

# one result table: print it and write r_results/<name>.csv
keep <- function(df, name, show = 40) {
  cat(sprintf("\n== %s (%d rows) ==\n", name, nrow(df)))
  print(utils::head(df, show), row.names = FALSE, digits = 4)
  utils::write.csv(df, file.path("r_results", paste0(name, ".csv")), row.names = FALSE)
  invisible(df)
}
chr <- function(d) { for (c in names(d)) if (is.factor(d[[c]])) d[[c]] <- as.character(d[[c]]); d }
rows <- function(lst) { lst <- Filter(Negate(is.null), lst); if (length(lst)) do.call(rbind, lst) else data.frame() }
'''

def _milgram_r(study: str, title: str) -> str:
    """The R block of one Milgram scenario: its survival table from the break-off rows."""
    return f'''
# ---- {title}
run <- read_run("{study}")
r <- chr(run$responses)
b <- r[r$condition == "breakoff", ]
b <- data.frame(model = b$model, level = as.numeric(b$breakoff_level),
                censored = as.logical(b$censored) %in% TRUE)
s <- milgram_survival(b, max_level = 30, by = "model")
keep(s[s$n.event > 0 | s$level %in% c(0, 30), ], "{study}_survival")
'''


R_BLOCKS = {
    "ultimatum": r'''
# ---- Ultimatum Game: P(accept) by offer (one-sample t) and the pairing contrast Mr-Ms vs Ms-Mr (Welch)
run <- read_run("ultimatum")
r <- chr(run$responses)
p <- prob_of(r[r$source == "model", ], "accept", keep = c("model", "offer", "pairing", "pair"))
p$offer <- as.numeric(p$offer)
keep(rows(lapply(split(p, list(p$model, p$offer), drop = TRUE), function(g)
  cbind(model = g$model[1], offer = g$offer[1], one_sample_test(g$p_accept)))), "ultimatum_acceptance_by_offer")
keep(rows(lapply(split(p, p$model), function(gm) rows(lapply(c("all", sort(unique(gm$offer))), function(o) {
  g <- if (o == "all") gm else gm[gm$offer == as.numeric(o), ]
  x <- g$p_accept[g$pairing == "Mr-Ms"]; y <- g$p_accept[g$pairing == "Ms-Mr"]
  if (length(x) < 2 || length(y) < 2) return(NULL)
  cbind(model = gm$model[1], offer = o, comparison = "Mr-Ms minus Ms-Mr", welch_test(x, y))
})))), "ultimatum_pairing_welch")
''',
    "garden_path": r'''
# ---- Garden path: per-sentence P(ungrammatical) over names; garden path vs control across sentences
run <- read_run("garden_path")
s <- garden_path_sentences(chr(run$responses))
keep(s, "garden_path_sentences", show = 10)
keep(rows(c(lapply(split(s, s$model), function(g) cbind(model = g$model[1], type = "all", garden_path_tests(g))),
            lapply(split(s, list(s$model, s$type), drop = TRUE), function(g)
              cbind(model = g$model[1], type = g$type[1], garden_path_tests(g))))), "garden_path_paired_tests")
''',
    "wisdom": r'''
# ---- Wisdom of crowds: median, quartiles (type 7 = numpy's default) and exact share per question
run <- read_run("wisdom")
keep(wisdom_questions(chr(run$responses), chr(run$items)[c("item", "truth")]), "wisdom_questions")
''',
    "milgram": _milgram_r("milgram", "Milgram (classic): share still obeying by shock level, model(s) and Milgram "
                                     "(1963), Kaplan-Meier"),
    "milgram_novel": _milgram_r("milgram_novel", "Milgram (novel scenario): the same survival table"),
    "survey_bias": r'''
# ---- Survey response biases: delta per question (delta_bias) and t-tests across questions
run <- read_run("survey_bias")
d <- delta_bias(chr(run$responses), if (is.null(run$items)) NULL else chr(run$items))
keep(d, "survey_bias_deltas", show = 10)
t <- delta_tests(d)
keep(t[t$method == "One Sample t-test", c("model", "bias", "setting", "estimate", "std.error", "statistic", "df",
                                          "p.value", "n")], "survey_bias_tests")
''',
    "moca": r'''
# ---- MoCa: AMCE per factor for people and the model (OLS, story-clustered CR2 errors, estimatr)
run <- read_run("moca")
r <- chr(run$responses)
it <- chr(run$items)
lab <- tolower(trimws(r$response))
r$yes <- ifelse(lab == "yes", 1, ifelse(lab == "not sure", 0.5, 0))
r$w <- as.numeric(r$weight) * (lab %in% c("yes", "no", "not sure"))
id <- paste(r$source, r$model, r$trial, sep = "\r")
y <- tapply(r$w * r$yes, id, sum) / tapply(r$w, id, sum)   # P(Yes) per trial; a 0/1 vote for people
tr <- r[!duplicated(id), c("source", "model", "trial", "item")]
tr$y <- as.numeric(y[paste(tr$source, tr$model, tr$trial, sep = "\r")])
tr <- merge(tr, it, by = "item", all.x = TRUE)
contrasts <- list(
  causal = list(causal_structure = c("Conjunctive", "Disjunctive"), agent_awareness = c("Aware", "Unaware"),
                norm_type = c("Prescriptive", "Statistical"), event_normality = c("Abnormal", "Normal"),
                action_omission = c("Action", "Omission"), time = c("Late", "Early")),
  moral = list(causal_role = c("Side effect", "Means"), personal_force = c("Impersonal", "Personal"),
               evitability = c("Inevitable", "Avoidable"), beneficence = c("Self-beneficial", "Other-beneficial"),
               locus_of_intervention = c("Agent of harm", "Patient of harm")))
out <- list()
for (task in names(contrasts)) for (f in names(contrasts[[task]])) {
  if (!f %in% names(tr)) next
  for (sys in unique(paste(tr$source, tr$model, sep = "/"))) {
    g <- tr[paste(tr$source, tr$model, sep = "/") == sys & tr$task == task & !is.na(tr$y), ]
    lv <- contrasts[[task]][[f]]
    if (sum(g[[f]] %in% lv) < 2) next
    a <- amce(g, "y", f, "item", se_type = "CR2", levels = lv, baseline = lv[2])
    out[[length(out) + 1]] <- cbind(system = sys, task = task, a)
  }
}
res <- rows(out)
if (nrow(res)) {
  keep(res[, c("system", "task", "attribute", "term", "estimate", "std.error", "df", "p.value", "conf.low",
               "conf.high", "n", "n_clusters")], "moca_amce")
} else cat("\nmoca: no factor has two annotated stories in this run; no AMCE\n")
''',
}


R_BLOCKS["opinion_survey"] = r'''
# ---- Opinion survey: representativeness of the default prompt and of the personas to each party and overall
run <- read_run("opinion_survey")
keep(opinion_representativeness(chr(run$responses)), "opinion_survey_representativeness")
'''


def r_script(manifest: dict) -> str:
    parts = [R_HEADER.replace("__COMMAND__", manifest["command"])]
    for e in manifest["studies"]:
        study = e["study"]
        if "rds" not in e.get("exported", []):
            if e.get("status") != "skipped":
                parts.append(f"\n# ---- {study}: left out, its export/responses.rds was not written ({e.get('error', '')})\n")
            continue
        block = R_BLOCKS.get(study)
        parts.append(block if block else f"\n# ---- {study}: no R twin yet; the exported data is in {study}/export/\n")
    parts.append('\ncat("\\nR results written to r_results/\\n")\n')
    return "".join(parts)
