"""The `openai` backend against a real OpenAI-compatible server: llama-cpp-python on 127.0.0.1.

Every request loop here is bounded (few requests, small retry budgets, short timeouts).
Run: python -m pytest tests/test_openai_backend.py -q -m server
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from simsubjects.collect.models.base import ChoiceRequest, CompletionRequest
from simsubjects.collect.models.openai_api import (
    OpenAIModel,
    _match,
    _prompt_logprob_tokens,
    _retry_after,
    _suffix_logprob,
    _total_logprob,
)
from simsubjects.errors import UserError
from tests.fault_proxy import FaultProxy
from tests.llama_server import free_port, llama_server, llama_server_bos  # noqa: F401 (fixtures)

pytestmark = pytest.mark.server

MODEL = "smollm2"
COMPLETIONS, MODELS = "POST /v1/completions", "GET /v1/models"  # FaultProxy's counts per route
# Single-token completions (all in the next-token top 20 of this model), so the default server,
# whose only exact path is the next-token top list, scores them exactly.
ITEMS = [
    ("Question: Is the sky blue? Answer:", (" Yes", " No")),
    ("The capital of France is", (" Paris", " London", " the")),
    ("Question: Is fire cold? Answer:", (" Yes", " No")),
    ("Q: Would you accept $3 out of $10? A:", (" Yes", " No")),
]

# Thirty more whose answers are in the top 20 (some only after EOS redraws): the fault-injection set.
FAULT_ITEMS = [ChoiceRequest(f"Question {i}: Would you accept ${i % 10} out of $10? Answer:", (" Yes", " No"))
               for i in range(30)]
N_SPREAD = 8  # FAULT_ITEMS[:N_SPREAD]: the load-spreading and fault-injection runs (16 before; no check needs more)


@pytest.fixture(autouse=True)
def _no_real_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # never send a real key to loopback servers


def _model(url, **kw) -> OpenAIModel:
    kw.setdefault("timeout", 30)  # bounded: a stuck server fails a test in minutes, not hours
    kw.setdefault("max_retries", 3)
    kw.setdefault("backoff", 0.05)
    return OpenAIModel(MODEL, url, **kw)


def _assert_exact(r, k):
    assert r.failed is None, r.failed
    assert r.method == "exact"
    assert len(r.probs) == k and math.isclose(sum(r.probs), 1.0, abs_tol=1e-9)
    assert 0.0 < r.validity <= 1.0
    assert r.n_queries >= 1


# -- an independent computation: transformers on the same GGUF ----------------------------------------

@pytest.fixture(scope="module")
def hf_reference(smollm2):
    """log p(c | s) = log p(s·c) - log p(s) from transformers on the dequantized GGUF weights: the session's
    model object (transformers' GGUF load, read back from the weight cache that test_fast.py checks; loading
    the GGUF again here took 30 s), its logits summed here, not by the package's scorer."""
    import torch

    tok, model = smollm2.tokenizer, smollm2.model

    cache: dict = {}

    def total(text: str, bos: bool) -> float:
        if (text, bos) not in cache:
            ids = ([tok.bos_token_id] if bos else []) + tok(text, add_special_tokens=False).input_ids
            threads = torch.get_num_threads()
            torch.set_num_threads(1)  # tiny inputs: extra threads only fight the servers for the cores
            try:
                with torch.no_grad():
                    logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
            finally:
                torch.set_num_threads(threads)
            cache[text, bos] = float(sum(logp[i - 1, ids[i]] for i in range(1, len(ids))))
        return cache[text, bos]

    def logprob(prompt: str, completion: str, bos: bool = False) -> float:
        return total(prompt + completion, bos) - total(prompt, bos)

    return logprob


