"""simsubjects: language models as simulated participants, analyzed beside real people."""

__version__ = "0.1.0"
