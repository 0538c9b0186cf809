"""Kept for scripts that import `simsubjects.analyze.multiplicity`: the module is `simsubjects.analyze.methods.multiplicity`
(docs/architecture.md). This name is that same module object, so attributes and monkeypatches agree."""
import sys

from simsubjects.analyze.methods import multiplicity as _module

sys.modules[__name__] = _module
