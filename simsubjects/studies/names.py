"""Simulated participants of the Turing Experiments: titles x Census surnames (Aher et al., App. A)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsubjects.datasets.registry import load_json

TITLES = ("Mr.", "Ms.")
REFLEXIVE = {"Mr.": "himself", "Ms.": "herself", "Mx.": "themself"}
POSSESSIVE = {"Mr.": "his", "Ms.": "her", "Mx.": "their"}
OBJECT = {"Mr.": "him", "Ms.": "her", "Mx.": "them"}
SUBJECT_PRONOUN = {"Mr.": "he", "Ms.": "she", "Mx.": "they"}


def surnames() -> pd.DataFrame:
    """500 surnames with their Census group and rank within the group (1 = most common)."""
    groups = load_json("aher2023/names.json")["groups"]
    return pd.DataFrame(
        [{"surname": s, "group": g, "rank": i + 1} for g, names in groups.items() for i, s in enumerate(names)]
    )


def name_pool(titles=TITLES) -> pd.DataFrame:
    """Every title x surname (1,000 names for Mr./Ms., 1,500 with Mx.)."""
    s = surnames()
    return pd.concat([s.assign(title=t, name=t + " " + s["surname"]) for t in titles], ignore_index=True)


def ultimatum_pairs(seed: int = 0) -> pd.DataFrame:
    """The balanced pairing of Aher et al. §4: 10,000 proposer-responder pairs.

    Each surname proposes to five others, one from each group, through a random permutation per
    (proposer group, responder group) with no self-pairing, so every surname is also a responder
    exactly five times; x the 2x2 titles, each of the 1,000 names responds 10 times. Rows come in
    blocks of four (the title combinations of one surname pair) in a shuffled order, so the first
    N pairs of the table are balanced across gender pairings for any N divisible by 4.
    """
    rng = np.random.default_rng(seed)
    s = surnames()
    groups = list(dict.fromkeys(s["group"]))
    members = {g: s.loc[s["group"] == g, "surname"].tolist() for g in groups}
    pairs = []
    for gp in groups:
        for gr in groups:
            n = len(members[gr])
            while True:
                perm = rng.permutation(n)
                if gp != gr or not np.any(perm == np.arange(n)):
                    break
            pairs += [(members[gp][i], gp, members[gr][perm[i]], gr) for i in range(len(members[gp]))]
    order = rng.permutation(len(pairs))
    rows = []
    for k in order:
        p, gp, r, gr = pairs[k]
        for tp in TITLES:
            for tr in TITLES:
                rows.append({"pair": f"{tp} {p} -> {tr} {r}", "proposer": f"{tp} {p}", "responder": f"{tr} {r}",
                             "proposer_title": tp, "responder_title": tr, "proposer_group": gp,
                             "responder_group": gr, "pairing": f"{tp[:2]}-{tr[:2]}"})
    return pd.DataFrame(rows)
