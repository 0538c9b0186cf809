"""Kept for scripts that import `simsubjects.analyze.representativeness`: the module is `simsubjects.analyze.methods.representativeness`
(docs/architecture.md). This name is that same module object, so attributes and monkeypatches agree."""
import sys

from simsubjects.analyze.methods import representativeness as _module

sys.modules[__name__] = _module
