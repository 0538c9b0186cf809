"""Conjoint designs as plain data: attributes, restrictions, randomization, prompts, trials.

A design is a dict (JSON now, a YAML study file later; `datasets/conjoint/immigration_design.json`
is the Hainmueller, Hopkins & Yamamoto 2014 example) with keys:

* ``attributes``: ``[{name, label, levels: [{level, text}], weights?}]``. ``level`` is the value
  the analysis uses (the human data's level names); ``text`` is what the prompt shows;
  ``weights`` (optional, one per level) are the randomization probabilities (normalized).
* ``restrictions``: ``[{if: {A: [levels]}, forbid: {B: [levels]}}]``: a profile whose A is one of
  the first levels may not have B in the second list. Profiles are drawn level by level from
  the weights and redrawn whole until no restriction is violated (the usual rejection rule;
  HHY 2014 §4.1), so restricted designs keep their stated conditional distributions.
* ``profiles_per_task``, ``tasks_per_respondent``.
* ``attribute_order``: ``fixed`` (the listed order) or ``random`` (one permutation per
  respondent, kept for all of the respondent's tasks, as HHY did); recorded per trial.
* ``layout``: ``table`` (a side-by-side Markdown table) or ``prose`` (one paragraph per profile).
* ``outcome``: ``{type: choice, both_orders: bool}`` (forced choice; with ``both_orders`` each
  task is asked once per cyclic rotation of its profiles, so position bias cancels in the
  average) or ``{type: rating}`` (one question per profile over ``prompt.rating_scale``).
* ``prompt``: ``intro``, ``choice_question``, ``choice_options`` (one completion per position,
  single tokens such as " 1", " 2", so one forward pass scores a task order exactly),
  ``rating_question`` (``$profile`` is the profile's number), ``rating_scale``.

Everything is seeded: respondent r's profiles come from the stream SeedSequence([seed, r]), so the
first N respondents are the same whatever the total.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simsubjects.analyze.tidy import trial_total  # climbs a layer (docs/architecture.md): one definition of a trial's rows, analyze/tidy.py

from simsubjects.errors import UserError
from simsubjects.collect.studies.registry import fill_template

LAYOUTS = ("table", "prose")
ORDERS = ("fixed", "random")
OUTCOMES = ("choice", "rating")
MAX_DRAWS = 10_000  # redraws of one profile before the restrictions are declared unsatisfiable


@dataclass(frozen=True)
class Attribute:
    name: str
    label: str
    levels: tuple[str, ...]
    texts: tuple[str, ...]
    weights: tuple[float, ...]

    @property
    def cum(self) -> np.ndarray:
        return np.cumsum(self.weights)


@dataclass(frozen=True)
class Restriction:
    a: str
    a_levels: frozenset
    b: str
    b_levels: frozenset

    def violated(self, profile: dict) -> bool:
        return profile[self.a] in self.a_levels and profile[self.b] in self.b_levels


@dataclass
class Design:
    name: str
    attributes: list[Attribute]
    restrictions: list[Restriction] = field(default_factory=list)
    profiles_per_task: int = 2
    tasks_per_respondent: int = 5
    attribute_order: str = "random"
    layout: str = "table"
    outcome: str = "choice"
    both_orders: bool = True
    prompt: dict = field(default_factory=dict)
    profile_noun: str = "Profile"

    # ------------------------------------------------------------ reading and checking

    @classmethod
    def from_dict(cls, spec: dict, where: str = "design") -> "Design":
        """A design from plain data; a bad key is a UserError naming `where` and the key."""
        if not isinstance(spec, dict):
            raise UserError(f"{where}: expected a mapping")
        attrs = [_attribute(a, f"{where}: attributes[{i}]") for i, a in enumerate(_need(spec, "attributes", where, list))]
        if not attrs:
            raise UserError(f"{where}: attributes: name at least one attribute")
        names = [a.name for a in attrs]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise UserError(f"{where}: attributes: duplicate name(s) {', '.join(dup)}")
        by_name = {a.name: a for a in attrs}
        restrictions = [_restriction(r, by_name, f"{where}: restrictions[{i}]")
                        for i, r in enumerate(spec.get("restrictions") or [])]
        outcome = spec.get("outcome") or {"type": "choice", "both_orders": True}
        d = cls(name=str(spec.get("name", "conjoint")), attributes=attrs, restrictions=restrictions,
                profiles_per_task=_int(spec.get("profiles_per_task", 2), f"{where}: profiles_per_task", 2),
                tasks_per_respondent=_int(spec.get("tasks_per_respondent", 5), f"{where}: tasks_per_respondent", 1),
                attribute_order=_choice(spec.get("attribute_order", "random"), ORDERS, f"{where}: attribute_order"),
                layout=_choice(spec.get("layout", "table"), LAYOUTS, f"{where}: layout"),
                outcome=_choice(outcome.get("type", "choice"), OUTCOMES, f"{where}: outcome.type"),
                both_orders=bool(outcome.get("both_orders", False)),
                prompt=dict(spec.get("prompt") or {}), profile_noun=str(spec.get("profile_noun", "Profile")))
        d._check_prompt(where)
        return d

    def _check_prompt(self, where: str) -> None:
        p = self.prompt
        keys = ["intro", "choice_question", "choice_options"] if self.outcome == "choice" else \
            ["intro", "rating_question", "rating_scale"]
        missing = [k for k in keys if k not in p]
        if missing:
            raise UserError(f"{where}: prompt: missing key(s) {', '.join(missing)}")
        if self.outcome == "choice" and len(p["choice_options"]) != self.profiles_per_task:
            raise UserError(f"{where}: prompt.choice_options: {len(p['choice_options'])} options for "
                            f"{self.profiles_per_task} profiles per task")

    def with_options(self, **changes) -> "Design":
        """A copy with some settings changed (CLI options), checked again."""
        d = Design(**{**self.__dict__, **{k: v for k, v in changes.items() if v is not None}})
        if d.layout not in LAYOUTS or d.attribute_order not in ORDERS or d.outcome not in OUTCOMES:
            raise UserError(f"design options: layout {d.layout!r}, attribute order {d.attribute_order!r}, "
                            f"outcome {d.outcome!r}; choose from {LAYOUTS}, {ORDERS}, {OUTCOMES}")
        d._check_prompt("design")
        return d

    # ------------------------------------------------------------ randomization

    def draw_profile(self, rng: np.random.Generator) -> dict:
        cums = [a.cum for a in self.attributes]
        for _ in range(MAX_DRAWS):
            u = rng.random(len(self.attributes))  # inverse-CDF draws: rng.choice(p=...) is 50x slower per call
            prof = {a.name: a.levels[min(int(np.searchsorted(c, x, side="right")), len(a.levels) - 1)]
                    for a, c, x in zip(self.attributes, cums, u)}
            if not any(r.violated(prof) for r in self.restrictions):
                return prof
        raise UserError(f"design {self.name}: no profile satisfies the restrictions after {MAX_DRAWS} draws")

    def profiles(self, respondents: int, seed: int = 0) -> pd.DataFrame:
        """One row per respondent x task x profile: the levels and the respondent's attribute order."""
        if respondents < 1:
            raise UserError(f"--respondents {respondents}: must be at least 1")
        rows = []
        for r in range(1, respondents + 1):
            rng = np.random.default_rng(np.random.SeedSequence([seed, r]))
            order = [a.name for a in self.attributes]
            if self.attribute_order == "random":
                order = [order[i] for i in rng.permutation(len(order))]
            for t in range(1, self.tasks_per_respondent + 1):
                for k in range(1, self.profiles_per_task + 1):
                    rows.append({"respondent": f"r{r:05d}", "task": t, "profile": k, **self.draw_profile(rng),
                                 "attribute_order": "|".join(order)})
        df = pd.DataFrame(rows)
        for a in self.attributes:  # the design's level order is the analysis's (first level = baseline)
            df[a.name] = pd.Categorical(df[a.name], categories=list(a.levels))
        self.check(df)
        return df

    def check(self, profiles: pd.DataFrame) -> None:
        """Every profile obeys every restriction (cregg's cj_props shows the same as zero cells)."""
        for r in self.restrictions:
            bad = profiles[profiles[r.a].isin(r.a_levels) & profiles[r.b].isin(r.b_levels)]
            if len(bad):
                raise UserError(f"design {self.name}: {len(bad)} profile(s) break the restriction "
                                f"{r.a} in {sorted(r.a_levels)} -> {r.b} not in {sorted(r.b_levels)}")

    # ------------------------------------------------------------ prompts

    def text(self, attribute: str, level: str) -> str:
        a = next(a for a in self.attributes if a.name == attribute)
        return a.texts[a.levels.index(level)]

    def render(self, shown: list[dict], order: list[str]) -> str:
        """The profiles of a task in the order shown, in the design's layout."""
        labels = {a.name: a.label for a in self.attributes}
        noun = self.profile_noun
        if self.layout == "table":
            head = "| | " + " | ".join(f"{noun} {i}" for i in range(1, len(shown) + 1)) + " |"
            rule = "| --- |" + " --- |" * len(shown)
            body = ["| " + labels[a] + " | " + " | ".join(self.text(a, str(p[a])) for p in shown) + " |"
                    for a in order]
            return "\n".join([head, rule, *body])
        return "\n\n".join(f"{noun} {i}: " + "; ".join(f"{labels[a]}: {self.text(a, str(p[a]))}" for a in order)
                           + "." for i, p in enumerate(shown, start=1))

    def position_orders(self) -> list[tuple[int, ...]]:
        """Profile numbers in the order shown: identity, or every cyclic rotation (both_orders)."""
        k = self.profiles_per_task
        base = tuple(range(1, k + 1))
        if self.outcome != "choice" or not self.both_orders:
            return [base]
        return [base[i:] + base[:i] for i in range(k)]

    def trials(self, profiles: pd.DataFrame, study: str) -> pd.DataFrame:
        """k-choice trials (docs/schema.md): one per task order (choice) or per profile (rating)."""
        p = self.prompt
        names = [a.name for a in self.attributes]
        rows = []
        recs = profiles[["respondent", "task", "profile", "attribute_order"]].astype(str).assign(
            **{n: profiles[n].astype(str) for n in names}).to_dict("records")
        tasks: dict[tuple, list[dict]] = {}
        for rec in recs:  # plain dicts: a pandas groupby per task costs seconds at 500 tasks
            tasks.setdefault((rec["respondent"], int(rec["task"])), []).append(rec)
        for (resp, task), group in sorted(tasks.items()):
            profs = {int(rec["profile"]): rec for rec in group}
            order = group[0]["attribute_order"].split("|")
            item = f"{resp}-t{task}"
            base = {"item": item, "subject": resp, "respondent": resp, "task": task,
                    "attribute_order": group[0]["attribute_order"]}
            if self.outcome == "choice":
                for shown in self.position_orders():
                    table = self.render([profs[k] for k in shown], order)
                    prompt = f"{p['intro']}\n\n{table}\n\n{p['choice_question']}"
                    tag = "-".join(map(str, shown))
                    rows.append({**base, "trial": f"{item}-o{tag}", "condition": f"order {tag}", "prompt": prompt,
                                 "options": tuple(p["choice_options"]),
                                 "labels": tuple(str(i) for i in range(1, len(shown) + 1)),
                                 "shown": tag, "profile": 0})
            else:
                table = self.render([profs[k] for k in sorted(profs)], order)
                scale = [str(s) for s in p["rating_scale"]]
                for k in sorted(profs):
                    q = fill_template(p["rating_question"], f"{study}: prompt.rating_question", profile=k)
                    rows.append({**base, "trial": f"{item}-p{k}", "condition": "rating", "shown": "",
                                 "prompt": f"{p['intro']}\n\n{table}\n\n{q}", "profile": k,
                                 "options": tuple(" " + s for s in scale), "labels": tuple(scale)})
        return pd.DataFrame(rows)


