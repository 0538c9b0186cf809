"""Write examples/trust_bdm/people.csv (one row per sender x measure) from cited.csv, the counts of
amounts sent transcribed in examples/trust_bdm/SOURCE.md. Run: python scripts/bundle_bdm1995.py

Each of the 32 senders gets `share send=K` = 1 for the amount they sent and 0 for the others, and
`mean sent` = that amount, so the study file's person-level comparison (unit: person) reproduces
the distribution and the mean the source reports."""

from __future__ import annotations

import csv
import os
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "examples" / "trust_bdm"
AMOUNTS = range(11)


def people_rows(cited: Path = HERE / "cited.csv") -> list[dict]:
    rows, k = [], 0
    with open(cited, newline="") as f:
        for rec in csv.DictReader(f):
            for _ in range(int(rec["senders"])):
                k += 1
                person = f"sender{k:02d}"
                sent = int(rec["sent"])
                rows += [{"person": person, "measure": f"share send={a}", "value": int(a == sent)} for a in AMOUNTS]
                rows.append({"person": person, "measure": "mean sent", "value": sent})
    return rows


def main() -> None:
    out = HERE / "people.csv"
    fd, tmp = tempfile.mkstemp(dir=HERE, prefix=".people.", suffix=".tmp")
    with os.fdopen(fd, "w", newline="") as f:
        w = csv.DictWriter(f, ["person", "measure", "value"], lineterminator="\n")
        w.writeheader()
        w.writerows(people_rows())
    os.replace(tmp, out)  # whole or absent


if __name__ == "__main__":
    main()
