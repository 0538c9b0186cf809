"""Text and paths that come from a study file or a run folder are data, never code (docs/robustness.md).

A replication package is made to be shared: a reviewer who analyzes a folder someone sent must not
run its code or have files written outside it. Everything read from a study file, a run folder's
copy of it, or a manifest passes through these helpers before it becomes a file name, a path, a line
of generated R or Markdown, or text on the terminal.

Hand-written: no maintained library escapes R string literals or CommonMark inline text, and the
rules are short enough to read here.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from contextlib import contextmanager
from pathlib import Path

from ..errors import UserError

# a table's or analysis's name becomes `NAME.csv` in the analysis folder: an identifier, never a path
IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# a folder name written in a replication's manifest: one plain path component
FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


# the control tokens of common chat templates (ChatML <|im_start|>, Llama 3 <|eot_id|>, Llama 2 [INST] and
# <<SYS>>, Gemma <start_of_turn>, <s>/</s>): a tokenizer reads them in a prompt as its own special tokens
_CHAT_CONTROL = re.compile(r"<\|[^<>|\s]{1,40}\|>|</?s>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>|<(?:bos|eos|pad)>",
                           re.IGNORECASE)


def chat_control(text) -> str:
    """The first chat control token in `text` ("" if none): data (a recorded table) must not carry one
    into a prompt, where a chat template would read it as a turn boundary."""
    m = _CHAT_CONTROL.search(str(text))
    return m.group(0) if m else ""


def is_ident(name) -> bool:
    return isinstance(name, str) and IDENT.fullmatch(name) is not None


def check_table_name(name, where: str) -> str:
    """`name` if it may name NAME.csv in an analysis folder; else a UserError naming `where`."""
    if not is_ident(name):
        raise UserError(f"{where}: table name {term(repr(name))} is not an identifier (a letter, then letters, "
                        "digits and _; at most 64): a name never becomes a path")
    return name


def inside(root, rel, where: str) -> Path:
    """root/rel, refused unless `rel` is relative and stays inside `root` once links are followed."""
    if not isinstance(rel, str) or not rel or "\x00" in rel or Path(rel).is_absolute() or \
            any(part == ".." for part in Path(rel).parts):
        raise UserError(f"{where}: {term(repr(rel))} is not a path inside {root}; a run folder's files are its own")
    path = Path(root) / rel
    try:
        path.resolve().relative_to(Path(root).resolve())
    except ValueError:
        raise UserError(f"{where}: {term(repr(rel))} leads outside {root} (a link); a run folder's files are "
                        "its own") from None
    return path


def plain_folder(name, where: str) -> str:
    """A folder named in a replication manifest: one path component, no dots-only or control characters."""
    if not isinstance(name, str) or FOLDER.fullmatch(name) is None or set(name) <= {"."}:
        raise UserError(f"{where}: folder {term(repr(name))} is not a plain folder name inside this folder")
    return name


# ------------------------------------------------------------------ terminal

def term(text, keep_newlines: bool = False) -> str:
    """Text for the terminal: control characters (escape sequences, carriage returns, C1 codes) shown
    escaped as repr() shows them, so study text cannot move the cursor, retitle or recolor the terminal."""
    text = str(text)
    keep = "\n\t" if keep_newlines else "\t"
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else repr(m.group())[1:-1], text)


# ------------------------------------------------------------------ R

def r_string(text) -> str:
    """A double-quoted R string literal of `text`: whatever it holds stays one literal on one line."""
    out = ['"']
    for ch in str(text):
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\x00":  # R strings cannot hold NUL; a path or name never does either
            raise UserError(f"{term(repr(str(text)))}: holds a NUL character, which R text cannot")
        elif o < 32 or o == 127 or 0x80 <= o <= 0x9f or o in (0x2028, 0x2029):
            out.append(f"\\u{{{o:04x}}}")
        else:
            out.append(ch)
    return "".join(out) + '"'


def r_comment(text) -> str:
    """Text after `# ` in R code: one line (line breaks and other control characters shown escaped)."""
    return term(text)


# ------------------------------------------------------------------ Markdown

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~&!])")  # emphasis, code, links, HTML, headings, table cells
_MD_LEADING = re.compile(r"^(\s*)([-+=]|\d+(?=[.)]))")  # what opens a list item or underlines a heading


def md_text(text) -> str:
    """Inline Markdown text: one line, every character with a Markdown or HTML meaning backslash-escaped,
    so a title cannot open a heading, a list, a link, a code block or an HTML tag."""
    out = _MD_SPECIAL.sub(r"\\\1", term(text))
    m = _MD_LEADING.match(out)
    if m:
        lead = m.group(2)
        out = out[:m.start(2)] + (f"\\{lead}" if not lead[0].isdigit() else lead + "\\") + out[m.end(2):]
    return out


def md_code(text) -> str:
    """An inline code span of `text` on one line (a fence longer than any run of backticks inside)."""
    text = term(text)
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# ------------------------------------------------------------------ shell

def shell_word(word) -> str:
    """A shell word on one line: shlex.quote, or bash's $'...' where the word holds control characters."""
    word = str(word)
    if not _CONTROL.search(word):
        return shlex.quote(word)
    body = "".join("\\\\" if c == "\\" else "\\'" if c == "'" else
                   (f"\\x{ord(c):02x}" if ord(c) < 128 else f"\\u{ord(c):04x}") if _CONTROL.match(c) else c
                   for c in word)
    return f"$'{body}'"


def shell_join(args) -> str:
    return " ".join(shell_word(a) for a in args)


# ------------------------------------------------------------------ code

ALLOW_CODE = "--allow-code"


@contextmanager
def no_local_imports(*folders):
    """Imports that cannot come from the working folder or `folders` (a run folder, a study's folder):
    `python -m` puts the working folder first on sys.path, and a module file placed there must not run.
    Folders the user put on PYTHONPATH themselves stay (their own environment, not the data's)."""
    drop = {os.path.realpath(p) for p in (os.getcwd(), *folders)}
    chosen = {os.path.realpath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and
                   (os.path.realpath(p) not in drop or os.path.realpath(p) in chosen)]
    try:
        yield
    finally:
        sys.path[:] = saved
