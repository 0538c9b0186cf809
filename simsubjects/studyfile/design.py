"""A study's trials: subjects x conditions x items x repetitions x option orders, with rendered prompts."""

from __future__ import annotations

from string import Template

import numpy as np
import pandas as pd

from simsubjects.collect import option_order
from simsubjects.collect.seeds import rng_from_text
from .spec import Item, Response, Study, conditions  # noqa: F401 - conditions lives in spec (its checks use it)


_rng = rng_from_text  # seeded by the parts (seed, subject, item, ...): the same trial always gets the same draw


def orderings(study: Study, r: Response, *key) -> list[tuple[int, ...]]:
    """Orders in which the non-refusal options are shown (refusals always stay last, as listed), drawn by
    simsubjects.collect.option_order. `key`: (subject, item, condition, repetition)."""
    k = sum(not o.refusal for o in r.options)
    if study.orders_before:  # a run folder made before one option-order module, resumed as it was drawn
        return option_order.before_one_module(k, study.order_mode, study.max_orderings, study.seed, key)
    mode = option_order.FILE_MODES[study.order_mode]
    if mode == "all":  # a sample of k! orderings is the item's, the same for every subject
        return option_order.orderings(k, mode, (study.seed, key[1]), max_orderings=study.max_orderings)
    return option_order.orderings(k, mode, (study.seed, *key))


def shown_options(r: Response, order: tuple[int, ...], neutral: bool = False):
    """The options in the order shown (refusals last), each with its letter and completion. `neutral`
    (--ablate labels): each option's text and completion become a neutral label, "Option A", "Option B"
    ... by its place in the declared order, so the model sees no option's meaning; the label recorded
    (the person's answer) stays the option's own."""
    listed = [o for o in r.options if not o.refusal]
    shown = [listed[i] for i in order] + [o for o in r.options if o.refusal]
    out = []
    for j, o in enumerate(shown):
        letter = chr(ord("A") + j)
        fill = {"letter": letter, "label": o.label, "text": o.label if o.text is None else o.text}
        if neutral:
            name = f"Option {chr(ord('A') + r.options.index(o))}"
            fill = {"letter": letter, "label": name, "text": name}
        comp = (o.completion if o.completion is not None and not neutral
                else Template(r.completion).substitute(fill))
        pos = "" if o.position is None else f"{o.position:g}"
        out.append((o, letter, comp, Template(r.option_format).substitute(fill, position=pos)))
    return out


def subject_conditions(study: Study) -> dict[str, list[dict]]:
    """Each subject's conditions: one between-subject cell (balanced, seeded) x its within-subject cells."""
    between, within = conditions(study)
    subjects = study.subjects["subject"].tolist()
    order = _rng(study.seed, "assignment").permutation(len(subjects))
    cell = {subjects[j]: between[rank % len(between)] for rank, j in enumerate(order)}
    out = {}
    for s in subjects:
        cells = within
        if study.crossing == "sampled" and study.sample < len(within):
            pick = sorted(_rng(study.seed, "sample", s).choice(len(within), size=study.sample, replace=False))
            cells = [within[i] for i in pick]
        out[s] = [{**cell[s], **w} for w in cells]
    return out


def people_conditions(study: Study) -> dict[str, list[dict]]:
    """design.subjects: people: each respondent's conditions as the human table labels them
    (`factor=level,...`, spec._check_human_levels checked each level), sorted."""
    out = {}
    for person, answered in study.answered.items():
        labels = sorted({cond for _, cond in answered})
        out[person] = [dict(part.split("=", 1) for part in label.split(",")) if label else {} for label in labels]
    return out


def _applies(item: Item, cond: dict) -> bool:
    """An item tagged with a level of a manipulated factor is shown only in that level's cells."""
    return all(str(item.attributes[f]) == lv for f, lv in cond.items() if f in item.attributes)


