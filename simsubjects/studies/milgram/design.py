"""Milgram obedience (Aher et al. 2023, §6, Appendix E): one simulator, two scenarios as data.

`milgram` runs the classic shock scenario, `milgram_novel` the authors' sleepy-driver scenario.
Each built-in study IS a study file, bundled as simsubjects/datasets/aher2023/milgram_classic.yaml
and milgram_novel.yaml (the format and its checks: studyfile/obedience.py, which also turns any
such file, `collect STUDY.yaml`, into the same declaration on its own scenario). The rules
are those of Appendix E.1 and the `notes` of the scenario files:

* The record starts with the introduction ($subject, $poss, $poss_obj filled). Each of the 30
  stages is one or two steps: the "no punishment" step (correct answer / drives safely) where
  the stage has one, then the punishment step. A step appends "\\n\\n" + its text; the prompt is
  the record + "\\n\\n" + the subject's name (E.1 step 3), completed as free text (temperature 1,
  top_p 1, `max_tokens` 40 as the authors' code).
* Only the first sentence is kept (the authors' regex, applied to the completion's first line;
  ";" becomes "."; one leading space) and appended after the name. Two 2-choice judgments run on
  it, termination then obedience (both always, so every step has both probabilities). A local
  model stops generating once that sentence is settled (`SETTLED`): the same draws give the same
  sentence, and the step's stored completion ends there.
* Termination judged positive -> the experiment ends (cause "terminated").
* Punishment step: obeyed -> the stage is done. Disobeyed -> the stage's disobedience count k
  goes up and prod k is appended ("Prod 1*", the scenario's special prod, replaces prod 1 on the
  first disobedience at the special stage, 315 V / the 21st submersion; the count still advances),
  then the stage is re-attempted by appending only "\\n\\n" + name. The fifth disobedience in one
  stage (all four prods used; a study file may declare another number of prods) appends "The
  experimenter ends the experiment." (cause "prods exhausted"). k restarts at 0 on every stage.
* No-punishment step: punished -> the correction text is appended; either way the punishment
  step of the same stage follows (no prods there).
* Obeying at stage 30 completes the experiment (cause "completed").

Break-off level = the last level whose punishment step the subject obeyed (the maximum shock
administered, Figure 21's footnote): 0 = no shock, 30 = completed. A step judged a termination
administers nothing, whatever its obedience judgment. With --max-stages < 30 the remaining
subjects stop with cause "max stages" and are right-censored in the survival analysis.

Judgment probability (`judge_rule`, recorded in the manifest and every record):
* "normalized" (default): the paper's k-choice probability (Section 2), P(positive) normalized
  over the two completions (" stop"/" not stop", " shock"/" not shock"); positive iff > 0.5.
  It works for every backend (exact or sampled) and for small models, whose unnormalized
  probabilities are far below 0.5 for both completions.
* "scored": the authors' released code, P(" not stop") / P(" not shock") unnormalized
  (exp of the summed token log-probabilities); positive iff that probability <= 0.5.
  Needs log-probabilities (--method exact).

Subjects run in lockstep: each step sends one batched `complete` for every subject still
running and one batched `choose` with their 2 x judgments, all through the request cache, so an
interrupted run resumes where it stopped. The simulator takes its decisions from an injectable
`generate`/`judge` pair, which tests replace by scripted sequences.

Tidy output (responses.parquet), two kinds of rows told apart by `condition`:
* "breakoff": one row per subject; response = break-off level as text, method "generated",
  weight 1, validity = share of the subject's completions that held a complete first sentence;
  columns breakoff_level, cause, completed and censored (1/0), n_steps, n_disobediences,
  judgment_validity (mean Z of its judgments), title, surname, group, rule. Milgram's (1963)
  40 participants are appended as human rows of the same shape (`finalize`).
* "judgment": one row per step x judgment x completion ("stop"/"not stop", "shock"/"not shock",
  "punish"/"not punish"); weight = normalized probability (exact) or count (sampled),
  validity = Z; columns judgment, level, step, attempt, kind, decision (1/0 under the rule),
  p_rule, p_scored, outcome.
Every record (subject, scenario, rule, full text, steps with completions and probabilities,
break-off level, cause) is written to records.jsonl; analyze.milgram.records_text renders them.
"""

from __future__ import annotations

import math
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import click
import pandas as pd
from tqdm.auto import tqdm

