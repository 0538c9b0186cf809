"""A bench finding (a study file with a `finding:` section) and the loader of a corpus of them.

Written by benchscore to the shared interface (notes: bench_iface) so the scorecard can be built and
tested on a user's folder of finding files with inline numbers; benchdata's module (bundled corpora,
readers of the shared raw files) replaces it at merge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

CORPORA = Path(__file__).resolve().parent / "corpora"
KINDS = ("between", "within", "one_sample", "association")
ESTIMATORS = ("diff_proportions", "log_odds_ratio", "cohens_d", "r", "cohens_w", "one_sample_d", "cohens_h")
TESTS = ("chi2", "fisher", "welch_t", "student_t", "paired_t", "one_sample_t", "z_proportions", "binomial",
         "correlation")
FINDING_KEYS = {"id", "title", "corpus", "citation", "year", "domain", "hypothesis", "estimator", "test",
                "original", "replication"}
INLINE_KEYS = {"effect", "ci", "n", "n_groups", "test", "statistic", "df", "p", "scale", "source"}


@dataclass(frozen=True)
class Effect:
    """One published result, as the source gives it."""
    scale: str
    value: float
    ci_low: float | None
    ci_high: float | None
    n: int | None
    test: str | None
    statistic: float | None
    df: float | None
    p: float | None
    n_groups: tuple[int, ...] | None
    source: str


@dataclass(frozen=True)
class Finding:
    id: str
    title: str
    corpus: str
    citation: str
    year: int | None
    domain: str
    runnable: bool
    reason: str | None
    study_path: Path | None
    hypothesis: dict
    estimator: str
    test: str
    original: Effect
    replication: Effect | None


def corpora() -> list[str]:
    """The bundled corpus names (folders under bench/corpora/)."""
    return sorted(p.name for p in CORPORA.iterdir() if p.is_dir()) if CORPORA.is_dir() else []


def load_corpus(name_or_dir: str | Path) -> list[Finding]:
    """'all', a bundled corpus name, or a folder holding finding study files (any depth)."""
    if str(name_or_dir) == "all":
        return [f for c in corpora() for f in load_corpus(c)]
    folder = CORPORA / str(name_or_dir) if str(name_or_dir) in corpora() else Path(name_or_dir)
    if not folder.is_dir():
        known = ", ".join(["all", *corpora()])
        raise UserError(f"{name_or_dir}: neither a bundled corpus ({known}) nor a folder of finding files")
    files = sorted(p for p in folder.rglob("*.y*ml") if p.suffix in (".yaml", ".yml"))
    found = [read_finding(p) for p in files]
    found = [f for f in found if f is not None]
    if not found:
        raise UserError(f"{folder}: holds no study file with a `finding:` section (docs/bench.md)")
    ids = [f.id for f in found]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise UserError(f"{folder}: finding id {dup[0]!r} is used by two files; ids are unique")
    return found


def read_finding(path: Path) -> Finding | None:
    """The finding declared by one study file (None when it has no `finding:` section)."""
    from ..studyfile.load import read_source

    src = read_source(path)
    d = src.data if isinstance(src.data, dict) else {}
    f = d.get("finding")
    if f is None:
        return None
    p = ("finding",)
    _mapping(src, f, p, FINDING_KEYS, ("id", "title", "hypothesis", "estimator", "test", "original"))
    h = _hypothesis(src, f["hypothesis"], (*p, "hypothesis"))
    est, test = f["estimator"], f["test"]
    if est not in ESTIMATORS:
        raise src.error((*p, "estimator"), f"{est!r}: one of {', '.join(ESTIMATORS)}")
    if test not in TESTS:
        raise src.error((*p, "test"), f"{test!r}: one of {', '.join(TESTS)}")
    year = f.get("year")
    if year is not None and (not isinstance(year, int) or isinstance(year, bool)):
        raise src.error((*p, "year"), f"{year!r}: a year such as 1981")
    orig = _effect(src, f["original"], (*p, "original"))
    rep = _effect(src, f["replication"], (*p, "replication")) if f.get("replication") is not None else None
    return Finding(id=str(f["id"]), title=str(f["title"]), corpus=str(f.get("corpus", path.parent.name)),
                   citation=str(f.get("citation", d.get("citation", ""))), year=year,
                   domain=str(f.get("domain", "")), runnable=True, reason=None, study_path=path.resolve(),
                   hypothesis=h, estimator=est, test=test, original=orig, replication=rep)


def _mapping(src, d, path, allowed, required):
    from ..studyfile.load import did_you_mean

    if not isinstance(d, dict):
        raise src.error(path, "a mapping")
    for k in d:
        if k not in allowed:
            raise src.error((*path, k), f"unknown key{did_you_mean(k, allowed)}")
    for k in required:
        if d.get(k) is None:
            raise src.error(path, f"{k}: required")


def _hypothesis(src, h, path) -> dict:
    _mapping(src, h, path, {"kind", "outcome", "outcomes", "factor", "levels", "measure", "null", "direction"},
             ("kind", "measure"))
    if h["kind"] not in KINDS:
        raise src.error((*path, "kind"), f"{h['kind']!r}: one of {', '.join(KINDS)}")
    if h["kind"] == "between" and (not h.get("factor") or not isinstance(h.get("levels"), list)
                                   or len(h["levels"]) != 2):
        raise src.error(path, "a between hypothesis names `factor` and two `levels`")
    if h["kind"] in ("within", "association") and (not isinstance(h.get("outcomes"), list) or len(h["outcomes"]) != 2):
        raise src.error(path, f"a {h['kind']} hypothesis names two `outcomes`")
    if h["kind"] in ("between", "one_sample") and not h.get("outcome"):
        raise src.error(path, f"a {h['kind']} hypothesis names its `outcome` item")
    if h.get("direction", "positive") not in ("positive", "negative"):
        raise src.error((*path, "direction"), f"{h['direction']!r}: positive or negative")
    m = h["measure"]
    if not isinstance(m, dict) or not ({"option", "mean", "options"} & set(m)):
        raise src.error((*path, "measure"), "one of {option: LABEL}, {mean: true}, {options: [...]}")
    return dict(h)


def _number(src, v, path, what="a number") -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise src.error(path, f"{v!r}: {what}")
    return float(v)


def _effect(src, e, path) -> Effect:
    """An inline effect; `{from: CORPUS, key: ...}` needs the readers of the bundled corpora."""
    if isinstance(e, dict) and "from" in e:
        raise src.error(path, "`from:` reads a bundled corpus's raw files, which this installation lacks; "
                              "give the numbers inline (docs/bench.md)")
    _mapping(src, e, path, INLINE_KEYS, ("effect", "scale", "source"))
    ci = e.get("ci")
    if ci is not None and (not isinstance(ci, list) or len(ci) != 2):
        raise src.error((*path, "ci"), "two numbers [low, high]")
    lo, hi = (None, None) if ci is None else (_number(src, ci[0], (*path, "ci")), _number(src, ci[1], (*path, "ci")))
    n = e.get("n")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 2):
        raise src.error((*path, "n"), f"{n!r}: a whole number of people, at least 2")
    groups = e.get("n_groups")
    if groups is not None and (not isinstance(groups, list) or
                               not all(isinstance(g, int) and not isinstance(g, bool) and g > 0 for g in groups)):
        raise src.error((*path, "n_groups"), "a list of whole numbers (people per group)")
    opt = {k: (_number(src, e[k], (*path, k)) if e.get(k) is not None else None) for k in ("statistic", "df", "p")}
    return Effect(scale=str(e["scale"]), value=_number(src, e["effect"], (*path, "effect")), ci_low=lo, ci_high=hi,
                  n=n, test=e.get("test"), n_groups=tuple(groups) if groups else None,
                  source=f"{src.file.name}:{'.'.join(path)}: {e['source']}", **opt)
