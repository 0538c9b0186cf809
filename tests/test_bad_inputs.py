"""A corpus of malformed inputs: each one exits with code 2, one line on stderr that names the file or
argument, no traceback, and no partial output.

"No partial output" is checked as strongly as it can be: every file under the test's folder
(inputs, and any existing complete run folder) is read before and after the command, and the two
snapshots must be identical byte for byte, with no new file or folder. Collections must fail before
the model loads: `load_model` is replaced by a function that fails the test if it is ever called.

The corpus is `CASES` (CLI cases, driven through `simsubjects.cli.commands`) plus `API_CASES` (ATP
readers, which have no CLI); `N_MALFORMED` counts them and `CATEGORIES` counts them by category.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

from simsubjects.cli.commands import main
from simsubjects.errors import UserError

# --------------------------------------------------------------------------------------------------
# Well-formed inputs, each case breaks one thing
# --------------------------------------------------------------------------------------------------

Q_HEADER = "key,num options,orig alpha,reversed alpha\n"
Q_ROW = 'K1,3,"Is it good?\nA. Yes\nB. Maybe\nC. No","Is it good?\nA. No\nB. Maybe\nC. Yes"\n'
OE_HEADER = "key,num options,num options new,middle alpha,no middle alpha,orig middle option\n"
OE_ROW = ('K2,3,2,"How likely?\nA. Likely\nB. Unsure\nC. Unlikely","How likely?\nA. Likely\nB. Unlikely",True\n')
R_OK = "key,response,group,num_options\nK1,a,orig alpha,2\nK1,b,pos alpha,2\nK1,b,orig alpha,2\n"


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def questions(name: str, data: str | bytes, folder: str = "prompts"):
    """Setup: a question folder holding one file."""
    return lambda tmp: write(tmp / folder / name, data)


def responses_dir(data: str | bytes, name: str = "acquiescence.csv", folder: str = "results"):
    return lambda tmp: write(tmp / folder / name, data)


def good_run(tmp: Path, name: str = "run") -> Path:
    """A complete run folder, made without a model (imported BiasMonkey answers)."""
    shutil.copytree(_GOOD_RUN, tmp / name)
    return tmp / name


def run_with(edit: Callable[[Path], object]):
    """Setup: a complete run folder with one file broken by `edit`."""
    def setup(tmp):
        edit(good_run(tmp))
    return setup


def truncate(name: str, keep: float = 0.5):
    def edit(run):
        data = (run / name).read_bytes()
        (run / name).write_bytes(data[: int(len(data) * keep)])
    return edit


def replace(name: str, data: str | bytes):
    return lambda run: write(run / name, data)


def zero_rows(run):
    pd.read_parquet(run / "responses.parquet").iloc[:0].to_parquet(run / "responses.parquet", index=False)


def foreign_columns(run):
    pd.DataFrame({"x": [1, 2]}).to_parquet(run / "responses.parquet", index=False)


def manifest_without_study(run):
    m = json.loads((run / "manifest.json").read_text())
    m.pop("study")
    (run / "manifest.json").write_text(json.dumps(m))


def manifest_running(run):
    m = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**m, "status": "running"}))


def manifest_is_folder(run):
    (run / "manifest.json").unlink()
    (run / "manifest.json").mkdir()


def a_file(name: str = "afile", data: str = "not a folder\n"):
    return lambda tmp: write(tmp / name, data)


def both(*setups):
    def setup(tmp):
        for s in setups:
            s(tmp)
    return setup


def bad_template(module: str, extra: str):
    """Setup: the bundled prompt template of `module` gets `extra` appended (monkeypatched)."""
    def setup(tmp, monkeypatch):
        import importlib

        design = importlib.import_module(f"simsubjects.studies.{module}.design")
        spec = design.prompt_spec()
        # the study folder's design and its StudyDef (which imported the function by name) both read it
        for mod in (design, importlib.import_module(f"simsubjects.studies.{module}")):
            monkeypatch.setattr(mod, "prompt_spec", lambda: {**spec, "template": spec["template"] + extra})
    setup.needs_monkeypatch = True
    return setup


NONE = None  # no setup
UG = ["collect", "ultimatum", "--pairs", "1"]
SB = ["collect", "survey-bias", "--bias", "response_order", "--perturbation", "none"]
IMPORT = ["import-responses", "biasmonkey", "{tmp}/results", "--model", "m"]


@dataclass
class Case:
    id: str
    category: str
    setup: Callable | None
    argv: list[str]
    needle: str  # the file or argument the one-line message must name


CASES = [
    # --- datasets: show, and import biasmonkey on malformed question files -------------------------
    Case("show-unknown", "datasets", NONE, ["datasets", "show", "nosuch"], "nosuch"),
    Case("import-empty-file", "datasets", questions("response_order.csv", ""),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "response_order.csv"),
    Case("import-missing-column", "datasets", questions("response_order.csv", "key,num options,orig alpha\nK1,2,x\n"),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "reversed alpha"),
    Case("import-option-count", "datasets", questions("response_order.csv", Q_HEADER + Q_ROW.replace("K1,3", "K1,4")),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "num options"),
    Case("import-reversed-count", "datasets",
         questions("response_order.csv", Q_HEADER + 'K1,3,"Q?\nA. a\nB. b\nC. c","Q?\nA. c\nB. b"\n'),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "response_order.csv"),
    Case("import-odd-even-count", "datasets",
         questions("odd_even.csv", OE_HEADER + OE_ROW.replace("B. Unlikely", "B. Unsure\nC. Unlikely").replace(",2,", ",3,")),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "odd_even.csv"),
    Case("import-non-utf8", "datasets", questions("response_order.csv", (Q_HEADER + Q_ROW).encode().replace(b"good", b"g\xffod")),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "response_order.csv"),
    Case("import-non-utf8-odd-even", "datasets", questions("odd_even.csv", (OE_HEADER + OE_ROW).encode().replace(b"How", b"H\xfe\xffw")),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "odd_even.csv"),
    Case("import-odd-even-no-key", "datasets", questions("odd_even.csv", OE_HEADER.replace("key,", "kee,") + OE_ROW),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "'key'"),
    Case("import-no-lettered-options", "datasets",
         questions("response_order.csv", Q_HEADER + 'K1,2,"Is it good?\nyes\nno","Is it good?\nA. No\nB. Yes"\n'),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "response_order.csv"),
    Case("import-num-options-text", "datasets", questions("response_order.csv", Q_HEADER + Q_ROW.replace("K1,3", "K1,three")),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "num options"),
    Case("import-bad-bool", "datasets", questions("odd_even.csv", OE_HEADER + OE_ROW.replace(",True", ",maybe")),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "orig middle option"),
    Case("import-binary-file", "datasets", questions("response_order.csv", b"PK\x03\x04\x00\x00\x08\x00\xff\xfe\x00\x01"),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "response_order.csv"),
    Case("import-no-question-files", "datasets", questions("notes.txt", "hello\n"),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts"], "prompts"),
    Case("import-dir-is-file", "datasets", a_file(),
         ["datasets", "import", "biasmonkey", "{tmp}/afile"], "afile"),
    Case("import-dir-missing", "datasets", NONE, ["datasets", "import", "biasmonkey", "{tmp}/nope"], "nope"),
    Case("import-unknown-kind", "datasets", questions("response_order.csv", Q_HEADER + Q_ROW),
         ["datasets", "import", "nosuch", "{tmp}/prompts"], "nosuch"),
    Case("import-out-missing-folder", "datasets", questions("response_order.csv", Q_HEADER + Q_ROW),
         ["datasets", "import", "biasmonkey", "{tmp}/prompts", "--out", "{tmp}/no/such/items.parquet"], "--out"),
    # --- templates: a prompt template whose variables have no value -------------------------------
    Case("template-missing-variable", "templates", bad_template("ultimatum", " $missing_field"),
         UG + ["--out", "{tmp}/out"], "$missing_field"),
    Case("template-invalid-placeholder", "templates", bad_template("ultimatum", " costs $ 5"),
         UG + ["--out", "{tmp}/out"], "prompt template of ultimatum"),
    Case("template-missing-variable-garden-path", "templates", bad_template("garden_path", " ${speaker}"),
         ["collect", "garden-path", "--names", "1", "--out", "{tmp}/out"], "$speaker"),
    # --- BiasMonkey response files: import-responses ------------------------------------------------
    Case("responses-missing-columns", "biasmonkey-responses", responses_dir("key,response,num_options\nK1,a,2\n"),
         IMPORT + ["--out", "{tmp}/out"], "acquiescence.csv"),
    Case("responses-unknown-letter", "biasmonkey-responses", responses_dir(R_OK + "K1,z,orig alpha,2\n"),
         IMPORT + ["--out", "{tmp}/out"], "acquiescence.csv:5"),
    Case("responses-not-a-letter", "biasmonkey-responses", responses_dir(R_OK + "K1,?,orig alpha,2\n"),
         IMPORT + ["--out", "{tmp}/out"], "acquiescence.csv:5"),
    Case("responses-empty-folder", "biasmonkey-responses", lambda tmp: (tmp / "results").mkdir(),
         IMPORT + ["--out", "{tmp}/out"], "results"),
    Case("responses-non-utf8", "biasmonkey-responses", responses_dir(R_OK.encode() + b"K1,\xff,orig alpha,2\n"),
         IMPORT + ["--out", "{tmp}/out"], "acquiescence.csv"),
    Case("responses-unknown-group", "biasmonkey-responses", responses_dir(R_OK + "K1,a,forbid alpha,2\n"),
         IMPORT + ["--out", "{tmp}/out"], "acquiescence.csv:5"),
    Case("responses-header-only", "biasmonkey-responses", responses_dir("key,response,group,num_options\n"),
         IMPORT + ["--out", "{tmp}/out"], "acquiescence.csv"),
    Case("responses-empty-file", "biasmonkey-responses", responses_dir(""),
         IMPORT + ["--out", "{tmp}/out"], "acquiescence.csv"),
    Case("responses-num-options-text", "biasmonkey-responses", responses_dir(R_OK + "K1,a,orig alpha,two\n"),
         IMPORT + ["--out", "{tmp}/out"], "acquiescence.csv:5"),
    Case("responses-dir-missing", "biasmonkey-responses", NONE, IMPORT + ["--out", "{tmp}/out"], "results"),
    Case("responses-bad-prompts", "biasmonkey-responses",
         both(responses_dir(R_OK), questions("acquiescence.csv", "key,num options\nK1,2\n")),
         IMPORT + ["--out", "{tmp}/out", "--prompts", "{tmp}/prompts"], "acquiescence.csv"),
    Case("responses-empty-model", "biasmonkey-responses", responses_dir(R_OK),
         ["import-responses", "biasmonkey", "{tmp}/results", "--model", " ", "--out", "{tmp}/out"], "model"),
    Case("responses-out-holds-run", "biasmonkey-responses", both(responses_dir(R_OK), good_run),
         ["import-responses", "biasmonkey", "{tmp}/results", "--model", "other", "--out", "{tmp}/run"], "--overwrite"),
    Case("responses-out-under-file", "biasmonkey-responses", both(responses_dir(R_OK), a_file()),
         IMPORT + ["--out", "{tmp}/afile/out"], "--out"),
    # --- model specs ---------------------------------------------------------------------------------
    Case("model-unknown", "model-spec", NONE, UG + ["--model", "nosuch", "--out", "{tmp}/out"], "nosuch"),
    Case("model-openai-empty", "model-spec", NONE, UG + ["--model", "openai:", "--out", "{tmp}/out"], "openai:"),
    Case("model-openai-no-name", "model-spec", NONE,
         UG + ["--model", "openai:@http://127.0.0.1:9/v1", "--out", "{tmp}/out"], "openai:@"),
    Case("model-hf-missing", "model-spec", NONE, UG + ["--model", "hf:/missing", "--out", "{tmp}/out"], "/missing"),
    Case("model-hf-empty", "model-spec", NONE, UG + ["--model", "hf:", "--out", "{tmp}/out"], "hf:"),
    Case("model-hf-not-gguf", "model-spec", a_file("weights.bin", "x"),
         UG + ["--model", "hf:{tmp}/weights.bin", "--out", "{tmp}/out"], "weights.bin"),
    Case("model-path-not-gguf", "model-spec", a_file("weights.safetensors", "x"),
         UG + ["--model", "{tmp}/weights.safetensors", "--out", "{tmp}/out"], "weights.safetensors"),
    Case("model-openai-bad-url", "model-spec", NONE,
         UG + ["--model", "openai:m@not-a-url", "--out", "{tmp}/out"], "not-a-url"),
    Case("model-base-url-bad", "model-spec", NONE,
         UG + ["--model", "openai:m", "--base-url", "ftp://127.0.0.1/v1", "--out", "{tmp}/out"], "--base-url"),
    # --- CLI arguments -------------------------------------------------------------------------------
    Case("pairs-zero", "cli-arguments", NONE, ["collect", "ultimatum", "--pairs", "0", "--out", "{tmp}/out"], "--pairs"),
    Case("pairs-negative", "cli-arguments", NONE, ["collect", "ultimatum", "--pairs", "-3", "--out", "{tmp}/out"], "--pairs"),
    Case("pairs-too-many", "cli-arguments", NONE, ["collect", "ultimatum", "--pairs", "20000", "--out", "{tmp}/out"], "--pairs"),
    Case("pairs-not-a-number", "cli-arguments", NONE, ["collect", "ultimatum", "--pairs", "ten", "--out", "{tmp}/out"], "--pairs"),
    Case("batch-size-zero", "cli-arguments", NONE, UG + ["--batch-size", "0", "--out", "{tmp}/out"], "--batch-size"),
    Case("method-unknown", "cli-arguments", NONE, UG + ["--method", "nosuch", "--out", "{tmp}/out"], "--method"),
    Case("n-zero", "cli-arguments", NONE, UG + ["--method", "sampled", "--n", "0", "--out", "{tmp}/out"], "--n"),
    Case("seed-not-a-number", "cli-arguments", NONE, UG + ["--seed", "x", "--out", "{tmp}/out"], "--seed"),
    Case("stories-negative", "cli-arguments", NONE, ["collect", "moca", "--stories", "-2", "--out", "{tmp}/out"], "--stories"),
    Case("task-unknown", "cli-arguments", NONE, ["collect", "moca", "--stories", "2", "--task", "nosuch", "--out", "{tmp}/out"], "--task"),
    Case("personas-unknown", "cli-arguments", NONE,
         ["collect", "moca", "--stories", "2", "--personas", "nosuch", "--out", "{tmp}/out"], "--personas"),
    Case("bias-unknown", "cli-arguments", NONE, ["collect", "survey-bias", "--bias", "nosuch", "--out", "{tmp}/out"], "--bias"),
    Case("perturbation-unknown", "cli-arguments", NONE,
         ["collect", "survey-bias", "--perturbation", "typos", "--out", "{tmp}/out"], "--perturbation"),
    Case("as-sample-negative", "cli-arguments", NONE, SB + ["--as-sample", "-1", "--out", "{tmp}/out"], "--as-sample"),
    Case("questions-non-utf8", "cli-arguments",
         questions("response_order.csv", (Q_HEADER + Q_ROW).encode().replace(b"Maybe", b"M\xe4ybe")),
         SB + ["--questions", "{tmp}/prompts", "--out", "{tmp}/out"], "response_order.csv"),
    Case("questions-missing", "cli-arguments", NONE, SB + ["--questions", "{tmp}/nope", "--out", "{tmp}/out"], "--questions"),
    Case("names-zero", "cli-arguments", NONE, ["collect", "garden-path", "--names", "0", "--out", "{tmp}/out"], "--names"),
    Case("wisdom-questions-range", "cli-arguments", NONE,
         ["collect", "wisdom", "--questions", "11", "--out", "{tmp}/out"], "--questions"),
    Case("milgram-max-tokens-zero", "cli-arguments", NONE,
         ["collect", "milgram", "--max-tokens", "0", "--out", "{tmp}/out"], "--max-tokens"),
    Case("milgram-subjects-zero", "cli-arguments", NONE,
         ["collect", "milgram", "--subjects", "0", "--out", "{tmp}/out"], "--subjects"),
    Case("study-unknown", "cli-arguments", NONE, ["collect", "nosuchstudy", "--out", "{tmp}/out"], "nosuchstudy"),
    Case("out-missing", "cli-arguments", NONE, ["collect", "ultimatum", "--pairs", "1"], "--out"),
    Case("out-is-file", "cli-arguments", a_file(), UG + ["--out", "{tmp}/afile"], "--out"),
    Case("out-under-file", "cli-arguments", a_file(), UG + ["--out", "{tmp}/afile/run"], "--out"),
    Case("out-holds-other-run", "cli-arguments", good_run, UG + ["--out", "{tmp}/run"], "--overwrite"),
    Case("out-manifest-not-json", "cli-arguments", lambda tmp: write(tmp / "run" / "manifest.json", "{oops"),
         UG + ["--out", "{tmp}/run"], "manifest.json"),
    # --- run folders given to analyze and export -----------------------------------------------------
    Case("analyze-responses-empty-file", "run-folder", run_with(replace("responses.parquet", b"")),
         ["analyze", "{tmp}/run"], "responses.parquet"),
    Case("export-responses-empty-file", "run-folder", run_with(replace("responses.parquet", b"")),
         ["export", "{tmp}/run", "--to", "csv"], "responses.parquet"),
    Case("analyze-responses-truncated", "run-folder", run_with(truncate("responses.parquet")),
         ["analyze", "{tmp}/run"], "responses.parquet"),
    Case("export-responses-truncated", "run-folder", run_with(truncate("responses.parquet", 0.9)),
         ["export", "{tmp}/run", "--to", "csv,dta"], "responses.parquet"),
    Case("analyze-items-truncated", "run-folder", run_with(truncate("items.parquet")),
         ["analyze", "{tmp}/run"], "items.parquet"),
    Case("export-items-empty-file", "run-folder", run_with(replace("items.parquet", b"")),
         ["export", "{tmp}/run", "--to", "sav"], "items.parquet"),
    Case("analyze-responses-zero-rows", "run-folder", run_with(zero_rows), ["analyze", "{tmp}/run"], "responses.parquet"),
    Case("export-responses-zero-rows", "run-folder", run_with(zero_rows),
         ["export", "{tmp}/run", "--to", "rds"], "responses.parquet"),
    Case("export-responses-foreign", "run-folder", run_with(foreign_columns),
         ["export", "{tmp}/run", "--to", "csv"], "responses.parquet"),
    Case("analyze-responses-is-csv", "run-folder", run_with(replace("responses.parquet", "a,b\n1,2\n")),
         ["analyze", "{tmp}/run"], "responses.parquet"),
    Case("analyze-responses-missing", "run-folder", run_with(lambda run: (run / "responses.parquet").unlink()),
         ["analyze", "{tmp}/run"], "responses.parquet"),
    Case("analyze-manifest-not-json", "run-folder", run_with(replace("manifest.json", "{not json")),
         ["analyze", "{tmp}/run"], "manifest.json"),
    Case("export-manifest-not-json", "run-folder", run_with(replace("manifest.json", '{"status": "compl')),
         ["export", "{tmp}/run", "--to", "csv"], "manifest.json"),
    Case("analyze-manifest-list", "run-folder", run_with(replace("manifest.json", "[1, 2]")),
         ["analyze", "{tmp}/run"], "manifest.json"),
    Case("analyze-manifest-no-study", "run-folder", run_with(manifest_without_study), ["analyze", "{tmp}/run"], "manifest.json"),
    Case("analyze-manifest-non-utf8", "run-folder", run_with(replace("manifest.json", b'{"status": "\xff\xfe"}')),
         ["analyze", "{tmp}/run"], "manifest.json"),
    Case("analyze-manifest-folder", "run-folder", run_with(manifest_is_folder), ["analyze", "{tmp}/run"], "manifest.json"),
    Case("analyze-manifest-missing", "run-folder", run_with(lambda run: (run / "manifest.json").unlink()),
         ["analyze", "{tmp}/run"], "manifest.json"),
    Case("analyze-unfinished", "run-folder", run_with(manifest_running), ["analyze", "{tmp}/run"], "run"),
    Case("analyze-missing-folder", "run-folder", NONE, ["analyze", "{tmp}/nope"], "nope"),
    Case("export-format-unknown", "run-folder", good_run, ["export", "{tmp}/run", "--to", "xlsx"], "--to"),
    Case("export-format-empty", "run-folder", good_run, ["export", "{tmp}/run", "--to", ","], "--to"),
    Case("export-out-under-file", "run-folder", both(good_run, a_file()),
         ["export", "{tmp}/run", "--to", "csv", "--out", "{tmp}/afile/export"], "--out"),
    Case("analyze-out-under-file", "run-folder", both(good_run, a_file()),
         ["analyze", "{tmp}/run", "--out", "{tmp}/afile/analysis"], "--out"),
]


# --- ATP files: the readers have no CLI; called directly, their UserError must be one line naming the file
PEOPLE = [("Very likely", "Male", 1.5), ("Somewhat likely", "Female", 2.0), ("Refused", "Male", 1.0),
          (None, "Female", 3.0)]
OPTIONS = ["Very likely", "Somewhat likely", "Not likely", "Refused"]


def opinionqa(tmp: Path, edit=None) -> Path:
    d = tmp / "American_Trends_Panel_W99"
    d.mkdir(parents=True)
    pd.DataFrame({"key": ["Q1_W99"], "question": ["How likely is it?"], "references": [str(OPTIONS)],
                  "option_ordinal": ["[1.0, 2.0, 3.0]"]}).to_csv(d / "info.csv", index=False)
    pd.DataFrame({"key": ["SEX"], "options": [str(["Male", "Female"])]}).to_csv(d / "metadata.csv", index=False)
    pd.DataFrame({"QKEY": range(len(PEOPLE)), "Q1_W99": [a for a, _, _ in PEOPLE], "SEX": [s for _, s, _ in PEOPLE],
                  "WEIGHT_W99": [w for _, _, w in PEOPLE]}).to_csv(d / "responses.csv", index=False)
    if edit:
        edit(d)
    return d


def sav_file(tmp: Path, weights=None, name: str = "ATP W99.sav") -> Path:
    pyreadstat = pytest.importorskip("pyreadstat")
    codes = {"Very likely": 1, "Somewhat likely": 2, "Not likely": 3, "Refused": 99}
    df = pd.DataFrame({"QKEY": np.arange(len(PEOPLE), dtype=float),
                       "Q1_W99": [np.nan if a is None else float(codes[a]) for a, _, _ in PEOPLE],
                       "WEIGHT_W99": weights if weights is not None else [w for _, _, w in PEOPLE]})
    path = tmp / name
    pyreadstat.write_sav(df, str(path), variable_value_labels={"Q1_W99": {float(v): k for k, v in codes.items()}})
    return path


def csv_edit(name: str, fn):
    def edit(d):
        df = pd.read_csv(d / name)
        fn(df).to_csv(d / name, index=False)
    return edit


def sav_cut(keep):
    def make(tmp):
        p = sav_file(tmp, name="full W99.sav")
        data = p.read_bytes()
        out = write(tmp / "cut W99.sav", data[:keep] if keep > 0 else data[:keep])
        p.unlink()
        return out
    return make


def _read_wave(**kw):
    def call(path):
        from simsubjects.datasets.atp import read_opinionqa_wave
        return read_opinionqa_wave(path, **kw)
    return call


def _read_sav(path):
    from simsubjects.datasets.atp import read_atp_sav
    return read_atp_sav(path)


@dataclass
class ApiCase:
    id: str
    make: Callable[[Path], Path]  # builds the malformed input, returns the path given to `call`
    call: Callable
    needle: str
    category: str = "atp"


API_CASES = [
    ApiCase("opinionqa-missing-info", lambda t: opinionqa(t, lambda d: (d / "info.csv").unlink()), _read_wave(), "info.csv"),
    ApiCase("opinionqa-empty-info", lambda t: opinionqa(t, lambda d: write(d / "info.csv", "")), _read_wave(), "info.csv"),
    ApiCase("opinionqa-info-non-utf8",
            lambda t: opinionqa(t, lambda d: write(d / "info.csv", (d / "info.csv").read_bytes().replace(b"likely", b"lik\xffly"))),
            _read_wave(), "info.csv"),
    ApiCase("opinionqa-missing-weight-column",
            lambda t: opinionqa(t, csv_edit("responses.csv", lambda r: r.drop(columns="WEIGHT_W99"))), _read_wave(),
            "responses.csv"),
    ApiCase("opinionqa-non-numeric-weights",
            lambda t: opinionqa(t, csv_edit("responses.csv", lambda r: r.assign(WEIGHT_W99=["heavy"] * len(r)))),
            _read_wave(), "responses.csv"),
    ApiCase("opinionqa-negative-weight",
            lambda t: opinionqa(t, csv_edit("responses.csv", lambda r: r.assign(WEIGHT_W99=[-1.0] * len(r)))),
            _read_wave(), "responses.csv"),
    ApiCase("opinionqa-empty-responses", lambda t: opinionqa(t, lambda d: write(d / "responses.csv", "")), _read_wave(),
            "responses.csv"),
    ApiCase("opinionqa-responses-non-utf8",
            lambda t: opinionqa(t, lambda d: write(d / "responses.csv",
                                                   (d / "responses.csv").read_bytes().replace(b"Very", b"V\xe4ry"))),
            _read_wave(), "responses.csv"),
    ApiCase("opinionqa-ordinal-not-numbers",
            lambda t: opinionqa(t, csv_edit("info.csv", lambda r: r.assign(option_ordinal=["['low', 'high']"]))),
            _read_wave(), "info.csv"),
    ApiCase("opinionqa-references-not-list",
            lambda t: opinionqa(t, csv_edit("info.csv", lambda r: r.assign(references=["Very likely, Not likely"]))),
            _read_wave(), "info.csv"),
    ApiCase("opinionqa-metadata-not-list",
            lambda t: opinionqa(t, csv_edit("metadata.csv", lambda r: r.assign(options=["[[["]))),
            _read_wave(by="SEX"), "metadata.csv"),
    ApiCase("sav-truncated-header", sav_cut(300), _read_sav, "cut W99.sav"),
    ApiCase("sav-truncated-rows", sav_cut(-40), _read_sav, "cut W99.sav"),
    ApiCase("sav-not-spss", lambda t: write(t / "csv W99.sav", "QKEY,Q1_W99\n1,2\n"), _read_sav, "csv W99.sav"),
    ApiCase("sav-empty", lambda t: write(t / "empty W99.sav", b""), _read_sav, "empty W99.sav"),
    ApiCase("sav-string-weights", lambda t: sav_file(t, weights=["x"] * len(PEOPLE)), _read_sav, "ATP W99.sav"),
]

CATEGORIES = Counter([c.category for c in CASES] + [c.category for c in API_CASES])
N_MALFORMED = len(CASES) + len(API_CASES)


# --------------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------------

def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under root."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def assert_unchanged(before: dict, after: dict) -> None:
    new = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    assert not new and not gone and not changed, f"new: {new}, removed: {gone}, changed: {changed}"


def assert_one_line(err: str, needle: str) -> None:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{err}"
    assert lines[0].startswith("error: "), lines[0]
    assert needle in lines[0], f"{needle!r} not named in: {lines[0]}"


_GOOD_RUN: Path


@pytest.fixture(scope="module", autouse=True)
def _good_run(tmp_path_factory):
    """One complete run folder (imported BiasMonkey answers; no model), copied into tests that need it."""
    global _GOOD_RUN
    root = tmp_path_factory.mktemp("good")
    write(root / "results" / "acquiescence.csv", R_OK)
    assert main(["import-responses", "biasmonkey", str(root / "results"), "--model", "m", "--out", str(root / "run")]) == 0
    _GOOD_RUN = root / "run"
    yield


@pytest.fixture(autouse=True)
def _no_model(monkeypatch):
    """Bad input must fail before any model loads."""
    def refuse(*a, **k):
        raise AssertionError("a model was loaded: this bad input was not caught before loading the model")

    import simsubjects.cli.commands
    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_model", refuse)
    monkeypatch.setattr(models, "load_model", refuse)
    monkeypatch.setattr(simsubjects.cli.commands, "validate_only", refuse, raising=False)


def test_corpus_size():
    assert N_MALFORMED >= 30
    assert {"datasets", "atp", "biasmonkey-responses", "templates", "model-spec", "cli-arguments",
            "run-folder"} <= set(CATEGORIES)
    assert len({c.id for c in CASES} | {c.id for c in API_CASES}) == N_MALFORMED  # ids are unique
    print(f"\n{N_MALFORMED} malformed inputs: {dict(CATEGORIES)}")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, tmp_path, capsys, monkeypatch):
    if case.setup is not None:
        if getattr(case.setup, "needs_monkeypatch", False):
            case.setup(tmp_path, monkeypatch)
        else:
            case.setup(tmp_path)
    before = snapshot(tmp_path)
    capsys.readouterr()
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, f"exit code {rc}; stderr: {err}"
    assert_one_line(err, case.needle.replace("{tmp}", str(tmp_path)))
    assert "Traceback" not in out
    assert_unchanged(before, snapshot(tmp_path))


@pytest.mark.parametrize("case", API_CASES, ids=[c.id for c in API_CASES])
def test_bad_atp_file(case: ApiCase, tmp_path):
    path = case.make(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(UserError) as e:
        case.call(path)
    assert_one_line(f"error: {e.value}", case.needle)
    assert_unchanged(before, snapshot(tmp_path))


def test_bad_input_in_a_subprocess(tmp_path):
    """The installed entry point: exit code 2 and one line, no traceback, outside pytest's capture too."""
    import subprocess
    import sys

    write(tmp_path / "run" / "manifest.json", "[]")
    r = subprocess.run([sys.executable, "-m", "simsubjects.cli", "export", str(tmp_path / "run"), "--to", "csv"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    err = "\n".join(line for line in r.stderr.splitlines() if "Warning" not in line and line.strip())
    assert_one_line(err, "manifest.json")
    assert r.stdout == ""


def test_export_of_a_good_run_writes_every_format_and_no_staging_left(tmp_path, capsys):
    """The control: the same folder that the corpus breaks exports (list cells with numpy bools included)."""
    run = good_run(tmp_path)
    assert main(["export", str(run), "--to", "csv,parquet,rds,dta,sav"]) == 0
    names = sorted(p.name for p in (run / "export").iterdir())
    assert names == sorted([f"{t}.{f}" for t in ("responses", "items") for f in ("csv", "parquet", "rds", "dta", "sav")]
                           + ["codebook_responses.csv", "codebook_responses.md", "codebook_items.csv", "codebook_items.md"])


def test_failed_export_leaves_no_partial_files(tmp_path, monkeypatch, capsys):
    """A writer failing half-way (here: the second format) leaves neither files nor a new export folder."""
    import simsubjects.publish.export as export

    run = good_run(tmp_path)
    before = snapshot(tmp_path)
    real = export._write

    def flaky(df, path, fmt, *rest):
        if fmt == "dta":
            raise UserError(f"{path.name}: simulated writer failure")
        return real(df, path, fmt, *rest)

    monkeypatch.setattr(export, "_write", flaky)
    assert main(["export", str(run), "--to", "csv,dta"]) == 2
    assert_one_line(capsys.readouterr().err, "simulated writer failure")
    assert_unchanged(before, snapshot(tmp_path))
