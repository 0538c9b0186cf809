"""Kept for scripts that import `simsubjects.analyze.conjoint`: the module is `simsubjects.analyze.methods.conjoint`
(docs/architecture.md). This name is that same module object, so attributes and monkeypatches agree."""
import sys

from simsubjects.analyze.methods import conjoint as _module

sys.modules[__name__] = _module
