"""Exact option distributions vs the sampling protocol (draw at temperature 1 until 50 valid answers).

Per survey question form: model forward passes / queries and seconds for each method, on the
bundled model and, with --server URL (an OpenAI-compatible server such as llama-cpp-python's
serving the same GGUF), through the `openai` backend; `--server auto` starts llama-cpp-python's
server on a free loopback port for the run (tests/llama_server.py) and stops it after.

    python bench/sampling.py --forms 4 [--server auto | --server http://127.0.0.1:8000/v1]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import markdown  # noqa: E402

from simsubjects.collect.models import ChoiceRequest, load_model  # noqa: E402
from simsubjects.studies.survey_bias.design import build_trials, load_bundled_items  # noqa: E402


def requests(forms: int, n: int) -> list[ChoiceRequest]:
    items = load_bundled_items(perturbations=())
    trials = build_trials(items[items["bias"] == "response_order"].head(forms))
    return [ChoiceRequest(p, tuple(o), n) for p, o in zip(trials["prompt"], trials["options"])]


def measure(model, backend: str, reqs: list[ChoiceRequest]) -> list[dict]:
    rows = []
    for k, r in enumerate(reqs):
        for method in ("exact", "sampled"):
            before = dict(getattr(model, "stats", {}))
            t = time.perf_counter()
            (res,) = model.choose([r], method=method) if method == "sampled" else model.choose([r])
            secs = time.perf_counter() - t
            after = getattr(model, "stats", {})
            # a server's forward passes are not seen from here (NaN); a local model counts them
            passes = (after["forwards"] - before.get("forwards", 0) if "forwards" in after else float("nan")) \
                if method == "exact" else res.n_queries
            rows.append({"backend": backend, "form": k, "method": method, "forward passes": passes,
                         "queries": res.n_queries, "valid": res.n_samples or "-",
                         "seconds": secs, "validity Z": res.validity})
    return rows


@contextlib.contextmanager
def server(url: str):
    """The given base URL, or with "auto" llama-cpp-python's server on the bundled GGUF, started here."""
    if url != "auto":
        yield url
        return
    sys.path.insert(0, str(HERE.parent / "tests"))
    from llama_server import start_llama_server

    with start_llama_server() as started:
        yield started


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--forms", type=int, default=4)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--server", default=None, help="OpenAI-compatible base URL serving the same model, or auto")
    args = ap.parse_args(argv)
    reqs = requests(args.forms, args.n)
    rows = measure(load_model("smollm2"), "hf (smollm2)", reqs)
    if args.server:
        with server(args.server) as url:
            rows += measure(load_model(f"openai:smollm2@{url}"), "openai (loopback llama.cpp)", reqs)
    df = pd.DataFrame(rows)
    summary = df.groupby(["backend", "method"]).agg(
        forms=("form", "size"), forward_passes=("forward passes", "mean"), queries=("queries", "mean"),
        seconds=("seconds", "mean")).reset_index()
    exact = summary[summary["method"] == "exact"].set_index("backend")["seconds"]
    summary["cost vs exact"] = summary.apply(lambda r: r["seconds"] / exact.get(r["backend"], float("nan")), axis=1)
    print(markdown(df))
    print()
    print(markdown(summary))
    return summary


if __name__ == "__main__":
    main()
