"""Ultimatum Game responder (Aher et al. 2023, §4, Figure 3): accept or reject an offer of $0-$10."""

from __future__ import annotations

import pandas as pd

from ...datasets.registry import load_json
from ...errors import UserError
from .names import REFLEXIVE, ultimatum_pairs
from .registry import Option, StudyDef, fill_template

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


STUDY = StudyDef(
    name="ultimatum",
    help="Ultimatum Game responders (Aher et al. 2023, §4): accept or reject $0-$10 of $10.",
    build=lambda pairs=200, seed=0, **_: build_trials(pairs=pairs, seed=seed),
    options=[Option(("--pairs",), {"default": 200, "show_default": True, "type": int,
                                   "help": "Name pairs (of the 10,000 balanced pairs) x 11 offers."})],
    datasets=["names", "prompts_aher2023"],
    templates=lambda: [prompt_spec()["template"]],
    analyze="simsubjects.analyze.ultimatum:analyze_ultimatum",
    plot="simsubjects.analyze.ultimatum:plot_ultimatum",
    summary="simsubjects.analyze.ultimatum:summary",
    methods=("exact", "sampled"),
)
