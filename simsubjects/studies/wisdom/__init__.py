"""The wisdom study: its declaration, joined by imports to its design (design.py), analysis (analysis.py)
and report block (report.py)."""

from __future__ import annotations

from simsubjects.collect.sample_kinds import DRAWN
from simsubjects.collect.studies.registry import Option, Plan, StudyDef, size
from simsubjects.studies._papers import AHER2023
from simsubjects.studies.aher2023 import table1_reference
from .analysis import analyze_wisdom, plot_wisdom, summary
from .check_r import check_wisdom
from .design import STUDY_NAME, build_trials, collect, prompt_spec, validate
from .report import wisdom


STUDY = StudyDef(
    name=STUDY_NAME,
    help="Wisdom of Crowds: integer estimates to 10 general-knowledge questions, with medians, IQRs and "
         "hyper-accuracy; participants titled Mr., Ms. or Mx. (Aher et al. 2023, §7, App. D).",
    build=lambda participants=5, questions="all", seed=0: build_trials(participants_=participants,
                                                                             questions_=questions, seed=seed),
    options=[
        Option(("--participants",), {"show_default": True, "type": int,
                                     "help": "Participants (of the 1,500 Mr./Ms./Mx. names), each answering "
                                             "every question."}),
        Option(("--questions",), {"show_default": True,
                                  "help": "Questions by number: all, 1-5 (Moussaïd et al.), 6-10 (novel), "
                                          "or e.g. 1,8."}),
    ],
    datasets=["wisdom", "names", "prompts_aher2023"],
    templates=lambda: [prompt_spec()["template"]],
    collect=collect,
    validate=validate,
    analyze=analyze_wisdom,
    plot=plot_wisdom,
    summary=summary,
    methods=("generated",),
    title="Wisdom of Crowds (Aher et al. 2023, §7, App. D)",
    columns={
        "estimate": "Parsed integer estimate (missing when invalid)", "truth": "True answer",
        "completion": "Raw model completion", "title": "Participant's title (Mr./Ms./Mx.)",
        "group": "Census group of the participant's surname",
    },
    papers=(Plan(AHER2023, lambda s: {"participants": size(1_500, s, floor=2), "questions": "all"},
                 "1,500 participants (Mr./Ms./Mx.) x 10 questions", order=3),),
    report=wisdom,
    validity_reference=table1_reference,
    check_r=check_wisdom,
    r_function="replicate_wisdom",
    sample=DRAWN,  # participants' names drawn with the seed
)
