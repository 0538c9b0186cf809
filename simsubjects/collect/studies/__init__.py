"""One module per study: trials, prompts and parsers, declared as StudyDef objects (see registry.py)."""
