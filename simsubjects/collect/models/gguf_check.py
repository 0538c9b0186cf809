"""A GGUF file checked before torch and transformers load it: a cut-off or foreign file is bad input.

A download that stopped early, a file truncated by a full disk or a file that is not GGUF at all
would otherwise fail deep inside transformers' loader with a struct or numpy error, after the
slow imports. The header and tensor table are parsed with transformers' own GGUF reader (no tensor
data is read) and every tensor's bytes must lie inside the file.
"""

from __future__ import annotations

import struct
from pathlib import Path

from ...errors import UserError


def check_gguf(path: Path, spec: str) -> None:
    """Raise a UserError naming `path` unless it holds a GGUF header and all of its tensors' data."""
    where = f"model spec {spec!r}: {path}"
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise UserError(f"{where}: cannot be read ({e.strerror or e})") from None
    if magic != b"GGUF":
        raise UserError(f"{where}: not a GGUF file (it does not start with the bytes GGUF)")
    try:
        from transformers.integrations.gguf.reader import GgufHeader  # lazy: optional (torch, transformers)

        header = GgufHeader.from_file(str(path))
        end = max((t.offset + t.nbytes for t in header.tensors), default=0) + header.data_start
    except ImportError:  # another transformers layout: the metadata and tensor table only
        end = _metadata_end(path)
    except (struct.error, ValueError, KeyError, IndexError, OverflowError, TypeError, UnicodeDecodeError,
            MemoryError) as e:
        raise UserError(f"{where}: not a complete GGUF file ({_reason(e, size)}); download it again") from None
    if end > size:
        raise UserError(f"{where}: not a complete GGUF file ({size:,} bytes; its tensors need {end:,}); "
                        "download it again")


def _metadata_end(path: Path) -> int:
    from transformers.integrations.gguf.reader import read_gguf_metadata  # lazy: imports torch, transformers

    try:
        read_gguf_metadata(str(path))
    except (struct.error, ValueError, KeyError, IndexError, OverflowError, UnicodeDecodeError) as e:
        raise UserError(f"model file {path}: not a complete GGUF file ({_reason(e, 0)}); download it again") from None
    return 0


def _reason(e: Exception, size: int) -> str:
    if isinstance(e, struct.error):
        return f"it ends inside its header, after {size:,} bytes"
    return " ".join(str(e).split())[:160] or type(e).__name__
