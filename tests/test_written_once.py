"""Written once (issue 22): one function derives a seed from text, and a study parameter's default
lives in build()'s signature, which the CLI option reads. Both are refactors that change no number:
the seeds are compared with the formulas the modules used before (computed here with hashlib)."""
from __future__ import annotations

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


def test_no_module_derives_a_seed_from_text_by_itself():
    """sha256 of text turned into a seed is collect/seeds.py's; the two derivations left (random.Random
    of the text in option_order.py, crc32 in studies/moca/analysis.py) are named in its docstring."""
    for f in PACKAGE.rglob("*.py"):
        if f.name == "seeds.py":
            continue
        text = f.read_text(encoding="utf-8")
        assert "int.from_bytes(hashlib.sha256" not in text and 'default_rng(int.from_bytes' not in text, f


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


def test_survey_bias_seed_is_the_big_endian_formula():
    from simsubjects.studies.survey_bias.design import _stable_seed

    assert _stable_seed("acquiescence", "q1", 0) == int.from_bytes(
        hashlib.sha256(b"acquiescence\x1fq1\x1f0").digest()[:8], "big")
