"""Study declarations: everything the package knows of a study, in one `StudyDef` (see docs/declaring.md).

A study module declares module-level `StudyDef(...)` objects (and the `Paper`s they belong to);
`collect <name>`, `analyze`, `export`, `report`, `replicate` and `--check-r` read only these
declarations. A declaration holds its functions (analysis, plot, report, check-r, ...) themselves,
imported where it is written; no "module:function" text (tests/test_layers.py fails on one).
Studies are discovered, not listed:

* every folder of `simsubjects.studies` (a built-in study is one folder, docs/architecture.md),
  imported here by name: the one import of the package's study code, which sits a layer above this
  module (it imports `analyze/`);
* modules named by the entry-point group ``simsubjects.studies`` of installed distributions;
* Python files, or folders of them, named in the environment variable ``SIMSUBJECTS_STUDIES``
  (separated by ``os.pathsep``), so a study declared outside the package needs no edit anywhere.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import math
import os
import pkgutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Callable
from importlib.metadata import entry_points

from ...datasets.registry import DATASETS, Dataset
from ...errors import UserError
from ..sample_kinds import SAMPLE_KINDS

ENV_PATH = "SIMSUBJECTS_STUDIES"
ENTRY_POINTS = "simsubjects.studies"


@dataclass
class Option:
    """A CLI option of a study: click's declaration, kept as data."""

    flags: tuple[str, ...]
    kwargs: dict = field(default_factory=dict)
    # an option added after runs were made: left out of the run's parameters when not given, so a run
    # made before it still resumes (its recorded parameters do not name it)
    omit_unset: bool = False

    @property
    def param(self) -> str:
        """The build parameter this option fills (--max-stages -> max_stages)."""
        return self.flags[0].lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Paper:
    """A paper that `simsubjects replicate KEY` reproduces; its studies name it in their plans."""

    key: str
    title: str
    citation: str
    note: str = ""
    order: int = 100  # place in `replicate all` and in the report


@dataclass(frozen=True)
class Plan:
    """A study's part in a paper: the sizing rule behind `replicate --scale`.

    `params(scale)` -> collect parameters (without seed); `design` says what scale 1.0 is;
    `samples(scale)` -> valid answers per trial under --method sampled (default 50).
    """

    paper: Paper
    params: Callable[[float], dict]
    design: str
    samples: Callable[[float], int] | None = None
    order: int = 100  # place of the study within the paper


@dataclass
class StudyDef:
    name: str
    help: str
    build: Callable  # (**params) -> (trials, items); its signature names the parameters it accepts
    options: list[Option] = field(default_factory=list)
    datasets: list = field(default_factory=list)  # data entries: a Dataset, or a bundled dataset's name
    templates: Callable[[], list[str]] = lambda: []
    # None: a k-choice study collected by collect.runner.collect_choices. Otherwise a function
    # (model, cache, trials, params, show_progress) -> (responses, stats, records or None).
    collect: Callable | None = None
    # Optional (model, trials, params, n) -> validity table for `--validate` (free-text studies);
    # k-choice studies are validated generically from their prompts and options.
    validate: Callable | None = None
    # Optional (responses, params) -> responses after collection: add human reference rows, etc.
    finalize: Callable | None = None
    # The functions below are the functions themselves (a string is refused: __post_init__).
    analyze: str | Callable = ""  # (responses, items) -> dict[str, DataFrame]
    plot: str | Callable = ""  # (tables, responses, outdir) -> list[Path]
    summary: str | Callable = ""  # optional: tables -> terminal-sized tables
    methods: tuple[str, ...] = ("exact",)
    aliases: tuple[str, ...] = ()
    title: str = ""  # the report's heading (default: the help text up to its first colon)
    columns: dict[str, str] = field(default_factory=dict)  # design columns -> labels (codebook, .dta/.sav)
    papers: tuple[Plan, ...] = ()  # the papers it belongs to, with the sizing rule of each
    report: str | Callable = ""  # optional: report.Run -> list of HTML blocks beside people and the paper
    check_r: str | Callable = ""  # optional: (RSession, responses, items, tables, tol, tol_p) -> comparison rows
    r_function: str = ""  # the R function analysis.R calls on the study's folder (list of result tables)
    r_source: str = ""  # an R file defining r_function, for studies outside the package's R/
    # R code analysis.R includes instead of an r_function call: R text, or a function returning it
    # (a block written from the study's design)
    r_code: str | Callable = ""
    # optional: study -> {column: published valid-answer rate (%)} for the report's validity table
    validity_reference: str | Callable = ""
    # optional: (responses, items) -> {column: levels in design order, baseline first}: the export's
    # R factors, Stata/SPSS value labels and codebooks keep this order (issue 29)
    levels: str | Callable = ""
    # optional: (responses, items) -> {name: DataFrame}: tables the export writes beside responses and
    # items, in every format (the conjoint's one row per profile shown, people included)
    export_tables: str | Callable = ""
    # what the subjects behind its tests are a sample of (issue 40; collect/sample_kinds.py): a kind,
    # or a function of the run's parameters returning one; "" reads it from the rows (analyze/estimand.py)
    sample: str | Callable = ""

    def __post_init__(self):
        _check_datasets(self)
        if isinstance(self.sample, str) and self.sample and self.sample not in SAMPLE_KINDS:
            raise UserError(f"study {self.name}: sample={self.sample!r} is not one of {sorted(SAMPLE_KINDS)}")
        for name in FUNCTIONS:
            ref = getattr(self, name)
            if isinstance(ref, str) and ref:
                raise UserError(f"study {self.name}: {name}={ref!r} is text; give the function itself "
                                "(import it in the declaration's module)")
        self._accepted = _accepted_params(self.build, self.name)
        self._written = _defaults_from_build(self)

    @property
    def heading(self) -> str:
        return self.title or self.help.split(":")[0]

    def make(self, **params):
        """build(**params): every name checked against build's signature and the study's options,
        build given the ones it takes (a collect-time option such as Milgram's --max-tokens is not)."""
        return self.build(**build_params(self, params))


