"""simsubjects bench: a corpus of published findings, run on any model and scored against the people."""
