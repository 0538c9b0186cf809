"""A Milgram obedience study file (`obedience:` instead of `items:` or `session:`).

The classic Milgram procedure (Aher et al. 2023, Appendix E) is free text cut at its first sentence,
judged by two 2-choice prompts, and driven by a stage table and a prod counter: none of it is a
k-choice item or a session block, so it has its own section. The file holds the whole scenario
(introduction, 30 stages, judgments, prods, special prods, canned texts, record separators) and
the run settings the built-in command takes; simsubjects/studies/milgram/design.py is the one
simulator that runs it. The built-in `milgram` and `milgram_novel` studies are two such files,
bundled in simsubjects/datasets/aher2023/ (docs/studies.md, "Milgram as a study file").

Everything is checked here without a model: each problem is one StudyFileError line
`FILE:LINE: KEY: what to fix` (exit code 2), before a model loads or a file is written. Nothing in
the file becomes code: its texts are string.Template texts filled with the subject's name and
pronouns ($subject, $poss, $poss_obj) and, in the judgments, the subject's sentence ($action).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
import re

from simsubjects.collect.sample_kinds import CENSUS

from .limits import MAX_SEED
from .spec import Checker, placeholders, study_header

TOP = {"study", "title", "citation", "license", "description", "design", "obedience"}
DESIGN = {"subjects", "seed", "max_stages", "max_tokens", "judge_rule"}
SCENARIO = {"name", "title", "unit", "victim", "placeholders", "introduction", "stages", "judgments", "prods",
            "special_prods", "canned_texts", "record", "notes", "figures"}
STAGE = {"level", "voltage", "label", "text", "no_punish_text"}
JUDGMENT = {"figure", "template", "completions", "scored_completion", "positive", "threshold", "rule"}
JUDGMENTS = ("termination", "obedience")  # asked in this order on every step
SPECIAL = {"text", "stage_level", "voltage", "when", "replaces"}
CANNED = {"correction", "end_after_prods"}
RECORD = {"step_separator", "subject_prompt", "canned_separator"}
# the break-off scale of Milgram (1963): 30 switches; the analysis and the human reference use it
N_STAGES = 30
MAX_PRODS = 20
MAX_TOKENS = 32768  # as the built-in's --max-tokens
RULES = ("normalized", "scored")
SUBJECT_FILLS = {"subject", "poss", "poss_obj"}  # filled from the subject's title and surname
NAME_SLUG = r"^[a-z][a-z0-9_-]*$"


@dataclass
class ObedienceStudy:
    """A validated obedience study file: its scenario (the simulator's data) and run settings."""

    file: Path
    name: str
    title: str
    scenario: dict
    raw: bytes = b""
    citation: str = ""
    license: str = ""
    description: str = ""
    subjects: int = 4  # the first N of the 100-subject pool
    names: list | None = None  # or these subjects of the pool, by name ("Mr. Lopez")
    seed: int = 0
    max_stages: int = N_STAGES
    max_tokens: int = 40
    judge_rule: str = "normalized"
    files: dict = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    def settings(self) -> dict:
        """The built-in command's parameters (collect milgram --subjects --max-stages ...)."""
        out = {"subjects": len(self.names) if self.names else self.subjects, "max_stages": self.max_stages,
               "max_tokens": self.max_tokens, "judge_rule": self.judge_rule}
        return {**out, "names": list(self.names)} if self.names else out


def load_obedience(file, seed: int | None = None) -> ObedienceStudy:
    src, c, d, head = study_header(file, TOP, ("study", "title", "obedience"))
    s = ObedienceStudy(file=src.file, scenario=_scenario(c, d["obedience"]), raw=src.raw, **head)
    s.files[src.file.name] = src.file
    _design(c, d.get("design") or {}, s, seed)
    return s


def _design(c: Checker, g, s: ObedienceStudy, seed: int | None) -> None:
    from ..studies.milgram.design import subject_pool  # lazy: imports scipy, numpy

    p = ("design",)
    c.mapping(g, p, DESIGN)
    pool = list(subject_pool()["subject"])
    if isinstance(g.get("subjects"), list):
        names = g["subjects"]
        for i, n in enumerate(names):
            if not isinstance(n, str) or n not in pool:
                raise c.err((*p, "subjects", i), f"{n!r} is not a subject of the pool (title and one of the 10 most "
                                                 f"common surnames of each group, e.g. {pool[0]!r})")
            if names.index(n) != i:
                raise c.err((*p, "subjects", i), f"{n!r} is listed twice")
        if not names:
            raise c.err((*p, "subjects"), "an empty list; name at least one subject, or give a number")
        s.names = list(names)
    else:
        s.subjects = c.number(g, "subjects", p, 4, integer=True, low=1, high=len(pool))
    s.seed = seed if seed is not None else c.number(g, "seed", p, 0, integer=True, low=0, high=MAX_SEED)
    s.max_stages = c.number(g, "max_stages", p, N_STAGES, integer=True, low=1, high=len(s.scenario["stages"]))
    s.max_tokens = c.number(g, "max_tokens", p, 40, integer=True, low=1, high=MAX_TOKENS)
    s.judge_rule = c.choice(g, "judge_rule", p, RULES, "normalized")


def _template(c: Checker, d: dict, key: str, path, allowed: set, required=True) -> str | None:
    v = c.text(d, key, path, required=required)
    if v is None:
        return None
    if not v.strip():
        raise c.err((*path, key), "is empty; write the text")
    names = placeholders(v)
    if names == ["$"]:
        raise c.err((*path, key), "a lone $ starts no placeholder; write $$ for a dollar sign")
    for n in names:
        if n not in allowed:
            raise c.err((*path, key), f"unknown placeholder ${n}; allowed: "
                                      f"{', '.join('$' + a for a in sorted(allowed))}")
    return v


def _separator(c: Checker, d: dict, key: str, path) -> str:
    """A separator is kept byte for byte (write it double-quoted: "\\n\\n")."""
    v = c.text(d, key, path, required=True)
    names = placeholders(v)
    if names == ["$"] or any(n not in SUBJECT_FILLS for n in names):
        raise c.err((*path, key), f"only {', '.join('$' + a for a in sorted(SUBJECT_FILLS))} may be filled here")
    return v


def _scenario(c: Checker, v) -> dict:
    p = ("obedience",)
    d = c.mapping(v, p, SCENARIO, required=("name", "title", "introduction", "stages", "judgments", "prods",
                                             "canned_texts", "record"))

    name = c.text(d, "name", p)
    if not re.fullmatch(NAME_SLUG, name):
        raise c.err((*p, "name"), f"{name!r}: the scenario's name (the tables' `item`) is lower-case letters, "
                                  "digits, - and _")
    c.text(d, "title", p, required=True)
    for key in ("unit", "victim"):  # optional: the items table's columns
        d[key] = c.text(d, key, p, "")
    if d.get("special_prods") is None:
        d["special_prods"] = []
    for key in ("placeholders", "figures"):
        for k, t in c.typed(d.get(key) or {}, (*p, key), dict, "a mapping").items():
            c.text({k: t}, k, (*p, key))
    for i, t in enumerate(c.listed(d, "notes", p)):
        c.typed(t, (*p, "notes", i), str, "text")
    _template(c, d, "introduction", p, SUBJECT_FILLS)
    levels = _stages(c, d, p)
    _judgments(c, d, p)
    prods = c.listed(d, "prods", p, required=True)
    if not 1 <= len(prods) <= MAX_PRODS:
        raise c.err((*p, "prods"), f"{len(prods)} prods; give 1 to {MAX_PRODS} (Milgram's four: prods 1-4)")
    for i in range(len(prods)):
        _template(c, dict(enumerate(prods)), i, (*p, "prods"), SUBJECT_FILLS)
    seen = set()
    for i, sp in enumerate(c.listed(d, "special_prods", p)):
        q = (*p, "special_prods", i)
        c.mapping(sp, q, SPECIAL, required=("text", "stage_level"))
        _template(c, sp, "text", q, SUBJECT_FILLS)
        lvl = c.number(sp, "stage_level", q, integer=True)
        if lvl not in levels:
            raise c.err((*q, "stage_level"), f"{lvl} is not a stage's level (1 to {len(levels)})")
        if lvl in seen:
            raise c.err((*q, "stage_level"), f"a second special prod at level {lvl}; one per stage")
        seen.add(lvl)
        c.number(sp, "voltage", q)
        # the simulator has one rule (Appendix E.1): it replaces prod 1 on the stage's first disobedience
        if sp.get("when") not in (None, "first disobedience"):
            raise c.err((*q, "when"), f"{sp['when']!r}: a special prod is given on the \"first disobedience\"")
        if sp.get("replaces") not in (None, 1) or isinstance(sp.get("replaces"), bool):
            raise c.err((*q, "replaces"), f"{sp['replaces']!r}: a special prod replaces prod 1")
    canned = c.mapping(d["canned_texts"], (*p, "canned_texts"), CANNED, required=tuple(sorted(CANNED)))
    for key in sorted(CANNED):
        _template(c, canned, key, (*p, "canned_texts"), SUBJECT_FILLS)
    rec = c.mapping(d["record"], (*p, "record"), RECORD, required=tuple(sorted(RECORD)))
    for key in sorted(RECORD):
        _separator(c, rec, key, (*p, "record"))
    return d


def _stages(c: Checker, d: dict, p) -> list[int]:
    stages = c.listed(d, "stages", p, required=True)
    if len(stages) != N_STAGES:
        raise c.err((*p, "stages"), f"{len(stages)} stages; the break-off scale has {N_STAGES} (Milgram 1963's "
                                    "30 switches, which the analysis and the human reference use)")
    levels = []
    for i, st in enumerate(stages):
        q = (*p, "stages", i)
        c.mapping(st, q, STAGE, required=("level", "text"))
        lvl = c.number(st, "level", q, integer=True)
        if lvl != i + 1:
            raise c.err((*q, "level"), f"{lvl}: stages are levels 1, 2, ..., {N_STAGES} in order; this one is {i + 1}")
        levels.append(lvl)
        c.number(st, "voltage", q)
        c.text(st, "label", q)
        _template(c, st, "text", q, SUBJECT_FILLS)
        _template(c, st, "no_punish_text", q, SUBJECT_FILLS, required=False)
        st.setdefault("no_punish_text", None)
        st.setdefault("label", None)
        st.setdefault("voltage", None)
    return levels


def _judgments(c: Checker, d: dict, p) -> None:
    q = (*p, "judgments")
    js = c.mapping(d["judgments"], q, set(JUDGMENTS), required=JUDGMENTS)
    for j in JUDGMENTS:
        r = (*q, j)
        spec = c.mapping(js[j], r, JUDGMENT, required=("template", "completions", "positive", "scored_completion"))
        t = _template(c, spec, "template", r, SUBJECT_FILLS | {"action"})
        if "action" not in placeholders(t):
            raise c.err((*r, "template"), "never shows the subject's sentence; put $action in it ($subject$action)")
        comps = c.listed(spec, "completions", r, required=True)
        for i, x in enumerate(comps):
            if not isinstance(x, str) or not x.strip():
                raise c.err((*r, "completions", i), "a completion is non-empty text, e.g. \" stop\"")
        if len(comps) != 2 or comps[0] == comps[1]:
            raise c.err((*r, "completions"), "two different completions (a 2-choice judgment, e.g. \" not stop\", "
                                             "\" stop\")")
        for key in ("positive", "scored_completion"):
            v = c.text(spec, key, r, required=True)
            if v not in comps:
                raise c.err((*r, key), f"{v!r} is not one of the completions {comps}")
        spec.setdefault("threshold", 0.5)
        t = c.number(spec, "threshold", r)
        if not 0 < t < 1:
            raise c.err((*r, "threshold"), f"{t}: a probability threshold is between 0 and 1")
        c.text(spec, "figure", r)
        c.text(spec, "rule", r)


def obedience_def(study: ObedienceStudy, out=None):
    """The file as the package's study declaration (StudyDef): the built-in Milgram simulator, tables,
    analysis and figures, on the file's scenario. `out`: the run folder that gets the file's copy."""
    from ..studies.milgram.analysis import analyze_milgram, plot_milgram, summary  # lazy: imports scipy, numpy
    from ..studies.milgram.check_r import check_milgram  # lazy: imports scipy, numpy
    from ..collect.store import atomic_write_bytes  # lazy: imports collect.store
    from ..studies.milgram import design as M  # lazy: imports scipy, numpy
    from ..collect.studies.registry import StudyDef  # lazy: imports collect.studies.registry, datasets
    from .runcopy import COPY  # lazy: imports collect.store, studyfile.runcopy

    scen = study.scenario

    def build(subjects=4, max_stages=N_STAGES, seed=0, names=None, **_):
        return M.build_trials(scen, subjects, max_stages, seed, names)

    def finalize(responses, params):
        if out is not None:  # the bytes that were read, hashed and checked (as runcopy.copy_files)
            atomic_write_bytes(Path(out) / COPY / study.file.name, study.raw)
        return M.with_humans(responses, params)

    return StudyDef(
        name=study.name, help=study.title, title=study.title, build=build,
        datasets=["names", "milgram1963"],
        templates=lambda: [scen["introduction"], *(j["template"] for j in scen["judgments"].values())],
        collect=M.make_collect(study.name, lambda: scen),
        validate=lambda model, trials, params, n=4: M.validate(model, trials, params, n, scen=scen),
        finalize=finalize,
        analyze=lambda responses, items: analyze_milgram(responses, items, scen=scen),
        plot=lambda tables, responses, outdir: plot_milgram(tables, responses, outdir, scen=scen),
        summary=summary,
        check_r=check_milgram,  # R's survival and log-rank, as the built-in's
        methods=("exact", "sampled"),
        columns=M.COLUMNS,
        sample=CENSUS,  # the first N (or the named) subjects of the 100-name pool, each once
    )


def file_parameters(study: ObedienceStudy) -> dict:
    """What the manifest records of the file (as adapter.file_parameters): its copy's name and sha256."""
    from .runcopy import COPY  # lazy: imports collect.store, studyfile.runcopy

    return {"file": f"{COPY}/{study.file.name}", "sha256": study.sha256, "tables": {}}


def describe_obedience(study: ObedienceStudy) -> str:
    """`study check` of an obedience file: the scenario and the run settings; no model loads."""
    scen = study.scenario
    st = scen["stages"]
    steps = sum(1 + bool(s["no_punish_text"]) for s in st[:study.max_stages])
    who = ", ".join(study.names) if study.names else f"the first {study.subjects} of the 100-subject pool"
    lines = [f"{study.file}: valid (a Milgram obedience study)", f"study: {study.name} - {study.title}"]
    if study.citation:
        lines.append(f"citation: {study.citation}")
    lines += [
        f"scenario: {scen['name']} - {scen['title']}",
        f"stages: {len(st)} ({sum(bool(s['no_punish_text']) for s in st)} with a no-punishment step); prods: "
        f"{len(scen['prods'])}; special prods at level(s) "
        f"{', '.join(str(p['stage_level']) for p in scen.get('special_prods') or []) or 'none'}",
        "judgments: " + "; ".join(f"{j} {scen['judgments'][j]['completions']} (positive "
                                   f"{scen['judgments'][j]['positive']!r})" for j in JUDGMENTS),
        f"subjects: {who}; max stages: {study.max_stages}; max tokens: {study.max_tokens}; judge rule: "
        f"{study.judge_rule}; seed: {study.seed}",
        f"requests per subject: at most {steps} steps before prods, each 1 completion and 2 judgments",
    ]
    return "\n".join(lines)
