"""The ultimatum study: its declaration, joined by imports to its design (design.py), analysis (analysis.py)
and report block (report.py)."""

from __future__ import annotations

from simsubjects.collect.sample_kinds import DRAWN
from simsubjects.collect.studies.registry import Option, Plan, StudyDef, size
from simsubjects.studies._papers import AHER2023
from simsubjects.studies.aher2023 import table1_reference
from .analysis import analyze_ultimatum, plot_ultimatum, summary
from .check_r import check_ultimatum
from .design import build_trials, prompt_spec, select_offers
from .report import ultimatum


STUDY = StudyDef(
    name="ultimatum",
    help="Ultimatum Game responders (Aher et al. 2023, §4): accept or reject $0-$10 of $10.",
    build=lambda pairs=200, seed=0, offers=None: build_trials(pairs=pairs, offers=select_offers(offers), seed=seed),
    options=[Option(("--pairs",), {"show_default": True, "type": int,
                                   "help": "Name pairs (of the 10,000 balanced pairs) x 11 offers."}),
             # omitted when not given: runs made before the option resume with their recorded parameters
             Option(("--offers",), {"help": "Offers in dollars: all (the paper's $0-$10) or e.g. 0,2,5,10."},
                    omit_unset=True)],
    datasets=["names", "prompts_aher2023"],
    templates=lambda: [prompt_spec()["template"]],
    analyze=analyze_ultimatum,
    plot=plot_ultimatum,
    summary=summary,
    methods=("exact", "sampled"),
    title="Ultimatum Game (Aher et al. 2023, §4)",
    columns={
        "offer": "Offer to the responder in dollars (of $10)", "proposer": "Proposer's name",
        "responder": "Responder's name", "proposer_title": "Proposer's title (Mr./Ms.)",
        "responder_title": "Responder's title (Mr./Ms.)",
        "proposer_group": "Census group of the proposer's surname", "responder_group": "Census group of the responder's surname",
        "pairing": "Gender pairing proposer-responder (Mr-Ms = male proposer, female responder)",
        "pair": "Name-pair identifier",
    },
    papers=(Plan(AHER2023, lambda s: {"pairs": size(10_000, s, floor=8)},
                 "10,000 name pairs x 11 offers (at least 8 pairs: two per gender pairing)", order=1),),
    report=ultimatum,
    validity_reference=table1_reference,
    check_r=check_ultimatum,
    r_function="replicate_ultimatum",
    sample=DRAWN,  # name pairs drawn with the seed from the 10,000 balanced pairs
)
