"""`--demographics TAG,...`: questions whose answers describe the respondent (age, party, ...).

Each becomes a group column of the human rows (the respondent's answer), and the model subjects
become personas built from the respondents: one subject per respondent who answered them all,
`${persona}` = "Question: answer." for each, so a model answers as each respondent's profile and
representativeness can be computed by group (a persona column of the same name is matched).
"""

from __future__ import annotations

import re

from ...errors import UserError
from .build import Conversion, Item
from .human import Human

PERSONA_INTRO = "You are a survey respondent."


def demographic_items(conv: Conversion, tags: list[str], has_human: bool) -> list[Item]:
    if not has_human:
        raise UserError("--demographics: needs --responses (the personas are the respondents' answers)")
    items = {it.id: it for it in conv.items}
    out = []
    for t in tags:
        it = items.get(t)
        if it is None:
            close = [i for i in items if i.lower().startswith(t.lower()[:2])][:5]
            raise UserError(f"--demographics {t}: not an item of the survey"
                            + (f" (items like it: {', '.join(close)})" if close else ""))
        if it.kind != "choice" or it.arm is not None:
            raise UserError(f"--demographics {t}: a demographic is a single-answer question asked of everyone "
                            f"(this is a {it.kind} item{' inside a randomizer' if it.arm else ''})")
        same = next((o for o in out if column(o) == column(it)), None)
        if same is not None:  # one column would hold both: the second would overwrite the first
            raise UserError(f"--demographics {same.id},{it.id}: both become the column {column(it)!r} (a column "
                            "name is letters, digits and _); give one of them")
        out.append(it)
    return out


def column(it: Item) -> str:
    """The group / persona column of a demographic: its item id as a name (placeholders need one)."""
    from ..spec import SESSION_RESERVED  # lazy: imports pandas, pyarrow

    name = re.sub(r"[^A-Za-z0-9_]", "_", it.id)
    name = name if name[:1].isalpha() else f"d_{name}"
    return f"d_{name}" if name in SESSION_RESERVED or name in ("respondent", "response") else name


def apply(human: Human, demo: list[Item]) -> list[dict]:
    """Add the demographic columns to the human rows; return the persona rows (respondents who answered
    every demographic, in export order)."""
    answers: dict[str, dict[str, str]] = {}
    order: list[str] = []
    for r in human.rows:
        if r["respondent"] not in answers:
            answers[r["respondent"]] = {}
            order.append(r["respondent"])
        if r["item"] in {it.id for it in demo}:
            answers[r["respondent"]][r["item"]] = r["response"]
    for r in human.rows:
        for it in demo:
            r[column(it)] = answers[r["respondent"]].get(it.id, "")
    personas = []
    for resp in order:
        got = answers[resp]
        if all(it.id in got for it in demo):
            personas.append({"respondent": resp, **{column(it): got[it.id] for it in demo}})
    return personas


def template(demo: list[Item]) -> str:
    """The persona text: each demographic question with the respondent's answer (a template: $ doubled)."""
    parts = [PERSONA_INTRO] + [f"{it.text.replace('$', '$$')} ${{{column(it)}}}." for it in demo]
    return " ".join(parts)