# Why these tolerances: transformers runs the dequantized Q4_1 weights in fp32, while llama.cpp
# multiplies the same 4-bit weights with activations quantized to 8 bits (Q8_1), so log-probabilities
# differ by up to ~0.2 nats per token (measured: 0.02-0.18 on these items). We require per-token
# agreement within 0.35 nats, normalized probabilities within 0.1, and the same ranking wherever the
# reference's margin exceeds 0.5 nats (beyond what the quantization noise can flip).
PER_TOKEN_NATS = 0.35


def _compare_with_reference(result, ref_logprobs, n_tokens):
    for got, want, n in zip(result.logprobs, ref_logprobs, n_tokens):
        assert abs(got - want) <= PER_TOKEN_NATS * n, (result.logprobs, ref_logprobs)
    m = max(ref_logprobs)
    w = [math.exp(x - m) for x in ref_logprobs]
    ref_probs = [x / sum(w) for x in w]
    for p, q in zip(result.probs, ref_probs):
        assert abs(p - q) < 0.1, (result.probs, ref_probs)
    for i in range(len(ref_logprobs)):
        for j in range(len(ref_logprobs)):
            if ref_logprobs[i] > ref_logprobs[j] + 0.5:
                assert result.logprobs[i] > result.logprobs[j], (result.logprobs, ref_logprobs)


# -- the exact paths -----------------------------------------------------------------------------------

def test_default_server_uses_top_logprobs_because_echo_is_misaligned(llama_server):
    """llama-cpp-python shifts echoed log-probabilities by one token when there is no BOS token;
    the backend detects that and scores from next-token top log-probabilities instead."""
    prompt = "The capital of France is"
    nxt = httpx.post(f"{llama_server}/completions", timeout=60, json={
        "model": MODEL, "prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": 1}).json()
    tok, lp_next = nxt["choices"][0]["logprobs"]["tokens"][0], nxt["choices"][0]["logprobs"]["token_logprobs"][0]
    echo = httpx.post(f"{llama_server}/completions", timeout=60, json={
        "model": MODEL, "prompt": prompt + tok, "max_tokens": 1, "temperature": 0, "logprobs": 1, "echo": True,
    }).json()["choices"][0]["logprobs"]
    lp_echo = echo["token_logprobs"][echo["text_offset"].index(len(prompt))]
    assert abs(lp_echo - lp_next) > 1.0  # the server bug this backend guards against

    with _model(llama_server) as m:
        results = m.choose([ChoiceRequest(p, c) for p, c in ITEMS])
        info = m.info
    assert info.details["choice_method"] == "top" and info.details["api"] == "completions"
    assert info.backend == "openai" and info.revision == MODEL
    for r, (_, comps) in zip(results, ITEMS):
        _assert_exact(r, len(comps))
        assert r.n_queries == 1
    # The top list is the same distribution the server samples from: its own next-token logprob.
    assert results[1].logprobs[0] == pytest.approx(lp_next, abs=1e-4)


def test_top_path_agrees_with_transformers(llama_server, hf_reference):
    with _model(llama_server) as m:
        results = m.choose([ChoiceRequest(p, c) for p, c in ITEMS])
    for r, (prompt, comps) in zip(results, ITEMS):
        _assert_exact(r, len(comps))
        _compare_with_reference(r, [hf_reference(prompt, c) for c in comps], [1] * len(comps))


