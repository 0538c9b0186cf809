"""Garden Path sentences (Aher et al. 2023, §5 and Appendix C): grammatical or ungrammatical?

Each of the 48 sentence pairs (24 of Christianson et al. 2001, 24 written by the authors; 12 OT
and 12 RAT verbs each) is judged in its garden-path and its control (comma) version by the same
sampled names (a paired design), with the 2-choice prompt of Figure 1b.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsubjects.datasets.registry import load_json
from simsubjects.errors import UserError
from simsubjects.studies.names import name_pool
from simsubjects.collect.studies.registry import fill_template

SETS = ("published", "novel", "both")
VERSIONS = ("garden_path", "control")
LABELS = ("grammatical", "ungrammatical")


def prompt_spec() -> dict:
    return load_json("aher2023/prompts.json")["garden_path"]


def sentences(set_: str = "both") -> pd.DataFrame:
    """The sentence pairs: id, set (published|novel), type (OT|RAT), garden_path, control."""
    if set_ not in SETS:
        raise UserError(f"--set {set_}: choose one of {', '.join(SETS)}")
    df = pd.DataFrame(load_json("aher2023/garden_path.json"))
    return df if set_ == "both" else df[df["set"] == set_].reset_index(drop=True)


def build_trials(names: int = 5, set_: str = "both", seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, items): sentence x version x `names` names drawn per sentence from the 1,000-name pool.

    The same names judge both versions of a sentence, so garden-path vs control is a within-name
    comparison; names=1000 gives every name, as in the paper.
    """
    pool = name_pool()
    if not 1 <= names <= len(pool):
        raise UserError(f"--names {names}: must be between 1 and {len(pool)}")
    spec = prompt_spec()
    stim = sentences(set_)
    rng = np.random.default_rng(seed)
    rows = []
    for s in stim.to_dict("records"):
        # Sorted draw: the trial order (and so the cache chunks) does not depend on the draw order.
        drawn = pool.iloc[np.sort(rng.choice(len(pool), size=names, replace=False))]
        for version in VERSIONS:
            for person in drawn.to_dict("records"):
                rows.append({
                    "trial": f"{s['id']} | {version} | {person['name']}", "item": s["id"], "condition": version,
                    "subject": person["name"],
                    "prompt": fill_template(spec["template"], "prompt template of garden_path "
                                            "(datasets/aher2023/prompts.json)", name=person["name"], sentence=s[version]),
                    "options": tuple(spec["completions"]), "labels": LABELS,
                    "set": s["set"], "type": s["type"], "version": version, "sentence": s[version],
                    "title": person["title"], "group": person["group"],
                })
    items = stim.rename(columns={"id": "item"})
    return pd.DataFrame(rows), items
