"""Read a study file: YAML data plus the line of every key, so errors name file, line and key."""

from __future__ import annotations

import difflib
from pathlib import Path

import yaml

from ..errors import UserError
from . import limits

Path_ = tuple  # a key path: ("items", 2, "id")
MAX_DIGITS = 100  # characters of a whole number in a study file (int64 needs 20)


class StudyFileError(UserError):
    """A problem in a study file; printed as `FILE:LINE: KEY: what to fix` (exit code 2)."""


def keypath(path: Path_) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


class Source:
    """The parsed file and where each of its keys sits."""

    def __init__(self, file: Path, text: str):
        self.file = Path(file)
        self.text = text
        self.raw = text.encode("utf-8")
        self.lines: dict[Path_, int] = {}
        self.spans: dict[Path_, tuple[int, int]] = {}  # a scalar's characters in `text` (runcopy.py rewrites some)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)  # libyaml when present: faster
        try:
            node = loader.get_single_node()
            if node is not None:
                self._walk(node, ())  # before building values: a 5,000-digit number is refused by its line
            self.data = loader.construct_document(node) if node is not None else None
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            line = f":{mark.line + 1}" if mark else ""
            raise StudyFileError(f"{self.file}{line}: YAML syntax error: {e.problem or e.context}") from None
        except yaml.YAMLError as e:
            raise StudyFileError(f"{self.file}: YAML syntax error: {e}") from None
        finally:
            loader.dispose()

    def _walk(self, node, path: Path_) -> None:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for k, v in node.value:
                key = k.value
                if k.tag in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"):  # YAML 1.1: yes, on, ~
                    raise StudyFileError(f"{self.file}:{k.start_mark.line + 1}: {keypath(path)}: key {key!r} is "
                                         f"read as {'true/false' if k.tag.endswith('bool') else 'null'}; "
                                         f"quote it: \"{key}\"")
                if k.tag == "tag:yaml.org,2002:int" and len(key) > MAX_DIGITS:
                    raise StudyFileError(f"{self.file}:{k.start_mark.line + 1}: {keypath(path)}: a key of "
                                         f"{len(key)} digits; at most {MAX_DIGITS}")
                if key in seen:
                    raise StudyFileError(f"{self.file}:{k.start_mark.line + 1}: {keypath(path + (key,))}: "
                                         f"duplicate key (first at line {seen[key]})")
                seen[key] = k.start_mark.line + 1
                self.lines[path + (key,)] = k.start_mark.line + 1
                self._walk(v, path + (key,))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                self._walk(v, path + (i,))
        else:
            self.spans.setdefault(path, (node.start_mark.index, node.end_mark.index))
            if node.tag == "tag:yaml.org,2002:int" and len(node.value) > MAX_DIGITS:  # int() stops at 4,300 digits
                raise StudyFileError(f"{self.file}:{node.start_mark.line + 1}: {keypath(path)}: a number of "
                                     f"{len(node.value)} characters; at most {MAX_DIGITS}")
            if "\x00" in str(node.value):  # a NUL would be cut silently by R, Stata and SPSS files
                raise StudyFileError(f"{self.file}:{node.start_mark.line + 1}: {keypath(path)}: holds a NUL "
                                     "character (\\0); remove it")

    def line(self, path: Path_) -> int | None:
        path = tuple(path)
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path)

    def error(self, path: Path_, message: str) -> StudyFileError:
        line = self.line(path)
        return StudyFileError(f"{self.file}{f':{line}' if line else ''}: {keypath(tuple(path))}: {message}")


def read_source(file) -> Source:
    file = Path(file)
    if file.suffix.lower() not in (".yaml", ".yml"):
        raise StudyFileError(f"{file}: a study file ends in .yaml or .yml")
    why = limits.regular_file(file, "study file")  # a FIFO would block, a device never end
    if why and not file.is_dir():
        raise StudyFileError(f"{file}: {why}")
    try:
        with open(file, "rb") as f:
            raw = f.read(limits.MAX_STUDY_BYTES + 1)
        if len(raw) > limits.MAX_STUDY_BYTES:
            raise StudyFileError(f"{file}: larger than {limits.MAX_STUDY_BYTES // 2**20} MB; a study file is a "
                                 "short text (tables go in their own files)")
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text reads it
    except FileNotFoundError:
        raise StudyFileError(f"{file}: no such study file") from None
    except IsADirectoryError:
        raise StudyFileError(f"{file}: is a folder, not a study file") from None
    except UnicodeDecodeError as e:
        raise StudyFileError(f"{file}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise StudyFileError(f"{file}: cannot be read ({e.strerror or e})") from None
    why = limits.yaml_shape(text)  # before anything is built from it
    if why:
        raise StudyFileError(f"{file}: {why}")
    src = Source(file, text)
    src.raw = raw  # the bytes hashed and checked: what the run folder's copy gets (never re-read)
    return src


def did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else f"; allowed: {', '.join(sorted(map(str, choices)))}"