def test_echo_path_multi_token_and_straddling_boundary(llama_server_bos, hf_reference):
    clean = ChoiceRequest("Question: Is the sky blue? Answer:", (" Yes", " No"))
    straddle = ChoiceRequest("Question: Is the sky blue? Answer: ", ("Yes", "No"))  # " Yes" spans the boundary
    multi = ChoiceRequest("The capital of France is", (" Paris", " London", " Berlin is nice"))
    with _model(llama_server_bos) as m:
        r_clean, r_straddle, r_multi = m.choose([clean, straddle, multi])
        assert m.info.details["choice_method"] == "echo"
    for r, req in ((r_clean, clean), (r_straddle, straddle), (r_multi, multi)):
        _assert_exact(r, len(req.completions))
    assert r_clean.n_queries == 2 and r_multi.n_queries == 3
    assert r_straddle.n_queries == 3  # two completions + the prompt scored alone
    # Same strings, so p(s·c)/p(s) gives the same normalized probabilities as the clean split.
    assert r_straddle.probs == pytest.approx(r_clean.probs, abs=1e-6)

    # Echo agrees with the server's own next-token log-probabilities (a different code path). The
    # prompt is evaluated afresh: were it a prefix of the cached last request, llama.cpp would
    # re-evaluate its last token alone, with a single-token Q4 kernel that differs by ~0.04.
    httpx.post(f"{llama_server_bos}/completions", timeout=60, json={"model": MODEL, "prompt": "Hello", "max_tokens": 1})
    nxt = httpx.post(f"{llama_server_bos}/completions", timeout=60, json={
        "model": MODEL, "prompt": clean.prompt, "max_tokens": 1, "temperature": 0, "logprobs": 20}).json()
    top = nxt["choices"][0]["logprobs"]["top_logprobs"][0]
    assert r_clean.logprobs == pytest.approx([top[" Yes"], top[" No"]], abs=1e-3)

    # And transformers (BOS prepended, like this server) within the quantization tolerance.
    _compare_with_reference(r_clean, [hf_reference(clean.prompt, c, bos=True) for c in clean.completions], [1, 1])
    _compare_with_reference(r_multi, [hf_reference(multi.prompt, c, bos=True) for c in multi.completions], [1, 1, 3])


def test_chat_endpoint_top_logprobs(llama_server):
    with _model(llama_server, api="chat") as m:
        (r,) = m.choose([ChoiceRequest("Is the sky blue? Answer Yes or No.", ("Yes", "No"))])
        assert m.info.details["api"] == "chat"
    _assert_exact(r, 2)  # chat's top 20 here holds "No" (-1.2) and "Yes" (-2.9)
    assert r.probs[1] > r.probs[0]


# -- sampling and free text --------------------------------------------------------------------------

def test_sampling_path_counts_draws(llama_server):
    with _model(llama_server, logprobs="off") as m:
        r, impossible = m.choose([
            ChoiceRequest("The capital of France is", (" Paris", " London"), n=8),
            ChoiceRequest("The capital of France is", ("zqxv", "qqzvx"), n=1),
        ])
        details = m.info.details
    assert details["choice_method"] == "sample"
    assert details["n_supported"] is False  # llama-cpp-python ignores `n`: one draw per request
    assert r.method == "sampled" and r.failed is None
    assert r.n_samples == sum(r.counts) == 8
    assert r.n_queries >= 8 and r.validity == pytest.approx(8 / r.n_queries)
    assert math.isclose(sum(r.probs), 1.0)
    assert r.counts[0] > r.counts[1]  # Paris is the likelier answer by far
    # A choice nobody gives stops at the cap of 20*n draws (n=1 here: 20 requests; test_choice.py checks
    # the cap for n=2) and says so; it is an answer, not a failure.
    assert impossible.failed is None and "only 0 of 1 valid" in impossible.short and "in 20 draws" in impossible.short
    assert impossible.n_queries == 20 and impossible.n_samples == 0


def test_n_per_request_where_the_server_supports_it(llama_server):
    """Through a proxy that honours `n` (as OpenAI and vLLM do) the backend draws several samples per
    request, and since the proxy seeds them seed, seed+1, ... the draws equal the one-per-request ones."""
    choice = ChoiceRequest("The capital of France is", (" Paris", " London"), n=6)
    text = CompletionRequest("Once upon a time", n=3, temperature=0.9, max_tokens=8, seed=11)
    with _model(llama_server, logprobs="off") as m:
        (direct,) = m.choose([choice])
        (direct_text,) = m.complete([text])
    with FaultProxy(llama_server.removesuffix("/v1"), emulate_n=True) as proxy:
        with _model(proxy.base_url, logprobs="off") as m:
            (batched,) = m.choose([choice])
            (batched_text,) = m.complete([text])
            assert m.info.details["n_supported"] is True
            sampling_requests = m.stats["requests"]
    assert proxy.counts["fanned_out"] >= 2
    assert batched.counts == direct.counts and batched.n_queries == direct.n_queries
    assert batched_text.texts == direct_text.texts and batched_text.n_queries == 1
    assert sampling_requests < direct.n_queries  # draws went in batches, not one per request