from simsubjects.datasets.registry import data_path
from simsubjects.errors import UserError
from simsubjects.collect.models.base import ChoiceRequest, ChoiceResult, CompletionRequest
from simsubjects.collect.runner import cache_key, cached_map, complete_many, core_row
from simsubjects.studies.names import OBJECT, POSSESSIVE, TITLES, surnames
from simsubjects.collect.studies.registry import Option, fill_template
import yaml
from simsubjects.datasets.milgram1963 import load_milgram1963

SCENARIOS = {"milgram": "aher2023/milgram_classic.yaml", "milgram_novel": "aher2023/milgram_novel.yaml"}
RULES = ("normalized", "scored")
DEFAULT_RULE = "normalized"
MAX_TOKENS = 40
TOP_SURNAMES = 10
SCORED_NEEDS_EXACT = "--judge-rule scored needs log-probabilities; use --method exact or --judge-rule normalized"
CAUSES = ("terminated", "prods exhausted", "completed", "max stages", "failed")

# The authors' first-sentence regex: up to the first . ! ? ; (not the dot of "Mr."/"Ms."),
# with a closing quote if one follows.
_SENTENCE = re.compile(r'(.*?(?<!Mr|Ms)[\.\!\?\;]"?)')
# first_sentence() cannot change once the first line is complete, or once it holds a sentence end
# followed by one more character (which settles the optional closing quote): generation may stop.
SETTLED = r'\n|(?<!Mr|Ms)[.!?;].'


_DECLARED: dict = {}  # study -> its bundled file's data, read once per process


def declaration(study: str) -> dict:
    """The bundled study file of a built-in Milgram study, as data (read once). The file is checked
    by studyfile/obedience.py, the loader of `collect STUDY.yaml`, in tests/test_milgram_studyfile.py:
    collect/ sits below studyfile/ (docs/architecture.md), so the package's own file is read here."""
    if study not in SCENARIOS:
        raise UserError(f"unknown Milgram scenario {study!r}; known: {', '.join(SCENARIOS)}")
    if study not in _DECLARED:

        text = data_path(SCENARIOS[study]).read_text(encoding="utf-8")
        _DECLARED[study] = yaml.safe_load(text)
    return _DECLARED[study]


def scenario(study: str) -> dict:
    """The scenario of a built-in Milgram study: the `obedience:` section of its bundled study file."""
    return declaration(study)["obedience"]


def subject_pool() -> pd.DataFrame:
    """The 100 subjects of Appendix E: top 10 surnames of each group x Mr./Ms.

    Ordered rank-first (rank 1 of every group and both titles, then rank 2, ...), so the first
    N subjects are balanced across titles (even N) and spread across groups.
    """
    s = surnames()
    top = s[s["rank"] <= TOP_SURNAMES]
    groups = list(dict.fromkeys(top["group"]))
    rows = []
    for rank in range(1, TOP_SURNAMES + 1):
        for g in groups:
            surname = top.loc[(top["group"] == g) & (top["rank"] == rank), "surname"].iat[0]
            for t in TITLES:
                rows.append({"subject": f"{t} {surname}", "title": t, "surname": surname, "group": g, "rank": rank})
    return pd.DataFrame(rows)


def first_sentence(completion: str) -> tuple[str, bool]:
    """(action, valid): the completion's first sentence with one leading space.

    Only the first line is searched: text after a line break is no longer the subject's action
    (the authors' regex cannot cross a newline either, but re.search would skip to a later line).
    Without a sentence end on that line (cut by max_tokens) the whole line is kept and the step
    counted invalid. No space is added before a possessive or punctuation ("'s hands shake.").
    """
    line = completion.split("\n", 1)[0]
    m = _SENTENCE.search(line)
    text = (m.group(1) if m else line).replace(";", ".").strip()
    if text and text[0] not in "',.;:!?":
        text = " " + text
    return text, bool(m) and bool(text.strip())


def decide(result: ChoiceResult, spec: dict, rule: str) -> dict:
    """A judgment's probabilities and decision under `rule` (see the module docstring)."""
    comps = list(spec["completions"])
    pos, scored = comps.index(spec["positive"]), comps.index(spec["scored_completion"])
    p_norm = float(result.probs[pos])
    p_scored = math.exp(result.logprobs[scored]) if result.logprobs is not None else None
    t = float(spec["threshold"])
    if rule == "normalized":
        p, positive = p_norm, p_norm > t
    elif rule == "scored":
        if p_scored is None:
            raise UserError(SCORED_NEEDS_EXACT)
        p, positive = 1.0 - p_scored, not (p_scored > t)
    else:
        raise UserError(f"--judge-rule {rule}: choose one of {', '.join(RULES)}")
    return {"p": p, "positive": bool(positive), "p_normalized": p_norm, "p_scored": p_scored,
            "validity": float(result.validity), "counts": result.counts}


