"""Small named tables a study file may use instead of a file (`table: builtin:NAME`).

They are pieces of the built-in studies that are computed or bundled with the package: the balanced
name pairs of the Ultimatum Game (Aher et al. 2023, §4), the 1,000-name pool and the Garden Path
sentences (§5), MoCa's stories and human votes (Nie et al. 2023), and the response-bias question forms
with their generated perturbations (Tjuatja et al. 2024). Each takes the study's seed. docs/studies.md
lists them.
"""

from __future__ import annotations

import pandas as pd

from ..studies.names import name_pool
from ..studies.names import REFLEXIVE, ultimatum_pairs as pairs
from simsubjects.datasets.moca_humans import load_moca


def ultimatum_pairs(seed: int) -> pd.DataFrame:
    """The 10,000 balanced proposer-responder pairs, with the proposer's reflexive pronoun."""
    df = pairs(seed)
    return df.assign(proposer_self=df["proposer_title"].map(REFLEXIVE))


def moca_items(task: str):
    """MoCa's stories of one task (Nie et al. 2023) with `text` = story + question, as its prompts join them."""
    def table(seed: int) -> pd.DataFrame:
        _, items = load_moca(task)
        return items.assign(text=items["story"] + " " + items["question"], template="yesno")
    return table


def moca_votes(task: str):
    """MoCa's 25 human votes per story of one task: tidy rows (trial, item, subject, response, task, persona)."""
    def table(seed: int) -> pd.DataFrame:
        human, _ = load_moca(task)
        return human[["trial", "item", "subject", "response", "task", "persona"]]
    return table


def names(seed: int) -> pd.DataFrame:
    """The 1,000 names (title x Census surname) of the Turing Experiments: name, title, surname, group, rank."""
    return name_pool()[["name", "title", "surname", "group", "rank"]]


def garden_path_sentences(seed: int) -> pd.DataFrame:
    """The 48 Garden Path sentence pairs (Aher et al. 2023, App. C): id, set, type, garden_path, control."""
    from ..studies.garden_path.design import sentences  # lazy: looked up per call (tests replace sentences)

    return sentences("both")


def survey_bias_items(seed: int) -> pd.DataFrame:
    """The bundled response-bias question forms (Tjuatja et al. 2024) with perturbations generated from the seed.

    One row per form: item, key, bias, perturbation, form, question, and per-form lists options,
    labels (the letter recorded: mapped back to the original order for reversed forms), positions, refusal.
    """
    from ..studies.survey_bias.design import load_bundled_items  # lazy: looked up per call (tests replace load_bundled_items)

    items = load_bundled_items(seed=seed)
    return items[["item", "key", "bias", "perturbation", "form", "question", "options", "labels", "positions",
                  "refusal", "num_options"]]


def personas(seed: int) -> pd.DataFrame:
    """The 25 personas of MoCa's Table A3 (Nie et al. 2023): slug, category, text (one sentence, no final period)."""
    from ..studies.moca.design import load_personas  # lazy: imports scipy, numpy

    return load_personas()[["slug", "category", "persona"]].rename(columns={"persona": "text"})


NAMED = {"ultimatum_pairs": ultimatum_pairs, "names": names, "garden_path_sentences": garden_path_sentences,
         "moca_causal": moca_items("causal"), "moca_moral": moca_items("moral"),
         "moca_causal_votes": moca_votes("causal"), "moca_moral_votes": moca_votes("moral"),
         "survey_bias_items": survey_bias_items, "personas": personas}