def test_complete_returns_text_and_respects_seed(llama_server):
    req = CompletionRequest("Once upon a time", n=3, temperature=0.8, max_tokens=12, stop=("\n",), seed=7)
    with _model(llama_server) as m:
        (a,) = m.complete([req])
        (b,) = m.complete([req])
    assert a.failed is None and len(a.texts) == 3 and a.n_queries == 3
    assert all(isinstance(t, str) and t and "\n" not in t for t in a.texts)
    assert a.texts == b.texts  # llama.cpp honours the per-request seed


# -- concurrency, several URLs, rate limit --------------------------------------------------------------

@pytest.fixture(scope="module")
def spread_run(llama_server):  # noqa: F811
    """FAULT_ITEMS[:N_SPREAD] through two clean proxies of the same server, as if it were two replicas: the
    load-spreading test's run, and the clean reference of the fault-injection test (the proxies
    forward bodies unchanged, so it is the server's own answer)."""
    with FaultProxy(llama_server.removesuffix("/v1")) as p1, FaultProxy(llama_server.removesuffix("/v1")) as p2:
        with _model([p1.base_url, p2.base_url], concurrency=2) as m:
            m.choose(FAULT_ITEMS[:1])  # the probe, outside the timing below
            t = time.monotonic()
            results = m.choose(FAULT_ITEMS[:N_SPREAD])
            elapsed = time.monotonic() - t
            n_base_urls = m.fingerprint()["n_base_urls"]
    return results, (p1.counts["forwarded"], p2.counts["forwarded"]), n_base_urls, elapsed


def test_several_base_urls_spread_the_load(spread_run):
    results, (a, b), n_base_urls, _ = spread_run
    assert n_base_urls == 2
    assert all(r.failed is None and r.method == "exact" for r in results)
    assert a + b >= N_SPREAD and min(a, b) >= 0.25 * (a + b), (a, b)


def test_rate_limit_per_endpoint(llama_server):
    with _model(llama_server, requests_per_second=4.0) as m:
        m.choose([ChoiceRequest(*ITEMS[0])])  # probing happens here
        t = time.monotonic()
        results = m.choose([ChoiceRequest(f"Q{i}: Is the sky blue? Answer:", (" Yes", " No")) for i in range(6)])
        elapsed = time.monotonic() - t
    assert all(r.failed is None for r in results)
    assert elapsed >= 5 / 4.0 - 0.1  # six requests at 4/s: at least 1.25 s


# -- reliability ------------------------------------------------------------------------------------------


