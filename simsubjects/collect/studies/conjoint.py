"""The immigration conjoint of Hainmueller, Hopkins & Yamamoto (2014) as a built-in study.

Each simulated respondent sees `--tasks` pairs of immigrant profiles drawn from the HHY design
(nine attributes, two restrictions; `datasets/conjoint/immigration_design.json`) and is asked which
immigrant they would prefer to see admitted to the United States. The answer is read exactly:
P(" 1") and P(" 2") normalized, from one forward pass per task order (both options are single
tokens after the same prompt). With `--orders both` (default) each task is asked in both profile
orders and P(profile chosen) is their mean, so a preference for the first-listed profile cancels.
`analyze` estimates AMCEs and marginal means with cregg's conventions (analyze/conjoint.py) beside
the 1,396 respondents of HHY's survey (bundled from cregg).
"""

from __future__ import annotations

import time

import click
import pandas as pd

from ...datasets.registry import load_json
from ...errors import UserError
from .conjoint_design import Design
from ._papers import HHY2014
from .registry import Option, Plan, StudyDef, size

DESIGN_FILE = "conjoint/immigration_design.json"
HUMAN_RESPONDENTS = 1_396  # HHY 2014's sample in cregg's `immigration` (CaseID)
MAX_RESPONDENTS = 100_000


def immigration_design() -> Design:
    return Design.from_dict(load_json(DESIGN_FILE), f"datasets/{DESIGN_FILE}")


def load_human() -> pd.DataFrame:
    """HHY 2014's 13,960 profiles (cregg's `immigration`), factor level order kept."""
    from ...datasets.registry import data_path

    return pd.read_parquet(data_path("conjoint/immigration.parquet"))


def build(respondents: int = 50, tasks: int = 5, orders: str = "both", layout: str = "table",
          attribute_order: str = "random", outcome: str = "choice", seed: int = 0):
    if not 1 <= respondents <= MAX_RESPONDENTS:
        raise UserError(f"--respondents {respondents}: must be between 1 and {MAX_RESPONDENTS}")
    if not 1 <= tasks <= 50:
        raise UserError(f"--tasks {tasks}: must be between 1 and 50")
    design = immigration_design().with_options(layout=layout, attribute_order=attribute_order, outcome=outcome,
                                               both_orders=orders == "both")
    design.tasks_per_respondent = tasks
    profiles = design.profiles(respondents, seed)
    trials = design.trials(profiles, STUDY.name)
    items = profiles.assign(item=profiles["respondent"] + "-t" + profiles["task"].astype(str))
    return trials, items[["item", *[c for c in items.columns if c != "item"]]]


def collect(model, cache, trials: pd.DataFrame, params: dict, show_progress: bool):
    """The generic k-choice collection, plus the work it took: task orders per second, forward passes."""
    from ..runner import collect_choices

    before = dict(getattr(model, "stats", {}) or {})
    t0 = time.perf_counter()
    responses, stats = collect_choices(model, trials, cache, study=STUDY.name, method=params.get("method", "exact"),
                                       n=params.get("n") or 50, chunk=params.get("batch_size", 64),
                                       show_progress=show_progress)
    seconds = time.perf_counter() - t0
    after = getattr(model, "stats", {}) or {}
    tasks = trials["item"].nunique()
    stats["tasks"] = int(tasks)
    stats["task_orders"] = int(len(trials))
    stats["tasks_per_second"] = round(tasks / seconds, 2) if seconds > 0 else None
    if "forwards" in after:  # the transformers backend counts its forward passes (packed rows)
        stats["forward_passes"] = int(after["forwards"] - before.get("forwards", 0))
    return responses, stats, None


STUDY = StudyDef(
    name="conjoint_immigration",
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
    analyze="simsubjects.analyze.conjoint_study:analyze_immigration",
    plot="simsubjects.analyze.conjoint_study:plot_immigration",
    summary="simsubjects.analyze.conjoint_study:summary",
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
    report="simsubjects.publish.sections.conjoint:report_section",
    check_r="simsubjects.analyze.conjoint_study:check_conjoint",
    r_function="replicate_conjoint",
    levels="simsubjects.analyze.conjoint_study:design_levels",
    export_tables="simsubjects.analyze.conjoint_study:export_tables",
    columns={"task": "Task number of the respondent", "respondent": "Simulated respondent of a conjoint",
             "attribute_order": "Attribute rows in the order shown (|-separated)",
             "shown": "Profiles by position in this task order (2-1: profile 2 shown first)",
             "profile": "Profile rated (rating outcome; 0 for a forced choice)",
             "id": "Respondent of the profile (model:respondent, or human:CaseID of HHY 2014)",
             "outcome_kind": "choice (P(profile chosen), or 0/1 for people) or rating (expected 1-7 rating)",
             "chosen": "Outcome per profile: P(chosen) for the model, ChosenImmigrant (0/1) for people, "
                       "or the expected rating"},
)
