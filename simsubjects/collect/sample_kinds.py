"""The `sample` column of every test table (issue 40, item 1; docs/conventions.md, "The estimand"; docs/schema.md).

The estimand is the model's expected answer over the declared distribution of subjects; these words say which
distribution that is. One vocabulary, written once here (a leaf: it imports nothing of the package), read by
a study's declaration (`StudyDef.sample`), analyze/estimand.py, the report and METHODS.md.
"""

from __future__ import annotations

IDENTICAL_PROMPTS = "identical prompts"
CENSUS = "census of a table"
DRAWN = "drawn subjects"
SAMPLED_METHOD = "sampled method"
PEOPLE = "people"
RECORDED = "recorded people"  # `subjects: people`, `paths: people`: each person's own prompts, nothing drawn
VS_PEOPLE = " vs people"  # a model side tested against people: e.g. "drawn subjects vs people"
SAMPLE_KINDS: dict[str, str] = {
    IDENTICAL_PROMPTS: "every subject read the same prompt: the subjects are copies of one prompt, not a sample; "
                       "a test over them reports the exact value and no p-value",
    CENSUS: "every row of a table (personas, names, items) was used once: the interval treats the rows as a "
            "sample of the population the table stands for",
    DRAWN: "the subjects (personas, names, profiles) were drawn at random from a declared table or list: the "
           "interval is over that draw",
    SAMPLED_METHOD: "answers (or session paths) were sampled from the model: the within-subject sampling noise is "
                    "part of every variance, beside the spread over subjects",
    RECORDED: "each recorded person's own prompts (their condition, and in a session their own answers and the "
              "feedback they received) were scored once: a census of the recorded people; the interval, with the "
              "person as the unit, treats them as a sample of the population they came from",
    PEOPLE: "people's responses: the interval is over respondents, as in any survey",
}


def sample_words(kind: str) -> str:
    """The report's and METHODS.md's sentence for a `sample` value (a model kind, `people`, or KIND vs people)."""
    base = kind[:-len(VS_PEOPLE)] if kind.endswith(VS_PEOPLE) else kind
    return f"{base}: {SAMPLE_KINDS.get(base, base)}" + ("; tested against people's respondents" if base != kind else "")
