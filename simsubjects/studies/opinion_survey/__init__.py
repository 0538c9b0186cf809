"""The opinion_survey study: its declaration, joined by imports to its design (design.py), analysis (analysis.py)
and report block (report.py)."""

from __future__ import annotations

import click

from simsubjects.collect.sample_kinds import CENSUS, DRAWN, IDENTICAL_PROMPTS
from simsubjects.collect.studies.registry import Option, Plan, StudyDef, size
from simsubjects.studies._papers import SANTURKAR2023
from .analysis import analyze_opinion_survey, check_r_opinion_survey, plot_opinion_survey, summary
from .design import STUDY, build, finalize, format_question, option_order
from .report import report_section



def _sample(params: dict) -> str:
    """The default prompt alone: copies of one prompt; personas: the table's rows, or drawn with --sample N."""
    if str(params.get("personas") or "none") == "none":
        return IDENTICAL_PROMPTS
    return CENSUS if str(params.get("sample") or "all") == "all" else DRAWN


OPINION_SURVEY = StudyDef(
    name=STUDY,
    aliases=("opinion-survey",),
    help="Opinion survey over ATP questions (OpinionQA, Santurkar et al. 2023), with personas from a respondents "
         "table: representativeness overall and by group, steerability, refusals, order effects.",
    build=build,
    options=[
        Option(("--questions",), {"type": click.Path(exists=True, file_okay=False),
                                  "help": "Folder with OpinionQA's info.csv (default: the bundled 20-question survey)."}),
        Option(("--first",), {"type": int, "show_default": True,
                              "help": "Only the first N questions of info.csv (0: all)."}),
        Option(("--human",), {"type": click.Path(file_okay=False),
                              "help": "Human answers: a folder of <ATTRIBUTE>_data.json count files or an OpinionQA "
                                      "wave folder (default: the --questions folder)."}),
        Option(("--human-format",), {"type": click.Choice(["auto", "counts", "wave"]),
                                     "show_default": True, "help": "Which released format to read."}),
        Option(("--groups",), {"show_default": True,
                               "help": "Demographic attribute(s) to compare by, comma-separated (human count files)."}),
        Option(("--personas",), {"show_default": True,
                                 "help": "none, bundled (60 synthetic respondents) or a respondents table "
                                         "(.csv, .sav, .dta: demographic columns, optional weight)."}),
        Option(("--persona-format",), {"show_default": True,
                                       "help": "argyle (first-person backstory), qa, bio, portray (OpinionQA "
                                               "steering) or a template naming columns as $COLUMN."}),
        Option(("--persona-attributes",), {"help": "Columns the persona text names "
                                           "(default: all for argyle, --steer for qa/bio/portray)."}),
        Option(("--persona-weight",), {"help": "Weight column of the respondents table "
                                       "(default: a column named WEIGHT if there is one)."}),
        Option(("--steer",), {"show_default": True,
                              "help": "Attribute whose group a persona names (steerability; per-group sampling)."}),
        Option(("--sample",), {"show_default": True,
                               "help": "all: one subject per row; N: a weighted resample of N rows per --steer group "
                                       "(N in all with --margins)."}),
        Option(("--margins",), {"type": click.Path(dir_okay=False),
                                "help": "CSV attribute,group,share: rake the respondents to these margins, then draw "
                                        "the panel from the raked weights."}),
        Option(("--trim",), {"type": click.FloatRange(min=1.0),
                             "help": "With --margins: cap the raked weights at this many times their mean (e.g. 5), "
                                     "trading exact margins for a larger Kish effective n; both are recorded in "
                                     "the manifest (panel)."}, omit_unset=True),
        Option(("--no-default-prompt",), {"is_flag": True, "help": "Ask only the personas, not also the prompt "
                                          "without persona (OpinionQA's default)."}),
        Option(("--order",), {"type": click.Choice(list(option_order.MODES)),
                              "show_default": True, "help": option_order.HELP}),
    ],
    datasets=["opinion_survey"],
    templates=lambda: [format_question("$question", ("$option",))],
    finalize=finalize,
    analyze=analyze_opinion_survey,
    plot=plot_opinion_survey,
    summary=summary,
    methods=("exact", "sampled"),
    title="Opinion survey beside people by group, personas and order effects (Santurkar et al. 2023)",
    papers=(Plan(SANTURKAR2023,
                 lambda s: {"personas": "bundled", "sample": str(size(20, s, floor=1)), "persona_format": "argyle",
                            "steer": "POLPARTY", "order": "random", "groups": "POLPARTY"},
                 "the bundled 20-question ATP-style survey beside its synthetic respondents by party (both OpinionQA "
                 "formats), asked with the default prompt and with 20 Argyle-style personas per party drawn from the "
                 "bundled respondents by weight, options in a random order per subject", order=1),),
    report=report_section,
    check_r=check_r_opinion_survey,
    r_function="replicate_opinion_survey",
    sample=_sample,
)
