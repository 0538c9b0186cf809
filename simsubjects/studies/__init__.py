"""The built-in studies, one folder each (docs/architecture.md, "Where to add").

A folder's `__init__.py` declares the study (`StudyDef`), joined by imports to its design, analysis,
report block (data: analyze/blocks.py) and `--check-r` piece beside it; collect/studies/registry.py
discovers every folder here, so adding one edits no list. The modules beside the folders are shared
by several studies: `_papers.py` (the bundled papers), `names.py` (name pools), `aher2023.py`
(Table 1's validity block) and `order_effects.py` (the order-effect block).
"""
