"""Local Hugging Face causal LMs (a model directory or a GGUF file) with exact log-probabilities."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ...errors import UserError
from .base import ChoiceRequest, ChoiceResult, CompletionRequest, CompletionResult, ModelInfo
from . import weight_cache
from ..seeds import seed_from_text
from .packing import Packed, fill, lcp as _lcp, pack
from .. import choice  # the one k-choice path: this backend only supplies log-probabilities
from .registry import Backend, register
from .spec import _check_local
from .spec import smollm2_path


# in weight_cache (no torch import there): a dry run hashes a model without loading torch
_revision = weight_cache.revision_of
file_sha256 = weight_cache.file_sha256


def _seed_of(obj) -> int:
    return seed_from_text(json.dumps(obj, sort_keys=True), nbytes=4)


# Work counters (benchmarks) and usage (manifests): forward passes, real and padded tokens, LM-head
# positions, (query, key) pairs the attention computes (masked ones included); requests, their
# prompt tokens, generated rows and tokens.
STATS = ("forwards", "tokens", "padded_tokens", "head_positions", "attention_pairs", "requests", "prompt_tokens",
         "generations", "completion_tokens")

# Short packed rows share a line of up to this many tokens (attention over a line stays cheap).
LINE_TOKENS = 512


def _line_len(line) -> int:
    return sum(len(r.tokens) for r in line)


class HFModel:
    """A transformers causal LM. Exact k-choice scoring; sampling and generation on request."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        spec: str | None = None,
        chat_template: bool = False,
        batch_tokens: int = 4096,
        gen_positions: int = 32768,
        packing: bool = True,
        reuse_cache: bool = True,
        threads: int | None = None,
        trust_remote_code: bool = False,
        device: str = "auto",
        cache_weights: bool = False,
        dtype: str = "auto",
        device_map: str | None = None,
    ):
        import torch  # lazy: imports torch, torchgen
        from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: looked up per call (tests replace AutoModelForCausalLM)
        from transformers.utils import logging as hf_logging  # lazy: imports transformers, trio

        path = Path(path)
        if not path.exists():
            raise UserError(f"model path {path} does not exist; give a transformers model folder or a .gguf file")
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        if threads:
            torch.set_num_threads(threads)
        self.device = _device(torch, device)  # a bad --device fails before the weights load
        self.dtype = _dtype(torch, dtype, self.device)
        if device_map not in (None, "auto"):
            raise UserError(f"--device-map {device_map}: only auto (accelerate places the layers) is supported")
        kw: dict = {"trust_remote_code": trust_remote_code}
        if path.is_file():
            if path.suffix != ".gguf":
                raise UserError(f"model file {path} is not a .gguf file; give a model folder or a GGUF file")
            folder, kw["gguf_file"] = path.parent, path.name
        else:
            folder = path
        import transformers.modeling_gguf_pytorch_utils as gguf_utils  # lazy: imports torch, transformers

        bar = gguf_utils.tqdm
        gguf_utils.tqdm = lambda it, **_: it  # the GGUF de-quantization bar is noise to a user
        revision = _revision(path)
        use_cache = cache_weights or path.is_file()
        dtype_name = str(self.dtype).removeprefix("torch.")
        # an entry in this dtype, else the float32 one (cast while loading: still no GGUF read)
        cached = (weight_cache.lookup(revision, dtype_name) or weight_cache.lookup(revision)) if use_cache else None
        try:
            if cached is not None:  # safetensors saved by an earlier load: ~0.5 s instead of ~40 s
                folder, kw = cached, {}
                self.tokenizer = weight_cache.load_tokenizer(cached)
            else:
                self.tokenizer = AutoTokenizer.from_pretrained(folder, **kw)
            if device_map:  # accelerate spreads the layers over the GPUs (then CPU memory)
                kw["device_map"] = device_map
            self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=self.dtype, **kw)
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise UserError(f"cannot load model from {path}: {first}") from None
        finally:
            gguf_utils.tqdm = bar
        self.weights_cached = cached is not None  # read from the weight cache (tests, benchmarks)
        if cached is None and use_cache:
            weight_cache.store(revision, self.model, self.tokenizer, dtype_name)
        if device_map:  # inputs go where the embedding layer is; accelerate moves activations on
            self.device = self.model.get_input_embeddings().weight.device
            self.model.eval()
        else:
            self.model.to(self.device).eval()
        self.torch = torch
        self.chat_template = chat_template
        self.batch_tokens = batch_tokens
        self.gen_positions = gen_positions
        self.packing = packing
        self.reuse_cache = reuse_cache
        from .generation import PrefixStore  # lazy: imports torch, transformers; torch: imported with the model, not with the registry

        self.prefix_store = PrefixStore()
        # Work counters for benchmarks: forward passes, real and padded tokens, LM-head positions.
        self.stats = dict.fromkeys(STATS, 0)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.info = ModelInfo(
            spec=spec or f"hf:{path}",
            backend="hf",
            name=path.name,
            revision=revision,
            details={"chat_template": chat_template, "dtype": dtype_name, "device": str(self.device),
                     **({"device_map": device_map} if device_map else {}),
                     "parameters": sum(p.numel() for p in self.model.parameters())},
        )

    @classmethod
    def tokenizer_only(cls, path: str | os.PathLike, *, spec: str | None = None, chat_template: bool = False,
                       batch_tokens: int = 4096, packing: bool = True, **_) -> "HFModel":
        """The model's tokenizer and planning without its weights (for --dry-run): from the weight
        cache when there is an entry, else from the folder or the GGUF file's tokenizer part."""
        path = Path(path)
        self = cls.__new__(cls)
        revision = _revision(path)
        cached = weight_cache.lookup(revision)
        try:
            if cached is not None:
                self.tokenizer = weight_cache.load_tokenizer(cached)
            else:
                from transformers import AutoTokenizer  # lazy: optional (transformers, attr)
                from transformers.utils import logging as hf_logging  # lazy: optional (transformers, trio)

                hf_logging.set_verbosity_error()
                kw = {"gguf_file": path.name} if path.is_file() else {}
                self.tokenizer = AutoTokenizer.from_pretrained(path.parent if path.is_file() else path, **kw)
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise UserError(f"cannot load the tokenizer of {path}: {first}") from None
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.chat_template, self.batch_tokens, self.packing = chat_template, batch_tokens, packing
        self.stats = dict.fromkeys(STATS, 0)
        self.info = ModelInfo(spec=spec or f"hf:{path}", backend="hf", name=path.name, revision=revision,
                              details={"chat_template": chat_template, "dtype": "float32"})
        return self

    # --- interface -------------------------------------------------------------------------
    def fingerprint(self) -> dict:
        fp = {"backend": "hf", "revision": self.info.revision, "chat_template": self.chat_template}
        # float32 is the reference precision and stays unnamed, so runs (and their request caches)
        # made before --dtype existed keep their identity; any other dtype changes the answers.
        if self.info.details["dtype"] != "float32":
            fp["dtype"] = self.info.details["dtype"]
        # Other settings that change the numbers (float sums over other batches or devices) belong
        # to the answers' identity as much as the weights do; the run's batch size is in its identity.
        device = getattr(getattr(self, "device", None), "type", "cpu")
        fp["numerics"] = {"device": device, "batch_tokens": self.batch_tokens, "packing": self.packing}
        return fp

    def close(self) -> None:
        pass

    def format_prompt(self, prompt: str) -> str:
        if not self.chat_template:
            return prompt
        # The prompt becomes the user's turn; completions are scored as the assistant's first words.
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )

    def request_text(self, r) -> str:
        """The text a request is scored after: its chat turns through the model's chat template
        (a session with chat turns), else its prompt (wrapped as one user turn with --chat-template)."""
        if getattr(r, "messages", ()):
            return self.tokenizer.apply_chat_template([{"role": a, "content": b} for a, b in r.messages],
                                                      tokenize=False, add_generation_prompt=True) + r.prompt
        return self.format_prompt(r.prompt)

    def choose(self, requests: Sequence[ChoiceRequest], method: str = "exact") -> list[ChoiceResult]:
        self._count_requests(requests)
        if method == "sampled":
            return [self._sample_choice(r) for r in requests]

        return [choice.exact_choice(lp) for lp in self.score(requests)]

    def complete(self, requests: Sequence[CompletionRequest]) -> list[CompletionResult]:
        self._count_requests(requests)
        texts = iter(self._generate(requests))
        return [CompletionResult(texts=[next(texts) for _ in range(r.n)]) for r in requests]

    # --- exact scoring -----------------------------------------------------------------------
    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=not self.chat_template).input_ids

    def _encode_many(self, texts: list[str]) -> list[list[int]]:
        """The ids of each text, as `_encode` gives them, in one call: a call's fixed cost in
        transformers (~0.2 ms) is most of the time for a prompt of a few hundred tokens."""
        return self.tokenizer(texts, add_special_tokens=not self.chat_template).input_ids if texts else []

    def plan(self, requests: Sequence[ChoiceRequest]):
        """Token plans: for each request, the shared context and the token runs to score.

        p(c_i | s) = p(tokens(s c_i)) / p(tokens(s)) under the canonical tokenization of each full
        string. Both share the first j tokens (j = common prefix of all of them), so only the
        tails after j are scored: this is exact even when a token straddles the prompt/completion
        boundary (e.g. a prompt ending in a space).
        """
        plans = []
        texts = [self.request_text(r) for r in requests]
        ids = iter(self._encode_many([t for s, r in zip(texts, requests) for t in (s, *(s + c for c in r.completions))]))
        for r in requests:
            ids_s = next(ids)
            ids_c = [next(ids) for _ in r.completions]
            j = min([len(ids_s)] + [_lcp(ids_s, x) for x in ids_c])
            ctx = ids_s[:j]
            if not ctx:  # nothing to condition on: start from BOS (or EOS) as the model was trained
                bos = self.tokenizer.bos_token_id
                ctx = [bos if bos is not None else self.tokenizer.eos_token_id]
                ids_s, ids_c, j = ctx + ids_s, [ctx + x for x in ids_c], 1
            tails = [x[j:] for x in ids_c]
            if any(not t for t in tails):
                raise UserError(f"a completion of {r.completions!r} is empty after tokenization")
            plans.append((ctx, ids_s[j:], tails))
        return plans

    def score(self, requests: Sequence[ChoiceRequest]) -> list[list[float]]:
        """log p(c_i | prompt) for every completion of every request."""
        seqs, targets, refs = self._sequences(self.plan(requests))
        values = self._forward_logprobs(seqs, targets)
        out = []
        for req_refs in refs:
            lps = [sum(values[k][m] for k, m in ref) for ref in req_refs]
            out.append([lp - lps[0] for lp in lps[1:]])
        return out

    @staticmethod
    def _sequences(plans):
        """(forward sequences, their target (position, token)s, per request its refs into them)."""
        # One forward sequence per distinct (context + tail[:-1]); single-token completions of the
        # same prompt share one sequence, so a prompt is encoded once for all of them.
        seq_index: dict[tuple, int] = {}
        targets: list[list[tuple[int, int]]] = []
        refs = []  # per request: [prompt-tail ref, completion refs...] as lists of (seq, target#)
        for ctx, stail, tails in plans:
            req_refs = []
            for tail in [stail, *tails]:
                if not tail:
                    req_refs.append([])
                    continue
                feed = tuple(ctx + tail[:-1])
                k = seq_index.setdefault(feed, len(seq_index))
                if k == len(targets):
                    targets.append([])
                ref = []
                for t, tok in enumerate(tail):
                    pos = len(ctx) - 1 + t
                    try:
                        m = targets[k].index((pos, tok))
                    except ValueError:
                        targets[k].append((pos, tok))
                        m = len(targets[k]) - 1
                    ref.append((k, m))
                req_refs.append(ref)
            refs.append(req_refs)
        return list(seq_index), targets, refs

    def _lines(self, seqs: list[tuple]) -> list[list[Packed]]:
        """Packed rows in lines, shortest line first (the order batches are cut in)."""
        rows = (pack(seqs, max_len=LINE_TOKENS) if self.packing else
                [Packed.alone(s, i) for i, s in enumerate(seqs)])
        return sorted(fill(rows, max([LINE_TOKENS] + [len(r.tokens) for r in rows])),
                      key=lambda line: sum(len(r.tokens) for r in line))

    def _batches(self, lines) -> list[tuple[int, int]]:
        """[i, j) spans of lines run in one forward pass: under the token budget, and closed
        before padding would exceed a fifth of the batch (tiny batches aside)."""
        spans, i = [], 0
        while i < len(lines):
            j, real = i + 1, _line_len(lines[i])
            while j < len(lines):
                padded = (j - i + 1) * _line_len(lines[j])
                real += _line_len(lines[j])
                if padded > self.batch_tokens or (padded > 512 and padded > 1.25 * real):
                    break
                j += 1
            spans.append((i, j))
            i = j
        return spans

    def count_forwards(self, requests: Sequence[ChoiceRequest]) -> int:
        """Forward passes that exact scoring of `requests` takes (tokenizer only: a dry run)."""
        return len(self._batches(self._lines(self._sequences(self.plan(requests))[0])))

    def _count_requests(self, requests) -> None:
        """Usage as an API would bill it: each request's prompt tokens (the manifest's usage)."""
        self.stats["requests"] += len(requests)
        self.stats["prompt_tokens"] += sum(map(len, self._encode_many([self.request_text(r) for r in requests])))

    def usage(self) -> dict:
        keys = ("requests", "prompt_tokens", "completion_tokens", "forwards", "generations")
        return {k: int(self.stats.get(k, 0)) for k in keys}

    def _forward_logprobs(self, seqs: list[tuple], targets: list[list[tuple[int, int]]]) -> list[list[float]]:
        """Log-probabilities of the target tokens at the target positions of each sequence.

        Sequences sharing prefixes are packed into one row as their token trie (each token sees
        its own prefix only), and short rows share a line of up to
        LINE_TOKENS tokens (packing.py); lines are sorted by length and batched under a token
        budget, and a batch closes before padding would exceed a fifth of it (tiny batches
        aside); the LM head runs only at the positions whose log-probabilities are needed.
        """
        torch = self.torch
        lines = self._lines(seqs)
        values: list[list[float]] = [[] for _ in seqs]
        body = self.model.get_decoder()
        head = self.model.get_output_embeddings()
        pad = self.tokenizer.pad_token_id
        with torch.inference_mode():
            for i, j in self._batches(lines):
                batch = lines[i:j]
                width = _line_len(batch[-1])
                ids = np.full((len(batch), width), pad, dtype=np.int64)
                pos = np.zeros((len(batch), width), dtype=np.int64)
                # A token sees its ancestors in its own packed row's trie (itself included);
                # padding attends to itself only (no NaN).
                mask = np.zeros((len(batch), width, width), dtype=bool)
                rr, cc, toks, order = [], [], [], []
                for r, line in enumerate(batch):
                    at = 0
                    for row in line:
                        n = len(row.tokens)
                        ids[r, at : at + n] = row.tokens
                        pos[r, at : at + n] = row.positions
                        mask[r, at : at + n, at : at + n] = row.ancestors()
                        for k, m in enumerate(row.members):
                            order.append(m)
                            for p, tok in targets[m]:
                                rr.append(r)
                                cc.append(at + row.where(k, p))
                                toks.append(tok)
                        at += n
                    mask[r, range(at, width), range(at, width)] = True
                ids, pos, mask = torch.from_numpy(ids), torch.from_numpy(pos), torch.from_numpy(mask)
                dev = self.device
                hidden = body(input_ids=ids.to(dev), attention_mask=mask[:, None].to(dev),
                              position_ids=pos.to(dev)).last_hidden_state
                self.stats["forwards"] += 1
                self.stats["tokens"] += sum(_line_len(line) for line in batch)
                self.stats["padded_tokens"] += ids.numel()
                self.stats["attention_pairs"] += mask.numel()
                at_h = hidden.device  # with --device-map the last layer may sit on another GPU
                logits = head(hidden[torch.tensor(rr, device=at_h), torch.tensor(cc, device=at_h)])
                self.stats["head_positions"] += len(toks)
                lp = _target_logprobs(logits, torch.tensor(toks, device=logits.device))
                at = 0
                for m in order:
                    values[m] = lp[at : at + len(targets[m])]
                    at += len(targets[m])
        return values

    # --- sampling ---------------------------------------------------------------------------------
    def _generate(self, requests: Sequence[CompletionRequest]) -> list[str]:
        """The n texts of every request, in order; rows decoded together up to `gen_positions`
        cached positions per batch (keys/values of prompt plus max_tokens for each row)."""
        from .generation import Row, generate  # lazy: imports torch, transformers

        rows = []
        for r in requests:
            prompt = self.format_prompt(r.prompt)
            ids = self.tokenizer(prompt, add_special_tokens=not self.chat_template).input_ids
            rows += [Row(ids, _seed_of([r.key(), i]), r.max_tokens, r.temperature, r.top_p, tuple(r.stop), r.settled)
                     for i in range(r.n)]
        store = self.prefix_store if self.reuse_cache else None
        texts, batch = [], []
        for row in rows:
            width = max(len(b.ids) + b.max_tokens for b in batch + [row])
            if batch and width * (len(batch) + 1) > self.gen_positions:
                texts += generate(self.model, self.tokenizer, batch, store=store)
                batch = []
            batch.append(row)
        if batch:
            texts += generate(self.model, self.tokenizer, batch, store=store)
        self.stats["generations"] += len(rows)
        self.stats["completion_tokens"] += sum(len(self.tokenizer(t, add_special_tokens=False).input_ids) for t in texts)
        return [_cut_at_stop(t, row.stop) for t, row in zip(texts, rows)]

    def _sample_choice(self, r: ChoiceRequest) -> ChoiceResult:
        """Draw at temperature 1 until r.n valid answers (the protocol and the matching rule are
        collect/choice.py's, shared by every backend); each round is seeded by the request and its
        round number."""
        longest = max(len(self._encode(c)) for c in r.completions) + 1  # +1: the word-boundary character

        def draw(want: int, round_: int, _drawn: int) -> list[str]:
            return self._generate([CompletionRequest(prompt=r.prompt, n=want, temperature=1.0, max_tokens=longest,
                                                     seed=_seed_of([r.key(), round_]))])

        return choice.sample_choice(r, draw)  # choice imports this package: the module, not the name


