"""`study import qualtrics SURVEY.qsf DIR [--responses FILE]`: write the study folder, whole or not at all."""

from __future__ import annotations

import csv
import itertools
import os
import re
import shutil
from pathlib import Path

import yaml

from ...errors import UserError
from .build import Conversion, Item, convert, merge_arms, response_yaml, scale
from .human import Human, human_rows
from .qsf import load_qsf
from .responses import read_export
from . import demographics as D
from .demographics import column

RESERVED_COLS = {"respondent", "item", "response", "condition"}
MAX_PAIRS = 28  # Welch tests written per randomizer: every pair of up to 8 arms


def _lit(text: str) -> str:
    """Item texts in study.yaml are templates: a literal dollar sign is written $$."""
    return text.replace("$", "$$")


def _slug(name: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return s if s[:1].isalpha() else f"qualtrics-{s}".rstrip("-")


def _item_text(it: Item, conv: Conversion, after: dict) -> object:
    if it.merged:  # --merge-arms: each arm's own item, its vignette first, per level
        return {it.merged_factor: {lv: _lit(f"{a.context}\n\n{a.text}" if a.context else a.text)
                                   for lv, a in it.merged.items()}}
    text = f"{it.context}\n\n{it.text}" if it.context else it.text
    f = after.get(it.block)
    if f is None or not any(f.context.values()):
        return _lit(text)
    # asked after a randomizer: the arm's descriptive text (its vignette) comes first, per level
    return {f.name: {lv: _lit(f"{f.context.get(lv, '')}\n\n{text}".strip()) for lv in f.levels}}


def _shown_again(conv: Conversion) -> dict:
    """Block name -> the randomizer whose arm's vignette the flow shows again before it. An arm's vignette is
    part of its own block only: a later block (outcomes, demographics) is asked without it (issue 41,
    item 14), unless the flow shows an arm block again before that block (Survey.reshown)."""
    s = conv.survey
    after = {}
    for bid, pos in s.reshown:
        f = next((f for f in conv.factors if bid in f.blocks), None)
        for b in s.order[pos:] if f is not None else []:
            if b not in f.blocks:
                after[s.blocks[b].name] = f
    return after


def _people(d: dict, human: Human | None, demo: list | None, sample: int | None) -> None:
    """--people: design.subjects: people; with --demographics each respondent's persona is built from
    their own demographic columns of human.csv (the subjects' columns)."""
    if human is None or not human.rows:
        raise UserError("--people: needs --responses with answers (the subjects are the respondents)")
    if sample:
        raise UserError("--people and --subjects: with --people every respondent is a subject")
    d["design"]["subjects"] = "people"
    if demo:
        d["prompt"]["template"] = D.template(demo) + "\n\n${question}\n${options}"


def study_yaml(conv: Conversion, human: Human | None, subjects: int, demo: list | None = None,
               n_personas: int = 0, sample: int | None = None, people: bool = False) -> dict:
    s = conv.survey
    after = _shown_again(conv)
    items = []
    for it in conv.items:
        attrs = {"qid": it.qid, "tag": it.tag, "block": it.block, "qtype": it.qtype, "answer_kind": it.kind}
        if it.arm:
            attrs[it.arm[0]] = it.arm[1]
        if scale(it):
            attrs["scale"] = scale(it)
        items.append({"id": it.id, "text": _item_text(it, conv, after), "response": response_yaml(it),
                      "attributes": attrs})
    d = {"study": _slug(s.name), "title": f"{s.name} (imported from Qualtrics)",
         "citation": f"Qualtrics survey {s.id or s.file.name} ({s.file.name})",
         "description": "Written by `simsubjects study import qualtrics`; what was not converted is listed in "
                        "IMPORT_NOTES.md.",
         "prompt": {"template": "${question}\n${options}", "answer_prefix": "\nAnswer:"},
         "design": {"subjects": subjects, "seed": 0}, "items": items}
    if demo:  # model subjects are the respondents' profiles (demographics.py)

        d["prompt"]["template"] = "${persona}\n\n${question}\n${options}"
        d["design"]["subjects"] = {"table": "personas.csv", "id": "respondent", "template": D.template(demo),
                                   **({"n": sample, "sample": True} if sample and sample < n_personas else {})}
    if people:  # --people: the subjects are the respondents, each scored on their own answers (issue 39)
        _people(d, human, demo, sample)
    if conv.factors:
        d["design"]["factors"] = {f.name: {"assignment": "between", "levels": dict(f.levels)} for f in conv.factors}
    if _split(conv):  # arms named as a crossing: each crossed factor a column set by the arm (docs/qualtrics.md)
        d["design"]["columns"] = {name: {f.name: by} for f in conv.factors for name, by in f.split.items()}
    analyses: list = ["distribution"]
    if human is not None and human.rows:
        groups = [f.name for f in conv.factors] + list(_split(conv)) + \
            [e for e in human.embedded if e not in RESERVED_COLS] + ["scale"]
        if demo:

            groups += [column(it) for it in demo]
        d["human"] = {"file": "human.csv", "name": "qualtrics",
                      "columns": {"respondent": "respondent", "item": "item", "response": "response",
                                  "condition": "condition",
                                  **({"groups": groups} if groups else {})}}
        if any(scale(it) for it in conv.items):
            # one row per scale: 0-100 sliders, yes/no shares and 1-5 positions are never pooled into one r
            analyses.append({"type": "agreement", "by": ["scale"], "name": "agreement"})
        if demo and any(o.position is not None for it in conv.items if it.kind == "choice" for o in it.options):

            analyses.append({"type": "representativeness", "name": "representativeness"})
            analyses.append({"type": "representativeness", "by": [column(it) for it in demo],
                             "name": "representativeness_by_group"})
    if any(it.kind in ("yesno", "estimate") for it in conv.items):  # check-all shares, slider means, with intervals
        analyses.append({"type": "summaries"})
    d["analyses"] = analyses + _arm_tests(conv)
    return d


def _arm_tests(conv: Conversion) -> list[dict]:
    """Numbers and ordinal positions: Welch's t of the subjects' means, each pair of arms; categories: the
    chi-square of arm x answer (it leaves numeric items out, and a sparse table gets a Monte-Carlo p-value:
    studyfile/analyses.py). Issue 41, item 10: a slider's 101 values are not 101 categories."""
    out = []
    levels = {f.name: list(f.levels) for f in conv.factors}
    levels.update({name: list(dict.fromkeys(by.values())) for name, by in _split(conv).items()})
    for name, lvs in levels.items():
        for a, b in list(itertools.combinations(lvs, 2))[:MAX_PAIRS]:
            suffix = "" if len(lvs) == 2 else f"_{a}_vs_{b}"
            out.append({"type": "welch", "factor": name, "levels": [a, b], "name": f"{name}_welch{suffix}"})
        out.append({"type": "chi_square", "factor": name, "name": f"{name}_chi_square"})
    return out


def _split(conv: Conversion) -> dict[str, dict[str, str]]:
    """--merge-arms: the crossed factors the arms' block names declare (build.split_arms), each
    {arm level: its level}."""
    return {name: by for f in conv.factors for name, by in f.split.items()}


def _split_rows(conv: Conversion, rows: list[dict]) -> list[dict]:
    """The people's rows with each crossed factor's level beside their arm (the model's rows get it from
    design.columns)."""
    pairs = [(name, f.name, by) for f in conv.factors for name, by in f.split.items()]
    return [{**r, **{name: by[r[fname]] for name, fname, by in pairs}} for r in rows] if pairs else rows


def _md(text: str) -> str:
    """User text in Markdown as text: markup characters escaped, one line."""
    text = re.sub(r"\s+", " ", str(text))
    return re.sub(r"([\\`*_{}\[\]<>()#+!|~])", r"\\\1", text)


def notes_md(conv: Conversion, human: Human | None, responses: str | None, session_notes=None) -> str:
    s = conv.survey
    kinds = {}
    for it in conv.items:
        kinds[it.kind] = kinds.get(it.kind, 0) + 1
    out = [f"# Import notes: {_md(s.name)}", "",
           f"Survey file: {_md(s.file.name)} ({_md(s.id)}); {len(s.questions)} questions in {len(s.order)} blocks "
           f"shown; {len(conv.items)} items ({', '.join(f'{n} {k}' for k, n in kinds.items())}).", ""]
    out += ["Files: `study.yaml` (the study file: `simsubjects study check study.yaml`), `codebook.csv` (each item's "
            "QID, export tag, block, choice ids, recode values and labels)"
            + (", `human.csv` (one row per respondent x item)" if human is not None and human.rows else "")
            + (", `human_text.csv` (text answers, not scored)" if human is not None and human.texts else "")
            + (", `session.yaml` (the survey as a session)" if session_notes is not None else "")
            + ". Guide: docs/qualtrics.md.", ""]
    if conv.factors:
        out += ["## Randomizers (between-subject factors)", ""]
        for f in conv.factors:
            out.append(f"- `{f.name}` (flow {f.flow_id}): " + ", ".join(f"{lv} = block {_md(n)}" for lv, n in f.levels.items()))
        out.append("")
    out += _parallel_md(conv) + _split_md(conv)
    out += ["## Not converted", "", f"{len(conv.notes)} element(s).", ""]
    if conv.notes:
        out += ["| QID | type | reason |", "| --- | --- | --- |"]
        out += [f"| {_md(n.qid)} | {_md(n.type)} | {_md(n.reason)} |" for n in conv.notes]
        out.append("")
    if session_notes is not None:
        out += ["## The session (session.yaml)", "", "The blocks in order with each earlier answer in the transcript; "
                "display logic as show_if, and skip logic as show_if on the questions it skips, where their "
                "conditions are answers to earlier questions; a randomizer's arm as a column of subjects.csv "
                "that its blocks' items are shown on. Left out of the session "
                f"({len(session_notes)}):", ""]
        if session_notes:
            out += ["| QID | type | reason |", "| --- | --- | --- |"]
            out += [f"| {_md(n.qid)} | {_md(n.type)} | {_md(n.reason)} |" for n in session_notes]
        out.append("")
    if conv.piped_refs:
        out += ["## Piped text", "", "Shown to the model as `[piped: ...]` (a model subject has no earlier answers "
                "or embedded data to pipe):", ""]
        out += [f"- {_md(q)}: {_md(r)}" for q, r in conv.piped_refs]
        out.append("")
    if human is not None:
        out += _responses_md(human, responses)
    return "\n".join(out) + "\n"


def _responses_md(human: Human, responses: str | None) -> list[str]:
    """The responses section of IMPORT_NOTES.md: counts, what was dropped or de-duplicated, unmatched answers."""
    out = ["## Responses", "", f"Export: {_md(responses)}; {human.respondents} respondents imported, "
           f"{len(human.rows)} answer rows, {len(human.texts)} text answers (human_text.csv, not scored).", ""]
    if human.dropped_unfinished or human.dropped_preview:
        out.append(f"Dropped by --finished-only: {human.dropped_unfinished} unfinished, {human.dropped_preview} "
                   "preview responses.")
    if human.dropped_test:
        out.append(f"Excluded: {human.dropped_test} test responses (Status = 2, Survey Test: generated by "
                   "Qualtrics, not people).")
    if human.all_test:
        out.append("Every response in the export is a test response (Status = 2, Survey Test: generated by "
                   "Qualtrics, not people); they are kept as the only rows. Do not read them as people's answers.")
    if human.duplicates:
        out.append(f"De-duplicated (--dedupe {human.dedupe}): {len(human.duplicates)} repeated respondent id(s); "
                   f"the {human.dedupe} row of each kept:")
        out += [f"- {_md(r)}: lines {', '.join(map(str, lines))}" for r, lines in human.duplicates]
        out.append("")
    if human.unfinished or human.preview:
        out.append(f"Kept: {human.unfinished} unfinished and {human.preview} preview responses (add "
                   "--finished-only to drop them).")
    for n in human.notes:
        out.append(f"- {_md(n.qid)} ({_md(n.type)}): {_md(n.reason)}")
    if human.missing_items:
        out += ["", f"Items with no column in the export ({len(human.missing_items)}): "
                + ", ".join(_md(x) for x in human.missing_items)]
    out += ["", f"Answers that match no option: {len(human.unmatched)}.", ""]
    if human.unmatched:
        out += ["| respondent | item | column | value | reason |", "| --- | --- | --- | --- | --- |"]
        out += [f"| {_md(u['respondent'])} | {_md(u['item'])} | {_md(u['column'])} | {_md(u['value'])} | "
                f"{_md(u['reason'])} |" for u in human.unmatched]
        out.append("")
    return out


def _parallel_md(conv: Conversion) -> list[str]:
    """Parallel arms (build.find_parallel): merged by --merge-arms, or listed for the user to merge."""
    if not conv.parallel:
        return []
    if conv.merged:
        out = ["## Parallel arms (merged by --merge-arms)", "", "Each item below is asked in every arm, with the "
               "arm's descriptive text before it, and each respondent's answer is read from their arm's column; "
               "the randomizer's tests compare the arms on it.", ""]
        for it in conv.items:
            if it.merged:
                out.append(f"- `{_md(it.id)}` ({_md(it.merged_factor)}): "
                           + ", ".join(f"{_md(a.id)} = {_md(lv)}" for lv, a in it.merged.items()))
        return out + [""]
    out = ["## Parallel arms (not merged)", "", "These arms of a randomizer ask the same questions under their own "
           "export tags, so each is its own item and no test compares the arms on it. Import again with "
           "--merge-arms to make one item per question with the arm as a factor.", ""]
    for fname, positions in conv.parallel:
        out += [f"- `{_md(fname)}`: " + "; ".join(" / ".join(_md(i) for i in ids) for ids in positions)]
    return out + [""]


def _split_md(conv: Conversion) -> list[str]:
    """--merge-arms: the crossed factors read from the arms' block names, or why the arms stay one factor."""
    fs = [f for f in conv.factors if f.split or f.unsplit]
    if not fs:
        return []
    out = ["## Arms as crossed factors", ""]
    for f in fs:
        if f.unsplit:
            out.append(f"- `{_md(f.name)}` stays one factor of {len(f.levels)} arms: {_md(f.unsplit)}.")
            continue
        out.append(f"- `{_md(f.name)}`: its arms' block names form a crossing of "
                   + " x ".join(f"`{_md(n)}` ({', '.join(_md(v) for v in dict.fromkeys(by.values()))})"
                                for n, by in f.split.items())
                   + ". Each is a column of the people's rows (human.csv) and of the model's (design.columns, set "
                     "by the arm), with its own welch and chi_square tests; the arm factor still assigns the "
                     "subjects and picks the texts.")
    return out + [""]


def _write_csv(path: Path, rows: list[dict], columns: list[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def _codebook(conv: Conversion) -> list[dict]:
    rows = []
    for it in conv.items:
        arm = f"{it.arm[0]}={it.arm[1]}" if it.arm else (
            "merged: " + ", ".join(f"{it.merged_factor}={lv} from {a.id}" for lv, a in it.merged.items())
            if it.merged else "")
        base = {"item": it.id, "qid": it.qid, "tag": it.tag, "block": it.block, "qtype": it.qtype, "kind": it.kind,
                "arm": arm}
        if it.options:
            rows += [{**base, "choice_id": o.choice_id, "recode": o.recode, "label": o.label,
                      "position": "" if o.position is None else o.position, "refusal": o.refusal} for o in it.options]
        else:
            rows.append(base)
    return rows


def _target(folder: str) -> Path:
    dest = Path(folder)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UserError(f"{folder}: exists and is not an empty folder; choose a new folder")
    for parent in dest.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{folder}: {parent} is a file, not a folder")
            break
    return dest


def _conversion(survey: str, merge: bool) -> Conversion:
    """The survey read and converted (parallel arms merged with --merge-arms); a survey nested past Python's
    stack (logic objects) is one line, exit 2."""
    try:
        conv = convert(load_qsf(survey))
    except RecursionError:
        raise UserError(f"{survey}: the survey nests too deep to read (logic or flow)") from None
    if merge:
        if not conv.parallel:
            raise UserError(f"--merge-arms: {survey}: no randomizer's arms ask the same questions (one block per "
                            "arm, same texts, types and options); nothing to merge")
        merge_arms(conv)
    if not conv.items:
        raise UserError(f"{survey}: no question could be converted (see the notes: "
                        + "; ".join(f"{n.qid} {n.type}" for n in conv.notes[:5]) + ")")
    return conv


MARK = ".simsubjects-import"  # the first file of an import's temporary folder: what marks it as the importer's


def _stale_import(path: Path) -> bool:
    """A temporary folder of an import that was killed: made by this importer (its mark inside, its name
    ending in the process id the mark holds) and that process no longer running. A user's own
    `.NAME.tmp-*` folder has no mark and is never touched."""
    pid = path.name.rpartition("-")[2]
    if path.is_symlink() or not path.is_dir() or not pid.isdecimal() or not pid.isascii():
        return False
    try:
        if (path / MARK).read_text(encoding="utf-8").strip() != pid:
            return False
    except (OSError, UnicodeDecodeError):
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return False  # that import still runs


def import_qualtrics(survey: str, folder: str, responses: str | None = None, finished_only: bool = False,
                     subjects: int | None = None, demographics: list[str] | None = None,
                     dedupe: str | None = None, id_column: str | None = None, merge: bool = False,
                     people: bool = False) -> tuple[Path, Conversion, Human | None]:
    """Read everything and check it before anything is written; then write a temporary folder, check it
    as `study check` does, and rename it into place (whole or absent, even if killed midway)."""
    dest = _target(folder)
    conv = _conversion(survey, merge)
    human = None
    if responses:
        human = human_rows(conv, read_export(responses, id_column), finished_only, dedupe)
    demo, personas = [], []
    if demographics:

        demo = D.demographic_items(conv, demographics, human is not None)
        personas = D.apply(human, demo)
        if not personas:
            raise UserError(f"--demographics: no respondent answered all of {', '.join(demographics)}")
    n = subjects or max(1, _cells(conv))
    data = study_yaml(conv, human, n, demo, len(personas), subjects, people)
    dest.parent.mkdir(parents=True, exist_ok=True)
    for stale in dest.parent.glob(f".{dest.name}.tmp-*"):  # left by a killed import into the same folder
        if _stale_import(stale):  # only a folder this importer made, whose process is gone (issue 42)
            shutil.rmtree(stale, ignore_errors=True)
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}"
    tmp.mkdir()
    try:
        (tmp / MARK).write_text(str(os.getpid()), encoding="utf-8")
        header = ("# Imported from a Qualtrics survey by `simsubjects study import qualtrics`.\n"
                  "# What was not converted: IMPORT_NOTES.md. Field by field: docs/studies.md, docs/qualtrics.md.\n")
        (tmp / "study.yaml").write_text(header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100),
                                        encoding="utf-8")
        if human is not None and human.rows:
            _write_human(tmp, conv, human, personas)
        if personas:
            _write_csv(tmp / "personas.csv", personas, list(personas[0]))
        if human is not None and human.texts:
            _write_csv(tmp / "human_text.csv", human.texts,
                       ["respondent", "item", "text", "condition", *[f.name for f in conv.factors]])
        _write_csv(tmp / "codebook.csv", _codebook(conv),
                   ["item", "qid", "tag", "block", "qtype", "kind", "arm", "choice_id", "recode", "label", "position",
                    "refusal"])
        session_notes = _write_session(tmp, conv, data, n)
        from ..spec import load_study  # lazy: optional (pandas, pyarrow)

        load_study(tmp / "study.yaml")  # what `study check` reads: a failure here is the importer's bug
        (tmp / "IMPORT_NOTES.md").write_text(notes_md(conv, human, Path(responses).name if responses else None,
                                                      session_notes), encoding="utf-8")
        (tmp / MARK).unlink()
        if dest.exists():
            dest.rmdir()
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    conv.session_notes = session_notes
    return dest, conv, human


def _write_human(tmp: Path, conv: Conversion, human: Human, personas: list) -> None:
    """DIR/human.csv: one row per respondent x item, with their arms (and the crossed factors the arms' names
    declare), embedded data, the item's scale and, with --demographics, their profile's columns."""
    scales = {it.id: scale(it) for it in conv.items}
    _write_csv(tmp / "human.csv", _split_rows(conv, [{**r, "scale": scales.get(r["item"], "")} for r in human.rows]),
               ["respondent", "item", "response", "condition", *[f.name for f in conv.factors], *_split(conv),
                *human.embedded, "scale", *[c for c in (personas[0] if personas else {}) if c != "respondent"]])


def _write_session(tmp: Path, conv: Conversion, data: dict, n: int) -> list | None:
    """DIR/session.yaml (and subjects.csv for a randomizer's arms) where the package reads sessions and the
    survey has k-choice items; checked as `study check` checks it. None: no session written."""
    try:
        from ..session import load_session  # lazy: optional (pandas, numpy)
    except ImportError:  # a package without sessions (docs/studies.md, "Sessions")
        return None
    from .session import session_yaml  # lazy: imports studyfile.qualtrics.session

    sdata, rows, notes = session_yaml(conv, n, data["study"])
    if not sdata["session"]["blocks"]:
        return None
    header = ("# The survey as a session: blocks in order, display and skip logic (docs/qualtrics.md).\n"
              "# The respondents, numeric and text items are in study.yaml; IMPORT_NOTES.md lists the rest.\n")
    (tmp / "session.yaml").write_text(header + yaml.safe_dump(sdata, sort_keys=False, allow_unicode=True, width=100),
                                      encoding="utf-8")
    if conv.factors:
        _write_csv(tmp / "subjects.csv", rows, list(rows[0]))
    load_session(tmp / "session.yaml")
    return notes


def _cells(conv: Conversion) -> int:
    n = 1
    for f in conv.factors:
        n *= len(f.levels)
    return n
