"""Kept for existing imports: the classical tests now live in simsubjects.analyze.methods.tests."""

from .methods.tests import (anova_test, kruskal_test, mean_se, one_sample_t, one_sample_test,  # noqa: F401
                            welch_t, welch_test)
