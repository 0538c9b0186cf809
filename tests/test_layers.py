"""The package's layers (docs/architecture.md), read from the source with `ast`: no import circle
among modules, and every import that climbs to a higher layer is one of the few listed here, each
with a comment on its line. Imports inside functions (and under TYPE_CHECKING) count as imports.
A "module:function" string naming package code is an import the graph cannot see: it fails too."""
from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "simsubjects"

# bottom first: a module may import its own layer and the layers below it
LAYERS = [
    ("base", ["simsubjects", "simsubjects.errors", "simsubjects.redact"]),
    ("collect", ["simsubjects.datasets", "simsubjects.collect"]),
    ("analyze", ["simsubjects.analyze"]),
    ("studies", ["simsubjects.studies"]),
    ("studyfile", ["simsubjects.studyfile"]),
    ("papers", ["simsubjects.papers", "simsubjects.bench"]),
    ("publish", ["simsubjects.publish"]),
    ("cli", ["simsubjects.cli"]),
    ("entry", ["simsubjects.launch", "simsubjects.__main__"]),
]
# (importing module, imported module): imports allowed to climb, at most 3, each commented where it is
CLIMBS = {
    ("simsubjects.collect.personas", "simsubjects.studyfile.limits"),
}


def modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def imports(name: str, path: Path, known: dict) -> list[tuple[str, int]]:
    """(imported module, line) of every import statement in the file, at any depth."""
    is_pkg = path.name == "__init__.py"
    pkg = name.split(".") if is_pkg else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg[:len(pkg) - node.level + 1] + ([node.module] if node.module else []))
            for a in node.names:  # `from pkg import module` imports that module
                sub = f"{base}.{a.name}"
                found.append((sub if sub in known else base, node.lineno))
    return [(m, line) for m, line in found if m.split(".")[0] == "simsubjects" and m != name]


def layer(name: str) -> int:
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    assert rank is not None, f"{name}: in no layer of docs/architecture.md (add it to LAYERS)"
    return rank


