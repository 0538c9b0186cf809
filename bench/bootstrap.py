"""AMCE with 10,000 bootstrap draws for all MoCa factors: vectorized vs a per-draw loop.

    python bench/bootstrap.py --draws 10000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import markdown  # noqa: E402

from simsubjects.studies.moca.analysis import amce_bootstrap, outcomes  # noqa: E402
from simsubjects.datasets.moca_humans import load_moca  # noqa: E402


def loop_bootstrap(data: pd.DataFrame, n_boot: int, seed: int = 0) -> dict:
    """The straightforward version: resample stories per factor, one draw at a time."""
    from simsubjects.studies.moca.analysis import CONTRASTS

    rng = np.random.default_rng(seed)
    out = {}
    for task, factors in CONTRASTS.items():
        d = data[data["task"] == task]
        for factor, (a, b) in factors.items():
            ya = [g["y"].to_numpy() for _, g in d[d[factor] == a].groupby("item")]
            yb = [g["y"].to_numpy() for _, g in d[d[factor] == b].groupby("item")]
            if not ya or not yb:
                continue
            draws = []
            for _ in range(n_boot):
                sa = [ya[i] for i in rng.integers(0, len(ya), len(ya))]
                sb = [yb[i] for i in rng.integers(0, len(yb), len(yb))]
                draws.append(np.concatenate(sa).mean() - np.concatenate(sb).mean())
            out[(task, factor)] = np.percentile(draws, [2.5, 97.5])
    return out


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=10_000)
    args = ap.parse_args(argv)
    responses, items = load_moca("all")
    data = outcomes(responses, items)
    t = time.perf_counter()
    vec = amce_bootstrap(data, unit="story", n_boot=args.draws, seed=0)
    t_vec = time.perf_counter() - t
    t = time.perf_counter()
    loop = loop_bootstrap(data, args.draws)
    t_loop = time.perf_counter() - t
    df = pd.DataFrame([
        {"method": "per-draw loop", "factors": len(loop), "draws": args.draws, "seconds": t_loop, "speed-up": 1.0},
        {"method": "simsubjects (vectorized)", "factors": len(vec), "draws": args.draws, "seconds": t_vec,
         "speed-up": t_loop / t_vec},
    ])
    print(markdown(df))
    return df


if __name__ == "__main__":
    main()
