"""`replicate --dry-run`: every paper's studies counted with replicate()'s plan. The counting itself
(the stand-in model, prices, the table) is collect/dryrun.py, which budget.py shares; this part
needs replicate's plan, so it stays with the commands (docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

from ..collect.dryrun import DryModel, check_prices, dry_collect, dry_model  # noqa: F401 - commands.py imports check_prices here
from ..collect.defaults import BATCH_SIZE, SAMPLES
from .options import _parse_model
from ..errors import UserError


def dry_run_replicate(paper_names, spec, *, scale: float, seed: int = 0, method: str = "auto",
                      n: int | None = None, only: list[str] | None = None, batch_size: int = BATCH_SIZE,
                      chat_template: bool = False, tokenizer=None) -> tuple[list[dict], DryModel]:
    """`replicate --dry-run`: every study's counted collection with replicate()'s sizes and methods."""
    from simsubjects.cli.replicate import plan_all  # lazy: imports scipy, numpy

    if not (0 < scale <= 1):
        raise UserError(f"--scale {scale:g}: must be in (0, 1]; 1 is the paper's full design")
    if method not in ("auto", "exact", "sampled"):
        raise UserError(f"--method {method}: choose auto, exact or sampled")
    spec = _parse_model(spec)  # the command's ModelSpec passes through; a script's text is parsed here
    tokenizer = _parse_model(tokenizer) if tokenizer else None
    only = [o.strip().replace("-", "_") for o in (only or []) if o.strip()]
    rows = [r for r in plan_all(paper_names, scale, only, Path("."), seed)[1] if r[2] is not None]
    model = dry_model(spec, chat_template=chat_template, tokenizer=tokenizer)
    out = []
    for _paper, plan, study, params in rows:
        # the method and samples per trial exactly as replicate() picks them
        m = study.methods[0] if method == "auto" or method not in study.methods else method
        k = n if n is not None else (plan.samples(scale) if plan.samples else SAMPLES)
        out.append(dry_collect(study, model, {"seed": seed, **params, "chat_template": chat_template},
                               method=m, n=k, batch_size=batch_size))
    return out, model
