"""The survey_bias study: its declaration, joined by imports to its design (design.py), analysis (analysis.py)
and report block (report.py)."""

from __future__ import annotations

import click

from simsubjects.collect.sample_kinds import CENSUS
from simsubjects.collect.studies.registry import Option, Plan, StudyDef, size
from simsubjects.studies._papers import TJUATJA2024
from .analysis import analyze_survey_bias, plot_survey_bias, summary
from .check_r import check_survey_bias
from .design import BIASES, PERTURBATIONS, _finalize, _replicate_params, format_prompt, option_order, study_items
from .report import survey_bias


SURVEY_BIAS = StudyDef(
    name="survey_bias",
    aliases=("survey-bias",),
    help="Survey response biases and non-bias perturbations (Tjuatja et al. 2024): original vs modified "
         "question forms, Δb/Δp with t-tests, entropy, Figure 2 grid.",
    build=lambda bias="all", perturbation="all", questions=None, seed=0, order="fixed": study_items(
        bias, perturbation, questions, seed, order),
    options=[
        Option(("--bias",), {"show_default": True,
                             "help": f"Comma-separated biases ({', '.join(BIASES)}), all or none."}),
        Option(("--perturbation",), {"show_default": True,
                                     "help": f"Comma-separated perturbations ({', '.join(PERTURBATIONS)}), all or none."}),
        Option(("--questions",), {"type": click.Path(exists=True, file_okay=False),
                                  "help": "Folder of question files in the released BiasMonkey format (default: bundled set)."}),
        Option(("--as-sample",), {"default": 0, "type": click.IntRange(0, 1_000_000), "show_default": True,
                                  "help": "With --method exact: replace each distribution by a seeded sample of this size (e.g. 50)."}),
        Option(("--order",), {"type": click.Choice(list(option_order.MODES)),
                              "show_default": True,
                              "help": option_order.HELP + " The order shown is recorded (order_shown, "
                                      "shown_position); fixed keeps the paper's forms and its response-order results."}),
    ],
    datasets=["survey_bias_questions"],
    templates=lambda: [format_prompt("$question", ("$option",))],
    finalize=_finalize,
    analyze=analyze_survey_bias,
    plot=plot_survey_bias,
    summary=summary,
    methods=("exact", "sampled"),
    title="Survey response biases (Tjuatja et al. 2024)",
    columns={
        "key": "Question key", "bias": "Response bias", "perturbation": "Non-bias perturbation ('' for a bias pair)",
        "form": "original or modified question form", "num_options": "Number of answer options",
    },
    papers=(Plan(TJUATJA2024, _replicate_params,
                 "every bundled question form (5 biases, 3 perturbations), 50 answers per form "
                 "(exact distributions sampled; at least 10)",
                 samples=lambda s: size(50, s, floor=10), order=1),),
    report=survey_bias,
    check_r=check_survey_bias,
    r_function="replicate_survey_bias",
    sample=CENSUS,  # the tests are over the question pairs, each once
)
