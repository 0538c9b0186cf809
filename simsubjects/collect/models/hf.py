"""Local Hugging Face causal LMs (a model directory or a GGUF file) with exact log-probabilities."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Sequence

from ...errors import UserError
from .base import ChoiceRequest, ChoiceResult, CompletionRequest, CompletionResult, ModelInfo
from . import weight_cache
from .packing import Packed, fill, lcp as _lcp, pack


def file_sha256(path: Path, limit: int = 4 << 30) -> str:
    """Content hash of a weight file; files above `limit` are identified by name and size."""
    h = hashlib.sha256()
    if path.stat().st_size > limit:
        h.update(f"{path.name}:{path.stat().st_size}".encode())
    else:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def _revision(path: Path) -> str:
    if path.is_file():
        return "sha256:" + file_sha256(path)
    h = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if f.is_file() and (f.suffix in {".json", ".safetensors", ".bin", ".gguf", ".model"}):
            h.update(f.name.encode())
            h.update(file_sha256(f).encode())
    return "sha256:" + h.hexdigest()


def _seed_of(obj) -> int:
    return int.from_bytes(hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).digest()[:4], "little")


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
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        path = Path(path)
        if not path.exists():
            raise UserError(f"model path {path} does not exist; give a transformers model folder or a .gguf file")
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        if threads:
            torch.set_num_threads(threads)
        self.device = _device(torch, device)  # a bad --device fails before the weights load
        kw: dict = {"trust_remote_code": trust_remote_code}
        if path.is_file():
            if path.suffix != ".gguf":
                raise UserError(f"model file {path} is not a .gguf file; give a model folder or a GGUF file")
            folder, kw["gguf_file"] = path.parent, path.name
        else:
            folder = path
        import transformers.modeling_gguf_pytorch_utils as gguf_utils

        bar = gguf_utils.tqdm
        gguf_utils.tqdm = lambda it, **_: it  # the GGUF de-quantization bar is noise to a user
        revision = _revision(path)
        cached = weight_cache.lookup(revision) if (cache_weights or path.is_file()) else None
        try:
            if cached is not None:  # safetensors saved by an earlier load: ~0.5 s instead of ~40 s
                folder, kw = cached, {}
            self.tokenizer = AutoTokenizer.from_pretrained(folder, **kw)
            self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kw)
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise UserError(f"cannot load model from {path}: {first}") from None
        finally:
            gguf_utils.tqdm = bar
        if cached is None and (cache_weights or path.is_file()):
            weight_cache.store(revision, self.model, self.tokenizer)
        self.model.to(self.device).eval()
        self.torch = torch
        self.chat_template = chat_template
        self.batch_tokens = batch_tokens
        self.gen_positions = gen_positions
        self.packing = packing
        self.reuse_cache = reuse_cache
        from .generation import PrefixStore  # torch: imported with the model, not with the registry

        self.prefix_store = PrefixStore()
        # Work counters for benchmarks: forward passes, real and padded tokens, LM-head positions.
        self.stats = {"forwards": 0, "tokens": 0, "padded_tokens": 0, "head_positions": 0}
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.info = ModelInfo(
            spec=spec or f"hf:{path}",
            backend="hf",
            name=path.name,
            revision=revision,
            details={"chat_template": chat_template, "dtype": "float32", "device": str(self.device),
                     "parameters": sum(p.numel() for p in self.model.parameters())},
        )

    # --- interface -------------------------------------------------------------------------
    def fingerprint(self) -> dict:
        # Settings that change the numbers (float sums over other batches or devices) belong to the
        # answers' identity as much as the weights do; the run's batch size is in its identity.
        return {"backend": "hf", "revision": self.info.revision, "chat_template": self.chat_template,
                "numerics": {"device": self.device.type, "batch_tokens": self.batch_tokens, "packing": self.packing}}

    def close(self) -> None:
        pass

    def format_prompt(self, prompt: str) -> str:
        if not self.chat_template:
            return prompt
        # The prompt becomes the user's turn; completions are scored as the assistant's first words.
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )

    def choose(self, requests: Sequence[ChoiceRequest], method: str = "exact") -> list[ChoiceResult]:
        if method == "sampled":
            return [self._sample_choice(r) for r in requests]
        from .. import choice  # the one k-choice path: this backend only supplies log-probabilities

        return [choice.exact_choice(lp) for lp in self.score(requests)]

    def complete(self, requests: Sequence[CompletionRequest]) -> list[CompletionResult]:
        texts = iter(self._generate(requests))
        return [CompletionResult(texts=[next(texts) for _ in range(r.n)]) for r in requests]

    # --- exact scoring -----------------------------------------------------------------------
    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=not self.chat_template).input_ids

    def plan(self, requests: Sequence[ChoiceRequest]):
        """Token plans: for each request, the shared context and the token runs to score.

        p(c_i | s) = p(tokens(s c_i)) / p(tokens(s)) under the canonical tokenization of each full
        string. Both share the first j tokens (j = common prefix of all of them), so only the
        tails after j are scored: this is exact even when a token straddles the prompt/completion
        boundary (e.g. a prompt ending in a space).
        """
        plans = []
        for r in requests:
            s = self.format_prompt(r.prompt)
            ids_s = self._encode(s)
            ids_c = [self._encode(s + c) for c in r.completions]
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
        plans = self.plan(requests)
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
        seqs = list(seq_index)
        values = self._forward_logprobs(seqs, targets)
        out = []
        for req_refs in refs:
            lps = [sum(values[k][m] for k, m in ref) for ref in req_refs]
            out.append([lp - lps[0] for lp in lps[1:]])
        return out

    def _forward_logprobs(self, seqs: list[tuple], targets: list[list[tuple[int, int]]]) -> list[list[float]]:
        """Log-probabilities of the target tokens at the target positions of each sequence.

        Sequences sharing a prefix are packed into one row, and short rows share a line of up to
        LINE_TOKENS tokens (packing.py); lines are sorted by length and batched under a token
        budget, and a batch closes before padding would exceed a fifth of it (tiny batches
        aside); the LM head runs only at the positions whose log-probabilities are needed.
        """
        torch = self.torch
        rows = (pack(seqs, max_len=LINE_TOKENS) if self.packing else
                [Packed(list(s), list(range(len(s))), [-1] * len(s), [i], [len(s)], len(s)) for i, s in enumerate(seqs)])
        lines = sorted(fill(rows, max([LINE_TOKENS] + [len(r.tokens) for r in rows])),
                       key=lambda line: sum(len(r.tokens) for r in line))
        values: list[list[float]] = [[] for _ in seqs]
        body = self.model.get_decoder()
        head = self.model.get_output_embeddings()
        pad = self.tokenizer.pad_token_id
        i = 0
        with torch.inference_mode():
            while i < len(lines):
                j, real = i + 1, _line_len(lines[i])
                while j < len(lines):
                    padded = (j - i + 1) * _line_len(lines[j])
                    real += _line_len(lines[j])
                    if padded > self.batch_tokens or (padded > 512 and padded > 1.25 * real):
                        break
                    j += 1
                batch = lines[i:j]
                width = _line_len(batch[-1])
                ids = torch.full((len(batch), width), pad, dtype=torch.long)
                pos = torch.zeros((len(batch), width), dtype=torch.long)
                seg = torch.full((len(batch), width), -1, dtype=torch.long)
                grp = torch.full((len(batch), width), -1, dtype=torch.long)  # -1: padding
                rr, cc, toks, order = [], [], [], []
                for r, line in enumerate(batch):
                    at = 0
                    for g, row in enumerate(line):
                        n = len(row.tokens)
                        ids[r, at : at + n] = torch.tensor(row.tokens)
                        pos[r, at : at + n] = torch.tensor(row.positions)
                        seg[r, at : at + n] = torch.tensor(row.segment)
                        grp[r, at : at + n] = g
                        for k, m in enumerate(row.members):
                            order.append(m)
                            for p, tok in targets[m]:
                                rr.append(r)
                                cc.append(at + row.where(k, p))
                                toks.append(tok)
                        at += n
                # A token sees earlier tokens of its own packed row: the shared prefix and its own remainder.
                causal = torch.ones(width, width, dtype=torch.bool).tril()
                same = (grp[:, None, :] == grp[:, :, None]) & ((seg[:, None, :] == -1) | (seg[:, None, :] == seg[:, :, None]))
                mask = causal & same & (grp[:, None, :] >= 0)
                mask |= torch.eye(width, dtype=torch.bool)  # padding attends to itself: no NaN
                dev = self.device
                hidden = body(input_ids=ids.to(dev), attention_mask=mask[:, None].to(dev),
                              position_ids=pos.to(dev)).last_hidden_state
                self.stats["forwards"] += 1
                self.stats["tokens"] += sum(_line_len(line) for line in batch)
                self.stats["padded_tokens"] += ids.numel()
                logits = head(hidden[torch.tensor(rr, device=dev), torch.tensor(cc, device=dev)])
                self.stats["head_positions"] += len(toks)
                lp = _target_logprobs(logits, torch.tensor(toks, device=dev))
                at = 0
                for m in order:
                    values[m] = lp[at : at + len(targets[m])]
                    at += len(targets[m])
                i = j
        return values

    # --- sampling ---------------------------------------------------------------------------------
    def _generate(self, requests: Sequence[CompletionRequest]) -> list[str]:
        """The n texts of every request, in order; rows decoded together up to `gen_positions`
        cached positions per batch (keys/values of prompt plus max_tokens for each row)."""
        from .generation import Row, generate

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
        return [_cut_at_stop(t, row.stop) for t, row in zip(texts, rows)]

    def _sample_choice(self, r: ChoiceRequest) -> ChoiceResult:
        """Draw at temperature 1 until r.n valid answers (the protocol and the matching rule are
        collect/choice.py's, shared by every backend); each round is seeded by the request and its
        round number."""
        from ..choice import sample_choice

        longest = max(len(self._encode(c)) for c in r.completions) + 1  # +1: the word-boundary character

        def draw(want: int, round_: int, _drawn: int) -> list[str]:
            return self._generate([CompletionRequest(prompt=r.prompt, n=want, temperature=1.0, max_tokens=longest,
                                                     seed=_seed_of([r.key(), round_]))])

        return sample_choice(r, draw)


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


def _target_logprobs(logits, toks, chunk: int = 256) -> list[float]:
    """log softmax(logits)[i, toks[i]] in float64: over a vocabulary of ~50k tokens a float32
    log-sum-exp is off by ~1e-5, more than the exactness this backend promises."""
    import torch

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
    from . import _check_local

    if not rest:
        raise UserError(f"model spec {spec!r} names no model; write hf:/path/to/model")
    return _check_local(rest, spec), []


def _load_hf(name: str, urls: list[str], spec: str, **options) -> HFModel:
    return HFModel(name, spec=spec, **options)


def _parse_embedded(rest: str, spec: str) -> tuple[str, list[str]]:
    raise UserError(f"unknown model {spec!r}; the embedded model is written smollm2")


def _load_embedded(name: str, urls: list[str], spec: str, trust_remote_code: bool = False, **options) -> HFModel:
    from . import smollm2_path

    return HFModel(smollm2_path(), spec=spec, **options)  # never remote code: it is a bundled GGUF


def _register() -> None:
    from .registry import Backend, register

    register(Backend("hf", parse=_parse_hf, load=_load_hf))
    register(Backend("embedded", parse=_parse_embedded, load=_load_embedded, embedded=("smollm2",)))


_register()
