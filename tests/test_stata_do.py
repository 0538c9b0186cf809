"""analysis.do, read-checked (no Stata on this machine; issue 29): every file it reads is in the folder,
every variable it names is in the .dta it reads or made before in its block, each CSV is renamed column
by column, blocks and quotes balance, and every line starts with a Stata command. The folder is the
bundled replication folder (inst/extdata/replication) with its .dta exports written by `export`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "inst" / "extdata" / "replication"
KNOWN = {"version", "clear", "set", "capture", "local", "use", "foreach", "if", "decode", "drop", "rename", "keep",
         "bysort", "generate", "egen", "save", "tempname", "postfile", "levelsof", "quietly", "post", "postclose",
         "import", "destring", "merge", "count", "display", "exit", "collapse", "reshape", "svyset", "continue",
         "replace", "}", "*"}
# Stata words and functions that are not variables
WORDS = {"if", "in", "of", "varlist", "local", "double", "long", "byte", "total", "group", "cond", "inlist", "using",
         "replace", "clear", "wide", "string", "mean", "noconstant", "missing", "abs", "max", "all", "both",
         "regress", "svy", "ibn", "_n", "_rc", "_merge", "generate", "str244", "keep", "unequal", "by", "i", "j",
         "label", "word", "count", "r", "exp", "_b", "_se", "numeric", "variable", "confirm", "text", "_text",
         "summarize", "N", "sd", "mu_1", "mu_2", "t", "df_t", "p", "se", "sqrt", "ttest", "levelsof", "destring",
         "merge", "drop", "rename", "egen", "decode", "quietly", "capture", "collapse", "reshape", "svyset"}


def _strip(line: str) -> str:
    """A line without its string literals and macros (what is left names variables and commands)."""
    line = re.sub(r'`"[^"]*"\'', " ", line)  # compound-quoted strings
    line = re.sub(r'"[^"]*"', " ", line)
    line = re.sub(r"local\(\w+\)", " ", line)  # levelsof's result macro
    return re.sub(r"`[^']*'", " ", line)  # macros


def check_do(out: Path) -> dict[str, set[str]]:
    """Read-check out/analysis.do; returns {file used: variables named while it was the data in memory}."""
    do = (out / "analysis.do").read_text()
    assert do.count("{") == do.count("}") and do.count('`"') == do.count('"\'')
    for line in do.splitlines():
        word = line.strip().split(" ")[0] if line.strip() else ""
        assert not word or word in KNOWN, line
    written = set(re.findall(r'(?:save|using) `"(stata_results/[^"]+)"\'', do))
    reads = re.findall(r'(?:^use|import delimited using) `"([^"]+)"\'', do, flags=re.M)
    for path in reads:
        assert (path in written) if path.startswith("stata_results/") else (out / path).is_file(), path
    # each CSV import names every column by its position in the header as written
    for block in do.split("import delimited using ")[1:]:
        csv = block.split('"', 1)[1].split('"', 1)[0]
        header = list(pd.read_csv(out / csv, nrows=0).columns)
        positions = re.findall(r"^(?:rename|drop) v(\d+)\b", block, flags=re.M)
        assert [int(p) for p in positions] == list(range(1, len(header) + 1)), csv
        for k, name in re.findall(r"^rename v(\d+) (\w+)", block, flags=re.M):
            plain = re.sub(r"^py_", "", name).replace("_", ".")
            assert header[int(k) - 1] in (name, plain, re.sub(r"^py_", "", name)) or name.startswith("py_"), \
                (csv, k, name)
    # every variable named after `use X.dta` is a column of X.dta (or made in the block before it is used)
    named: dict[str, set[str]] = {}
    for block in re.split(r"^use ", do, flags=re.M)[1:]:
        path = re.match(r'`"([^"]+)"\'', block).group(1)
        block = block.split("\nimport delimited using ")[0]
        if path.startswith("stata_results/"):
            continue
        dta = pd.read_stata(out / path, convert_categoricals=True)
        have = set(dta.columns)
        made = set()
        used = set()
        for line in block.splitlines()[1:]:
            code = line.strip()
            if code.startswith("*"):
                continue
            m = re.match(r"(?:bysort [\w ]+: )?(?:generate|egen) (?:double |long |byte )?(\w+)", code)
            if m:
                made.add(m.group(1))
            m = re.match(r"rename (\w+) (\w+)$", code)
            if m and "`" not in code:
                made.add(m.group(2))
            m = re.match(r"reshape wide (\w+), i\([\w ]+\) j\((\w+)\) string", code)
            if m:
                made |= {m.group(1) + str(v) for v in dta[m.group(2)].dropna().astype(str).unique()}
            m = re.match(r"foreach \w+ in ([\w ]+) \{", code)
            if m:  # a loop over variables (the conjoint's attributes)
                used |= set(m.group(1).split())
            m = re.match(r"foreach v of varlist ([\w ]+) \{", code)
            if m:
                used |= set(m.group(1).split())
            if code.startswith(("foreach", "post ", "postfile", "display", "local", "tempname", "save", "}")):
                continue
            used |= {w for w in re.findall(r"[A-Za-z_]\w*", _strip(code)) if w not in WORDS or w in have}
        unknown = {w for w in used - made - have - WORDS - KNOWN if not re.fullmatch(r"\d*e\d+|postclose", w)}
        assert not unknown, (path, sorted(unknown))
        named[path] = used & have
    return named


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The bundled replication folder's three Stata studies, their .dta written by export's writer."""
    import rdata

    from simsubjects.publish.export import _write, blank_as_missing
    from simsubjects.publish.stata import do_script

    out = tmp_path_factory.mktemp("stata")
    studies = []
    for study, tables in (("ultimatum", ["responses"]), ("garden_path", ["responses"]),
                          ("conjoint_immigration", ["profiles"])):
        shutil.copytree(BUNDLED / study / "analysis", out / study / "analysis")
        (out / study / "export").mkdir(parents=True)
        for t in tables:
            df = rdata.read_rds(BUNDLED / study / "export" / f"{t}.rds")
            levels = {c: list(df[c].cat.categories) for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)}
            df = blank_as_missing(df.assign(**{c: df[c].astype(object) for c in levels}))
            _write(df, out / study / "export" / f"{t}.dta", "dta", design=levels)
        studies.append({"study": study, "folder": study, "exported": ["dta"], "status": "complete"})
    (out / "analysis.do").write_text(do_script({"studies": studies}, out))
    return out


