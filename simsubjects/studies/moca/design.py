"""MoCa trials: P(Yes | [persona +] story + question) per story, optionally per persona.

Prompts follow the authors' released templates (github.com/cicl-stanford/moca,
`moca/prompts/`): the story and question after "Question:", an instruction to answer, and
"Answer:". Two methods (docs/schema.md, trials table):

* ``exact`` — completion models with log-probabilities: options ``(" Yes", " No")``, the
  probability normalized over the two (paper §4.1 and Appendix A.3). Template ``"yesno"``
  (default) or ``"ab"`` (the authors' second template, options ``(" A", " B")`` read as
  Yes/No); the released code pools both templates, Table 3 rows are computed on that pool.
* ``sampled`` — chat backends without log-probabilities: the instruction allows "Not Sure";
  options ``("Yes", "No", "not sure")``; counted answers give P(Yes) with not sure = 0.5
  (Appendix A.3).

Personas (Table A3, ``datasets/personas.json``) are prepended as ``"<persona sentence>.\\n\\n"``;
nothing else in the trial changes (Appendix A.4: P(Yes | Persona + Story + Prompt)).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pandas as pd

from simsubjects.errors import UserError
from simsubjects.collect.studies.registry import size
from simsubjects.datasets.moca_humans import load_moca

STUDY = "moca"

TEMPLATES: dict[str, str] = {
    "yesno": "Question: {story} {question} Please answer Yes or No.\n\nAnswer:",
    "ab": "Question: {story} {question} Please choose A or B.\nA. Yes\nB. No\n\nAnswer:",
}
CHAT_TEMPLATE = "Question: {story} {question} Please answer Yes, No, or Not Sure.\n\nAnswer:"

EXACT_OPTIONS = {"yesno": (" Yes", " No"), "ab": (" A", " B")}
EXACT_LABELS = ("Yes", "No")
SAMPLED_OPTIONS = ("Yes", "No", "not sure")
SAMPLED_LABELS = ("Yes", "No", "not sure")


def load_personas() -> pd.DataFrame:
    """The 25 personas of Table A3: slug, category, persona (one sentence, no final period)."""
    path = Path(str(resources.files("simsubjects") / "datasets" / "personas.json"))
    return pd.DataFrame(json.loads(path.read_text(encoding="utf-8"))["personas"])


def _persona_table(personas) -> pd.DataFrame:
    """None -> no persona; True/"all" -> Table A3; list of slugs; dict slug->text; DataFrame."""
    if personas is None or personas is False:
        return pd.DataFrame({"slug": [""], "persona": [""]})
    table = load_personas()
    if personas is True or (isinstance(personas, str) and personas in ("all", "table_a3")):
        return table[["slug", "persona"]]
    if isinstance(personas, pd.DataFrame):
        if not {"slug", "persona"} <= set(personas.columns):
            raise UserError("personas: a table needs columns slug and persona")
        return personas[["slug", "persona"]].reset_index(drop=True)
    if isinstance(personas, dict):
        return pd.DataFrame({"slug": list(personas), "persona": list(personas.values())})
    if isinstance(personas, str):
        personas = [personas]
    slugs = list(personas)
    unknown = sorted(set(slugs) - set(table["slug"]))
    if unknown:
        raise UserError(f"personas: unknown slug(s) {', '.join(unknown)}; see datasets/personas.json")
    return table.set_index("slug").loc[slugs, ["persona"]].reset_index()


def base_prompt(story: str, question: str, template: str = "yesno", method: str = "exact") -> str:
    if method == "sampled":
        return CHAT_TEMPLATE.format(story=story, question=question)
    return TEMPLATES[template].format(story=story, question=question)


def build_trials(items: pd.DataFrame, personas=None, method: str = "exact",
                 templates: tuple[str, ...] | str = ("yesno",)) -> pd.DataFrame:
    """Trials table (docs/schema.md): one row per story x template x persona."""
    if method not in ("exact", "sampled"):
        raise UserError(f"method: expected exact or sampled, got {method!r}")
    templates = (templates,) if isinstance(templates, str) else tuple(templates)
    bad = [t for t in templates if t not in TEMPLATES]
    if bad:
        raise UserError(f"templates: unknown {', '.join(bad)}; choose from {', '.join(TEMPLATES)}")
    if method == "sampled":
        templates = ("chat",)  # one chat prompt; the A/B template needs log-probabilities
    need = {"item", "task", "story", "question"}
    if not need <= set(items.columns):
        raise UserError(f"items: missing column(s) {', '.join(sorted(need - set(items.columns)))}")
    ptab = _persona_table(personas)
    rows = []
    for it in items.itertuples(index=False):
        for tpl in templates:
            prompt = base_prompt(it.story, it.question, tpl, method)
            if method == "exact":
                options, labels = EXACT_OPTIONS[tpl], EXACT_LABELS
            else:
                options, labels = SAMPLED_OPTIONS, SAMPLED_LABELS
            for slug, text in zip(ptab["slug"], ptab["persona"]):
                trial = f"{it.item}:{tpl}" + (f":{slug}" if slug else "")
                rows.append({
                    "trial": trial, "item": it.item, "condition": it.task, "subject": slug,
                    "prompt": (f"{text}.\n\n" if slug else "") + prompt,
                    "options": options, "labels": labels,
                    "task": it.task, "persona": slug, "template": tpl,
                })
    return pd.DataFrame(rows)


# p_yes is a statistic: it lives in analyze/choice_stats.py (imported here for old callers)


# ---------------------------------------------------------------------------------------------
# Declaration: `simsubjects collect moca`
# ---------------------------------------------------------------------------------------------

def study_items(task: str = "causal", personas: str = "none", stories: int = 0, template: str = "yesno",
                method: str = "exact"):

    if stories < 0:
        raise UserError(f"--stories {stories}: must be 0 (all) or a positive number")
    _, items = load_moca(task)
    if stories:
        items = items.groupby("task", sort=False).head(stories).reset_index(drop=True)
    chosen = None
    if personas not in ("", "none"):
        table = load_personas()
        chosen = table if personas == "all" else [p.strip() for p in personas.split(",") if p.strip()]
        if isinstance(chosen, list) and not chosen:
            raise UserError(f"--personas {personas!r}: names no persona; give none, all or comma-separated slugs")
        if not isinstance(chosen, pd.DataFrame):
            bad = sorted(set(chosen) - set(table["slug"]))
            if bad:
                raise UserError(f"--personas {','.join(bad)}: unknown; `simsubjects datasets show personas` "
                                f"lists them (e.g. {table['slug'].iloc[0]}), or use all")
            chosen = table[table["slug"].isin(chosen)]
    templates = ("yesno", "ab") if template == "both" else (template,)
    return build_trials(items, chosen, method, templates), items


def _with_human_votes(responses: pd.DataFrame, params: dict) -> pd.DataFrame:
    """The 25 Prolific votes per story, as human rows beside the model's (same stories)."""

    human, _ = load_moca(params.get("task", "causal"))
    human = human[human["item"].isin(set(responses["item"]))]
    return pd.concat([responses, human], ignore_index=True)


def _replicate_params(s: float) -> dict:
    n = size(144, s, floor=6)  # --stories caps each task; 0 = every story
    return {"task": "all", "stories": 0 if n >= 144 else n, "template": "both", "personas": "none"}
