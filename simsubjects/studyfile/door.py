"""The one door for study files: `load_any(path)` reads a plain study, a session or a Milgram obedience
file, the only place that dispatches on the kind (issue 37, item 3); tests/test_layers.py fails on a
`study_kind` call anywhere else. The StudyDef of whichever it read is adapter.study_def_of."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .spec import load_study, study_kind

KINDS = ("plain", "session", "obedience")


@dataclass(frozen=True)
class AnyStudy:
    """A loaded study file: `kind` (plain, session, obedience), the study of that kind, and its path."""

    kind: str
    study: object
    path: Path

    @property
    def plain(self) -> bool:
        return self.kind == "plain"


def load_any(path, seed: int | None = None, allow_code: bool = False) -> AnyStudy:
    """The study of `path`, by its kind: a top-level `session:` key is a session (session.py), an
    `obedience:` key a Milgram obedience file (obedience.py), else a plain study (spec.py). `seed`
    (collect --seed) replaces the design's seed; `allow_code` lets a plain file's `type: function`
    analyses run (a session or obedience file names no code)."""
    kind = study_kind(path)
    if kind == "session":
        from .session import load_session  # lazy: imports studyfile.session, studyfile.expr

        return AnyStudy(kind, load_session(path, seed=seed), Path(path))
    if kind == "obedience":
        from .obedience import load_obedience  # lazy: imports studyfile.obedience

        return AnyStudy(kind, load_obedience(path, seed=seed), Path(path))
    return AnyStudy(kind, load_study(path, seed=seed, allow_code=allow_code), Path(path))


def describe_any(loaded: AnyStudy) -> str | None:
    """`study check`'s description of a session or obedience file; None for a plain study (check.py's)."""
    if loaded.kind == "session":
        from .session_def import describe_session  # lazy: imports studyfile.session, studyfile.session_def

        return describe_session(loaded.study)
    if loaded.kind == "obedience":
        from .obedience import describe_obedience  # lazy: imports studyfile.obedience

        return describe_obedience(loaded.study)
    return None
