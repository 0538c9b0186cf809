"""Papers and their studies, read from the study declarations: what replicate runs and report groups.

`replicate` and `report` share this module and do not import each other. A paper is a `Paper`
declared beside its studies (simsubjects/studies/_papers.py for the bundled three); a
study joins a paper through a `Plan` in its declaration, with the sizing rule behind `--scale`.
"""

from __future__ import annotations

from .collect.studies.registry import Paper, Plan, StudyDef, get_study, plans_of, size, studies
from .collect.studies.registry import papers as declared_papers
from .errors import UserError

KIND = "simsubjects-replication"  # marks a replicate folder's manifest.json
ALL = "all"

__all__ = ["ALL", "KIND", "Paper", "Plan", "papers", "paper_of", "plan_studies", "resolve_papers", "size",
           "study_title", "validity_reference"]


def papers() -> dict[str, Paper]:
    """Every declared paper by key, in its order."""
    return declared_papers()


def paper_of(study: str | None) -> str:
    """The key of the first paper a study belongs to ('' for none or an unknown study)."""
    s = studies().get(study or "")
    return s.papers[0].paper.key if s is not None and s.papers else ""


def study_title(study: str) -> str:
    """The report heading of a study: its declared title, else its name."""
    s = studies().get(study)
    return s.heading if s is not None else study


def validity_reference(study: str) -> dict:
    """{column: published valid-answer rate (%)} the study declares (e.g. Aher et al. Table 1), or {}."""
    s = studies().get(study)
    if s is None or not s.validity_reference:
        return {}
    return s.validity_reference(study)


def resolve_papers(names) -> list[Paper]:
    known = papers()
    names = [n.strip().lower() for n in names if n.strip()]
    if not names:
        raise UserError(f"name a paper: {', '.join(known)} or {ALL}")
    if ALL in names:
        return list(known.values())
    out = []
    for n in names:
        if n not in known:
            raise UserError(f"unknown paper {n!r}; choose from {', '.join(known)} or {ALL}")
        if known[n] not in out:
            out.append(known[n])
    return out


def plan_studies(chosen: list[Paper], scale: float, only: list[str] | None = None
                 ) -> list[tuple[Paper, Plan, StudyDef, dict]]:
    """[(paper, plan, study, params at `scale`)] of the chosen papers, `only` some studies if given."""
    rows = [(paper, plan, study) for paper in chosen for study, plan in plans_of(paper.key)]
    if only:
        known = {study.name for _, _, study in rows}
        wanted = set()
        for o in only:
            try:
                wanted.add(get_study(o).name)
            except UserError:
                wanted.add(o)
        bad = sorted(wanted - known)
        if bad:
            raise UserError(f"--only {','.join(bad)}: not a study of {', '.join(p.key for p in chosen)}; "
                            f"choose from {', '.join(sorted(known))}")
        rows = [r for r in rows if r[2].name in wanted]
    return [(paper, plan, study, plan.params(scale)) for paper, plan, study in rows]