@dataclass
class Subject:
    """One simulated subject's record and position in the procedure."""

    scen: dict
    person: dict
    rule: str
    max_stages: int
    text: str = ""
    stage: int = 0  # index into scen["stages"]
    phase: str = "punish"  # "no_punish" | "punish"
    k: int = 0  # disobediences in the current stage
    breakoff: int = 0
    done: bool = False
    cause: str = ""
    steps: list = field(default_factory=list)

    def __post_init__(self):
        t = self.person["title"]
        self.fills = {"subject": self.person["subject"], "poss": POSSESSIVE[t], "poss_obj": OBJECT[t]}
        self.text = self.fill(self.scen["introduction"])
        self.special = {s["stage_level"]: s["text"] for s in self.scen["special_prods"]}
        self._enter_stage()

    def fill(self, template: str, **extra) -> str:
        return fill_template(template, f"Milgram scenario {self.scen.get('name', '')} (simsubjects/datasets/aher2023)",
                             **self.fills, **extra)

    @property
    def level(self) -> int:
        return self.scen["stages"][self.stage]["level"]

    @property
    def prompt(self) -> str:
        return self.text + self.fill(self.scen["record"]["subject_prompt"])

    def _append(self, text: str) -> None:
        self.text += self.scen["record"]["step_separator"] + self.fill(text)

    def _enter_stage(self) -> None:
        st = self.scen["stages"][self.stage]
        self.k = 0
        self.phase = "no_punish" if st["no_punish_text"] else "punish"
        self._append(st["no_punish_text"] or st["text"])

    def _next_stage(self) -> None:
        self.stage += 1
        if self.stage == len(self.scen["stages"]):
            self._end("completed")
        elif self.stage >= self.max_stages:
            self._end("max stages")
        else:
            self._enter_stage()

    def _end(self, cause: str) -> None:
        self.done, self.cause = True, cause

    def fail(self, reason: str) -> None:
        self.steps.append({"step": len(self.steps), "level": self.level, "failed": reason})
        self._end("failed")

    def judgment_requests(self, action: str, n: int = 50) -> list[ChoiceRequest]:
        js = self.scen["judgments"]
        return [ChoiceRequest(self.fill(js[j]["template"], action=action), tuple(js[j]["completions"]), n)
                for j in ("termination", "obedience")]

    def advance(self, completion: str, action: str, valid: bool, term: ChoiceResult, obey: ChoiceResult) -> None:
        """Apply one step's completion and judgments (E.1 step 4)."""
        js = self.scen["judgments"]
        st = self.scen["stages"][self.stage]
        t, o = decide(term, js["termination"], self.rule), decide(obey, js["obedience"], self.rule)
        step = {"step": len(self.steps), "level": st["level"], "voltage": st["voltage"], "kind": self.phase,
                "attempt": self.k, "completion": completion, "action": action, "sentence_valid": valid,
                "termination": t, "obedience": o, "outcome": "", "experimenter": None}
        self.text += self.fill(self.scen["record"]["subject_prompt"]) + action
        self.steps.append(step)
        canned = self.scen["canned_texts"]
        if t["positive"]:
            step["outcome"] = "terminated"
            self._end("terminated")
        elif self.phase == "no_punish":
            punished = o["positive"]
            step["outcome"] = "punished" if punished else "not punished"
            if punished:
                step["experimenter"] = "correction"
                self.text += self.scen["record"]["canned_separator"] + self.fill(canned["correction"])
            self.phase = "punish"
            self._append(st["text"])
        elif o["positive"]:
            step["outcome"] = "obeyed"
            self.breakoff = st["level"]
            self._next_stage()
        else:
            step["outcome"] = "disobeyed"
            self.k += 1
            if self.k <= len(self.scen["prods"]):
                special = self.k == 1 and st["level"] in self.special
                prod = self.special[st["level"]] if special else self.scen["prods"][self.k - 1]
                step["experimenter"] = "prod 1*" if special else f"prod {self.k}"
                self.text += self.scen["record"]["canned_separator"] + self.fill(prod)
            else:
                step["experimenter"] = "end"
                self.text += self.scen["record"]["canned_separator"] + self.fill(canned["end_after_prods"])
                self._end("prods exhausted")

    def record(self) -> dict:
        return {**{k: self.person[k] for k in ("subject", "title", "surname", "group")},
                "scenario": self.scen["name"], "rule": self.rule, "max_stages": self.max_stages,
                "breakoff_level": self.breakoff, "cause": self.cause, "n_steps": len(self.steps),
                "text": self.text, "steps": self.steps}


