"""Studies declared as data: how to build trials, which options the CLI offers, how to analyze.

Each study module declares one or more module-level `StudyDef(...)` objects; `collect <name>` and `analyze` are generated
from these declarations, so adding a study never touches the CLI.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from string import Template
from typing import Callable

from ...errors import UserError

# Modules that declare studies.
MODULES = ["ultimatum", "garden_path", "wisdom", "milgram", "survey_bias", "moca", "opinion_survey"]


@dataclass
class Option:
    """A CLI option of a study: click's declaration, kept as data."""

    flags: tuple[str, ...]
    kwargs: dict = field(default_factory=dict)


@dataclass
class StudyDef:
    name: str
    help: str
    build: Callable  # (**params) -> (trials, items)
    options: list[Option] = field(default_factory=list)
    datasets: list[str] = field(default_factory=list)
    templates: Callable[[], list[str]] = lambda: []
    # None: a k-choice study collected by collect.runner.collect_choices. Otherwise a function
    # (model, cache, trials, params, show_progress) -> (responses, stats, records or None).
    collect: Callable | None = None
    # Optional (model, trials, params, n) -> validity table for `--validate` (free-text studies);
    # k-choice studies are validated generically from their prompts and options.
    validate: Callable | None = None
    # Optional (responses, params) -> responses after collection: add human reference rows, etc.
    finalize: Callable | None = None
    analyze: str = ""  # "module:function" -> (responses, items) -> dict[str, DataFrame]
    plot: str = ""  # "module:function" -> (tables, responses, outdir) -> list[Path]
    summary: str = ""  # optional "module:function" -> terminal-sized tables
    methods: tuple[str, ...] = ("exact",)
    aliases: tuple[str, ...] = ()


def fill_template(template: str, where: str, /, **values) -> str:
    """`string.Template` substitution; a placeholder without a value is a UserError that names it."""
    try:
        return Template(template).substitute(**values)
    except KeyError as e:
        raise UserError(f"{where}: template variable ${e.args[0]} has no value "
                        f"(available: {', '.join('$' + k for k in sorted(values))})") from None
    except ValueError as e:  # a lone "$" or "${" that starts no valid placeholder
        raise UserError(f"{where}: {e}") from None


def resolve(ref: str | Callable) -> Callable:
    if callable(ref):  # a declaration built at run time (a study file) holds its functions
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def studies() -> dict[str, StudyDef]:
    found: dict[str, StudyDef] = {}
    for m in MODULES:
        try:
            mod = importlib.import_module(f"{__package__}.{m}")
        except ModuleNotFoundError as e:
            if e.name == f"{__package__}.{m}":
                continue  # not written yet
            raise
        for s in vars(mod).values():
            if isinstance(s, StudyDef):
                found[s.name] = s
    return found


def get_study(name: str) -> StudyDef:
    all_ = studies()
    for s in all_.values():
        if name == s.name or name in s.aliases:
            return s
    raise UserError(f"unknown study {name!r}; known: {', '.join(sorted(all_))}")
