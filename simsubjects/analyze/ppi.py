"""Kept for scripts that import `simsubjects.analyze.ppi`: the module is `simsubjects.analyze.methods.ppi`
(docs/architecture.md). This name is that same module object, so attributes and monkeypatches agree."""
import sys

from simsubjects.analyze.methods import ppi as _module

sys.modules[__name__] = _module
