"""Backends register themselves here; `load_model` and `parse_spec` read only this table.

A backend is named by the prefix of a model spec (``hf:``, ``openai:``) or by an embedded model's
name (``smollm2``). Each backend module calls `register` when it is imported, with its own parser
(checked before anything loads) and loader; a new backend is one new module, no edit elsewhere
beyond importing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Backend:
    name: str
    # (the spec after "name:", the whole spec) -> (model name or path, base URLs); raises UserError
    parse: Callable[[str, str], tuple[str, list[str]]]
    # (name, urls, spec, **options) -> a LanguageModel
    load: Callable[..., object]
    server: bool = False  # talks to a server: takes --base-url and --timeout
    embedded: tuple[str, ...] = ()  # whole specs that name this backend (e.g. "smollm2")


BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    BACKENDS[backend.name] = backend
    return backend


def by_embedded_name(spec: str) -> Backend | None:
    return next((b for b in BACKENDS.values() if spec in b.embedded), None)