def test_faults_are_retried_to_the_same_probabilities(llama_server, spread_run):
    clean, _, _, clean_elapsed = spread_run  # FAULT_ITEMS[:N_SPREAD], through clean proxies
    assert all(r.failed is None and r.method == "exact" for r in clean)

    # The deadlines are relative to what this test measures, not wall-clock constants: the client's
    # timeout is twice the time the clean run took for all 8 items (one request takes at most that,
    # however loaded the machine), at least 4 s; the proxy's stall outlasts it by half. A loaded machine
    # then stalls longer but gives the same verdict: only the injected stall times out, so the proxy's
    # seeded fault draws (in arrival order) meet the same requests as on an idle machine.
    timeout = max(4.0, 2 * clean_elapsed)
    # Seed 46 with these rates injects every kind of fault (one stall past the timeout, since each
    # costs a timeout's wait) among the ~18 requests: the probe's and the 8 items', most on the items. The
    # proxy draws its faults in arrival order, so the counts depend only on how many requests must get
    # through (checked for one request fewer or more than the 14 this run needs).
    with FaultProxy(llama_server.removesuffix("/v1"), rate_429=0.06, rate_500=0.06, rate_delay=0.06,
                    rate_cut=0.06, delay=1.5 * timeout, retry_after="1", seed=46) as proxy:
        with _model(proxy.base_url, timeout=timeout, max_retries=8, concurrency=2) as m:
            t = time.monotonic()
            faulty = m.choose(FAULT_ITEMS[:N_SPREAD])
            elapsed = time.monotonic() - t
            stats = dict(m.stats)
    assert all(proxy.counts[k] >= 1 for k in ("429", "500", "delay", "cut")), proxy.counts
    assert stats.get("retries", 0) >= 4
    assert stats.get("timeouts", 0) == proxy.counts["delay"]  # only the injected stalls ran out of time
    assert elapsed < 30 * timeout  # 120 s at the idle machine's 4 s: retries and their waits, bounded
    for c, f in zip(clean, faulty, strict=True):
        assert f.failed is None, f.failed
        # llama.cpp may reuse a cached prompt prefix, which changes float rounding slightly.
        assert f.probs == pytest.approx(c.probs, abs=1e-4)
        assert f.validity == pytest.approx(c.validity, rel=1e-3)


def test_request_that_always_fails_is_marked_and_others_succeed(llama_server):
    marker = "NEVER-ANSWERED"
    reqs = [ChoiceRequest(p, c) for p, c in ITEMS[:3]] + [ChoiceRequest(f"{marker} Is it? Answer:", (" Yes", " No"))]
    with FaultProxy(llama_server.removesuffix("/v1"), always_fail=marker) as proxy:
        with _model(proxy.base_url, max_retries=2) as m:
            results = m.choose(reqs)
            (text,) = m.complete([CompletionRequest(f"{marker} once", max_tokens=4)])
    for r in results[:3]:
        assert r.failed is None and r.method == "exact"
    bad = results[3]
    assert bad.failed and "3 attempts" in bad.failed and "500" in bad.failed
    assert all(math.isnan(p) for p in bad.probs)
    assert text.failed and text.texts == []
    assert proxy.counts["always_fail"] == 2 * 3


@pytest.fixture
def short_backoff(monkeypatch):
    """The CLI's backoff (0.5 s doubling, up to ~30 s for a request that always fails) as 10 ms steps:
    these tests count requests, rows and failures, not waits; the waits are the transport's own tests."""
    from simsubjects.collect.models.openai_transport import Transport

    monkeypatch.setattr(Transport, "_backoff", lambda self, attempt: 0.01 * 2 ** min(attempt, 4))


# Two pairs x four offers: 8 trials, two of them (the $3 offers) carry the failed-trials marker below.
# The full 11 offers (22 trials) proved nothing more here and asked the server 14 more requests per run.
OFFERS = "0,3,5,10"


def _collect_ultimatum(url: str, out, timeout: float | None = None) -> int:
    from simsubjects.cli.commands import main

    deadline = ["--timeout", f"{timeout:g}"] if timeout else []
    return main(["collect", "ultimatum", "--model", f"openai:{MODEL}@{url}", "--pairs", "2", "--offers", OFFERS,
                 "--quiet", "--out", str(out), *deadline])


def _table(out):
    import pandas as pd

    df = pd.read_parquet(out / "responses.parquet").drop(columns=["model"])  # the spec names the URL
    return df.sort_values(["trial", "response"]).reset_index(drop=True)