# the fields of a StudyDef that hold a function (never its "module:function" name)
FUNCTIONS = ("analyze", "plot", "summary", "report", "check_r", "validity_reference", "levels", "export_tables")

# parameters every collection passes whatever the study (run identity, model wrapping)
COMMON_PARAMS = {"seed", "chat_template"}


def _accepted_params(build: Callable, name: str) -> set[str] | None:
    """Names build() accepts; None when it takes **kwargs of its own (then it checks them itself)."""
    try:
        sig = inspect.signature(build)
    except (TypeError, ValueError):
        return None
    ps = sig.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in ps):
        return None
    return {p.name for p in ps if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _defaults_from_build(study: StudyDef) -> set[str]:
    """A parameter's default is written once, in build()'s signature: an option that names no default
    takes build's (so `collect STUDY --help`, the command and a script's `make()` agree). Returns the
    options that wrote their own default (tests/test_option_order.py: none repeats build's)."""
    try:
        sig = inspect.signature(study.build)
    except (TypeError, ValueError):
        return {o.param for o in study.options if "default" in o.kwargs}
    written = set()
    for o in study.options:
        p = sig.parameters.get(o.param)
        if "default" in o.kwargs:
            written.add(o.param)
        elif p is not None and p.default is not p.empty:
            o.kwargs["default"] = p.default
    return written


def _check_datasets(study: StudyDef) -> None:
    """Every data entry is known when the study is declared, not after its trials were answered: a
    `Dataset` (declared in the study's folder) or the name of one in datasets/registry.py."""
    for d in study.datasets:
        if not isinstance(d, (str, Dataset)):
            raise UserError(f"study {study.name}: datasets holds {d!r}; give a Dataset or a bundled dataset's name")
        if isinstance(d, str) and d not in DATASETS:
            raise UserError(f"study {study.name}: unknown dataset {d!r}; declare it beside the study as "
                            "Dataset(...) in datasets= (docs/architecture.md), or name one of `simsubjects datasets list`")


def declared_datasets() -> dict[str, Dataset]:
    """The bundled datasets and those a study declares beside itself, by name (`simsubjects datasets`)."""
    found = dict(DATASETS)
    for s in studies().values():
        found.update({d.name: d for d in s.datasets if isinstance(d, Dataset)})
    return found


def check_params(study: StudyDef, params: dict) -> None:
    """An unknown parameter is an error naming it (as inspect_ai's task_create does), not dropped."""
    accepted = study._accepted
    if accepted is None:
        return
    known = accepted | {o.param for o in study.options} | COMMON_PARAMS
    unknown = sorted(k for k in params if k not in known)
    if unknown:
        raise UserError(f"study {study.name}: unknown parameter(s) {', '.join(unknown)}; "
                        f"it accepts {', '.join(sorted(known - COMMON_PARAMS)) or 'none'}")


def build_params(study: StudyDef, params: dict) -> dict:
    """The subset of `params` that build() takes, after check_params."""
    check_params(study, params)
    accepted = study._accepted
    return dict(params) if accepted is None else {k: v for k, v in params.items() if k in accepted}


def size(full: int, scale: float, floor: int = 1) -> int:
    """ceil(full * scale), at least `floor`, at most `full`: the sizing rule of replicate's plans."""
    return min(full, max(floor, math.ceil(full * scale - 1e-9)))


def fill_template(template: str, where: str, /, **values) -> str:
    """`string.Template` substitution; a placeholder without a value is a UserError that names it."""
    try:
        return Template(template).substitute(**values)
    except KeyError as e:
        raise UserError(f"{where}: template variable ${e.args[0]} has no value "
                        f"(available: {', '.join('$' + k for k in sorted(values))})") from None
    except ValueError as e:  # a lone "$" or "${" that starts no valid placeholder
        raise UserError(f"{where}: {e}") from None


# ---------------------------------------------------------------- discovery

BUILT_INS = "simsubjects.studies"  # a folder per built-in study


def _package_modules() -> list[str]:
    """The built-in studies: every folder (package) of simsubjects.studies; its modules beside the
    folders (papers, names, shared report pieces) declare no study."""
    pkg = importlib.import_module(BUILT_INS)
    return [f"{BUILT_INS}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)
            if m.ispkg and not m.name.startswith("_")]


def _entry_point_modules() -> list[str]:
    return [ep.value.partition(":")[0] for ep in entry_points(group=ENTRY_POINTS)]


def _user_files() -> list[Path]:
    files = []
    for part in os.environ.get(ENV_PATH, "").split(os.pathsep):
        if not part.strip():
            continue
        p = Path(part).expanduser()
        if p.is_dir():
            files += sorted(f for f in p.glob("*.py") if not f.name.startswith("_"))
        elif p.is_file() and p.suffix == ".py":
            files.append(p)
        else:
            raise UserError(f"{ENV_PATH}: {part} is neither a .py file nor a folder")
    return files


def _load_file(path: Path):
    """Import a study file under a stable module name (one import however often it is discovered)."""
    name = f"simsubjects_user_studies.{path.stem}_{abs(hash(str(path.resolve()))) % 10**8}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        del sys.modules[name]
        raise UserError(f"{path}: cannot load this study file ({type(e).__name__}: {e})") from None
    return mod


def _modules():
    for name in [*_package_modules(), *_entry_point_modules()]:
        yield importlib.import_module(name)
    for path in _user_files():
        yield _load_file(path)


@functools.lru_cache(maxsize=None)
def _discover(env: str) -> dict[str, StudyDef]:
    found: dict[str, StudyDef] = {}
    for mod in _modules():
        for s in vars(mod).values():
            if isinstance(s, StudyDef):
                other = found.get(s.name)
                if other is not None and other is not s:
                    raise UserError(f"study {s.name!r} is declared twice ({mod.__name__} and another module)")
                found[s.name] = s
    return found


def studies() -> dict[str, StudyDef]:
    """Every declared study, by name (package, entry points, SIMSUBJECTS_STUDIES)."""
    return dict(_discover(os.environ.get(ENV_PATH, "")))


def get_study(name: str) -> StudyDef:
    all_ = studies()
    for s in all_.values():
        if name == s.name or name in s.aliases or name.replace("-", "_") == s.name:
            return s
    raise UserError(f"unknown study {name!r}; known: {', '.join(sorted(all_))}")


def papers() -> dict[str, Paper]:
    """Every paper a declared study belongs to, by key, in their `order`."""
    found: dict[str, Paper] = {}
    for s in studies().values():
        for plan in s.papers:
            other = found.setdefault(plan.paper.key, plan.paper)
            if other != plan.paper:
                raise UserError(f"paper {plan.paper.key!r} is declared twice with different titles or citations")
    return {p.key: p for p in sorted(found.values(), key=lambda p: (p.order, p.key))}


def plans_of(paper_key: str) -> list[tuple[StudyDef, Plan]]:
    """The studies of a paper with their sizing rules, in the paper's order."""
    rows = [(s, plan) for s in studies().values() for plan in s.papers if plan.paper.key == paper_key]
    return sorted(rows, key=lambda r: r[1].order)
