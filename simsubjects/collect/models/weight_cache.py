"""A user cache of de-quantized weights: a GGUF file is read once, then loaded as safetensors.

Reading SmolLM2's GGUF through transformers costs ~40 s (de-quantization and the tokenizer's
conversion); the same float32 weights saved as safetensors load in well under a second and give
identical logits. The cache lives in $SIMSUBJECTS_CACHE, else $XDG_CACHE_HOME/simsubjects, else
~/.cache/simsubjects. An entry is keyed by the source's sha256 (the run's model revision) and the
transformers version, and is written into a temporary folder that is renamed into place, so an
entry is whole or absent. A cache that cannot be written is skipped: it only saves time.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

COMPLETE = "complete"  # written last inside the temporary folder: an entry without it is ignored


def root() -> Path:
    if os.environ.get("SIMSUBJECTS_CACHE"):
        return Path(os.environ["SIMSUBJECTS_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "simsubjects"


def entry(revision: str) -> Path:
    import transformers

    digest = revision.removeprefix("sha256:")
    return root() / "weights" / f"{digest}-transformers-{transformers.__version__}"


def lookup(revision: str) -> Path | None:
    """The cached folder for a model revision, if a complete one exists."""
    folder = entry(revision)
    return folder if (folder / COMPLETE).exists() else None


def _clean_stale(parent: Path, age: float = 86400.0) -> None:
    """Temporary folders left by a killed process (a day old: not another process's live write)."""
    import time

    for tmp in parent.glob(".tmp-*"):
        try:
            if time.time() - tmp.stat().st_mtime > age:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass


def store(revision: str, model, tokenizer) -> Path | None:
    """Save `model` and `tokenizer` under `revision`; None when the cache cannot be written."""
    folder = entry(revision)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _clean_stale(folder.parent)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    except OSError:
        return None
    try:
        # save_pretrained refuses a model read from GGUF ("quantized with gguf"), although its
        # weights are plain de-quantized tensors: write them and a config without that mark.
        from safetensors.torch import save_model

        config = model.config.to_dict()
        config.pop("quantization_config", None)
        type(model.config).from_dict(config).save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        tokenizer.save_pretrained(tmp)
        (tmp / COMPLETE).write_text(revision + "\n")
        os.replace(tmp, folder)  # atomic; fails if another process filled the entry first
        return folder
    except OSError:
        return lookup(revision)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
