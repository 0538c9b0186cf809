"""Every module of the package imports when it is the first one imported (issue 37's hoisted imports).

tests/test_layers.py reads import circles between modules from the syntax tree, but a package's
`__init__` runs when any of its modules is imported, and that circle is not an edge it sees:
`collect/choice.py` imports `models.base`, whose package imports `models/hf.py`, which imported a name
from the half-made `choice` (the merge of this stop did that; every test that imported anything before
`choice` passed). One child process clears the package from `sys.modules` before each import.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for m in [m for m in sys.modules if m == "simsubjects" or m.startswith("simsubjects.")]:
        del sys.modules[m]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\n".join(failed))
"""


def _modules() -> list[str]:
    out = []
    for path in sorted((ROOT / "simsubjects").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        if rel.name == "__main__":
            continue  # running it is the command line
        out.append(".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts))
    return out


def test_every_module_imports_first():
    mods = _modules()
    assert len(mods) > 150
    r = subprocess.run([sys.executable, "-c", CHILD, *mods], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "", r.stdout
