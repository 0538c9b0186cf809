"""Ultimatum Game responder (Aher et al. 2023, §4, Figure 3): accept or reject an offer of $0-$10."""

from __future__ import annotations

import pandas as pd

from simsubjects.datasets.registry import load_json
from simsubjects.errors import UserError
from simsubjects.studies.names import REFLEXIVE, ultimatum_pairs
from simsubjects.collect.studies.registry import fill_template

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
