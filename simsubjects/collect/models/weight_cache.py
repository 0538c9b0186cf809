"""A user cache of de-quantized weights: a GGUF file is read once, then loaded as safetensors.

Reading SmolLM2's GGUF through transformers costs ~40 s (de-quantization and the tokenizer's
conversion); the same float32 weights saved as safetensors load in well under a second and give
identical logits. The cache lives in $SIMSUBJECTS_CACHE, else $XDG_CACHE_HOME/simsubjects, else
~/.cache/simsubjects. An entry is keyed by the source's sha256 (the run's model revision) and the
transformers version, and is written into a temporary folder that is renamed into place, so an
entry is whole or absent. A cache that cannot be written is skipped: it only saves time.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
import time
from importlib.metadata import version

COMPLETE = "complete"  # written last inside the temporary folder: an entry without it is ignored


def file_sha256(path: Path, limit: int = 4 << 30) -> str:
    """Content hash of a weight file; files above `limit` are identified by name and size.

    Once per process for a file of a given size and time (as `load_tokenizer` below): a process that
    loads the same weights again (a dry run, then the model; a fork server; a test session) hashes the
    file once, and a changed file has another size or time."""
    st = Path(path).stat()
    return _sha256(str(Path(path).resolve()), Path(path).name, st.st_size, st.st_mtime_ns, limit)


@functools.lru_cache(maxsize=None)
def _sha256(path: str, name: str, size: int, _mtime_ns: int, limit: int) -> str:
    h = hashlib.sha256()
    if size > limit:  # identified by the name it was given (a link's own name) and its size
        h.update(f"{name}:{size}".encode())
    else:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def revision_of(path: Path) -> str:
    """A model's revision: the sha256 of its GGUF file, or of its folder's weight and config files."""
    if path.is_file():
        return "sha256:" + file_sha256(path)
    h = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if f.is_file() and (f.suffix in {".json", ".safetensors", ".bin", ".gguf", ".model"}):
            h.update(f.name.encode())
            h.update(file_sha256(f).encode())
    return "sha256:" + h.hexdigest()


def root() -> Path:
    if os.environ.get("SIMSUBJECTS_CACHE"):
        return Path(os.environ["SIMSUBJECTS_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "simsubjects"


def entry(revision: str, dtype: str = "float32") -> Path:
    """The folder of a revision's weights in `dtype` (float32, the reference, keeps the plain name)."""
    # the version from the package metadata: importing transformers costs seconds, and a dry run
    # reads only the tokenizer from here
    digest = revision.removeprefix("sha256:")
    suffix = "" if dtype == "float32" else f"-{dtype}"
    return root() / "weights" / f"{digest}-transformers-{version('transformers')}{suffix}"


def lookup(revision: str, dtype: str = "float32") -> Path | None:
    """The cached folder for a model revision, if a complete one exists."""
    folder = entry(revision, dtype)
    return folder if (folder / COMPLETE).exists() else None


def load_tokenizer(folder: Path):
    """The tokenizer saved in a cache entry, read straight from its tokenizer.json.

    AutoTokenizer first resolves the model's config class, which imports the modeling stack
    (torch.distributed, dynamo: ~2-5 s on 2 cores); the entry always holds a fast tokenizer,
    so the fast class reads it directly (identical ids and chat template).

    One object per entry and process: parsing the 3.5 MB tokenizer.json takes ~0.4 s of CPU, and
    a `replicate --dry-run` or an imported survey's dry run asked for it once per study. Sharing
    it is safe because the package only reads it (and sets the pad token to EOS, the same value
    for every user); a rewritten entry (other size or time) is read again.
    """
    st = (Path(folder) / "tokenizer.json").stat()
    return _load_tokenizer(str(folder), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _load_tokenizer(folder: str, _size: int, _mtime_ns: int):
    from transformers import PreTrainedTokenizerFast  # lazy: imports transformers, attr

    return PreTrainedTokenizerFast.from_pretrained(folder)


def _clean_stale(parent: Path, age: float = 86400.0) -> None:
    """Temporary folders left by a killed process (a day old: not another process's live write)."""
    for tmp in parent.glob(".tmp-*"):
        try:
            if time.time() - tmp.stat().st_mtime > age:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass


def store(revision: str, model, tokenizer, dtype: str = "float32") -> Path | None:
    """Save `model` and `tokenizer` under `revision`; None when the cache cannot be written."""
    if not getattr(tokenizer, "is_fast", False) or any(p.device.type == "meta" for p in model.parameters()):
        return None  # a slow tokenizer or weights offloaded to disk: the cache would not load them faster
    folder = entry(revision, dtype)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _clean_stale(folder.parent)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    except OSError:
        return None
    try:
        # save_pretrained refuses a model read from GGUF ("quantized with gguf"), although its
        # weights are plain de-quantized tensors: write them and a config without that mark.
        from safetensors.torch import save_model  # lazy: optional (torch, torchgen)

        config = model.config.to_dict()
        config.pop("quantization_config", None)
        type(model.config).from_dict(config).save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        tokenizer.save_pretrained(tmp)
        (tmp / COMPLETE).write_text(revision + "\n")
        if folder.exists() and not (folder / COMPLETE).exists():
            shutil.rmtree(folder, ignore_errors=True)  # an incomplete entry (not ours): never read, replace it
        os.replace(tmp, folder)  # atomic; fails if another process filled the entry first
        return folder
    except OSError:
        return lookup(revision)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