Generate = Callable[[list[str]], list]  # prompts -> completion text (None = failed)
Judge = Callable[[list[ChoiceRequest]], list]  # requests -> ChoiceResult (None = failed)


def simulate(scen: dict, people: Sequence[dict], generate: Generate, judge: Judge, *, rule: str = DEFAULT_RULE,
             max_stages: int = 30, n: int = 50, on_step: Callable[[int], None] | None = None) -> list[dict]:
    """Run every subject in lockstep; one `generate` and one `judge` call per step. Returns records."""
    if rule not in RULES:
        raise UserError(f"--judge-rule {rule}: choose one of {', '.join(RULES)}")
    if not 1 <= max_stages <= len(scen["stages"]):
        raise UserError(f"--max-stages {max_stages}: must be between 1 and {len(scen['stages'])}")
    subs = [Subject(scen, dict(p), rule, max_stages) for p in people]
    while True:
        active = [s for s in subs if not s.done]
        if not active:
            break
        texts = generate([s.prompt for s in active])
        live = []
        for s, t in zip(active, texts):
            if t is None:
                s.fail("generation failed")
            else:
                live.append((s, t, *first_sentence(t)))
        reqs = [r for s, _, action, _ in live for r in s.judgment_requests(action, n)]
        results = judge(reqs) if reqs else []
        for j, (s, t, action, valid) in enumerate(live):
            term, obey = results[2 * j], results[2 * j + 1]
            if term is None or obey is None:
                s.fail("judgment failed")
            else:
                s.advance(t, action, valid, term, obey)
        if on_step:
            on_step(len(active))
    return [s.record() for s in subs]


# --- model adapters: the generate/judge pair through the request cache ---------------------------
def model_generate(model, cache, *, max_tokens: int = MAX_TOKENS, seed: int = 0, chunk: int = 16) -> Generate:
    def generate(prompts: list[str]) -> list:
        reqs = [CompletionRequest(p, n=1, temperature=1.0, top_p=1.0, max_tokens=max_tokens, seed=seed,
                                  settled=SETTLED) for p in prompts]
        results, _ = complete_many(model, cache, reqs, chunk=chunk)
        return [r.texts[0] if r is not None and r.texts else None for r in results]

    return generate


def model_judge(model, cache, *, method: str = "exact", chunk: int = 64) -> Judge:
    fp = model.fingerprint()  # same keys as collect_choices: judgments are shared cache entries

    def ask(reqs):
        return model.choose(reqs, method=method) if method != "exact" else model.choose(reqs)

    def judge(reqs: list[ChoiceRequest]) -> list:
        keys = [cache_key(fp, r, method) for r in reqs]
        results, _ = cached_map(cache, reqs, keys, ask, lambda v: ChoiceResult(**v), chunk=chunk)
        return results

    return judge


# --- tidy tables -----------------------------------------------------------------------------
def subject_rows(records: list[dict], study: str, model_spec: str) -> pd.DataFrame:
    rows = []
    for r in records:
        if r["cause"] == "failed":
            continue
        steps = [s for s in r["steps"] if "failed" not in s]
        z = [s[j]["validity"] for s in steps for j in ("termination", "obedience")]
        ids = {"trial": r["subject"], "item": r["scenario"], "condition": "breakoff", "subject": r["subject"]}
        rows.append({
            **core_row(ids, study=study, model=model_spec, method="generated", response=str(r["breakoff_level"]),
                       weight=1.0, validity=sum(s["sentence_valid"] for s in steps) / len(steps) if steps else float("nan")),
            "breakoff_level": r["breakoff_level"], "cause": r["cause"],
            # 0/1 numbers rather than bools: they stay numeric beside the judgment rows' NaN in every export
            "completed": float(r["cause"] == "completed"), "censored": float(r["cause"] == "max stages"),
            "n_steps": len(steps), "n_disobediences": sum(s["outcome"] == "disobeyed" for s in steps),
            "judgment_validity": sum(z) / len(z) if z else float("nan"),
            "title": r["title"], "surname": r["surname"], "group": r["group"], "rule": r["rule"],
        })
    return pd.DataFrame(rows)


