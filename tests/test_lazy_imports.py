"""Issue 37, item 5: imports sit at the top of a module; one inside a function stays only where start-up
time needs it, and says so on its line. `simsubjects --help` imports no heavy library."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ["cli", "collect", "studyfile"]  # checked here; studies/, analyze/, datasets/, publish/ were done before
HEAVY = {"pandas", "numpy", "scipy", "statsmodels", "torch", "transformers", "matplotlib", "pyarrow", "yaml",
         "ray", "openai", "rdata", "pyreadstat", "rpy2"}


def function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, text of the line) of every import statement inside a function of the file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = set()
    for fn in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.update((n.lineno, lines[n.lineno - 1]) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return sorted(out)


def test_the_finder_reads_nested_function_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import os\n\ndef a():\n    import json  # lazy: x\n\n    def b():\n        import re\n")
    assert function_imports(f) == [(4, "    import json  # lazy: x"), (7, "        import re")]


def test_every_function_level_import_says_why():
    bare = [f"{p.relative_to(ROOT)}:{line}: {text.strip()}"
            for folder in FOLDERS for p in sorted((ROOT / "simsubjects" / folder).rglob("*.py"))
            for line, text in function_imports(p) if "#" not in text]
    assert bare == [], "import it at the top of the module, or say on its line what importing it costs:\n" + \
        "\n".join(bare)


def test_help_imports_no_heavy_library():
    code = ("import sys, json\nsys.argv = ['simsubjects', '--help']\nfrom simsubjects.launch import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write(json.dumps(sorted(sys.modules)))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    mods = json.loads(r.stderr.strip().splitlines()[-1])
    assert "Usage" in r.stdout
    assert sorted({m.split(".")[0] for m in mods} & HEAVY) == []
    assert "simsubjects.collect.studies.registry" not in mods  # the study registry imports every study
