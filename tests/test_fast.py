"""Issue 17: the weight cache, --dtype and --device-map, --dry-run, and the rpy2/R version advice.

A tiny random Llama (with SmolLM2's tokenizer) stands in where the weights do not matter, so the
cache is exercised on a model folder in a second; the embedded model is the session fixture.
"""

from __future__ import annotations

import math

import pytest

from simsubjects.cli.commands import main
from simsubjects.collect.models import ChoiceRequest, load_model
from simsubjects.collect.models import weight_cache

REQUESTS = [ChoiceRequest("Question: Is the sky blue? Answer:", (" Yes", " No")),
            ChoiceRequest("The capital of France is", (" Paris", " London", " Rome"))]


@pytest.fixture(scope="module")
def tiny_folder(smollm2, tmp_path_factory):
    """A 2-layer random Llama with SmolLM2's tokenizer, saved as a transformers model folder."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    tok = smollm2.tokenizer
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    folder = tmp_path_factory.mktemp("tiny") / "tiny-llama"
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_cache_weights_for_a_model_folder(tiny_folder, tmp_path, monkeypatch):
    """--cache-weights: the first load writes an entry under SIMSUBJECTS_CACHE, later loads read it;
    the revision and the log-probabilities stay identical."""
    monkeypatch.setenv("SIMSUBJECTS_CACHE", str(tmp_path / "cache"))
    spec = f"hf:{tiny_folder}"
    first = load_model(spec, cache_weights=True)
    assert not first.weights_cached
    entry = weight_cache.lookup(first.info.revision)
    assert entry is not None and entry.parent.parent == tmp_path / "cache"  # the variable moves the cache
    assert (entry / "model.safetensors").exists() and (entry / weight_cache.COMPLETE).exists()
    second = load_model(spec, cache_weights=True)
    assert second.weights_cached
    assert second.info.revision == first.info.revision
    assert second.score(REQUESTS) == first.score(REQUESTS)
    assert second.tokenizer("a test, 1 2 3").input_ids == first.tokenizer("a test, 1 2 3").input_ids
    plain = load_model(spec)  # without the option a folder is read as it is
    assert not plain.weights_cached


def test_a_half_written_entry_is_ignored(tiny_folder, tmp_path, monkeypatch):
    monkeypatch.setenv("SIMSUBJECTS_CACHE", str(tmp_path / "cache"))
    revision = weight_cache.revision_of(tiny_folder)
    half = weight_cache.entry(revision)
    half.mkdir(parents=True)
    (half / "config.json").write_text("{")  # killed mid-write: no `complete` mark
    assert weight_cache.lookup(revision) is None
    model = load_model(f"hf:{tiny_folder}", cache_weights=True)
    assert not model.weights_cached
    assert weight_cache.lookup(revision) == half  # replaced by a whole entry
    again = load_model(f"hf:{tiny_folder}", cache_weights=True)
    assert again.weights_cached and again.score(REQUESTS) == model.score(REQUESTS)


def test_an_entrys_tokenizer_is_read_once_per_process(tiny_folder, tmp_path, monkeypatch):
    """Dry runs ask for the tokenizer once per study: the entry's tokenizer.json is parsed once per
    process, and read again when the entry is rewritten."""
    import shutil

    from transformers import PreTrainedTokenizerFast

    entry = tmp_path / "entry"
    shutil.copytree(tiny_folder, entry)
    reads = []
    real = PreTrainedTokenizerFast.from_pretrained.__func__
    monkeypatch.setattr(PreTrainedTokenizerFast, "from_pretrained",
                        classmethod(lambda cls, *a, **k: reads.append(a) or real(cls, *a, **k)))
    first = weight_cache.load_tokenizer(entry)
    assert weight_cache.load_tokenizer(entry) is first and len(reads) == 1
    text = (entry / "tokenizer.json").read_text()
    (entry / "tokenizer.json").write_text(text + "\n")  # rewritten: another size
    again = weight_cache.load_tokenizer(entry)
    assert again is not first and len(reads) == 2
    assert again("a test, 1 2 3").input_ids == first("a test, 1 2 3").input_ids


def test_bfloat16_on_cpu_differs_only_slightly(smollm2):
    bf16 = load_model("smollm2", dtype="bfloat16")
    assert bf16.info.details["dtype"] == "bfloat16" and bf16.fingerprint()["dtype"] == "bfloat16"
    assert "dtype" not in smollm2.fingerprint()  # float32 runs keep their identity (and request caches)
    assert next(bf16.model.parameters()).dtype.is_floating_point
    for a, b in zip(smollm2.score(REQUESTS), bf16.score(REQUESTS)):
        assert max(abs(x - y) for x, y in zip(a, b)) < 0.3
        assert a.index(max(a)) == b.index(max(b))
        assert a != b  # it really ran in another precision


def test_auto_dtype_is_float32_on_cpu_and_device_map_loads(tiny_folder):
    ref = load_model(f"hf:{tiny_folder}", device="cpu")
    assert ref.info.details["dtype"] == "float32"
    mapped = load_model(f"hf:{tiny_folder}", device_map="auto")
    assert mapped.info.details["device_map"] == "auto"
    got = mapped.score(REQUESTS)
    for a, b in zip(ref.score(REQUESTS), got):
        assert all(math.isclose(x, y, abs_tol=1e-6) for x, y in zip(a, b))


@pytest.mark.parametrize("args, message", [
    (["--dtype", "float8"], "--dtype"),
    (["--model", "openai:gpt-x@http://127.0.0.1:9/v1", "--dtype", "bfloat16"], "only for local models"),
    (["--dry-run", "--price-in", "-1"], "--price-in -1"),
])
def test_bad_precision_and_price_options(args, message, tmp_path, capsys):
    code = main(["collect", "ultimatum", "--pairs", "1", "--out", str(tmp_path / "x"), *args])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_dry_run_loads_no_weights_and_writes_nothing(smollm2, tmp_path, capsys, monkeypatch):
    from simsubjects.collect.models import hf

    def no_weights(*a, **k):
        raise AssertionError("a dry run loaded model weights")

    monkeypatch.setattr(hf.HFModel, "__init__", no_weights)
    out = tmp_path / "ug"
    assert main(["collect", "ultimatum", "--pairs", "2", "--out", str(out), "--dry-run", "--price-in", "2"]) == 0
    text = capsys.readouterr().out
    assert not out.exists()
    assert "price_max" in text and "ultimatum" in text
    # the counts are the embedded model's: 22 trials, 22 requests, prompt tokens by its tokenizer
    expected = sum(len(smollm2._encode(r.prompt)) for r in _ultimatum_requests(2))
    line = next(x for x in text.splitlines() if x.strip().startswith("ultimatum"))
    trials, requests, _forwards, generations, tokens = (int(v) for v in line.split()[1:6])
    assert (trials, requests, generations, tokens) == (22, 22, 0, expected)
    assert float(line.split()[-1]) == pytest.approx(expected * 2 / 1e6)


def _ultimatum_requests(pairs: int):
    from simsubjects.collect.studies.registry import get_study

    trials, _ = get_study("ultimatum").build(pairs=pairs, seed=0)
    return [ChoiceRequest(p, tuple(o)) for p, o in zip(trials["prompt"], trials["options"])]


def test_dry_run_of_an_api_model_prices_with_the_given_tokenizer(tmp_path, capsys):
    code = main(["collect", "ultimatum", "--pairs", "1", "--out", str(tmp_path / "x"), "--dry-run",
                 "--model", "openai:gpt-x@http://127.0.0.1:9/v1", "--price-in", "1", "--price-out", "4"])
    text = capsys.readouterr().out
    assert code == 0 and "approximation" in text and "forwards" not in text
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("rpy2, r, fits", [("3.6.9", "4.2.2", False), ("3.5.17", "4.2.2", True),
                                           ("3.6.1", "4.5.0", True), (None, "4.2.2", True)])
def test_rpy2_and_r_version_advice(rpy2, r, fits):
    from simsubjects.analyze.r_versions import fit_advice

    advice = fit_advice(rpy2, r)
    assert (advice is None) == fits
    if not fits:
        assert "rpy2==3.5.17" in advice and "R 4.2.2" in advice


def test_a_runs_versions_are_read_without_importing_torch():
    """A collection on a server's model records torch's and transformers' versions from their installed
    metadata: importing them only for the manifest took several seconds of every such `collect`."""
    import subprocess
    import sys

    import torch
    import transformers

    code = ("import sys; from simsubjects.collect.pipeline import versions; v = versions(); "
            "print(v['torch'], v['transformers'], 'torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [torch.__version__, transformers.__version__, "False", "False"]
