"""The one registry of the tests a study file may name (`analyses: - type: NAME`), after inspect_ai's
single registry (issue 37, item 2). One entry per test feeds every place that names it:
- studyfile/spec.py: the analysis types and the keys each takes (`study check`, `study schema`);
- studyfile/analyses.py (`analyze`): the function that computes it (methods/subjects.py);
- studyfile/check_r.py (`--check-r`) and replicate's analysis.R: its R twin in R/studyfile.R and the
  columns compared.
The other analysis types (distribution, amce, representativeness, agreement, summaries, function) make
their own tables, not rows of the `tests` table; spec.py lists them beside these.
"""
from __future__ import annotations

from dataclasses import dataclass

BROOM = ("estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high", "n")


@dataclass(frozen=True)
class Method:
    name: str  # the study file's `type:`
    keys: frozenset  # the keys the analysis takes beside `type` and `name`
    r_twin: str | None  # its R function in R/studyfile.R; None: no twin yet (--check-r says so)
    compared: tuple  # the columns --check-r compares with the twin's
    matched_on: tuple  # the columns beside source, model and `by` that pair a row with the twin's

    def run(self, trials, responses, analysis: dict, by: list[str]):
        """The rows of the `tests` table this analysis gives (methods/subjects.py)."""
        # imported here, not at the top: spec.py reads this registry for `study check`, which stays
        # free of scipy (measured: scipy.stats adds ~0.4 s to a check that must stay well under 2 s)
        from . import subjects

        if self.name == "one_sample":
            return subjects.one_sample(trials, analysis.get("mu", 0), by)
        if self.name == "chi_square":
            return subjects.chi_square(responses, trials, analysis["factor"], by)
        return getattr(subjects, self.name)(trials, analysis["factor"], analysis["levels"], by)

    def r_args(self, analysis: dict, by: list[str]) -> tuple[list, dict]:
        """The twin's arguments after (responses, options): positional and keyword."""
        if self.name == "one_sample":
            return [], {"mu": analysis.get("mu", 0), "by": by}
        if self.name == "chi_square":
            return [analysis["factor"]], {"by": by}
        return [analysis["factor"], list(analysis["levels"])], {"by": by}


TESTS = {m.name: m for m in (
    # the t-tests' effect sizes (d_av, d_z, d) are compared too (issue 40, item 7)
    Method("welch", frozenset({"factor", "levels", "by"}), "sf_welch", (*BROOM, "effect_size"), ("contrast",)),
    Method("paired", frozenset({"factor", "levels", "by"}), "sf_paired", (*BROOM, "effect_size"), ("contrast",)),
    Method("one_sample", frozenset({"mu", "by"}), "sf_one_sample", (*BROOM, "effect_size"), ()),
    Method("chi_square", frozenset({"factor", "by"}), "sf_chi_square",
           # a model's p.value is a permutation p (R's own random stream): compared through chisq.test's
           ("statistic", "df", "p.value.asymptotic", "effect_size", "n"), ()),
)}