# ------------------------------------------------------------------ outcome per profile

def choice_by_profile(responses: pd.DataFrame) -> pd.DataFrame:
    """P(profile chosen) per model x respondent x task x profile, averaged over the orders asked.

    Rows of a forced-choice trial carry `response` = the position ("1", "2", ...) and `weight` =
    its probability (exact) or count (sampled); `shown` lists the profiles by position ("2-1").
    """
    r = responses[responses["source"] == "model"]
    w = r["weight"].astype(float)
    total = trial_total(r)
    pos = r["response"].astype(int)
    shown = r["shown"].astype(str).str.split("-")
    profile = [int(s[p - 1]) for s, p in zip(shown, pos)]
    d = pd.DataFrame({"model": r["model"], "respondent": r["respondent"], "task": r["task"].astype(int),
                      "trial": r["trial"], "profile": profile, "position": pos, "p": (w / total).to_numpy()})
    per_order = d.groupby(["model", "respondent", "task", "trial", "profile"], as_index=False)["p"].sum()
    return per_order.groupby(["model", "respondent", "task", "profile"], as_index=False)["p"].mean()


def first_position_share(responses: pd.DataFrame) -> pd.DataFrame:
    """Mean P(the first-shown profile is chosen) per model: 1/k without position bias."""
    r = responses[responses["source"] == "model"]
    w = r["weight"].astype(float)
    p = w / trial_total(r)
    first = p[r["response"].astype(str) == "1"]
    return first.groupby(r.loc[first.index, "model"]).agg(["mean", "size"]).reset_index().rename(
        columns={"mean": "p_first_position", "size": "trials"})


