"""Which answer options are refusals: one rule for every reader of people's answers (ATP, OpinionQA)
and for the survey-bias study's forms, which leave refusals out of ordinal distributions."""

from __future__ import annotations

import re

_REFUSAL = re.compile(r"^\s*(don[’']?t know|do not know|refused?|not sure|no answer|no opinion|"
                      r"prefer not to (say|answer))\b", re.IGNORECASE)


def is_refusal(option: str) -> bool:
    """A refusal or "Don't know" option (excluded from ordinal distributions)."""
    return bool(_REFUSAL.match(str(option)))
