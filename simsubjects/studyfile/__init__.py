"""Study files: a survey, vignette experiment or estimation task declared in YAML (docs/studies.md).

load.py      YAML text -> data with the line of every key (for one-line errors)
spec.py      validation of the data into a `Study` (metadata, items, responses, design, human data)
door.py      load_any: the one door for every kind of study file (plain, session, obedience)
schema.py    the JSON Schema of the format (`study schema`), generated from spec.py's definitions
tables.py    the tables beside the file (CSV, XLSX, .sav, .dta, parquet)
design.py    trials: factors crossed or sampled, subjects, repetitions, option orders, prompts
collect.py   asking a model: k-choice, numeric estimates, free text judged by k-choice prompts
analyses.py  the analyses a study file names (its tests computed in analyze/methods/subjects.py)
adapter.py   a `Study` as the package's study declaration (StudyDef)
origin.py    which study made a run: a built-in study, a study file (its copy in the run folder), an import
(the commands `collect STUDY.yaml`, `study check`, `study new` are in simsubjects/cli/studyfile.py)
"""


def __getattr__(name):  # Study and load_study on first use: `simsubjects --help` imports no pandas
    if name in ("Study", "load_study"):
        from . import spec  # lazy: off --help's path (pandas, pyarrow)

        return getattr(spec, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_study_file(name) -> bool:
    """A command-line name that is a study file's path (collect STUDY.yaml, replicate STUDY.yaml)."""
    return str(name).lower().endswith((".yaml", ".yml"))
