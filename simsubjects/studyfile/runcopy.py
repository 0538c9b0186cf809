"""The run's copy of a study file: RUN/study/ holds the file and its tables, as read and hashed.
Its own module because a study file (adapter.py) and a session (session_def.py) both write it, and
adapter.py also builds sessions' replicate rows: one place below both keeps them out of a circle."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..collect.store import atomic_write_bytes

if TYPE_CHECKING:  # annotations only
    from .spec import Study

COPY = "study"  # folder of the run that holds the study file and its tables


def copy_files(study: Study, out: Path) -> None:
    """The study file and its tables into RUN/study/ (each written whole: atomic), from the bytes that
    were read, hashed and parsed: an edit of the files while the run goes on never reaches the run."""
    for rel in study.files:
        atomic_write_bytes(Path(out) / COPY / rel, study.raw[rel])