def _assert_same_table(a, b):
    import pandas as pd

    floats = [c for c in a.columns if a[c].dtype.kind == "f"]
    pd.testing.assert_frame_equal(a.drop(columns=floats), b.drop(columns=floats))
    # llama.cpp may reuse a cached prompt prefix, which changes float rounding slightly
    pd.testing.assert_frame_equal(a[floats], b[floats], check_exact=False, atol=1e-4, rtol=0)


@pytest.fixture(scope="module")
def clean_ultimatum(llama_server, tmp_path_factory):  # noqa: F811
    """One clean `collect ultimatum --pairs 2 --offers 0,3,5,10` through a clean proxy, kept open for the module: the
    reference table of the two collection tests below, and the request count of a first run there."""
    out = tmp_path_factory.mktemp("clean-ultimatum") / "clean"
    with FaultProxy(llama_server.removesuffix("/v1")) as proxy:
        t = time.monotonic()
        assert _collect_ultimatum(proxy.base_url, out) == 0
        elapsed = time.monotonic() - t
        counts = proxy.counts.copy()
        yield proxy, out, counts, elapsed
        proxy.always_fail = None


def test_collection_through_faults_equals_a_clean_collection(llama_server, clean_ultimatum, tmp_path, short_backoff):
    _, clean, _, _ = clean_ultimatum
    with FaultProxy(llama_server.removesuffix("/v1"), rate_429=0.06, rate_500=0.06, rate_delay=0.04,
                    rate_cut=0.06, delay=1.0, retry_after="1", seed=99) as proxy:
        assert _collect_ultimatum(proxy.base_url, tmp_path / "faulty") == 0
    # About one request in five disturbed: seed 99 cuts the probe's first request twice and one trial's
    # (the draws are sequential, so the count does not depend on which concurrent request gets them).
    assert proxy.injected >= 2, proxy.counts
    assert json.loads((tmp_path / "faulty" / "manifest.json").read_text())["failures"] == []
    _assert_same_table(_table(clean), _table(tmp_path / "faulty"))


def test_failed_trials_are_listed_and_a_rerun_asks_only_for_them(clean_ultimatum, tmp_path, short_backoff):
    from simsubjects.studies.ultimatum.design import build_trials

    trials, _ = build_trials(pairs=2, offers=[int(o) for o in OFFERS.split(",")])
    marker = "takes $7 for himself"  # the $3 offers of Mr. proposers
    expected = set(trials.loc[trials["prompt"].str.contains(marker, regex=False), "trial"])
    assert 0 < len(expected) < len(trials)
    out = tmp_path / "run"
    n_all, n_failed = len(trials), len(expected)
    proxy, clean_out, clean_counts, clean_elapsed = clean_ultimatum  # its first run: listing, probe, every trial
    # No fault here stalls, so no request may time out: one timeout retried would add a request and
    # break the counts below. The deadline is the whole clean run's time (which asked every request
    # this test asks, and more), at least the CLI's 60 s: a loaded machine gets a longer one.
    timeout = max(60.0, 2 * clean_elapsed)
    assert clean_counts[MODELS] == 1 and clean_counts["requests"] == clean_counts[COMPLETIONS] + 1
    clean = clean_counts[COMPLETIONS]
    assert proxy.counts == clean_counts  # nothing else went through this proxy since
    try:
        proxy.always_fail = marker.encode()
        assert _collect_ultimatum(proxy.base_url, out, timeout) == 0  # the rest finishes
        first = proxy.counts["forwarded"] - clean_counts["forwarded"] - 1  # the listing; no probe: remembered
        assert proxy.counts[MODELS] == 2
        failures = json.loads((out / "manifest.json").read_text())["failures"]
        assert {f["trial"] for f in failures} == expected
        assert all("500" in f["reason"] for f in failures)
        per_trial, rest = divmod(first, n_all - n_failed)  # every trial asks the same number of requests
        assert per_trial >= 1 and rest == 0
        probe = clean - n_all * per_trial
        assert probe >= 3  # the first run probed (API, top list, echo check)
        proxy.always_fail = None  # the server recovers; the same command runs again, twice
        asked = []
        for _ in range(2):
            before = proxy.counts["requests"]
            assert _collect_ultimatum(proxy.base_url, out, timeout) == 0
            asked.append(proxy.counts["requests"] - before)
    finally:
        proxy.always_fail = None
    # only the failed trials, after the one-GET first contact; then nothing (no model is even made)
    assert asked == [1 + n_failed * per_trial, 0]
    assert json.loads((out / "manifest.json").read_text())["failures"] == []
    _assert_same_table(_table(clean_out), _table(out))