def judgment_rows(records: list[dict], study: str, model_spec: str, scen: dict, method: str) -> pd.DataFrame:
    rows = []
    for r in records:
        for s in r["steps"]:
            if "failed" in s:
                continue
            for j in ("termination", "obedience"):
                spec, d = scen["judgments"][j], s[j]
                pos = spec["positive"]
                for i, comp in enumerate(spec["completions"]):
                    # exact: normalized probability; sampled: the count of valid samples (docs/schema.md)
                    p = float(d["counts"][i]) if d.get("counts") is not None else (
                        d["p_normalized"] if comp == pos else 1.0 - d["p_normalized"])
                    ids = {"trial": f"{r['subject']} | step {s['step']:03d} | {j}", "item": r["scenario"],
                           "condition": "judgment", "subject": r["subject"]}
                    rows.append({
                        **core_row(ids, study=study, model=model_spec, method=method, response=comp.strip(), weight=p,
                                   validity=d["validity"]),
                        "judgment": j, "level": s["level"], "step": s["step"],
                        "attempt": s["attempt"], "kind": s["kind"], "decision": float(d["positive"]),
                        "p_rule": d["p"], "p_scored": d["p_scored"], "outcome": s["outcome"],
                    })
    return pd.DataFrame(rows)


def build_trials(study: str | dict, subjects: int = 4, max_stages: int = 30, seed: int = 0, names=None,
                 **_) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, items): one row per subject (the first `subjects` of the 100, or the pool's `names` in
    their order), one item (the scenario). `study`: a built-in study's name or a scenario."""
    scen = scenario(study) if isinstance(study, str) else study
    pool = subject_pool()
    if not 1 <= subjects <= len(pool):
        raise UserError(f"--subjects {subjects}: must be between 1 and {len(pool)}")
    if not 1 <= max_stages <= len(scen["stages"]):
        raise UserError(f"--max-stages {max_stages}: must be between 1 and {len(scen['stages'])}")
    if names:
        people = pool.set_index("subject", drop=False).loc[list(names)].reset_index(drop=True)
    else:
        people = pool.head(subjects)
    trials = people.assign(trial=people["subject"], item=scen["name"], condition="breakoff")
    items = pd.DataFrame([{"item": scen["name"], "title": scen["title"], "unit": scen["unit"],
                           "victim": scen["victim"], "n_stages": len(scen["stages"])}])
    return trials, items


