"""Write examples/pd_dalbo/people.csv from Dal Bó & Fréchette (2011)'s decisions (tests/data/dalbo2011).

Person-level cooperation rates (facts derived from the data, bundled with the citation; the
decision-level file is test data only, in tests/data/dalbo2011 with its GPL-3 licence, not in the package): for each participant, the share of cooperation
  * in each round 1..5 of a supergame, over all their supergames (block empty), and
  * in each supergame, over its rounds (round empty; block = `game` + the data's supergame number,
    a counter within the session: the file holds the later supergames of each session, from
    supergame 20 to 77, the ones stratEst's strategy estimation uses),
with the number of decisions behind each share. Read with the `rdata` package.

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
ROUNDS = 5


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


if __name__ == "__main__":
    table = people(Path(sys.argv[1]) if len(sys.argv) > 1 else SOURCE)
    table.to_csv(OUT, index=False, float_format="%.6g")
    print(f"wrote {OUT}: {len(table)} rows, {table['person'].nunique()} participants")
