"""Model backends behind one interface, and the spec strings that name them.

    smollm2                                  the embedded default (SmolLM2-135M-Instruct, GGUF)
    hf:/path/to/model_dir | hf:/path/x.gguf  a local transformers model
    openai:gpt-4o-mini                       the OpenAI API (key from OPENAI_API_KEY)
    openai:my-model@http://127.0.0.1:8000/v1 any OpenAI-compatible server; several URLs: url1,url2
"""

from __future__ import annotations

from ...errors import UserError
from ...redact import redact
from .base import ChoiceRequest, ChoiceResult, CompletionRequest, CompletionResult, LanguageModel, ModelInfo
from .registry import BACKENDS, Backend, register  # noqa: F401
from .spec import (EMBEDDED, SMOLLM2_FILE, ModelSpec, _check_local, check_model_options, check_url,  # noqa: F401
                   model_spec, parse_spec, smollm2_path)

__all__ = ["ChoiceRequest", "ChoiceResult", "CompletionRequest", "CompletionResult", "LanguageModel",
           "ModelInfo", "ModelSpec", "load_model", "smollm2_path", "parse_spec", "check_model_options", "check_url", "register",
           "Backend", "BACKENDS"]


def load_model(spec: ModelSpec | str, *, base_url: str | None = None, chat_template: bool = False,
               trust_remote_code: bool = False, device: str = "auto", timeout: float | None = None,
               **options) -> LanguageModel:
    """`device` (auto | cpu | cuda | cuda:N) places a local model; a server's model is where the server put it.
    `base_url` and `timeout` apply to server backends only (an error elsewhere). `spec`: the command
    line's parsed ModelSpec, or a script's text (parsed here, the Python API's edge)."""
    spec = model_spec(spec)
    check_model_options(spec, base_url, timeout)
    name, urls, b = spec.name, list(spec.urls), BACKENDS[spec.backend]
    if b.server:
        local_only = [f"--{k.replace('_', '-')}" for k in ("dtype", "device_map", "cache_weights") if options.pop(k, None)]
        if local_only:  # a server's model runs at the server's precision and placement
            raise UserError(f"{', '.join(local_only)}: only for local models (smollm2, hf:...), not {redact(spec.text)}")
        urls = urls or ([u for u in base_url.split(",") if u] if base_url else [])
        if timeout is not None:
            options["timeout"] = timeout
        return b.load(name, urls, spec.text, **options)
    return b.load(name, urls, spec.text, chat_template=chat_template, trust_remote_code=trust_remote_code,
                  device=device, **options)


# The backends register themselves on import (each module is light: torch and openai load lazily).
from . import hf as _hf  # noqa: E402,F401
from . import openai_api as _openai_api  # noqa: E402,F401
