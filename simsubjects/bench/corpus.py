"""The bench's findings: a finding is an ordinary study file with a `finding:` section (docs/bench.md).

A corpus is a folder of such files (`<corpus>/<finding>/study.yaml`, or any `*.yaml` below a user's
folder) plus, for the bundled corpora, `not_runnable.yaml`: the findings that cannot run on text, each
with its reason. The numbers of a bundled finding are read from the raw files by
`datasets/replications/readers.py`; a user's finding may give them inline with a source note.
Every problem is one line naming the file, line and key (a StudyFileError: exit code 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from ..datasets.replications.readers import CORPORA as RAW_CORPORA
from ..datasets.replications.readers import Effect, ReaderError, read_effect
from ..errors import UserError
from ..studyfile.load import Source, StudyFileError, did_you_mean, read_source

__all__ = ["Effect", "Finding", "corpora", "load_corpus", "check_finding", "check_hypothesis"]

FINDING = {"id", "title", "corpus", "citation", "year", "domain", "hypothesis", "estimator", "test", "original",
           "replication", "reason", "source"}  # reason, source: not_runnable.yaml only
KINDS = {"between": {"outcome", "factor", "levels", "measure", "direction"},
         "within": {"outcomes", "measure", "direction"},
         "one_sample": {"outcome", "measure", "null", "direction"},
         "association": {"outcomes", "measure", "direction"}}
ESTIMATORS = ("diff_proportions", "log_odds_ratio", "cohens_d", "r", "cohens_w", "one_sample_d", "cohens_h")
TESTS = ("chi2", "fisher", "welch_t", "student_t", "paired_t", "one_sample_t", "z_proportions", "binomial",
         "correlation")
MEASURES = ("option", "mean", "options")
FROM = {"from", "key", "cells"}
INLINE = {"effect", "ci", "n", "test", "statistic", "df", "p", "scale", "source", "n_groups"}
ID = re.compile(r"^[a-z][a-z0-9_]*\.[A-Za-z0-9_.-]+$")
INDEX = "not_runnable.yaml"


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    corpus: str
    citation: str
    year: int | None
    domain: str
    runnable: bool
    reason: str | None  # why not runnable (images, IAT, writing task, ...)
    study_path: Path | None  # the study file (None when not runnable)
    hypothesis: dict  # the parsed `hypothesis` mapping, validated
    estimator: str
    test: str
    original: Effect | None  # None only for a non-runnable finding whose source gives no effect size
    replication: Effect | None


def root() -> Path:
    return Path(str(files("simsubjects.bench").joinpath("corpora")))


def corpora() -> list[str]:
    """The bundled corpus names (folders under bench/corpora)."""
    return sorted(p.name for p in root().iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def load_corpus(name_or_dir: str | Path) -> list[Finding]:
    """'all' (every bundled corpus), a bundled corpus' name, or a user's folder of finding study files.
    Ids are unique across what is loaded."""
    if str(name_or_dir) == "all":
        out = [f for name in corpora() for f in _load_dir(root() / name, name)]
    elif str(name_or_dir) in corpora():
        out = _load_dir(root() / str(name_or_dir), str(name_or_dir))
    else:
        folder = Path(name_or_dir)
        if not folder.is_dir():
            raise UserError(f"{name_or_dir}: not a bundled corpus ({', '.join(['all', *corpora()])}) and not a "
                            "folder of finding files")
        out = _load_dir(folder, None)
    seen: dict[str, Finding] = {}
    for f in out:
        if f.id in seen:
            where = lambda x: x.study_path or "not_runnable.yaml"  # noqa: E731
            raise UserError(f"{where(f)}: finding.id: {f.id!r} is also the id of {where(seen[f.id])}")
        seen[f.id] = f
    return out


def read_finding(path: Path) -> Finding | None:
    """The finding one study file declares (None when it has no `finding:` section)."""
    src = read_source(Path(path))
    if not isinstance(src.data, dict) or "finding" not in src.data:
        return None
    return _runnable(src, None, Path(path).parent.name)


def _load_dir(folder: Path, corpus: str | None) -> list[Finding]:
    files_ = sorted(p for p in folder.rglob("*.y*ml") if p.suffix in (".yaml", ".yml") and p.name != INDEX)
    out = [_runnable(read_source(p), corpus, folder.name) for p in files_]
    index = folder / INDEX
    if index.exists():
        out += _index(read_source(index), corpus, folder.name)
    if not out:
        raise UserError(f"{folder}: holds no finding files (study files with a `finding:` section)")
    return out


def _runnable(src: Source, corpus: str | None, folder: str) -> Finding:
    data = src.data if isinstance(src.data, dict) else {}
    if "finding" not in data:
        raise src.error(("finding",), "a bench finding file needs a `finding:` section (docs/bench.md)")
    defaults = {"corpus": folder, "citation": data.get("citation"), "domain": "unspecified"}
    return _finding(src, data["finding"], ("finding",), corpus, study_path=src.file, defaults=defaults)


def _index(src: Source, corpus: str | None, folder: str) -> list[Finding]:
    """`not_runnable.yaml`: {findings: [{id, title, ..., reason, original, replication}, ...]}."""
    data = src.data if isinstance(src.data, dict) else None
    if data is None or not isinstance(data.get("findings"), list):
        raise src.error(("findings",), "a list of the corpus' findings that cannot run, each with its reason")
    return [_finding(src, f, ("findings", i), corpus, study_path=None, defaults={"corpus": folder})
            for i, f in enumerate(data["findings"])]


def _text(src: Source, d: dict, key: str, path: tuple, required: bool = True) -> str:
    v = d.get(key)
    if v is None and not required:
        return ""
    if not isinstance(v, str) or not v.strip():
        raise src.error((*path, key), "required: a text" if v is None else f"{v!r} is not a text")
    return v.strip()


def _finding(src: Source, d, path: tuple, corpus: str | None, study_path: Path | None, defaults: dict) -> Finding:
    """One finding. A user's file may leave out `corpus` (its folder's name), `citation` (the study's) and
    `domain`; a bundled corpus' files give all three (its test checks)."""
    if not isinstance(d, dict):
        raise src.error(path, "a mapping (id, title, corpus, citation, year, domain, hypothesis, ...)")
    if corpus is None:
        d = {**{k: v for k, v in defaults.items() if v is not None}, **d}
    for k in d:
        if k not in FINDING:
            raise src.error((*path, k), f"unknown key{did_you_mean(k, FINDING)}")
    fid = _text(src, d, "id", path)
    if not ID.fullmatch(fid):
        raise src.error((*path, "id"), f"{fid!r}: give <corpus>.<key>, e.g. ml2.tversky1 (letters, digits, _ . -)")
    name = _text(src, d, "corpus", path)
    if corpus is not None and name != corpus:
        raise src.error((*path, "corpus"), f"{name!r}: this file is in the bundled corpus {corpus!r}")
    year = d.get("year")
    if year is not None and (not isinstance(year, int) or isinstance(year, bool) or not 1800 <= year <= 2100):
        raise src.error((*path, "year"), f"{year!r}: the original's publication year, e.g. 1981 (or leave it out)")
    runnable = study_path is not None
    reason = _text(src, d, "reason", path, required=not runnable) or None
    if runnable and reason:
        raise src.error((*path, "reason"), "a runnable finding has no `reason` (list it in not_runnable.yaml)")
    hyp = _hypothesis(src, d.get("hypothesis"), (*path, "hypothesis")) if runnable or "hypothesis" in d else {}
    est = _choice(src, d, "estimator", path, ESTIMATORS, runnable)
    test = _choice(src, d, "test", path, TESTS, runnable)
    if runnable and "source" in d:
        raise src.error((*path, "source"), "a finding file cites its numbers in original/replication, not `source`")
    if "original" not in d and not (not runnable and isinstance(d.get("source"), str)):
        raise src.error((*path, "original"), "required: {from: CORPUS, key: KEY} or the numbers inline with a source"
                        + ("" if runnable else " (or, for a result without an effect size, `source`: file and row)"))
    original = _effect(src, d["original"], (*path, "original"), "original") if "original" in d else None
    if original is None:
        reason = f"{reason} (source: {d['source']})"
    replication = _effect(src, d["replication"], (*path, "replication"), "replication") if d.get("replication") else None
    return Finding(id=fid, title=_text(src, d, "title", path), corpus=name, citation=_text(src, d, "citation", path, required=corpus is not None),
                   year=year, domain=_text(src, d, "domain", path), runnable=runnable, reason=reason,
                   study_path=study_path, hypothesis=hyp, estimator=est, test=test, original=original,
                   replication=replication)


def _choice(src: Source, d: dict, key: str, path: tuple, allowed, required: bool) -> str:
    v = d.get(key)
    if v is None and not required:
        return ""
    if v not in allowed:
        raise src.error((*path, key), f"{'required' if v is None else repr(v)}: one of {', '.join(allowed)}"
                        f"{did_you_mean(v, allowed) if v is not None else ''}")
    return v


def _hypothesis(src: Source, h, path: tuple) -> dict:
    if not isinstance(h, dict) or h.get("kind") not in KINDS:
        raise src.error((*path, "kind") if isinstance(h, dict) else path,
                        f"a mapping whose `kind` is one of {', '.join(KINDS)}")
    allowed = KINDS[h["kind"]] | {"kind"}
    for k in h:
        if k not in allowed:
            raise src.error((*path, k), f"not a key of a {h['kind']} hypothesis{did_you_mean(k, allowed)}")
    # a chi-square's w over several options has no sign, so its direction may be left out (positive)
    unsigned = isinstance(h.get("measure"), dict) and "options" in h["measure"]
    for k in allowed - {"null"} if h["kind"] == "one_sample" else allowed:
        if k not in h and not (k == "direction" and unsigned):
            raise src.error((*path, k), f"required for a {h['kind']} hypothesis")
    if h["kind"] == "one_sample" and not isinstance(h.get("null"), (int, float)):
        raise src.error((*path, "null"), "required: the value the item's mean or share is tested against")
    if h["kind"] == "between" and (not isinstance(h["levels"], list) or len(h["levels"]) != 2):
        raise src.error((*path, "levels"), "two levels of the factor: [first, second] (effect = first - second)")
    if h["kind"] in ("within", "association") and (not isinstance(h["outcomes"], list) or len(h["outcomes"]) != 2):
        raise src.error((*path, "outcomes"), "two item ids: [a, b]")
    m = h["measure"]
    if not isinstance(m, dict) or len(m) != 1 or next(iter(m)) not in MEASURES:
        raise src.error((*path, "measure"), "one of {option: LABEL}, {mean: true}, {options: [LABEL, ...]}")
    if h.setdefault("direction", "positive") not in ("positive", "negative"):
        raise src.error((*path, "direction"), f"{h['direction']!r}: positive or negative")
    return dict(h)


def _effect(src: Source, e, path: tuple, which: str) -> Effect:
    """{from, key[, cells]}: read by the corpus' reader; or inline numbers with their `source`."""
    if not isinstance(e, dict):
        raise src.error(path, "{from: CORPUS, key: KEY} or {effect: NUMBER, ci: [LO, HI], n: N, ..., source: TEXT}")
    if "from" in e:
        for k in e:
            if k not in FROM:
                raise src.error((*path, k), f"unknown key{did_you_mean(k, FROM)} (the numbers are read, not typed)")
        if e["from"] not in RAW_CORPORA:
            raise src.error((*path, "from"), f"{e['from']!r}: one of {', '.join(RAW_CORPORA)}")
        if not isinstance(e.get("key"), (str, int)) or isinstance(e.get("key"), bool):
            raise src.error((*path, "key"), "required: the row's key, e.g. Tversky.1 (manylabs2) or study3a (manylabs1)")
        cells = e.get("cells")
        if cells is not None and (not isinstance(cells, list) or not all(isinstance(c, str) for c in cells)):
            raise src.error((*path, "cells"), "a list of \"<group>/<field>\" texts")
        try:
            return read_effect(e["from"], which, str(e.get("key")), e.get("cells"))
        except ReaderError as err:
            raise src.error((*path, "key"), str(err)) from None
    return _inline(src, e, path)


def _inline(src: Source, e: dict, path: tuple) -> Effect:
    for k in e:
        if k not in INLINE:
            raise src.error((*path, k), f"unknown key{did_you_mean(k, INLINE)}")
    num = lambda k: e.get(k) if isinstance(e.get(k), (int, float)) and not isinstance(e.get(k), bool) else None  # noqa: E731
    if num("effect") is None:
        raise src.error((*path, "effect"), "required: the effect size, a number")
    if not isinstance(e.get("source"), str) or not e["source"].strip():
        raise src.error((*path, "source"), "required: where the numbers come from, e.g. \"Table 2 of the paper\"")
    ci = e.get("ci")
    if ci is not None and (not isinstance(ci, list) or len(ci) != 2 or not all(isinstance(x, (int, float)) for x in ci)
                           or ci[0] > ci[1]):
        raise src.error((*path, "ci"), "[low, high], two numbers, low first")
    n = e.get("n")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 2):
        raise src.error((*path, "n"), f"{n!r}: the total number of people, an integer of at least 2")
    groups = e.get("n_groups")
    if groups is not None and (not isinstance(groups, list) or not all(isinstance(g, int) and g > 0 for g in groups)):
        raise src.error((*path, "n_groups"), "the Ns per group, a list of positive integers")
    return Effect(scale=str(e.get("scale", "d")), value=float(e["effect"]), ci_low=ci[0] if ci else None,
                  ci_high=ci[1] if ci else None, n=n, test=e.get("test"), statistic=num("statistic"), df=num("df"),
                  p=num("p"), n_groups=tuple(groups) if groups else None, source=e["source"].strip())


