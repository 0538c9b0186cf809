"""The garden_path study: its declaration, joined by imports to its design (design.py), analysis (analysis.py)
and report block (report.py)."""

from __future__ import annotations

import click

from simsubjects.collect.sample_kinds import CENSUS
from simsubjects.collect.studies.registry import Option, Plan, StudyDef, size
from simsubjects.studies._papers import AHER2023
from simsubjects.studies.aher2023 import table1_reference
from .analysis import analyze_garden_path, plot_garden_path, summary
from .check_r import check_garden_path
from .design import SETS, build_trials, prompt_spec
from .report import garden_path


STUDY = StudyDef(
    name="garden_path",
    aliases=("garden-path",),
    help="Garden Path sentences: P(ungrammatical) of garden-path vs control versions of 24 published and "
         "24 novel sentences, judged by simulated participants (Aher et al. 2023, §5, App. C).",
    build=lambda names=5, set="both", seed=0: build_trials(names=names, set_=set, seed=seed),
    options=[
        Option(("--names",), {"show_default": True, "type": int,
                              "help": "Names per sentence (of the 1,000-name pool); each judges both versions."}),
        Option(("--set",), {"show_default": True, "type": click.Choice(SETS),
                            "help": "Sentences of Christianson et al. (2001), the authors' novel ones, or both."}),
    ],
    datasets=["garden_path", "names", "prompts_aher2023"],
    templates=lambda: [prompt_spec()["template"]],
    analyze=analyze_garden_path,
    plot=plot_garden_path,
    summary=summary,
    methods=("exact", "sampled"),
    title="Garden Path sentences (Aher et al. 2023, §5, App. C)",
    columns={
        "sentence": "Sentence judged", "version": "gp (garden path) or control (comma)",
        "set": "published (Christianson et al. 2001) or novel (Aher et al. 2023)", "type": "OT or RAT verb",
        "title": "Participant's title (Mr./Ms.)", "group": "Census group of the participant's surname",
    },
    papers=(Plan(AHER2023, lambda s: {"names": size(1_000, s), "set": "both"},
                 "48 sentences x 2 versions x 1,000 names", order=2),),
    report=garden_path,
    validity_reference=table1_reference,
    check_r=check_garden_path,
    r_function="replicate_garden_path",
    sample=CENSUS,  # the tests are over the 48 sentences, each once (names drawn per sentence are averaged)
)
