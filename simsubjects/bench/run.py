"""`simsubjects bench run`'s planning: the findings chosen, each finding's study file loaded and checked and
its run folder OUT/<finding id>/ (one ordinary run folder per finding), the dry run's counts, and which
folders are finished.

Everything that needs no model is checked here first (every finding's study file, every run folder). The
collection itself is the one of every collect entry point, cli/collection.collect_study, called per finding
by cli/bench.py (layer 7: the bench is layer 5 and cannot import it): the model loads once and serves every
finding; a killed run resumes where it stopped (the run store), and a finished finding is skipped without
loading the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..collect.defaults import BATCH_SIZE, SAMPLES



@dataclass
class Planned:
    finding: object
    study: object        # the parsed study file
    sdef: object         # its StudyDef
    params: dict
    out: Path


def select(findings: list, ids: list[str] | None) -> list:
    """The runnable findings, or those named by --findings (each must exist and be runnable)."""
    if not ids:
        return [f for f in findings if f.runnable]
    by_id = {f.id: f for f in findings}
    for i in ids:
        if i not in by_id:
            raise UserError(f"--findings {i}: no such finding in the corpus (see `simsubjects bench list`)")
        if not by_id[i].runnable:
            raise UserError(f"--findings {i}: cannot run on text ({by_id[i].reason})")
    return [by_id[i] for i in dict.fromkeys(ids)]


def finding_folder(out: Path, finding_id: str) -> Path:
    from ..collect.untrusted import inside

    return inside(out, finding_id, "finding id")


def plan(findings: list, out: Path | None, chat_template: bool = False, seed: int | None = None) -> list[Planned]:
    """Each finding's study file loaded and its run folder checked, before any model loads. `seed` (bench
    run --seed) replaces every file's design.seed, as `collect --seed` does for one file."""
    from ..studyfile.adapter import KEY, check_out, file_parameters, order_parameters, study_def
    from .corpus import check_finding

    planned = []
    for f in findings:
        study = check_finding(f, seed=seed)
        folder = finding_folder(Path(out), f.id) if out is not None else None
        if folder is not None:
            check_out(study, folder)
        params = {KEY: file_parameters(study), "seed": study.seed,
                  "chat_template": chat_template or study.chat_template, "judge_model": None,
                  **order_parameters(study, folder)}
        planned.append(Planned(f, study, study_def(study, out=folder), params, folder))
    return planned


def check_folders(planned: list[Planned], spec, overwrite: bool = False) -> None:
    """Before the model loads: each finding's folder holds nothing, or a run of the same study file and
    model (a finished run of another model or of an edited file would otherwise be scored as this one's)."""
    from ..collect.store import RunStore
    from ..redact import redact

    for p in planned:
        ident = {"study": p.sdef.name, "parameters": {**p.params, "method": p.sdef.methods[0], "n": None}}
        RunStore.check_out(p.out, ident, overwrite=overwrite)
        try:
            old = json.loads((p.out / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        ran = str((old.get("model") or {}).get("spec", ""))
        if ran and ran != spec.text and not overwrite:
            raise UserError(f"--out {p.out}: holds {p.finding.id} run on {redact(ran)}, not {redact(spec.text)}; "
                            "give another --out (or --overwrite to replace it)")


def done(folder: Path) -> bool:
    """A finished run folder: its manifest says complete (collect/store.py writes it last)."""
    try:
        m = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return m.get("status") == "complete" and not m.get("failures")


def dry_run(planned: list[Planned], spec, tokenizer=None, batch_size: int = BATCH_SIZE) -> tuple[list[dict], object]:
    """--dry-run: each finding counted by the tokenizer (no weights, nothing written); one row per finding."""
    from ..collect.dryrun import dry_collect, dry_model

    model = dry_model(spec, chat_template=False, tokenizer=tokenizer)
    rows = []
    for p in planned:
        row = dry_collect(p.sdef, model, p.params, method=p.sdef.methods[0], n=SAMPLES, batch_size=batch_size)
        rows.append({**row, "study": p.finding.id})
    return rows, model


def finished_folders(findings: list, out: Path) -> dict:
    """finding id -> its finished run folder under OUT (the findings `bench report` scores)."""
    got = {}
    for f in findings:
        folder = finding_folder(Path(out), f.id)
        if done(folder):
            got[f.id] = folder
    return got