def check_finding(f: Finding, seed: int | None = None):
    """The runnable finding's study, loaded as `study check` loads it (`seed`: `bench run --seed`, which
    replaces design.seed), with its hypothesis checked against it (check_hypothesis). Returns the study."""
    from ..studyfile.spec import load_study

    study = load_study(f.study_path, seed=seed)
    check_hypothesis(f, study)
    return study


def check_hypothesis(f: Finding, study) -> None:
    """Before any model loads (`bench run`, `bench list`'s tests): the items, factor, levels and options the
    hypothesis names exist in the study, and each outcome can be scored by the measure as score.py scores
    it (score.item_measure: a within/association outcome without the option is scored by its positions).
    One line naming the file, line and key."""
    from .score import item_measure, scored_options

    src, h, path = study.source, f.hypothesis, ("finding", "hypothesis")
    items = {it.id: it for it in study.items}
    outcomes = h.get("outcomes") or [h.get("outcome")]
    for o in outcomes:
        if o not in items:
            raise src.error((*path, "outcomes" if "outcomes" in h else "outcome"),
                            f"{o!r}: not an item of the study{did_you_mean(str(o), items)}")
    if h["kind"] == "between":
        factor = study.factor(h["factor"])
        if factor is None or factor.assignment != "between":
            raise src.error((*path, "factor"), f"{h['factor']!r}: not a between-subject factor of the study")
        for lv in h["levels"]:
            if str(lv) not in factor.levels:
                raise src.error((*path, "levels"), f"{lv!r}: not a level of {factor.name} "
                                f"({', '.join(factor.levels)}){did_you_mean(str(lv), factor.levels)}")
    for o in outcomes:
        m = item_measure(study, o, h["measure"]) if h["kind"] in ("within", "association") else h["measure"]
        opts = scored_options(study, o)
        labels = [op.label for op in opts]
        if "option" in m and m["option"] not in labels:
            raise src.error((*path, "measure", "option"), f"{m['option']!r}: not an option of {o} "
                            f"({', '.join(labels)}){did_you_mean(str(m['option']), labels)}")
        if m.get("mean") and items[o].response.kind != "estimate" and any(op.position is None for op in opts):
            raise src.error((*path, "measure"), f"{{mean: true}}: the options of {o} have no positions (scores)")
        missing = [str(x) for x in m.get("options") or [] if str(x) not in labels]
        if missing:
            raise src.error((*path, "measure", "options"), f"{missing[0]!r}: not an option of {o} "
                            f"({', '.join(labels)}){did_you_mean(missing[0], labels)}")