def test_a_second_model_on_the_same_endpoint_does_not_probe_again(llama_server, monkeypatch):
    """The probe's verdict is remembered per endpoint for the process (a `replicate` of several studies
    probes once); other model ids, settings, keys or URLs probe afresh; the cache holds no secret."""
    from simsubjects.collect.models import openai_probe

    item = [ChoiceRequest(*ITEMS[0])]
    with FaultProxy(llama_server.removesuffix("/v1")) as proxy:
        with _model(proxy.base_url) as a:
            (ra,) = a.choose(item)
        first = proxy.counts[COMPLETIONS]
        assert first - ra.n_queries >= 3  # the probe: API, top list, echo check
        with _model(proxy.base_url) as b:
            (rb,) = b.choose(item)
            assert b.info.details["choice_method"] == a.info.details["choice_method"] == "top"
        assert proxy.counts[COMPLETIONS] - first == rb.n_queries  # no probe request
        assert proxy.counts[MODELS] == 2  # the first contact is still made (a server gone is found at once)
        assert rb.probs == pytest.approx(ra.probs, abs=1e-4)
        for kw in ({"api": "chat"}, {"logprobs": "off"}):  # other settings: their own verdict
            before = proxy.counts["requests"]
            with _model(proxy.base_url, **kw) as c:
                c.complete([CompletionRequest("Hello", max_tokens=2)])
            assert proxy.counts["requests"] - before >= 3, kw  # listing, probe, the completion
        secret = "sk-simsubjects-CACHE-MARKER-4be1"
        monkeypatch.setenv("OPENAI_API_KEY", secret)
        before = proxy.counts[COMPLETIONS]
        with _model(proxy.base_url) as d:  # another key: the server may answer it differently
            (rd,) = d.choose(item)
        assert proxy.counts[COMPLETIONS] - before - rd.n_queries >= 3
        assert secret not in repr(openai_probe._VERDICTS) and proxy.base_url not in repr(openai_probe._VERDICTS)
    with FaultProxy(llama_server.removesuffix("/v1")) as other:  # another URL (a proxy stopping forgets its own)
        with _model(other.base_url) as e:
            (re_,) = e.choose(item)
        assert other.counts[COMPLETIONS] - re_.n_queries >= 3


def test_unreachable_server_is_a_user_error():
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with OpenAIModel(MODEL, url, timeout=2, max_retries=1, backoff=0.01) as m:
        with pytest.raises(UserError, match="check that the server is running"):
            m.choose([ChoiceRequest(*ITEMS[0])])


def test_openai_without_key_is_a_user_error():
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        OpenAIModel("gpt-4o-mini")


# -- secrets -------------------------------------------------------------------------------------------