def test_every_stata_study_has_a_block_that_reads_its_export(folder):
    named = check_do(folder)
    assert named["ultimatum/export/responses.dta"] >= {"source", "model", "response", "pairing", "weight", "trial",
                                                       "offer"}
    assert named["garden_path/export/responses.dta"] >= {"source", "model", "response", "condition", "set", "type",
                                                         "item", "weight", "trial"}
    from simsubjects.studies.conjoint.analysis import features

    assert named["conjoint_immigration/export/profiles.dta"] >= {"source", "outcome_kind", "id", "chosen",
                                                                 *features()}
    do = (folder / "analysis.do").read_text()
    assert "ttest garden_path == control" in do and "svy: regress chosen ibn.`f'" in do and "svyset respondent" in do
    assert "(ultimatum, garden_path, conjoint_immigration)" in do and "exit 9" in do


def test_the_checker_catches_a_variable_the_export_lacks(folder, tmp_path):
    """The read-check is not vacuous: a .do naming a column the .dta lacks, or a file not in the folder, fails."""
    shutil.copytree(folder, tmp_path / "f")
    do = (tmp_path / "f" / "analysis.do").read_text()
    (tmp_path / "f" / "analysis.do").write_text(do.replace("egen long respondent = group(id)",
                                                           "egen long respondent = group(respondent_id)"))
    with pytest.raises(AssertionError, match="respondent_id"):
        check_do(tmp_path / "f")
    (tmp_path / "f" / "analysis.do").write_text(do.replace("garden_path/analysis/paired_tests.csv",
                                                           "garden_path/analysis/paired.csv"))
    with pytest.raises((AssertionError, FileNotFoundError)):
        check_do(tmp_path / "f")


def test_the_readme_names_what_stata_cannot_do():
    from simsubjects.publish.readme import _readme_r

    text = " ".join(_readme_r({"files": {"r_package": True}}))
    assert "No Stata version here" in text
    for what in ("MoCa's AMCEs", "Kaplan-Meier", "Wasserstein", "survey-bias deltas", "type-7 quartiles"):
        assert what in text, what