def make_collect(study: str, scen_of: Callable[[], dict] | None = None) -> Callable:
    """The collect of the study named `study` (its rows' `study`); its scenario from `scen_of`, by
    default the built-in study's bundled file."""
    scen_of = scen_of or (lambda: scenario(study))

    def collect(model, cache, trials: pd.DataFrame, params: dict, show_progress: bool = True):
        t0 = time.perf_counter()
        scen = scen_of()
        method = params.get("method", "exact")
        rule = params.get("judge_rule", DEFAULT_RULE)
        if rule == "scored" and method != "exact":
            raise UserError(SCORED_NEEDS_EXACT)
        max_stages = params.get("max_stages", 30)
        steps_max = sum(1 + bool(s["no_punish_text"]) for s in scen["stages"][:max_stages])
        people = trials[["subject", "title", "surname", "group"]].to_dict("records")
        chunk = int(params.get("batch_size") or 64)
        with tqdm(total=len(people) * steps_max, desc=f"{study} ({model.info.spec})", unit="step",
                  disable=not show_progress, file=sys.stderr, dynamic_ncols=True) as bar:
            records = simulate(
                scen, people, model_generate(model, cache, max_tokens=params.get("max_tokens", MAX_TOKENS),
                                             seed=int(params.get("seed") or 0), chunk=chunk),
                model_judge(model, cache, method=method, chunk=chunk), rule=rule, max_stages=max_stages,
                n=params.get("n") or 50, on_step=bar.update)
        for r in records:
            r.update(study=study, model=model.info.spec, method=method)
        subj = subject_rows(records, study, model.info.spec)
        judg = judgment_rows(records, study, model.info.spec, scen, method)
        df = pd.concat([subj, judg], ignore_index=True) if len(judg) else subj
        n_steps = sum(len(r["steps"]) for r in records)
        stats = {
            "trials": len(people), "answered": len(subj), "rows": len(df),
            "failures": [{"trial": r["subject"], "reason": r["steps"][-1].get("failed", "failed")}
                         for r in records if r["cause"] == "failed"],
            "steps": n_steps, "queries": 3 * n_steps,
            "causes": {c: int(sum(r["cause"] == c for r in records)) for c in CAUSES},
            "mean_validity": float(subj["validity"].mean()) if len(subj) else float("nan"),
            "mean_judgment_validity": float(subj["judgment_validity"].mean()) if len(subj) else float("nan"),
            "judge_rule": rule,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        return df, stats, records

    return collect


def validate(model, trials: pd.DataFrame, params: dict, n: int = 4, scen: dict | None = None) -> pd.DataFrame:
    """Prompt validation on the first step of up to n subjects: validity rates only, no outcomes."""
    if scen is None:
        by_name = {scenario(s)["name"]: s for s in SCENARIOS}  # "milgram_classic" -> "milgram"
        scen = scenario(by_name[trials["item"].iat[0]])
    people = trials[["subject", "title", "surname", "group"]].head(n).to_dict("records")
    subs = [Subject(scen, p, params.get("judge_rule", DEFAULT_RULE), 1) for p in people]
    res = model.complete([CompletionRequest(s.prompt, max_tokens=params.get("max_tokens", MAX_TOKENS),
                                            seed=int(params.get("seed") or 0), settled=SETTLED) for s in subs])
    texts = [r.texts[0] if not r.failed and r.texts else "" for r in res]
    parsed = [first_sentence(t) for t in texts]
    reqs = [r for s, (a, _) in zip(subs, parsed) for r in s.judgment_requests(a, params.get("n") or 50)]
    z = [c.validity for c in model.choose(reqs)]
    rows = [{"measure": "first sentence found", "values": [float(v) for _, v in parsed]},
            {"measure": "termination judgment Z", "values": z[0::2]},
            {"measure": "obedience judgment Z", "values": z[1::2]}]
    return pd.DataFrame([{"measure": r["measure"], "mean": sum(r["values"]) / len(r["values"]),
                          "min": min(r["values"]), "max": max(r["values"]), "size": len(r["values"])}
                         for r in rows])


def with_humans(responses: pd.DataFrame, params: dict) -> pd.DataFrame:
    """Append Milgram's (1963) 40 participants (condition "breakoff") beside the model rows."""

    study = responses["study"].iat[0] if len(responses) else "milgram"
    return pd.concat([responses, load_milgram1963(study)], ignore_index=True)


def _options() -> list[Option]:
    return [
        Option(("--subjects",), {"show_default": True, "type": int,
                                 "help": "Subjects (of the 100: top-10 surnames per group x Mr./Ms.)."}),
        Option(("--max-stages",), {"show_default": True, "type": int,
                                   "help": "Stop after this many of the 30 stages (quick runs; right-censored)."}),
        Option(("--max-tokens",), {"default": MAX_TOKENS, "show_default": True, "type": click.IntRange(1, 32768),
                                   "help": "Tokens per free-text completion (the authors used 40)."}),
        Option(("--judge-rule",), {"default": DEFAULT_RULE, "show_default": True, "type": click.Choice(RULES),
                                   "help": "normalized: 2-choice P(positive) > 0.5 (paper, Section 2); scored: "
                                           "unnormalized P(' not stop'/' not shock') <= 0.5 (authors' code)."}),
    ]


COLUMNS = {
    "breakoff_level": "Last level at which the subject obeyed (0 none, 30 completed)",
    "cause": "terminated, prods exhausted, completed or max stages",
    "completed": "1 if the subject completed all levels", "censored": "1 if cut by --max-stages",
    "n_steps": "Steps simulated", "n_disobediences": "Disobedient steps",
    "judgment_validity": "Mean validity of the experimenter judgments", "rule": "Judgment-probability rule",
    "judgment": "termination or obedience", "level": "Shock level (1-30)", "step": "Step of the record",
    "attempt": "Attempt within the stage", "kind": "Kind of step", "decision": "Decision taken",
    "p_rule": "Probability used by the rule", "p_scored": "Unnormalized probability of the scored completion",
    "outcome": "Outcome of the judgment",
}
