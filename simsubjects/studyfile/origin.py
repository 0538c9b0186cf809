"""Which study made a run: the one place that tells a built-in study's run from a study file's.

A run folder's manifest names its study. A run collected from a study file also records the file
(`parameters.studyfile`: the path of its copy inside the run folder, and checksums), even when the
file shares a built-in study's name: such a run is analyzed, reported and exported as the file says,
never as the built-in study. A run imported from a released data set (`simsubjects
import-responses`) records the release's format (`identity.imported`); it is a built-in study's run.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from simsubjects.errors import UserError

from .adapter import KEY  # the parameter a study file's run records
from .adapter import study_def_of
from .door import load_any
from simsubjects.collect.untrusted import inside


@dataclass(frozen=True)
class Origin:
    study: str  # the study's name, as the manifest records it
    file: str = ""  # a study file's copy, relative to the run folder ("" for a built-in study)
    imported: str = ""  # the released format of an imported run ("" when a model answered)

    @property
    def is_study_file(self) -> bool:
        return bool(self.file)


def file_of(parameters) -> str:
    """The study file's copy named by a run's (or a planned run's) parameters; "" for a built-in study."""
    info = parameters.get(KEY) if isinstance(parameters, dict) else None
    return str(info["file"]) if isinstance(info, dict) and info.get("file") else ""


def origin(manifest: dict) -> Origin:
    identity = manifest.get("identity") if isinstance(manifest.get("identity"), dict) else {}
    return Origin(str(manifest.get("study", "?")), file_of(manifest.get("parameters") or {}),
                  str(identity.get("imported") or ""))


def analysis_reusable(manifest: dict) -> bool:
    """Whether a run's saved analysis may be read back instead of computed: a built-in study's may (when
    current, publish/saved.py); a study file's never, since its analyses come from the folder's copy."""
    return not origin(manifest).is_study_file


def collect_target(manifest: dict, folder) -> str:
    """What an equivalent `simsubjects collect` command names: the study file's copy in the run folder,
    else the built-in study (its command name, `-` for `_`)."""
    o = origin(manifest)
    return f"{folder}/{o.file}" if o.is_study_file else o.study.replace("_", "-")


def without_file(parameters: dict) -> dict:
    """The parameters a command line shows: the study file is the command's argument, not an option."""
    return {k: v for k, v in parameters.items() if k != KEY}


def title(manifest: dict, folder) -> str | None:
    """The title of a study-file run (from its copy of the file), or None for a built-in study's run."""
    o = origin(manifest)
    if not o.is_study_file:
        return None
    try:
        import yaml  # lazy: optional

        from simsubjects.collect.untrusted import inside  # lazy: optional (collect.untrusted)

        data = yaml.safe_load(inside(folder, o.file, "studyfile").read_text(encoding="utf-8"))
        return str(data.get("title") or o.study)
    except Exception:  # noqa: BLE001 - a missing or damaged copy: the section still renders
        return o.study


def study_def(folder, manifest: dict, code_from=None):
    """The StudyDef that made the run: the study file's copy in the folder, else the declared study.

    The run's own copy is read as data: its `type: function` analyses never run. `code_from`: the
    study file the user runs themselves (analyze --allow-code FILE), the same bytes as the run's copy;
    its analyses may run code (docs/robustness.md)."""
    o = origin(manifest)
    if not o.is_study_file:
        if code_from is not None:
            raise UserError(f"--allow-code {code_from}: {folder} is a built-in study's run, not a study file's")
        from simsubjects.collect.studies.registry import get_study  # lazy: looked up per call (tests replace get_study)

        return get_study(o.study)


    path = inside(folder, o.file, f"{Path(folder) / 'manifest.json'}: parameters.studyfile.file")
    if not path.is_file():
        raise UserError(f"{folder}: the copy of the study file ({o.file}) is missing; re-run the collection")
    params = manifest.get("parameters") or {}
    seed = params.get("seed")  # the run's seed (collect --seed), so seeded tables are drawn as collected
    seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
    loaded = load_any(path, seed=seed)  # the run's copy, read as data: its code never runs
    if code_from is None or not loaded.plain:  # a session or obedience file names no code
        return study_def_of(loaded)
    own = load_any(code_from, seed=seed, allow_code=True)
    info = (manifest.get("parameters") or {}).get("studyfile") or {}
    if not own.plain or own.study.sha256 != info.get("sha256"):
        raise UserError(f"--allow-code {code_from}: not the study file of {folder} (its sha256 differs from the "
                        f"run's copy {o.file}); name the file the run was collected from")
    return study_def_of(own)
