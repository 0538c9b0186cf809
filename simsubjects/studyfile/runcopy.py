"""The run's copy of a study file: RUN/study/ holds the file and its tables, as read and hashed.
Its own module because a study file (adapter.py) and a session (session_def.py) both write it, and
adapter.py also builds sessions' replicate rows: one place below both keeps them out of a circle.

A model player's server URL may carry credentials (`openai:m@http://user:PASSWORD@host/v1`): the
copy leaves them out (`without_credentials`), while the manifest keeps the sha256 of the file as
read, so a resume from the user's own file is checked as before (docs/robustness.md, issue 42)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

from ..collect.store import atomic_write_bytes
from ..redact import is_credential_param
from ..redact import redact, redact_url

if TYPE_CHECKING:  # annotations only
    from .spec import Study

COPY = "study"  # folder of the run that holds the study file and its tables


def copy_files(study: Study, out: Path) -> None:
    """The study file and its tables into RUN/study/ (each written whole: atomic), from the bytes that
    were read, hashed and parsed: an edit of the files while the run goes on never reaches the run."""
    for rel in study.files:
        atomic_write_bytes(Path(out) / COPY / rel, study.raw[rel])


def has_credentials(url: str) -> bool:
    """User info (user:password@) or a credential query parameter (key=, token=, ...) in a URL."""
    try:
        p = urlsplit(url)
        return p.username is not None or p.password is not None or "@" in p.netloc or \
            any(is_credential_param(k) for k, _ in parse_qsl(p.query, keep_blank_values=True))
    except ValueError:
        return True  # unparseable: treated as holding them (parse_spec refused such URLs already)


def shown_spec(spec) -> str:
    """A parsed model spec as it may be written or printed: its URLs without credentials."""
    if not spec.urls:
        return redact(spec.text)
    return f"{spec.backend}:{spec.name}@" + ",".join(redact_url(u) for u in spec.urls)


def without_credentials(src, specs: dict) -> bytes:
    """The bytes of the run's copy: the file as read (src.raw), with each model spec of `specs` (key
    path -> ModelSpec) whose URLs carry credentials rewritten as `shown_spec` (a double-quoted YAML
    scalar in place of the written one). The result is parsed again and checked to hold no credentials
    at those keys; a spec written so that it cannot be rewritten in place (an anchor or alias) is one
    line naming its key, never printing the value."""
    hidden = {path: spec for path, spec in specs.items() if any(has_credentials(u) for u in spec.urls)}
    if not hidden:
        return src.raw
    text = src.text
    spans = {path: src.spans.get(tuple(map(_key, path))) for path in hidden}
    for path in sorted(hidden, key=lambda p: spans[p][0] if spans[p] else -1, reverse=True):  # last first
        if spans[path] is None:
            raise src.error(path, _UNSAFE)
        start, end = spans[path]
        if text[start] in "&*!":
            raise src.error(path, "a model URL with credentials must be written in place (no YAML anchor, alias "
                                  "or tag): the run's copy leaves them out")
        text = text[:start] + json.dumps(shown_spec(hidden[path]), ensure_ascii=False) + text[end:]
    _check_copy(src, text, hidden)
    return text.encode("utf-8")


def _check_copy(src, text: str, hidden: dict) -> None:
    from .load import Source  # lazy: imports yaml

    copy = Source(src.file, text)
    for path, spec in hidden.items():
        value = copy.data
        try:
            for k in path:
                value = value[k]
        except (KeyError, IndexError, TypeError):
            value = None
        if value != shown_spec(spec):
            raise src.error(path, _UNSAFE)


def _key(k):
    return k if isinstance(k, int) else str(k)  # Source's key paths hold mapping keys as written (text)


_UNSAFE = ("a model URL with credentials could not be left out of the run's copy; write the spec on one line, "
           "e.g. model: \"openai:MODEL@http://USER:PASSWORD@HOST/v1\"")
