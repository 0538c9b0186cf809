"""README.md of a replication folder: how to re-run it, what analysis.R and analysis.do need and check,
and what is where. User text (titles, paths, model names, errors) is escaped Markdown on one line
(collect/untrusted.py)."""

from __future__ import annotations

import json

from simsubjects import __version__
from simsubjects.collect.untrusted import md_code, md_text, term
from simsubjects.publish.rscript import r_imports


def readme(manifest: dict) -> str:
    done = [e for e in manifest["studies"] if e.get("status") == "complete"]
    lines = [
        # user text (titles, paths, model names, errors) is escaped Markdown on one line (simsubjects.collect.untrusted)
        f"# Replication package: {md_text(', '.join(manifest['papers']))}",
        "",
        *[f"- {md_text(t)}" for t in manifest["paper_titles"].values()],
        "",
        f"Written by simsubjects {md_text(manifest['versions'].get('simsubjects', __version__))} on "
        f"{md_text(manifest['created'])} with model {md_code(manifest['model']['spec'])} (revision "
        f"{md_code(manifest['model'].get('revision', '?'))}) at scale {manifest['scale']:g} (1 = the paper's full design).",
        "",
        "## Re-run",
        "",
        "```sh",
        term(manifest["command"]) + "   # collect, analyze, export, report (resumes if interrupted)",
        "Rscript analysis.R                 # from this folder: the R side on the exported data",
        "simsubjects report .               # re-render report.html from the run folders",
        "```",
        "",
        *_readme_r(manifest),
        "",
        "## What is where",
        "",
        "| path | what |",
        "| --- | --- |",
        "| `report.html` | one self-contained report: the model beside the human references and the papers' numbers |",
        "| `manifest.json` | papers, scale, model, command, versions, and every study's parameters, counts, timings |",
        "| `analysis.R` | the R twins (t-tests, AMCE, response-bias deltas, obedience survival) from `*/export/`, "
        "each table compared with its Python twin in `*/analysis/` |",
        "| `r-package/simsubjects/` | the R package's source (`R CMD INSTALL r-package/simsubjects`) |",
        "| `analysis.do` | the Stata side where Stata's commands express it (Ultimatum Game, Garden Path paired t-tests, "
        "conjoint marginal means), checked against `*/analysis/` |",
    ]
    for e in manifest["studies"]:
        status = e.get("status")
        what = md_text(f"{e['design_at_scale_1']} at scale 1; here {json.dumps(e['parameters'])}")
        if status != "complete":
            what = f"**{md_text(status)}**: {md_text(e.get('error', ''))}"
        lines.append(f"| {md_code(e['folder'] + '/')} | {md_text(e['study'])} ({md_text(e['paper'])}): {what} |")
    if done:
        lines += [
            "",
            "Inside each study folder: `manifest.json` (versions, model revision, parameters, seed, dataset",
            "checksums, prompt-template hashes, counts, validity, timings), `responses.parquet` (the tidy long",
            "table, docs/schema.md of simsubjects), `items.parquet`, `records.jsonl` (free-text transcripts, Milgram),",
            "`cache.sqlite` (the request cache a re-run resumes from), `analysis/` (tables as CSV, figures as PNG)",
            "and `export/` (responses and items as .parquet, .csv, .rds with R factors, .dta/.sav with value labels,",
            "plus `codebook_*.md/.csv`).",
        ]
    return "\n".join(lines) + "\n"


def _readme_r(manifest: dict) -> list[str]:
    """The README's lines on running analysis.R: what it needs, what it writes, what it checks."""
    imports = r_imports()
    where = ("`R CMD INSTALL r-package/simsubjects` installs it from this folder; without it analysis.R sources "
             "`r-package/simsubjects/R/`" if manifest["files"].get("r_package") else
             "this folder carries no copy of it (written from an install without the R package): "
             "`R CMD INSTALL <simsubjects checkout>` or `SIMSUBJECTS_R_SOURCE=<checkout>/R`")
    return [
        f"`analysis.R` needs R and the R package simsubjects ({where}); the package's Imports: "
        f"{', '.join(imports) or '?'} (Debian: `apt-get install " + " ".join(
            f"r-cran-{i.lower()}" for i in imports if i not in ('stats', 'utils')) + "`).",
        "It writes `r_results/<study>/<table>.csv` under the names and columns of the Python tables, prints one "
        "line per table with the largest difference from `<study>/analysis/<table>.csv`, exits with status 1 "
        "when one differs, and records `sessionInfo()`, the R package version and the commit in "
        "`r_results/session.txt`. `Rscript analysis.R <study folder> ...` re-runs those studies only. With "
        "the suggested package clubSandwich installed, the conjoint's clustered CR2 test uses it (the same "
        "numbers as estimatr's; 2 s instead of 17 s for HHY's 13,960 profiles).",
        "",
        "Stata users: the exports are `*/export/*.dta` with value labels in the design's order (baseline first). "
        "`do analysis.do` computes with Stata's own commands the Ultimatum Game's acceptance by offer and the "
        "pairing Welch test (`ttest, unequal`), the Garden Path per-sentence means and paired t-tests (`collapse`, "
        "`ttest gp == control`) and the conjoint's marginal means with respondent-clustered errors "
        "(`svy: regress`), and compares each with the Python table the same way (exit 9 on a difference).",
        "",
        "No Stata version here, because Stata has no built-in command for them: MoCa's AMCEs (CR2 errors with "
        "Satterthwaite df), the conjoint's AMCEs (cregg's averaging over restricted pairs) and its clustered Wald "
        "test, the exact Wilcoxon signed-rank p-values, the Milgram Kaplan-Meier tables, the Wisdom of Crowds "
        "type-7 quartiles, the survey-bias deltas and the opinion survey's Wasserstein representativeness: use "
        "analysis.R. analysis.do was read-checked, not run (no Stata where it was written).",
    ]
