"""Written once (issue 22): one function derives a seed from text, and a study parameter's default
lives in build()'s signature, which the CLI option reads. Both are refactors that change no number:
the seeds are compared with the formulas the modules used before (computed here with hashlib)."""
from __future__ import annotations

import ast
import hashlib
import inspect
import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from simsubjects.collect.seeds import rng_from_text, seed_from_text
from simsubjects.collect.studies.registry import studies

PACKAGE = Path(__file__).resolve().parents[1] / "simsubjects"


def test_seed_from_text_is_the_formula_the_modules_used():
    # studyfile/design.py and session_run.py: sha256 of the parts joined by \x1f, 8 bytes, numpy
    want = np.random.default_rng(int.from_bytes(hashlib.sha256("1\x1forder\x1fp1\x1fq".encode()).digest()[:8], "little"))
    assert (rng_from_text(1, "order", "p1", "q").permutation(9) == want.permutation(9)).all()
    # studyfile/collect.py: a generation seed per trial, 4 bytes
    assert seed_from_text(7, "p1 | q") == int.from_bytes(hashlib.sha256(b"7\x1fp1 | q").digest()[:8], "little")
    assert seed_from_text(7, "p1 | q", nbytes=4) == int.from_bytes(hashlib.sha256(b"7\x1fp1 | q").digest()[:4], "little")
    # collect/models/hf.py: a sampled generation's seed, from the request key as JSON
    from simsubjects.collect.models.hf import _seed_of

    obj = [["prompt", 3], 2]
    assert _seed_of(obj) == int.from_bytes(hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).digest()[:4],
                                           "little")


# a hash of text (hashlib, zlib) turned into a seed: by int.from_bytes, or passed to a generator
HASHES = {"sha256", "sha1", "md5", "sha512", "blake2b", "blake2s", "crc32", "adler32", "new"}
SEEDED = {"default_rng", "Random", "RandomState", "seed", "manual_seed", "SeedSequence", "PCG64"}
# the derivations that stay apart (collect/seeds.py's docstring says why): (module file, function)
OTHER_DERIVATIONS = {("collect/seeds.py", "seed_from_text"),
                     ("studies/moca/analysis.py", "_rng")}  # MoCa's AMCE bootstrap: crc32 of the key


def _called(call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def seed_derivations(path) -> list[tuple[str, int]]:
    """(function, line) of every function (or the module's own statements) that hashes with hashlib or
    zlib and makes a seed of it: calls int.from_bytes, or gives a hash to a generator or seed call.
    Read from the syntax tree, so a derivation spread over lines or names is found."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scopes = [(n.name, n.lineno, n) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    top = ast.Module([s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                  ast.ClassDef))], [])
    found = []
    for name, line, node in [*scopes, ("<module>", 1, top)]:
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)]
        hashes = [c for c in calls if _called(c) in HASHES and isinstance(c.func, ast.Attribute)
                  and getattr(c.func.value, "id", "") in ("hashlib", "zlib")]
        if not hashes:
            continue
        into_seed = any(_called(c) == "from_bytes" for c in calls) or any(
            _called(c) in SEEDED and any(isinstance(x, ast.Call) and _called(x) in HASHES
                                         for a in [*c.args, *(k.value for k in c.keywords)] for x in ast.walk(a))
            for c in calls)
        if into_seed:
            found.append((name, line))
    return found


def test_seed_derivation_finder(tmp_path):
    """The finder itself: a derivation over two lines and one through crc32 into a generator are found;
    a checksum that seeds nothing is not."""
    f = tmp_path / "m.py"
    f.write_text("import hashlib, zlib\nimport numpy as np\n\ndef a(*p):\n    h = hashlib.sha256(repr(p).encode())\n"
                 "    d = h.digest()\n    return int.from_bytes(d[:4], 'big')\n\n"
                 "def b(k):\n    return np.random.default_rng([0, zlib.crc32(k)])\n\n"
                 "def c(data):\n    return hashlib.sha256(data).hexdigest()\n")
    assert seed_derivations(f) == [("a", 4), ("b", 9)]


def test_no_module_derives_a_seed_from_text_by_itself():
    """A seed made from text is collect/seeds.py's; the derivations left apart are listed above and named
    in its docstring (random.Random of the text in option_order.py hashes nothing itself)."""
    found = [(f, name, line) for f in PACKAGE.rglob("*.py") for name, line in seed_derivations(f)
             if (f.relative_to(PACKAGE).as_posix(), name) not in OTHER_DERIVATIONS]
    assert found == [], found


def test_an_option_default_is_written_once_in_build():
    """No built-in option repeats the default its build() parameter declares, and each option shows
    build's default (so `collect STUDY --help`, the command and `make()` agree)."""
    runner = CliRunner()
    from simsubjects.cli.commands import cli

    for name, study in sorted(studies().items()):
        try:
            sig = inspect.signature(study.build)
        except (TypeError, ValueError):
            continue
        for o in study.options:
            p = sig.parameters.get(o.param)
            if p is None or p.default is p.empty:
                continue
            assert o.param not in study._written, f"{name}: --{o.param} writes its default again; build() has it"
            assert o.kwargs["default"] == p.default
        out = runner.invoke(cli, ["collect", name, "--help"], terminal_width=100).output
        for o in study.options:
            p = sig.parameters.get(o.param)
            if p is not None and p.default not in (p.empty, None, "") and o.kwargs.get("show_default"):
                assert f"[default: {p.default}]" in " ".join(out.split()), (name, o.param)


def test_openai_request_seed_is_the_formula_it_used():
    """openai_scoring._stable_seed now calls seed_from_text: the same 30-bit seeds as its own sha256 did."""
    from simsubjects.collect.models.openai_scoring import _stable_seed

    for parts in [("p",), ("Question: x?", " yes", " no"), ("",)]:
        old = int.from_bytes(hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()[:4], "big") & 0x3FFFFFFF
        assert _stable_seed(*parts) == old


def test_survey_bias_seed_is_the_big_endian_formula():
    from simsubjects.studies.survey_bias.design import _stable_seed

    assert _stable_seed("acquiescence", "q1", 0) == int.from_bytes(
        hashlib.sha256(b"acquiescence\x1fq1\x1f0").digest()[:8], "big")
