"""One home for each thing (issue 37): a newcomer adds a built-in study by following
docs/architecture.md, and the files it takes are the ones the page names, at most three; a declaration
holds functions, not their names as text; a data entry is checked when the study is declared; and
functions stay short (the count of those over 60 lines, read with `ast`)."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import simsubjects.studies
from simsubjects.cli.commands import main
from simsubjects.collect.studies import registry
from simsubjects.collect.studies.registry import StudyDef, get_study, studies
from simsubjects.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
NAME = "toy_even"

# the toy built-in study, one text per file the page names (the key: the page's path, <name> kept)
TOY = {
    "simsubjects/studies/<name>/__init__.py": '''
        """A toy built-in study: is a number even? (tests/test_one_home.py writes it from docs/architecture.md)."""
        from pathlib import Path

        import pandas as pd

        from simsubjects.collect.studies.registry import Option, Paper, Plan, StudyDef

        from .analysis import analyze, check_r, report

        TOY2026 = Paper("toyeven2026", "Parity judgments of a toy built-in study", "Toy & Even (2026)", order=91)


        def build(numbers: int = 3, seed: int = 0):
            rows = [{"trial": f"n{i}", "item": f"n{i}", "condition": "even" if i % 2 == 0 else "odd", "subject": "toy",
                     "prompt": f"Question: is {i} an even number? Answer:", "options": (" yes", " no"),
                     "labels": ("yes", "no"), "number": i} for i in range(numbers)]
            return pd.DataFrame(rows), pd.DataFrame({"item": [r["item"] for r in rows], "number": range(numbers)})


        STUDY = StudyDef(
            name="toy_even", help="Toy parity: is a number even? (a built-in study in one folder)", build=build,
            options=[Option(("--numbers",), {"type": int, "help": "Numbers 0..N-1 asked about."})],
            columns={"number": "The number asked about (toy label)"},
            papers=(Plan(TOY2026, lambda s: {"numbers": 2}, "two numbers"),),
            analyze=analyze, report=report, check_r=check_r, title="Toy parity (Toy & Even 2026)",
            r_function="toy_even_results", r_source=str(Path(__file__).with_name("toy_even.R")),
        )
    ''',
    "simsubjects/studies/<name>/analysis.py": '''
        """The toy study's analysis, report block (data) and --check-r piece."""
        from simsubjects.analyze.blocks import Block
        from simsubjects.analyze.check_r import compare
        from simsubjects.analyze.tidy import prob_of


        def analyze(responses, items):
            p = prob_of(responses[responses["source"] == "model"], "yes", keep=["number"])
            mean = p.groupby("model", as_index=False)["p_yes"].agg(estimate="mean", n="size")
            return {"p_yes": p, "mean_p_yes": mean}


        def report(run):
            return [Block("Toy parity beside chance", (run.analysis.tables["mean_p_yes"],), "Chance is 0.5.")]


        def check_r(r, responses, items, tables, tol, tol_p):
            rows = []
            for m in tables["mean_p_yes"].itertuples():
                x = tables["p_yes"].loc[tables["p_yes"]["model"] == m.model, "p_yes"]
                rows.append(compare(f"toy mean P(yes) {m.model}", m.estimate, r("toy_even_mean", x)["estimate"].iloc[0],
                                    tol))
            return rows
    ''',
    "simsubjects/studies/<name>/<name>.R": '''
        toy_even_mean <- function(x) data.frame(estimate = mean(as.numeric(x)))
        toy_even_results <- function(folder) {
          r <- read_run(folder)$responses
          p <- prob_of(r[r$source == "model", ], "yes")
          list(toy_even_mean = toy_even_mean(p$p_yes))
        }
    ''',
}


def page_recipe(heading: str = "### A built-in study") -> list[str]:
    """The files the page's recipe names: the first path in backticks of each numbered step."""
    text = PAGE.read_text(encoding="utf-8")
    part = text[text.index(heading):]
    part = part[:part.index("\n### ", 1)]
    return [re.search(r"`([^`]+)`", line).group(1) for line in part.splitlines() if re.match(r"\d+\. `", line)]


def test_the_page_names_at_most_three_files_for_a_built_in_study():
    files = page_recipe()
    assert 1 <= len(files) <= 3, files
    assert all(f.startswith("simsubjects/studies/<name>/") for f in files), files  # one folder
    assert sorted(files) == sorted(TOY), "the toy needs exactly the files the page names"


@pytest.fixture
def toy_built_in(tmp_path, monkeypatch, smollm2):
    """The toy's files written where the page says, in a tree beside the package whose studies/ folder
    joins the package's (as a folder added to simsubjects/studies/ would)."""
    written = []
    for rel, text in TOY.items():
        path = tmp_path / rel.replace("<name>", NAME)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
        written.append(path)
    monkeypatch.setattr(simsubjects.studies, "__path__", [*simsubjects.studies.__path__,
                                                         str(tmp_path / "simsubjects" / "studies")])
    registry._discover.cache_clear()
    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(models, "load_model", lambda spec, **kw: smollm2)
    monkeypatch.setattr(pipeline, "load_model", lambda spec, **kw: smollm2)
    yield written
    registry._discover.cache_clear()
    import sys

    for mod in [m for m in sys.modules if m.startswith(f"simsubjects.studies.{NAME}")]:
        del sys.modules[mod]


def test_a_toy_built_in_study_from_the_page_works_the_first_time(toy_built_in, tmp_path):
    assert len(toy_built_in) <= 3 and NAME in studies()  # discovered: no list was edited
    run = tmp_path / "run"
    assert main(["collect", "toy-even", "--model", "smollm2", "--numbers", "4", "--out", str(run), "-q"]) == 0
    r = pd.read_parquet(run / "responses.parquet")
    assert sorted(r["trial"].unique()) == ["n0", "n1", "n2", "n3"] and set(r["study"]) == {NAME}
    assert main(["analyze", str(run), "--no-plots", "--check-r"]) == 0
    assert pd.read_csv(run / "analysis" / "mean_p_yes.csv")["n"].item() == 4
    check = pd.read_csv(run / "analysis" / "check_r.csv")  # the R twin in the folder agrees
    assert len(check) == 1 and check["ok"].all() and check["abs_diff"].max() < 1e-8
    assert main(["export", str(run), "--to", "csv"]) == 0
    book = pd.read_csv(run / "export" / "codebook_responses.csv")
    assert book.set_index("column").loc["number", "label"] == "The number asked about (toy label)"
    assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text(encoding="utf-8")
    # the block is data, rendered by publish/: its heading and table reach the page
    assert "Toy parity (Toy &amp; Even 2026)" in page and "<h4>Toy parity beside chance</h4>" in page


def test_a_function_named_as_text_is_refused():
    with pytest.raises(UserError, match=r"toy: analyze='simsubjects.analyze.tidy:prob_of' is text"):
        StudyDef(name="toy", help="toy", build=lambda: None, analyze="simsubjects.analyze.tidy:prob_of")


def test_an_unknown_dataset_fails_when_declared_not_after_collection():
    with pytest.raises(UserError, match="toy: unknown dataset 'nosuch'"):
        StudyDef(name="toy", help="toy", build=lambda: None, datasets=["nosuch"])
    from simsubjects.datasets.registry import Dataset, as_dataset

    mine = Dataset("toy_numbers", "numbers", "3", ("personas.json",), "here", "MIT", "Toy (2026)")
    s = StudyDef(name="toy", help="toy", build=lambda: None, datasets=[mine, "names"])
    assert [as_dataset(d).name for d in s.datasets] == ["toy_numbers", "names"]


def test_every_built_in_is_a_folder_holding_its_parts():
    """Each bundled study's functions come from its own folder (the bundled papers' shared blocks aside)."""
    for name, s in studies().items():
        home = s.analyze.__module__.rsplit(".", 1)[0]
        assert home.startswith("simsubjects.studies."), (name, home)
        for part in (s.plot, s.summary, s.report, s.check_r):
            if part:
                assert part.__module__.startswith(home + "."), (name, part.__module__)
    assert get_study("milgram").report.__module__ == "simsubjects.studies.milgram.report"


MAX_LONG = 8  # functions over 60 lines (issue 37: 15 before, at most 8)


def long_functions() -> list[tuple[int, str]]:
    out = []
    for f in sorted((ROOT / "simsubjects").rglob("*.py")):
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 60:
                out.append((n.end_lineno - n.lineno + 1, f"{f.relative_to(ROOT)}:{n.lineno} {n.name}"))
    return sorted(out, reverse=True)


def test_functions_over_sixty_lines_are_few():
    found = long_functions()
    assert len(found) <= MAX_LONG, "split the longest (behaviour unchanged):\n" + "\n".join(
        f"{n} lines {where}" for n, where in found)


def test_replicate_only_orders_its_steps_and_writes_no_r():
    """cli/replicate.py: plan -> collect -> analyze -> export -> package, one function each; the R script,
    the README and the Stata file are written by publish/ (rscript.py, readme.py, stata.py)."""
    path = ROOT / "simsubjects" / "cli" / "replicate.py"
    text = path.read_text(encoding="utf-8")
    funcs = {n.name: n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}
    assert {"plan", "collect", "analyze", "export", "package"} <= set(funcs)
    body = funcs["replicate"]
    assert body.end_lineno - body.lineno + 1 <= 30
    called = {c.func.id for c in ast.walk(body) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
    assert {"plan", "collect", "analyze", "export", "package"} <= called
    assert "<-" not in text and "Rscript" not in text and "library(" not in text  # no R text


def test_a_saved_analysis_names_its_code_the_same_in_every_process():
    """publish/saved.py's code hash names a declaration's functions by module and name: a function's repr
    holds its address, so `report` in a new process would find every saved analysis stale."""
    import subprocess
    import sys

    from simsubjects.publish import saved

    here = saved.code(get_study("ultimatum"))
    other = subprocess.run([sys.executable, "-c", "from simsubjects.publish import saved; from simsubjects.collect."
                            "studies.registry import get_study; print(saved.code(get_study('ultimatum')))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert other == here