def build_trials(study: Study) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, items) in the package's trial schema; prompts rendered, options in the order shown."""
    rows = []
    subj = study.subjects.set_index("subject", drop=False)
    records = {s: {k: v for k, v in subj.loc[s].items() if k != "subject"} for s in study.subjects["subject"]}
    cells = people_conditions(study) if study.people else subject_conditions(study)

    def add(s, cond, it):
        condition = ",".join(f"{k}={v}" for k, v in cond.items())
        if study.people and (it.id, condition) not in study.answered[s]:
            return  # a person is asked what they answered, in their condition, and nothing else
        for rep in range(study.repetitions):
            for ablation in ("", *study.ablate):
                rows.extend(_trials_of(study, it, s, records[s], cond, condition, rep, ablation))

    if study.per_item or study.trial_order == "item":
        # item -> condition -> subject (per_item: the item's own subjects, as Aher et al. draw names per
        # Garden Path sentence; trial_order: item, as MoCa lists a story's templates and personas together)
        between, within = conditions(study)
        every = [{**b, **w} for b in between for w in within]
        everyone = study.subjects["subject"].tolist()
        drawn_lists = per_item_subjects(study) if study.per_item else [everyone] * len(study.items)
        for it, drawn in zip(study.items, drawn_lists):
            for cond in every:
                for s in drawn:
                    if cond in cells[s] and _applies(it, cond):
                        add(s, cond, it)
    else:
        for s in study.subjects["subject"]:
            for cond in cells[s]:
                for it in study.items:
                    if _applies(it, cond):
                        add(s, cond, it)
    trials = _tidy_types(pd.DataFrame(rows))
    _check_unique(study, trials)
    return trials, items_table(study)


def _check_unique(study: Study, trials: pd.DataFrame) -> None:
    """Every trial has its own id. Ids join subject, item and condition with " | " (or fill trial_id's
    template); a subject or item id that holds the separator, or a template that leaves out what
    tells two trials apart, would give two trials one id, and the analysis would merge them."""
    if not len(trials):
        return
    dup = trials["trial"].duplicated(keep=False)
    if dup.any():
        first = trials.loc[dup, "trial"].iat[0]
        what = ("design.trial_id leaves out what tells them apart (add ${subject}, ${item}, ${repetition} ...)"
                if study.trial_id else "an id (subject, item or level) holds the separator ' | '; rename it")
        raise study.source.error(("design", "trial_id") if study.trial_id else ("items",),
                                 f"{int(dup.sum())} trials share the id {first!r}: {what}")


def per_item_subjects(study: Study) -> list[list[str]]:
    """Each item's `per_item` subjects: one numpy Generator seeded with design.seed draws, item after item in
    the file's order, that many rows without replacement; the drawn rows keep the table's order."""
    rng = np.random.default_rng(study.seed)
    ids = study.subjects["subject"].tolist()
    return [[ids[j] for j in np.sort(rng.choice(len(ids), size=study.per_item, replace=False))] for _ in study.items]


