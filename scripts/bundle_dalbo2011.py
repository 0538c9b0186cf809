"""Write examples/pd_dalbo/people.csv from Dal Bó & Fréchette (2011)'s decisions (tests/data/dalbo2011).

Person-level cooperation rates (facts derived from the data, bundled with the citation; the
decision-level file is test data only, in tests/data/dalbo2011 with its GPL-3 licence, not in the package): for each participant, the share of cooperation
  * in each round 1..5 of a supergame, over all their supergames (block empty), and
  * in each supergame, over its rounds (round empty; block = `game` + the data's supergame number,
    a counter within the session: the file holds the later supergames of each session, from
    supergame 20 to 77, the ones stratEst's strategy estimation uses),
with the number of decisions behind each share. Read with the `rdata` package.

Also writes examples/pd_dalbo_people/decisions.csv and subjects.csv (issue 39, `paths: people`): the
decision-level records of a small subset, every decision of it: the first PERSONS participants (by
id) of each treatment, their first SUPERGAMES supergames in the file, one row per person x supergame
x round with the person's choice and the other player's, c/d written as the study's J/F.

    python scripts/bundle_dalbo2011.py [PATH/TO/DF2011.rda]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import rdata

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "dalbo2011" / "DF2011.rda"  # a copy of ../shared/data/games/DF2011.rda
OUT = ROOT / "examples" / "pd_dalbo" / "people.csv"
PEOPLE_DIR = ROOT / "examples" / "pd_dalbo_people"
ROUNDS = 5
PERSONS, SUPERGAMES = 1, 2  # the people example's subset: persons per treatment, supergames per person
LABEL = {"c": "J", "d": "F"}  # c(ooperate) / d(efect) as the options of the study files (J cooperates)


def people(path: Path = SOURCE) -> pd.DataFrame:
    df = rdata.read_rda(str(path))["DF2011"]
    df = df.assign(treatment=df["treatment"].astype(str), id=df["id"].astype(int), game=df["game"].astype(int),
                   period=df["period"].astype(int), coop=(df["choice"].astype(str) == "c").astype(float))
    df["person"] = df["treatment"] + "-" + df["id"].astype(str)  # ids restart in each treatment
    by_round = (df[df["period"] <= ROUNDS].groupby(["person", "treatment", "period"])["coop"].agg(["mean", "size"])
                .reset_index().rename(columns={"period": "round"}))
    by_round["block"] = ""
    by_sg = df.groupby(["person", "treatment", "game"])["coop"].agg(["mean", "size"]).reset_index()
    by_sg["block"] = "game" + by_sg["game"].astype(str)
    by_sg["round"] = pd.NA
    out = pd.concat([by_round, by_sg.drop(columns=["game"])], ignore_index=True)
    out = out.rename(columns={"mean": "value", "size": "n"})
    out["measure"] = "share choice=J"  # J: the cooperative option of examples/pd_dalbo/study.yaml
    out["round"] = out["round"].astype("Int64")
    return out[["person", "treatment", "block", "round", "measure", "value", "n"]]


def decisions(path: Path = SOURCE, persons: int = PERSONS, supergames: int = SUPERGAMES) -> pd.DataFrame:
    """The people example's recorded decisions: person, treatment, supergame (sg1, sg2, ...: the person's
    k-th supergame in the file), game (the data's supergame number), round, choice, other (J/F)."""
    df = rdata.read_rda(str(path))["DF2011"]
    df = df.assign(treatment=df["treatment"].astype(str), id=df["id"].astype(int), game=df["game"].astype(int),
                   period=df["period"].astype(int), choice=df["choice"].astype(str).map(LABEL),
                   other=df["other.choice"].astype(str).map(LABEL))
    ids = df.groupby("treatment")["id"].unique().map(lambda x: sorted(x)[:persons])
    df = df[[i in ids[t] for t, i in zip(df["treatment"], df["id"])]]
    games = df.groupby(["treatment", "id"])["game"].unique().map(lambda x: sorted(x)[:supergames])
    df = df[[g in games[(t, i)] for t, i, g in zip(df["treatment"], df["id"], df["game"])]].copy()
    df["supergame"] = ["sg" + str(games[(t, i)].index(g) + 1) for t, i, g in zip(df["treatment"], df["id"], df["game"])]
    df["person"] = df["treatment"] + "-" + df["id"].astype(str)
    df = df.sort_values(["treatment", "id", "game", "period"])
    return df.rename(columns={"period": "round"})[["person", "treatment", "supergame", "game", "round", "choice",
                                                    "other"]].reset_index(drop=True)


def subjects(dec: pd.DataFrame) -> pd.DataFrame:
    """The people example's subjects table: each person's treatment, R and delta (from the treatment's name:
    D5/D75 = delta 1/2 or 3/4, R32/R40/R48 = the payoff of mutual cooperation)."""
    out = dec[["person", "treatment"]].drop_duplicates().rename(columns={"person": "subject"})
    out["R"] = out["treatment"].str.extract(r"R(\d+)")[0].astype(int)
    out["delta"] = out["treatment"].str.extract(r"^D(\d+)")[0].map(lambda x: float("0." + x))
    return out.reset_index(drop=True)


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else SOURCE
    table = people(src)
    table.to_csv(OUT, index=False, float_format="%.6g")
    print(f"wrote {OUT}: {len(table)} rows, {table['person'].nunique()} participants")
    dec = decisions(src)
    PEOPLE_DIR.mkdir(exist_ok=True)
    dec.to_csv(PEOPLE_DIR / "decisions.csv", index=False)
    subjects(dec).to_csv(PEOPLE_DIR / "subjects.csv", index=False)
    print(f"wrote {PEOPLE_DIR}/decisions.csv: {len(dec)} decisions of {dec['person'].nunique()} participants "
          f"(at most {dec['round'].max()} rounds)")
