"""The conjoint study: its declaration, joined by imports to its design (design.py), analysis (analysis.py)
and report block (report.py)."""

from __future__ import annotations

import click

from simsubjects.collect.sample_kinds import DRAWN
from simsubjects.collect.studies.registry import Option, Plan, StudyDef, size
from simsubjects.studies._papers import HHY2014
from .analysis import analyze_immigration, check_conjoint, design_levels, export_tables, plot_immigration, summary
from .design import DESIGN_FILE, NAME, HUMAN_RESPONDENTS, build, collect, load_json
from .report import report_section


STUDY = StudyDef(
    name=NAME,
    help="Immigration conjoint (Hainmueller, Hopkins & Yamamoto 2014): which of two immigrants to admit; "
         "AMCEs and marginal means beside HHY's 1,396 respondents.",
    build=build,
    options=[
        Option(("--respondents",), {"show_default": True, "type": int,
                                    "help": f"Simulated respondents (HHY surveyed {HUMAN_RESPONDENTS:,})."}),
        Option(("--tasks",), {"show_default": True, "type": int,
                              "help": "Choice tasks (pairs of profiles) per respondent (HHY: 5)."}),
        Option(("--orders",), {"type": click.Choice(["both", "one"]), "show_default": True,
                               "help": "Ask each pair in both profile orders (position bias cancels) or as drawn."}),
        Option(("--layout",), {"type": click.Choice(["table", "prose"]), "show_default": True,
                               "help": "Profiles as a side-by-side table or as one paragraph each."}),
        Option(("--attribute-order",), {"type": click.Choice(["random", "fixed"]),
                                        "show_default": True,
                                        "help": "Attribute rows in a random order per respondent (recorded) or fixed."}),
        Option(("--outcome",), {"type": click.Choice(["choice", "rating"]),
                                "show_default": True,
                                "help": "Forced choice (exact P(profile)) or a 1-7 rating of each profile "
                                        "(exact distribution, expected rating)."}),
    ],
    datasets=["conjoint_immigration", "conjoint_immigration_design"],
    templates=lambda: [str(v) for v in load_json(DESIGN_FILE)["prompt"].values()],
    collect=collect,
    analyze=analyze_immigration,
    plot=plot_immigration,
    summary=summary,
    methods=("exact", "sampled"),
    aliases=("conjoint-immigration",),
    title="Immigration conjoint (Hainmueller, Hopkins & Yamamoto 2014)",
    # 1,396 respondents x 5 tasks at scale 1; at least 10 respondents: `make demo` (scale 0.002) asks
    # 10 x 5 tasks x 2 orders = 100 prompts of ~190 tokens, where 50 respondents took 223-584 s of its
    # 5-minute budget on a 2-core machine (issue 27). Every AMCE and marginal mean is still estimated,
    # with standard errors clustered by respondent (10 clusters: the report says it is a demo scale).
    papers=(Plan(HHY2014, lambda s: {"respondents": size(1_396, s, floor=10), "tasks": 5, "orders": "both"},
                 "1,396 respondents x 5 forced choices between two immigrants, each asked in both orders "
                 "(at least 10 respondents)", order=1),),
    report=report_section,
    check_r=check_conjoint,
    r_function="replicate_conjoint",
    levels=design_levels,
    export_tables=export_tables,
    columns={"task": "Task number of the respondent", "respondent": "Simulated respondent of a conjoint",
             "attribute_order": "Attribute rows in the order shown (|-separated)",
             "shown": "Profiles by position in this task order (2-1: profile 2 shown first)",
             "profile": "Profile rated (rating outcome; 0 for a forced choice)",
             "id": "Respondent of the profile (model:respondent, or human:CaseID of HHY 2014)",
             "outcome_kind": "choice (P(profile chosen), or 0/1 for people) or rating (expected 1-7 rating)",
             "chosen": "Outcome per profile: P(chosen) for the model, ChosenImmigrant (0/1) for people, "
                       "or the expected rating"},
    sample=DRAWN,  # each model respondent reads profiles drawn at random (the randomization is the design)
)
