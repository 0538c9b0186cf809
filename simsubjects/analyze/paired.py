"""Kept for scripts that import `simsubjects.analyze.paired`: the module is `simsubjects.analyze.methods.paired`
(docs/architecture.md). This name is that same module object, so attributes and monkeypatches agree."""
import sys

from simsubjects.analyze.methods import paired as _module

sys.modules[__name__] = _module