def _device(torch, device: str):
    """auto: the first CUDA GPU if there is one, else the CPU; a named device must exist."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise UserError(f"--device {device}: not a device; use auto, cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and (not torch.cuda.is_available() or (dev.index or 0) >= torch.cuda.device_count()):
        raise UserError(f"--device {device}: no such CUDA GPU here ({torch.cuda.device_count()} visible); use auto or cpu")
    if dev.type not in ("cpu", "cuda"):
        raise UserError(f"--device {device}: use auto, cpu, cuda or cuda:N")
    return dev


DTYPES = ("auto", "float32", "bfloat16", "float16")


def _dtype(torch, dtype: str, device):
    """auto: bfloat16 on a GPU that supports it, else float32 (CPUs and older GPUs)."""
    if dtype not in DTYPES:
        raise UserError(f"--dtype {dtype}: use one of {', '.join(DTYPES)}")
    if dtype == "auto":
        bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if bf16 else torch.float32
    return getattr(torch, dtype)


def _target_logprobs(logits, toks, chunk: int = 256) -> list[float]:
    """log softmax(logits)[i, toks[i]] in float64: over a vocabulary of ~50k tokens a float32
    log-sum-exp is off by ~1e-5, more than the exactness this backend promises."""
    import torch  # lazy: imports torch, torchgen

    out = []
    for lg, tk in zip(logits.split(chunk), toks.split(chunk)):
        lg = lg.double()
        out += (lg.gather(1, tk[:, None])[:, 0] - torch.logsumexp(lg, dim=-1)).tolist()
    return out


def _cut_at_stop(text: str, stop: Sequence[str]) -> str:
    cut = len(text)
    for s in stop:
        k = text.find(s)
        if k >= 0:
            cut = min(cut, k)
    return text[:cut]



# -- registration: hf:/path (a model folder or a GGUF file) and the embedded smollm2 --------------------
def _parse_hf(rest: str, spec: str) -> tuple[str, list[str]]:
    if not rest:
        raise UserError(f"model spec {spec!r} names no model; write hf:/path/to/model")
    return _check_local(rest, spec), []


def _load_hf(name: str, urls: list[str], spec: str, **options) -> HFModel:
    return HFModel(name, spec=spec, **options)


def _parse_embedded(rest: str, spec: str) -> tuple[str, list[str]]:
    raise UserError(f"unknown model {spec!r}; the embedded model is written smollm2")


def _load_embedded(name: str, urls: list[str], spec: str, trust_remote_code: bool = False, **options) -> HFModel:
    return HFModel(smollm2_path(), spec=spec, **options)  # never remote code: it is a bundled GGUF


def _register() -> None:
    register(Backend("hf", parse=_parse_hf, load=_load_hf))
    register(Backend("embedded", parse=_parse_embedded, load=_load_embedded, embedded=("smollm2",)))


_register()