def rating_by_profile(responses: pd.DataFrame) -> pd.DataFrame:
    """Expected rating (and the exact distribution's mass) per model x respondent x task x profile."""
    r = responses[responses["source"] == "model"]
    w = r["weight"].astype(float)
    p = w / trial_total(r)
    d = pd.DataFrame({"model": r["model"], "respondent": r["respondent"], "task": r["task"].astype(int),
                      "profile": r["profile"].astype(int), "v": p * r["response"].astype(float)})
    return d.groupby(["model", "respondent", "task", "profile"], as_index=False)["v"].sum().rename(
        columns={"v": "p"})


# ------------------------------------------------------------------ parsing helpers

def _need(spec: dict, key: str, where: str, kind):
    if key not in spec:
        raise UserError(f"{where}: missing key {key!r}")
    if not isinstance(spec[key], kind):
        raise UserError(f"{where}: {key}: expected a {kind.__name__}")
    return spec[key]


def _int(v, where: str, low: int) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < low:
        raise UserError(f"{where}: expected a whole number >= {low}, got {v!r}")
    return v


def _choice(v, allowed, where: str) -> str:
    if v not in allowed:
        raise UserError(f"{where}: {v!r}; choose from {', '.join(allowed)}")
    return v


def _attribute(a, where: str) -> Attribute:
    if not isinstance(a, dict):
        raise UserError(f"{where}: expected a mapping with name and levels")
    name = str(_need(a, "name", where, str))
    levels = _need(a, "levels", where, list)
    if not levels:
        raise UserError(f"{where}: levels: name at least one level")
    vals, texts = [], []
    for j, lev in enumerate(levels):
        if isinstance(lev, dict):
            if "level" not in lev:
                raise UserError(f"{where}: levels[{j}]: missing key 'level'")
            vals.append(str(lev["level"]))
            texts.append(str(lev.get("text", lev["level"])))
        else:
            vals.append(str(lev))
            texts.append(str(lev))
    if len(set(vals)) != len(vals):
        raise UserError(f"{where}: levels: duplicate level names")
    weights = a.get("weights")
    if weights is None:
        w = np.full(len(vals), 1.0 / len(vals))
    else:
        w = np.asarray(weights, dtype=float) if isinstance(weights, list) else np.array([])
        if len(w) != len(vals) or (w <= 0).any() or not np.isfinite(w).all():
            raise UserError(f"{where}: weights: expected {len(vals)} positive numbers, one per level")
        w = w / w.sum()
    return Attribute(name, str(a.get("label", name)), tuple(vals), tuple(texts), tuple(w))


def _restriction(r, by_name: dict, where: str) -> Restriction:
    if not isinstance(r, dict) or set(r) != {"if", "forbid"}:
        raise UserError(f"{where}: expected {{if: {{A: [levels]}}, forbid: {{B: [levels]}}}}")
    parts = []
    for key in ("if", "forbid"):
        part = r[key]
        if not isinstance(part, dict) or len(part) != 1:
            raise UserError(f"{where}: {key}: expected one attribute with a list of levels")
        (name, levels), = part.items()
        if name not in by_name:
            raise UserError(f"{where}: {key}: unknown attribute {name!r}")
        levels = [str(v) for v in (levels if isinstance(levels, list) else [levels])]
        bad = [v for v in levels if v not in by_name[name].levels]
        if bad:
            raise UserError(f"{where}: {key}: {name} has no level(s) {', '.join(map(repr, bad))}")
        parts.append((name, frozenset(levels)))
    if parts[0][0] == parts[1][0]:
        raise UserError(f"{where}: a restriction needs two different attributes")
    return Restriction(parts[0][0], parts[0][1], parts[1][0], parts[1][1])
