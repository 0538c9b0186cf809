"""The moca study: its declaration, joined by imports to its design (design.py), analysis (analysis.py)
and report block (report.py)."""

from __future__ import annotations

import click

from simsubjects.collect.sample_kinds import CENSUS
from simsubjects.collect.studies.registry import Option, Plan, StudyDef
from simsubjects.studies._papers import NIE2023
from .analysis import analyze_moca, design_levels, plot_moca, summary
from .check_r import check_moca
from .design import TEMPLATES, _replicate_params, _with_human_votes, study_items
from .report import moca


MOCA = StudyDef(
    name="moca",
    help="MoCa causal and moral judgments (Nie et al. 2023): P(Yes) per story beside 25 human votes, "
         "agreement metrics and AMCE per factor.",
    build=study_items,
    options=[
        Option(("--task",), {"type": click.Choice(["causal", "moral", "all"]),
                             "show_default": True, "help": "Which story set."}),
        Option(("--personas",), {"show_default": True,
                                 "help": "Persona prefixes (Table A3): none, all or comma-separated slugs."}),
        Option(("--stories",), {"type": int, "show_default": True,
                                "help": "Only the first N stories of each task (0: all), for quick runs."}),
        Option(("--template",), {"type": click.Choice(["yesno", "ab", "both"]),
                                 "show_default": True, "help": "Answer format of the prompt."}),
    ],
    datasets=["moca_causal", "moca_moral", "personas"],
    templates=lambda: list(TEMPLATES.values()),
    finalize=_with_human_votes,
    analyze=analyze_moca,
    plot=plot_moca,
    summary=summary,
    methods=("exact", "sampled"),
    title="Causal and moral judgments, MoCa (Nie et al. 2023)",
    columns={"task": "causal or moral", "persona": "Persona slug ('' for none)", "template": "Prompt template"},
    papers=(Plan(NIE2023, _replicate_params,
                 "all 206 stories (144 causal, 62 moral), both prompt templates pooled, beside 25 human votes "
                 "per story", order=1),),
    report=moca,
    check_r=check_moca,
    levels=design_levels,
    r_function="replicate_moca",
    sample=CENSUS,  # the tests are over the stories, each once
)
