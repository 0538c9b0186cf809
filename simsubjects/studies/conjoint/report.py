"""Report section of the immigration conjoint (Hainmueller, Hopkins & Yamamoto 2014): AMCEs beside
HHY's respondents, the omnibus test, speed. The numbers come from studies/conjoint/analysis.py."""
from __future__ import annotations

from simsubjects.studies.conjoint.analysis import side_by_side
from simsubjects.analyze.blocks import Block, Table, fmt


def report_section(run) -> list[Block]:
    """The report's block: AMCEs side by side, omnibus test, speed."""
    t = run.analysis.tables
    m = run.manifest
    c = m.get("counts", {})
    out = [Block("AMCE per level: HHY's respondents beside the model", (Table(side_by_side(t["amce"]), max_rows=60),),
                 "One regression on all nine attributes with the two restriction interactions, errors clustered "
                 "by respondent (cregg's conventions); baseline levels are 0.")]
    if "anova_model_vs_people" in t:
        out.append(Block("Does the model's choice differ from people's? (clustered Wald test)",
                         (t["anova_model_vs_people"],),
                         "Wald F test that every attribute x (model vs people) interaction is 0, CR2 errors "
                         "clustered by respondent, F(q, G - p) (cj_anova); cregg's F test would take a respondent's "
                         "profiles as independent."))
    speed = (f"{c.get('tasks', '–')} tasks ({c.get('task_orders', '–')} task orders) in "
             f"{fmt(m.get('timings', {}).get('collection_seconds'))} s: {fmt(c.get('tasks_per_second'))} tasks per "
             f"second; forward passes {c.get('forward_passes', '–')} (one per task order at most: both answers are "
             "single tokens after the same prompt).")
    out.append(Block(caption=speed, kind="note"))
    return out
