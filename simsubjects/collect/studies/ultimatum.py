"""Ultimatum Game responder (Aher et al. 2023, §4, Figure 3): accept or reject an offer of $0-$10."""

from __future__ import annotations

import pandas as pd

from ...datasets.registry import load_json
from ...errors import UserError
from .names import REFLEXIVE, ultimatum_pairs
from ._papers import AHER2023
from .registry import Option, Plan, StudyDef, fill_template, size

MAX_PAIRS = 10_000


def prompt_spec() -> dict:
    return load_json("aher2023/prompts.json")["ultimatum"]


def build_trials(pairs: int = 200, offers=None, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, items): the first `pairs` name pairs of the balanced design x every offer."""
    if not 1 <= pairs <= MAX_PAIRS:
        raise UserError(f"--pairs {pairs}: must be between 1 and {MAX_PAIRS}")
    spec = prompt_spec()
    offers = list(spec["offers"] if offers is None else offers)
    bad = [o for o in offers if o not in spec["offers"]]
    if bad:
        raise UserError(f"--offers: {bad} not in 0..{spec['endowment']}")
    design = ultimatum_pairs(seed).head(pairs)
    rows = []
    for rec in design.to_dict("records"):
        for offer in offers:
            prompt = fill_template(
                spec["template"], "prompt template of ultimatum (datasets/aher2023/prompts.json)",
                proposer=rec["proposer"], responder=rec["responder"],
                proposer_self=REFLEXIVE[rec["proposer_title"]], offer=offer, keep=spec["endowment"] - offer,
            )
            rows.append({
                "trial": f"{rec['pair']} | ${offer}", "item": f"offer-{offer:02d}", "condition": rec["pairing"],
                "subject": rec["responder"], "prompt": prompt,
                "options": tuple(spec["completions"]), "labels": ("accept", "reject"),
                "offer": offer, **rec,
            })
    items = pd.DataFrame({"item": [f"offer-{o:02d}" for o in offers], "offer": offers,
                          "share_offered": [o / spec["endowment"] for o in offers]})
    return pd.DataFrame(rows), items


def select_offers(spec: str | None) -> list[int] | None:
    """--offers: "all" (None: the paper's 11 offers, $0-$10) or dollars such as "0,2,5,10" or "0-3"."""
    if spec is None or str(spec).strip().lower() == "all":
        return None
    wanted: set[int] = set()
    try:
        for part in str(spec).split(","):
            a, _, b = part.strip().partition("-")
            wanted.update(range(int(a), int(b or a) + 1))
    except ValueError:
        raise UserError(f"--offers {spec}: give dollars 0-10, e.g. 0,2,5,10 or 0-3, or all") from None
    return sorted(wanted)


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
    analyze="simsubjects.analyze.ultimatum:analyze_ultimatum",
    plot="simsubjects.analyze.ultimatum:plot_ultimatum",
    summary="simsubjects.analyze.ultimatum:summary",
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
    report="simsubjects.publish.sections.aher2023:ultimatum",
    validity_reference="simsubjects.publish.sections.aher2023:table1_reference",
    check_r="simsubjects.analyze.check_r:check_ultimatum",
    r_function="replicate_ultimatum",
)