class _EchoAuth401(BaseHTTPRequestHandler):
    """A server that rejects the key and, carelessly, quotes it back in the error body."""

    seen_key = False

    def do_GET(self):
        self._deny()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._deny()

    def _deny(self):
        auth = self.headers.get("Authorization", "")
        type(self).seen_key = type(self).seen_key or len(auth) > 10
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {auth}"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_api_key_never_written_or_logged(llama_server, tmp_path, monkeypatch, capfd, caplog):
    secret = "sk-simsubjects-MARKER-7f3a9c2e51d04b8c"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    log_file = tmp_path / "debug.log"
    handler = logging.FileHandler(log_file)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    caplog.set_level(logging.DEBUG)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoAuth401)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with FaultProxy(llama_server.removesuffix("/v1"), always_fail="NEVER-ANSWERED") as proxy:
            with OpenAIModel(MODEL, proxy.base_url, max_retries=1, backoff=0.01) as m:
                choices = m.choose([ChoiceRequest(*ITEMS[0]), ChoiceRequest("NEVER-ANSWERED?", (" Yes", " No"))])
                texts = m.complete([CompletionRequest("Hello", max_tokens=4)])
                record = {"info": m.info.__dict__, "fingerprint": m.fingerprint(), "repr": repr(m),
                          "vars": {k: repr(v) for k, v in vars(m).items()},
                          "choices": [r.__dict__ for r in choices], "texts": [t.__dict__ for t in texts]}
        with OpenAIModel(MODEL, f"http://127.0.0.1:{server.server_address[1]}/v1", max_retries=0) as bad:
            with pytest.raises(UserError) as err:
                bad.choose([ChoiceRequest(*ITEMS[0])])
            record["error"] = str(err.value)
            record["bad_info"] = bad.info.__dict__
        print(json.dumps(record, default=str))
        (tmp_path / "record.json").write_text(json.dumps(record, default=str))
    finally:
        server.shutdown()
        server.server_close()
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()

    assert _EchoAuth401.seen_key  # the key was really sent, and quoted back by the server
    assert "API key" in record["error"] and "OPENAI_API_KEY" in record["error"]
    assert choices[0].failed is None and choices[1].failed
    out, err_out = capfd.readouterr()
    for where, text in [("stdout", out), ("stderr", err_out), ("caplog", caplog.text)]:
        assert secret not in text, where
    assert log_file.stat().st_size > 0
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


# -- parsing helpers (no server needed, but kept beside the backend's other tests) -------------------

def test_prompt_logprobs_parsing_vllm_style():
    class Choice:  # vLLM: position 0 has no log-probability; BOS first on models that add one
        prompt_logprobs = [None,
                           {"791": {"logprob": -2.0, "rank": 1, "decoded_token": "Answer"}},
                           {"25": {"logprob": -1.0, "rank": 1, "decoded_token": ":"}},
                           {"7566": {"logprob": -0.5, "rank": 2, "decoded_token": " Yes"}}]
    toks = _prompt_logprob_tokens(Choice(), "Answer: Yes")
    assert toks == [(0, "Answer", -2.0), (6, ":", -1.0), (7, " Yes", -0.5)]
    assert _suffix_logprob(toks, len("Answer:")) == -0.5
    assert _suffix_logprob(toks, len("Answer: ")) is None  # straddles: needs the prompt alone

    class NoBos:
        prompt_logprobs = [None, {"25": {"logprob": -1.0, "decoded_token": ":"}}]
    assert _prompt_logprob_tokens(NoBos(), "Answer:") == [(0, "Answer", None), (6, ":", -1.0)]

    full = [(0, "A", None), (1, "nswer", -1.0), (6, ":", -2.0), (7, " Yes", -0.5)]
    prompt = [(0, "A", None), (1, "nswer", -1.0), (6, ":", -2.0), (7, " ", -6.0)]
    assert _total_logprob(full, prompt) == pytest.approx(5.5)  # p(s·c)/p(s) can exceed 1


def test_retry_after_and_answer_matching():
    class R:
        def __init__(self, h):
            self.headers = h
    assert _retry_after(R({"retry-after": "2"})) == 2.0
    assert _retry_after(R({"retry-after-ms": "250"})) == 0.25
    assert _retry_after(R({})) is None
    assert _match("  Yes, I would", ["Yes", "No"]) == 0
    assert _match("\nNo.", ["Yes", "No"]) == 1
    assert _match("Maybe", ["Yes", "No"]) is None
    assert _match("10 dollars", ["1", "10"]) == 1  # the longest completion that matches
