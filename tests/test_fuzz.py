"""Property-based fuzzing of every input a user hands to simsubjects (issue 18), bounded in time.

Classes: manifest.json fields and types; the columns and dtypes of responses.parquet and
items.parquet; BiasMonkey response and question files; model spec strings and URLs (parsed only,
no network); the CLI's numbers. For every generated input the command either succeeds, or exits
with code 2 and one line on stderr, writes nothing (the folder is byte for byte as before), never
prints a traceback and never hangs (each example has a time limit). A CLI exit of 70 (the
top-level guard) is a failure, and so is any exception escaping the CLI.

Hypothesis is derandomized (the same examples in every CI run) and keeps no example database in
the repository. `FUZZ_EXAMPLES` scales the number of examples per class (default 1: about a minute
on two cores). The counts by class are printed at the end of the module (`-s`).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import signal
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsubjects.cli.commands import main
from tests.harden_util import imported_run, snapshot

SCALE = float(os.environ.get("FUZZ_EXAMPLES", "1"))
PER_EXAMPLE_SECONDS = 30
RESULTS: dict[str, Counter] = {}


def fuzz_settings(n: int):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


class ModelLoaded(BaseException):
    """Raised instead of loading a model: the input passed every check (a valid input)."""


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    return imported_run(tmp_path_factory.mktemp("fuzzbase"))


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    total = sum(sum(c.values()) for c in RESULTS.values())
    print(f"\nfuzz: {total} cases")
    for cls, c in RESULTS.items():
        print(f"  {cls}: {sum(c.values())} cases; {dict(c)}")


@pytest.fixture(autouse=True)
def _no_model(monkeypatch):
    def loaded(*a, **k):
        raise ModelLoaded()

    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_model", loaded)
    monkeypatch.setattr(models, "load_model", loaded)


@contextlib.contextmanager
def time_limit(seconds: int):
    def hang(*_):
        raise TimeoutError(f"no answer within {seconds}s: a hang")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(cls: str, argv: list, root: Path, secrets: tuple[str, ...] = ()) -> str:
    """Run the CLI in-process and check the contract; returns 'ok', 'refused' or 'valid' (model would load)."""
    before = snapshot(root)
    out, err = io.StringIO(), io.StringIO()
    outcome = None
    with time_limit(PER_EXAMPLE_SECONDS), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(a) for a in argv])
        except ModelLoaded:
            rc, outcome = None, "valid"
    text = err.getvalue()
    assert "Traceback" not in text + out.getvalue(), text
    for s in secrets:
        assert s not in text + out.getvalue(), f"secret {s!r} printed: {text}"
    if outcome == "valid":
        assert snapshot(root) == before, "written before the model would load"
    elif rc == 2:
        lines = text.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{argv}: {text!r}"
        after = snapshot(root)
        assert after == before, f"{argv}: changed {sorted(set(after) ^ set(before))}"
        outcome = "refused"
    else:
        assert rc == 0, f"{argv}: exit {rc}: {text}"
        outcome = "ok"
    RESULTS.setdefault(cls, Counter())[outcome] += 1
    return outcome


def fresh(base: Path) -> Path:
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    shutil.copytree(base, root / "run")
    return root / "run"


# ------------------------------------------------------------------------------------------ values

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                                 st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                           max_leaves=6)
MANIFEST_KEYS = ["study", "status", "created", "versions", "model", "parameters", "seed", "datasets",
                 "prompt_template_sha256", "timings", "identity", "counts", "failures", "short", "source", "kind"]
NESTED = {"model": ["spec", "backend", "name", "revision"], "counts": ["trials", "answered", "rows", "mean_validity"],
          "timings": ["seconds", "collection_seconds"], "parameters": ["method", "seed", "n"]}


@st.composite
def manifest_edits(draw):
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(MANIFEST_KEYS + ["extra_key"]))
        if key in NESTED and draw(st.booleans()):
            edits.append((key, draw(st.sampled_from(NESTED[key])), draw(json_values)))
        elif draw(st.booleans()) and key not in ("study", "status"):
            edits.append((key, None, "__delete__"))
        else:
            edits.append((key, None, draw(json_values)))
    return edits


def apply_manifest(run: Path, edits) -> None:
    m = json.loads((run / "manifest.json").read_text())
    for key, sub, value in edits:
        if value == "__delete__":
            m.pop(key, None)
        elif sub is not None:
            m[key] = {**(m[key] if isinstance(m.get(key), dict) else {}), sub: value}
        else:
            m[key] = value
    (run / "manifest.json").write_text(json.dumps(m))


@given(edits=manifest_edits(), command=st.sampled_from(["analyze", "export", "report"]))
@fuzz_settings(30)
def test_fuzz_manifest_fields(base_run, edits, command):
    run = fresh(base_run)
    apply_manifest(run, edits)
    argv = {"analyze": ["analyze", run, "--no-plots"], "export": ["export", run, "--to", "csv"],
            "report": ["report", run]}[command]
    run_cli("manifest.json fields and types", argv, run.parent)
    shutil.rmtree(run.parent)


# ------------------------------------------------------------------------------ table columns and dtypes

RESPONSE_COLUMNS = ["study", "trial", "item", "condition", "subject", "source", "model", "method", "response",
                    "weight", "validity", "key", "bias", "perturbation", "form", "num_options", "n_samples"]
ITEM_COLUMNS = ["item", "key", "bias", "perturbation", "form", "labels", "positions", "refusal", "num_options"]
DTYPES = ["int", "float", "nan", "inf", "text", "bool", "none", "mixed", "datetime", "negative", "empty-text"]


def column_of(kind: str, n: int, rng: np.random.Generator) -> pd.Series:
    if kind == "int":
        return pd.Series(rng.integers(-5, 5, n), dtype="int64")
    if kind == "float":
        return pd.Series(rng.normal(size=n))
    if kind == "nan":
        return pd.Series([math.nan] * n, dtype=float)
    if kind == "inf":
        return pd.Series([math.inf] * n, dtype=float)
    if kind == "text":
        return pd.Series([f"x{i}" for i in range(n)], dtype=object)
    if kind == "bool":
        return pd.Series([bool(i % 2) for i in range(n)])
    if kind == "none":
        return pd.Series([None] * n, dtype=object)
    if kind == "mixed":
        return pd.Series([1, "a", None, 2.5][:n] + [None] * max(0, n - 4), dtype=object)
    if kind == "datetime":
        return pd.Series(pd.date_range("2020-01-01", periods=n))
    if kind == "negative":
        return pd.Series([-1.0] * n)
    return pd.Series([""] * n, dtype=object)


@given(table=st.sampled_from(["responses", "items"]), data=st.data(), action=st.sampled_from(["drop", "retype"]),
       command=st.sampled_from(["analyze", "export"]), seed=st.integers(0, 9))
@fuzz_settings(50)
def test_fuzz_table_columns_and_dtypes(base_run, table, data, action, command, seed):
    run = fresh(base_run)
    path = run / f"{table}.parquet"
    df = pd.read_parquet(path)
    col = data.draw(st.sampled_from(RESPONSE_COLUMNS if table == "responses" else ITEM_COLUMNS))
    if action == "drop":
        df = df.drop(columns=[col])
    else:
        df[col] = column_of(data.draw(st.sampled_from(DTYPES)), len(df), np.random.default_rng(seed)).to_numpy()
    try:
        df.to_parquet(path, index=False)
    except Exception:  # noqa: BLE001 - pyarrow cannot store this mix at all: no file to fuzz with
        shutil.rmtree(run.parent)
        return
    argv = ["analyze", run, "--no-plots"] if command == "analyze" else ["export", run, "--to", "csv,dta"]
    run_cli("responses/items columns and dtypes", argv, run.parent)
    shutil.rmtree(run.parent)


# -------------------------------------------------------------------------------------- BiasMonkey files

cells = st.one_of(st.sampled_from(["", "a", "b", "z", "A", "?", "2", "3", "0", "-1", "inf", "1e30", "27", "3.5",
                                   "nan", "orig alpha", "pos alpha", "forbid alpha", "K1", " ", '"', "a,b"]),
                  st.text(max_size=6))


@st.composite
def response_files(draw):
    """A well-formed file (both forms of two questions), then a few cells, the header or the end broken."""
    header = draw(st.sampled_from(["key,response,group,num_options"] * 3 + [
        "key,response,group", "response,key,num_options,group", "key,response,group,num_options,extra"]))
    rows = [[k, draw(st.sampled_from("ab")), g, "2"] for k in ("K1", "K2") for g in ("orig alpha", "pos alpha")]
    for _ in range(draw(st.integers(0, 2))):
        row = draw(st.integers(0, len(rows) - 1))
        rows[row][draw(st.integers(0, 3))] = draw(cells).replace("\n", " ")
    text = "\n".join([header, *(",".join(r[: len(header.split(","))]) for r in rows)]) + "\n"
    if draw(st.integers(0, 4)) == 0:
        text = text.encode("utf-8")[: draw(st.integers(0, len(text.encode("utf-8"))))].decode("utf-8", "ignore")
    return text


@given(text=response_files(), name=st.sampled_from(["acquiescence.csv", "odd_even.csv", "response_order-key_typo.csv",
                                                     "opinion_float.csv"]))
@fuzz_settings(60)
def test_fuzz_biasmonkey_response_files(text, name):
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    (root / "results").mkdir()
    (root / "results" / name).write_text(text, encoding="utf-8")
    outcome = run_cli("BiasMonkey response files", ["import-responses", "biasmonkey", root / "results", "--model", "m",
                                                    "--out", root / "out"], root)
    if outcome == "ok":
        assert (root / "out" / "manifest.json").exists()
    shutil.rmtree(root)


@st.composite
def question_files(draw):
    q = lambda: f"Q{draw(st.text(max_size=4))}?\n" + "\n".join(  # noqa: E731
        f"{chr(65 + i)}. opt{i}" for i in range(draw(st.integers(0, 4))))
    rows = []
    for _ in range(draw(st.integers(0, 3))):
        rows.append(f'{draw(cells)},{draw(cells)},"{q()}","{q()}"')
    return "\n".join(["key,num options,orig alpha,reversed alpha", *rows]) + "\n"


@given(text=question_files())
@fuzz_settings(40)
def test_fuzz_biasmonkey_question_files(text):
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    (root / "prompts").mkdir()
    (root / "prompts" / "response_order.csv").write_text(text, encoding="utf-8")
    run_cli("BiasMonkey question files", ["datasets", "import", "biasmonkey", root / "prompts"], root)
    shutil.rmtree(root)


# ------------------------------------------------------------------------------- model specs and URLs

hosts = st.sampled_from(["127.0.0.1", "[::1", "[::1]", "localhost", "", "user:SECRETPW@127.0.0.1", "a b", "%zz"])
ports = st.one_of(st.none(), st.integers(-5, 99999).map(str), st.sampled_from(["", "abc", "0", "65536"]))
urls = st.builds(lambda scheme, host, port, path, q: f"{scheme}{host}{':' + port if port is not None else ''}{path}{q}",
                 st.sampled_from(["http://", "https://", "ftp://", "", "http:/", "HTTP://"]), hosts, ports,
                 st.sampled_from(["/v1", "", "/", "//x"]),
                 st.sampled_from(["", "?api-key=QSECRET", "?x=1&token=QSECRET", "#f"]))
specs = st.one_of(
    st.text(max_size=20),
    st.builds(lambda n, u: f"openai:{n}@{u}", st.text(max_size=5), st.lists(urls, min_size=1, max_size=2).map(",".join)),
    st.builds(lambda p: f"hf:{p}", st.sampled_from(["", "/", "/nonexistent", ".", "x.gguf", "/dev/null", "/etc/passwd"])),
    st.sampled_from(["", " ", "smollm2", "SMOLLM2", "openai:", "openai:@", "hf:", ":", "openai:m@"]),
)


@given(spec=specs, base_url=st.one_of(st.none(), st.lists(urls, min_size=1, max_size=2).map(",".join)))
@fuzz_settings(60)
def test_fuzz_model_specs_and_urls(spec, base_url):
    from simsubjects.collect.models import parse_spec
    from simsubjects.errors import UserError

    with time_limit(PER_EXAMPLE_SECONDS):
        try:
            parse_spec(spec)
        except UserError as e:
            assert "\n" not in str(e).strip(), repr(str(e))
    if "\x00" in spec or spec.startswith("-"):
        return  # an option-looking or NUL value is click's business, covered by the CLI cases
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    argv = ["collect", "ultimatum", "--pairs", "1", "--model", spec, "--out", root / "out"]
    if base_url is not None:
        argv += ["--base-url", base_url]
    run_cli("model specs and URLs", argv, root, secrets=("SECRETPW", "QSECRET"))
    shutil.rmtree(root)


# ------------------------------------------------------------------------------------------- CLI numbers

NUMBER_OPTIONS = [("ultimatum", "--pairs"), ("garden-path", "--names"), ("milgram", "--subjects"),
                  ("milgram", "--max-stages"), ("milgram", "--max-tokens"), ("moca", "--stories"),
                  ("wisdom", "--participants"), ("survey-bias", "--as-sample"), ("ultimatum", "--seed"),
                  ("ultimatum", "--batch-size"), ("ultimatum", "--n")]
numbers = st.one_of(st.integers(-2**70, 2**70).map(str), st.floats().map(repr),
                    st.sampled_from(["", " ", "1e3", "0x10", "1_000", "١", "nan", "-0", "+5", "5 "]))


@given(option=st.sampled_from(NUMBER_OPTIONS + [("replicate", "--scale"), ("replicate", "--n")]), value=numbers)
@fuzz_settings(80)
def test_fuzz_cli_numbers(option, value):
    study, flag = option
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    argv = (["replicate", "aher2023", "--only", "ultimatum"] if study == "replicate" else ["collect", study])
    argv += [f"{flag}={value}", "--out", root / "out"]
    if study != "replicate" and flag == "--n":
        argv += ["--method", "sampled"]
    outcome = run_cli("CLI numbers", argv, root)
    assert outcome in ("refused", "valid")
    shutil.rmtree(root)