def graph() -> dict[str, set[str]]:
    mods = modules()
    g = {m: set() for m in mods}
    for m, f in mods.items():
        for t, _ in imports(m, f, mods):
            while t not in mods and "." in t:  # `import simsubjects.x.y` names a module; an attribute's owner
                t = t.rsplit(".", 1)[0]
            if t in mods and t != m:
                g[m].add(t)
    return g


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), and modules importing themselves."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        work = [(v, iter(sorted(g[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_circles_are_found():
    """The finder itself: a three-module ring and a pair are reported, a chain is not."""
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}, "x": set()}
    assert sorted(circles(g)) == [["a", "b", "c"], ["d", "e"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    assert circles(graph()) == []


def test_function_level_imports_are_read():
    """`simsubjects.cli.commands` imports publish.analysis only inside a function: the graph has it."""
    assert "simsubjects.publish.analysis" in graph()["simsubjects.cli.commands"]


def test_imports_climb_only_where_listed_and_commented():
    mods = modules()
    climbs = []
    for m, f in sorted(mods.items()):
        lines = f.read_text(encoding="utf-8").splitlines()
        for t, line in imports(m, f, mods):
            if layer(t) > layer(m):
                climbs.append((m, t))
                assert (m, t) in CLIMBS, f"{f}:{line}: {m} ({LAYERS[layer(m)][0]}) imports {t} " \
                                         f"({LAYERS[layer(t)][0]}), a higher layer (docs/architecture.md)"
                assert "#" in lines[line - 1], f"{f}:{line}: a climbing import says why in a comment"
    assert len(CLIMBS) <= 3 and set(climbs) == CLIMBS


def test_only_publish_renders_html():
    for m, f in modules().items():
        if m.startswith("simsubjects.publish"):
            continue
        text = f.read_text(encoding="utf-8")
        assert "htmlkit" not in text and "<p class=" not in text and "<div" not in text, f"{f}: HTML outside publish/"


def test_at_most_six_loose_modules():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 6, loose


# The model spec is parsed once, at the command's edge (cli/); below it a ModelSpec value is passed.
# The parser's own module defines it, and the Python API's entry points (a user script names the
# model as text) parse through `model_spec` in exactly these functions.
SPEC_PARSERS = {"parse_spec", "model_spec"}
SPEC_EDGES = {("simsubjects.collect.models.spec", "model_spec"), ("simsubjects.collect.models", "load_model"),
              ("simsubjects.collect.pipeline", "run_study"), ("simsubjects.collect.ray_engine", "__init__"),
              # a session file names another player's model: parsed once where the file is read, the
              # study file's edge as --model is the command's (studyfile/players.py)
              ("simsubjects.studyfile.players", "_model")}


def spec_parses(name: str, path: Path) -> list[tuple[str, int]]:
    """(enclosing function, line) of every call of the spec parser in the file."""
    found = []

    def walk(node, fn):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(child, child.name)
                continue
            if isinstance(child, ast.Call):
                f = child.func
                called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if called in SPEC_PARSERS:
                    found.append((fn, child.lineno))
            walk(child, fn)

    walk(ast.parse(path.read_text(encoding="utf-8")), "<module>")
    return found


def test_spec_parser_finder():
    """The finder itself, on a file that calls the parser inside a method and at module level."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "m.py"
        f.write_text("class A:\n    def go(self, s):\n        return models.parse_spec(s)\n\nx = model_spec('smollm2')\n")
        assert sorted(spec_parses("m", f)) == [("<module>", 5), ("go", 3)]


def test_only_the_cli_parses_a_model_spec():
    for m, f in sorted(modules().items()):
        if m.startswith("simsubjects.cli"):
            continue
        for fn, line in spec_parses(m, f):
            assert (m, fn) in SPEC_EDGES, f"{f}:{line}: {m}.{fn} parses a model spec string; parse it in cli/ " \
                                          "and pass the ModelSpec down (collect/models/spec.py)"


# "package.module:function" (or "package.module:Class.attr"): how code names code in text
REF = re.compile(r"([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*):([A-Za-z_][\w.]*)")


def code_references(path: Path, known: dict) -> list[tuple[str, int]]:
    """(text, line) of every string constant of the file that is a "module:function" reference to a
    module of the package (absolute, as `simsubjects.analyze.x:f`, or relative to the package root)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = REF.fullmatch(node.value.strip())
            if m is None:
                continue
            mod = m.group(1)
            if mod in known or f"simsubjects.{mod}" in known:
                found.append((node.value, node.lineno))
    return found


def test_string_reference_finder():
    """The finder itself: a reference to a package module is found, absolute or from the package root;
    a time, a URL and a reference to another package are not."""
    import tempfile

    known = {"simsubjects.analyze.tidy": Path("x"), "simsubjects.studies.milgram.analysis": Path("y")}
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "m.py"
        f.write_text('a = "simsubjects.analyze.tidy:prob_of"\nb = "studies.milgram.analysis:summary"\n'
                     'c = "12:30"\nd = "http://x:80"\ne = "numpy.linalg:solve"\n')
        assert code_references(f, known) == [("simsubjects.analyze.tidy:prob_of", 1),
                                             ("studies.milgram.analysis:summary", 2)]


def test_no_module_function_strings():
    """A study's parts are joined by imports (docs/architecture.md): text that names package code is
    resolved at run time, out of the layer test's sight, so it fails here as a climbing import does."""
    mods = modules()
    bad = [f"{f}:{line}: {text!r}" for m, f in sorted(mods.items()) for text, line in code_references(f, mods)]
    assert bad == [], "import the function instead of naming it as text:\n" + "\n".join(bad)


# issue 37, item 3: study files go through one door. The kind of a study file (plain, session, obedience)
# is told by spec.study_kind and acted on by door.load_any only; every other module loads through the door.
KIND_DOOR = {"simsubjects.studyfile.spec", "simsubjects.studyfile.door"}


def kind_calls(path: Path) -> list[int]:
    """Lines that call `study_kind` (as a name or an attribute) or import it."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == "study_kind") or \
                    (isinstance(f, ast.Attribute) and f.attr == "study_kind"):
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "study_kind" for a in node.names):
            lines.append(node.lineno)
    return lines


def test_kind_finder():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "m.py"
        f.write_text("from .spec import study_kind\n\ndef go(p):\n    return spec.study_kind(p), study_kind(p)\n")
        assert sorted(kind_calls(f)) == [1, 4, 4]


def test_study_files_go_through_one_door():
    for m, f in sorted(modules().items()):
        if m in KIND_DOOR:
            continue
        lines = kind_calls(f)
        assert not lines, f"{f}:{lines[0]}: {m} tells a study file's kind itself; load it with " \
                          "studyfile/door.load_any (the one plain/session/obedience dispatch)"
