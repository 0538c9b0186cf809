"""`simsubjects bench`: a corpus of published findings run on a model and scored against people (docs/bench.md)."""