def _trials_of(study: Study, it: Item, subject: str, srec: dict, cond: dict, condition: str, rep: int,
               ablation: str = "") -> list[dict]:
    values = {**{k: _text(v) for k, v in srec.items()}, **{k: _text(v) for k, v in it.attributes.items()},
              **{f: study.factor(f).levels[lv] for f, lv in cond.items()}}
    question = Template(it.text_in(cond)).substitute(values)
    r = it.response_in(cond)
    ask = r if r.kind == "choice" else None
    if ablation and ask is None:
        return []  # an ablation twin scores options: an estimate or free text has none to relabel or score
    key = (subject, it.id, condition, rep)
    out = []
    recorded = study.shown_orders.get((subject, it.id, condition))  # the order this person saw (people)
    orders = [recorded] if ask and recorded else orderings(study, ask, *key) if ask else [()]
    for j, order in enumerate(orders):
        shown = shown_options(ask, order, neutral=ablation == "labels") if ask else []
        options_text = ask.option_separator.join(s[3] for s in shown) if ask else ""
        fill = {**values, "question": question, "options": options_text, "item": it.id, "persona": srec.get("persona", "")}
        prompt = Template(study.template).substitute(fill) + Template(study.answer_prefix).substitute(fill)
        if ablation == "instructions":  # the question and its options alone: no system text, no template
            prompt = f"{question}\n{options_text}" + Template(study.answer_prefix).substitute(fill)
        elif study.system:
            # The model interface takes one text: the system prompt leads it (with --chat-template the
            # whole text becomes the user's turn). docs/studies.md says so.
            prompt = Template(study.system).substitute(fill) + "\n\n" + prompt
        parts = [subject, it.id] + ([condition] if condition else []) + \
            ([f"r{rep + 1}"] if study.repetitions > 1 else []) + ([f"o{j + 1}"] if len(orders) > 1 else []) + \
            ([f"ablate={ablation}"] if ablation else [])
        # identifiers take a factor's level (as in its column), not the level's text
        ids = {**values, **cond, "subject": subject, "item": it.id, "repetition": rep + 1, "ordering": j + 1}
        extra = {name: Template(t).substitute(ids, question=question) for name, t in study.columns.items()}
        extra.update({name: by[cond[f]] for name, (f, by) in study.level_columns.items() if f in cond})
        trial = Template(study.trial_id).substitute(ids) + (f" | ablate={ablation}" if ablation else "") \
            if study.trial_id else " | ".join(parts)
        out.append({
            "trial": trial, "item": it.id,
            "condition": Template(study.condition).substitute(ids) if study.condition else condition,
            "subject": Template(study.subject_label).substitute(values) if study.subject_label is not None else subject,
            "prompt": prompt,
            "options": tuple(s[2] for s in shown), "labels": tuple(s[0].label for s in shown),
            "response_type": r.kind, "question": question,
            **_order_columns(study, shown, j, rep),
            **{f: lv for f, lv in cond.items()}, **it.attributes,
            **{k: v for k, v in srec.items()}, **extra,
            **({"ablation": ablation} if study.ablate else {}),
        })
    return out


def _order_columns(study: Study, shown, j: int, rep: int) -> dict:
    """The order shown, in simsubjects.collect.option_order's vocabulary (`analyze` then adds the
    order-effects tables); a folder made before it keeps the columns it recorded then."""
    labels = [s[0].label for s in shown]
    text = option_order.shown_text(labels) if shown else ""
    if study.orders_before:
        return {"option_order": " | ".join(labels), "ordering": j + 1, "repetition": rep + 1, "order_shown": text}
    n_ordered = sum(not s[0].refusal for s in shown)
    return {"order": j, "repetition": rep + 1, "order_shown": text, "n_ordered": n_ordered}


def _text(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return "" if v is None or (isinstance(v, float) and v != v) else str(v)


def _tidy_types(df: pd.DataFrame) -> pd.DataFrame:
    """Columns of mixed Python types become text, so parquet, R and Stata read them (e.g. attributes)."""
    for col in df.columns:
        if col in ("options", "labels") or df[col].dtype != object:
            continue
        kinds = {type(v) for v in df[col] if v is not None and not (isinstance(v, float) and v != v)}
        if kinds and kinds <= {list, tuple}:
            continue  # option lists of the items table
        if len(kinds) > 1 or (kinds and kinds.pop() not in (str,)):
            df[col] = [_text(v) for v in df[col]]
    return df


def items_table(study: Study) -> pd.DataFrame:
    """One row per item: text, response type, options with positions and refusal flags, attributes."""
    rows = []
    texts = any(o.text is not None for it in study.items for o in it.response.options)
    for it in study.items:
        r = it.response if it.response.kind != "free_text" else it.response.judge
        rows.append({"item": it.id, "text": it.text, "response_type": it.response.kind,
                     "labels": [o.label for o in r.options] if r else [],
                     # the texts shown where they differ from the labels recorded (e.g. letters mapped back)
                     **({"texts": [o.label if o.text is None else o.text for o in r.options]} if texts else {}),
                     "positions": [o.position if o.position is not None else float("nan") for o in r.options] if r else [],
                     "refusal": [o.refusal for o in r.options] if r else [],
                     "min": it.response.min, "max": it.response.max,
                     **{k: _text(v) for k, v in it.attributes.items()}})
    return _tidy_types(pd.DataFrame(rows))
