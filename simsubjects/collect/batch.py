"""Batch files: a run's uncached requests as OpenAI Batch input JSONL, and their results back.

`collect STUDY --model openai:MODEL[@URL] --out RUN --batch-export FILE.jsonl` runs the study's own
collection code against a recorder that answers nothing: every request the run's cache lacks is
written as one line of the OpenAI Batch input format,

    {"custom_id": KEY, "method": "POST", "url": "/v1/completions", "body": {...}}

where KEY is the request's cache key (collect/runner.py `cache_key`), so a result needs no
lookup table beside it. Nothing is sent and no server or key is needed. The recorder's answers
are failures ("not answered yet"), so a study whose next request depends on an answer (Milgram's
next stage) exports only what can be asked now; after an import, the next export asks the rest.

`--batch-import RESULTS.jsonl [...]` reads the provider's output lines (the OpenAI Batch output
format, which `vllm run-batch` writes too), checks every line before anything is written (one
line and exit 2 for a truncated line, an unknown or duplicated custom_id, an error object, a
body that is not a completions or chat response), turns the bodies into answers with the same
parsers as the direct API path (openai_scoring.py, collect/choice.py), and commits them to the
run's cache in one transaction, never replacing an answer already cached. The same `collect`
command without --batch-import then finishes the run from the cache, asking the server only for
requests that are still missing (listed by the import).

Body forms (`--batch-format`; docs/scaling.md says which k-choice forms are exact where):

* ``chat-top`` / ``completions-top``: one line per k-choice request, the next token's top-20
  log-probabilities at temperature 0, as the direct path's ``top`` mode sends them; exact for
  options that are one token among the 20 (others are listed as failed at import);
* ``completions-echo``: legacy completions with ``echo`` + ``logprobs`` (one line per option
  and one for the prompt alone, KEY/0 ... KEY/k-1 and KEY/prompt), exact for any option;
* ``completions-prompt-logprobs``: the same lines with vLLM's ``prompt_logprobs`` instead of echo.
* ``auto``: chat-top for the OpenAI API, completions-top for another server, the forms the
  direct path's probe finds there.

Free-text requests are one line each (chat or completions as the form says), with the request's
n, temperature, top_p, max_tokens, stop and seed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence
import stat

from ..errors import UserError
from ..redact import mask_secrets, redact
from .models.base import (ChoiceRequest, ChoiceResult, CompletionRequest, CompletionResult, ImpossibleLogprobs,
                          ModelInfo)
from .runner import cache_key
from .store import OverlayCache, RunStore, atomic_write_bytes
from . import choice
from .models import check_model_options
from .models.openai_api import openai_fingerprint
from .models.openai_scoring import (Inexact, _chat_top, _completion_top, _echo_tokens,
                                    _prompt_logprob_tokens, _suffix_logprob, _total_logprob)
from .models.openai_transport import DEFAULT_BASE_URL, is_openai_host
from .runner import collect_trials
from .store import CACHE

FORMATS = ("auto", "chat-top", "completions-top", "completions-echo", "completions-prompt-logprobs")
TOP_K = 20  # the most top log-probabilities the OpenAI chat API returns
# The OpenAI Batch API's limits on one input file (platform docs, "Batch API": 50,000 requests, 200 MB).
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1000 * 1000
NOT_YET = "batch export: not answered yet"
PROMPT_PART = "prompt"


# -- the run's requests, found by running the study against a recorder ---------------------------------

@dataclass
class Recorder:
    """A stand-in `openai` model: records what it is asked (by cache key) and answers nothing."""

    info: ModelInfo
    fp: dict
    asked: dict = field(default_factory=dict)  # cache key -> (method or None, request)

    def fingerprint(self) -> dict:
        return self.fp

    def close(self) -> None:
        pass

    def choose(self, requests: Sequence[ChoiceRequest], method: str = "exact") -> list[ChoiceResult]:
        if method != "exact":
            raise UserError(f"--batch-export: --method {method} draws until n valid answers, which a batch file "
                            "cannot do in one pass; use --method exact")
        for r in requests:
            self.asked.setdefault(cache_key(self.fp, r, method), (method, r))
        nan = float("nan")
        return [ChoiceResult(probs=[nan] * len(r.completions), validity=nan, method=method, failed=NOT_YET)
                for r in requests]

    def complete(self, requests: Sequence[CompletionRequest]) -> list[CompletionResult]:
        for r in requests:
            self.asked.setdefault(cache_key(self.fp, r), (None, r))
        return [CompletionResult(texts=[], failed=NOT_YET) for _ in requests]

    def usage(self) -> dict:
        return {}


@dataclass
class Plan:
    """What a run still asks: its identity, the uncached requests, and every key it looked up."""

    identity: dict
    model: str  # the API model id written into every body
    openai_host: bool
    asked: dict
    known: set


def plan_requests(study, spec, out, *, params: dict, method: str, n: int, batch_size: int,
                  base_url: str | None = None) -> Plan:
    """Run `study`'s collection against the recorder, through the run folder's cache (if any).
    `spec`: the command line's parsed ModelSpec."""
    from .pipeline import numeric_identity  # lazy: imports collect.pipeline, collect.option_order

    backend = check_model_options(spec, base_url, None)
    if backend != "openai":
        raise UserError(f"--batch-export/--batch-import: for openai: models (a provider's batch endpoint or "
                        f"`vllm run-batch`); {redact(spec.text)} runs locally: collect it directly")
    if method not in study.methods:
        raise UserError(f"--method {method}: {study.name} supports {', '.join(study.methods)}")
    name, urls = spec.name, list(spec.urls)
    urls = urls or [u for u in (base_url or "").split(",") if u] or [DEFAULT_BASE_URL]
    trials, _items = study.make(**params)
    if len(trials) == 0:
        raise UserError(f"{study.name}: these options select no trial; nothing to collect")
    params = {**params, "method": method, "n": n if method != "exact" else None}
    fp = openai_fingerprint(name, len(urls))
    identity = {"study": study.name, "model": fp, "parameters": params, **numeric_identity(backend, batch_size)}
    RunStore.check_out(out, identity)  # a folder holding another run fails here
    cache_path = Path(out) / CACHE
    run_cache = RunStore(Path(out)).cache() if cache_path.is_file() else None
    cache = OverlayCache(run_cache)
    rec = Recorder(ModelInfo(spec=redact(spec.text), backend="openai", name=name, revision=name), fp)
    try:
        collect_trials(study, rec, cache, trials, params, method=method, n=n, chunk=batch_size)
    finally:
        if run_cache is not None:
            run_cache.close()
    return Plan(identity=identity, model=name, openai_host=any(is_openai_host(u) for u in urls),
                asked=rec.asked, known=set(rec.asked) | cache.hits)


# -- export ---------------------------------------------------------------------------------------------

def resolve_format(fmt: str, openai_host: bool) -> str:
    if fmt not in FORMATS:
        raise UserError(f"--batch-format {fmt}: choose one of {', '.join(FORMATS)}")
    if fmt == "auto":
        return "chat-top" if openai_host else "completions-top"
    return fmt


def _line(custom_id: str, url: str, body: dict) -> dict:
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}


def request_lines(key: str, method: str | None, req, model: str, fmt: str) -> list[dict]:
    """The batch lines of one request (one, or one per option plus the prompt for echo forms)."""
    chat = fmt == "chat-top"
    if method is None:  # free text: the request's own sampling settings
        body = {"model": model, "max_tokens": req.max_tokens, "temperature": req.temperature, "top_p": req.top_p,
                "n": req.n, "seed": req.seed % 2**31, **({"stop": list(req.stop)} if req.stop else {})}
        if chat:
            return [_line(key, "/v1/chat/completions", {**body, "messages": [{"role": "user", "content": req.prompt}]})]
        return [_line(key, "/v1/completions", {**body, "prompt": req.prompt})]
    if fmt == "chat-top":
        return [_line(key, "/v1/chat/completions", {
            "model": model, "messages": [{"role": "user", "content": req.prompt}], "max_tokens": 1,
            "logprobs": True, "top_logprobs": TOP_K, "temperature": 0.0})]
    if fmt == "completions-top":
        return [_line(key, "/v1/completions", {"model": model, "prompt": req.prompt, "max_tokens": 1,
                                               "logprobs": TOP_K, "temperature": 0.0})]
    # echo forms: score prompt+option for each option, and the prompt alone (a token may straddle the
    # boundary: then log p(c | s) = log p(s.c) - log p(s); openai_scoring.py)
    if fmt == "completions-echo":
        extra = {"echo": True, "logprobs": 1}
    else:
        extra = {"prompt_logprobs": 0}
    texts = [(f"{key}/{i}", req.prompt + c) for i, c in enumerate(req.completions)]
    texts.append((f"{key}/{PROMPT_PART}", req.prompt))
    return [_line(cid, "/v1/completions", {"model": model, "prompt": t, "max_tokens": 1, "temperature": 0.0, **extra})
            for cid, t in texts]


def part_paths(path: Path, parts: int) -> list[Path]:
    if parts == 1:
        return [path]
    return [path.with_name(f"{path.stem}-{i:03d}{path.suffix}") for i in range(1, parts + 1)]


def split_lines(lines: list[bytes], max_requests: int, max_bytes: int) -> list[list[bytes]]:
    """Consecutive files within the provider's limits (lines of one request may be split apart:
    the import gathers them from all result files)."""
    files: list[list[bytes]] = [[]]
    size = 0
    for b in lines:
        if len(b) > max_bytes:
            raise UserError(f"--batch-export: one request is {len(b):,} bytes, over the {max_bytes:,}-byte file limit")
        if files[-1] and (len(files[-1]) >= max_requests or size + len(b) > max_bytes):
            files.append([])
            size = 0
        files[-1].append(b)
        size += len(b)
    return files


def export_batch(plan: Plan, path, fmt: str = "auto", max_requests: int = MAX_REQUESTS,
                 max_bytes: int = MAX_BYTES, overwrite: bool = False) -> tuple[list[Path], int]:
    """Write the plan's requests; returns (files written, requests). An existing file is replaced only
    with `overwrite` (--overwrite), checked for every part before any is written."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"--batch-export {path}: is a folder; give a file name such as requests.jsonl")
    if not path.parent.is_dir():
        raise UserError(f"--batch-export {path}: the folder {path.parent} does not exist")
    fmt = resolve_format(fmt, plan.openai_host)
    lines = [(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
             for key, (method, req) in plan.asked.items()
             for line in request_lines(key, method, req, plan.model, fmt)]
    files = split_lines(lines, max_requests, max_bytes) if lines else []
    paths = part_paths(path, len(files)) if files else []
    taken = [p for p in paths if p.exists() or p.is_symlink()]
    if taken and not overwrite:
        raise UserError(f"--batch-export {taken[0]}: exists; give a new file name, or add --overwrite to replace it")
    for p, chunk in zip(paths, files):
        atomic_write_bytes(p, b"".join(chunk))
    return paths, len(plan.asked)


# -- import ---------------------------------------------------------------------------------------------

@dataclass
class Imported:
    answers: dict  # cache key -> answer dict (ChoiceResult / CompletionResult fields)
    failed: dict  # cache key -> reason (a 200 body that gives no exact answer)
    missing: list  # cache keys asked by the run with no result line
    already: int  # lines for answers the cache already held (kept as they were)
    lines: int


def _bad(where: str, what: str) -> UserError:
    return UserError(f"{where}: {what}")


def read_results(paths: Sequence, plan: Plan) -> dict[str, tuple[str, dict]]:
    """custom_id -> (where, response body) after checking every line; one UserError at the first
    bad one (nothing is imported from a file with a bad line)."""
    seen: dict[str, str] = {}
    bodies: dict[str, tuple[str, dict]] = {}
    for path in paths:
        p = Path(path)
        raw = _read_regular(p)
        for n, text in enumerate(raw.splitlines(), 1):
            where = f"{p} line {n}"
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise _bad(where, "not a JSON object (a truncated or damaged line); download the results again") from None
            if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
                raise _bad(where, "no custom_id; not a line of an OpenAI Batch output file")
            cid = line["custom_id"]
            key, _, part = cid.partition("/")
            if key not in plan.known or (part and part != PROMPT_PART and not part.isdigit()):
                raise _bad(where, f"custom_id {cid[:80]!r} is not a request of this run (a line from another "
                                  "run, study, model or parameters?); import the results of this run's --batch-export")
            if cid in seen:
                raise _bad(where, f"custom_id {cid[:80]!r} also on {seen[cid]} (a duplicated line); "
                                  "import each result once")
            seen[cid] = where
            error = line.get("error")
            if error is not None:
                msg = error.get("message") if isinstance(error, dict) else error
                code = error.get("code") if isinstance(error, dict) else None
                raise _bad(where, f"an error object for {cid[:80]!r} ({redact(str(code or 'error'))}: "
                                  f"{redact(str(msg))[:200]}); import the successful results only (the output "
                                  "file, not the error file): the next collect asks the server for the rest")
            resp = line.get("response")
            body = resp.get("body") if isinstance(resp, dict) else None
            status = resp.get("status_code") if isinstance(resp, dict) else None
            if status != 200 or not isinstance(body, dict):
                raise _bad(where, f"no successful response for {cid[:80]!r} (status_code {status!r})")
            bodies[cid] = (where, body)
    check_models(bodies, plan.model)
    return bodies


MAX_RESULTS_BYTES = 2 * MAX_BYTES  # an output file is larger than its input (log-probabilities): 400 MB


def _read_regular(p: Path) -> bytes:
    """A results file's bytes: a regular file of bounded size; a FIFO, a device (/dev/zero) or a
    folder is refused before it is opened, so nothing blocks or fills memory."""
    try:
        st = p.stat()
    except OSError as e:
        raise UserError(f"--batch-import {p}: cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"--batch-import {p}: not a regular file (a pipe, device or folder); give the downloaded "
                        "results .jsonl file")
    if st.st_size > MAX_RESULTS_BYTES:
        raise UserError(f"--batch-import {p}: {st.st_size:,} bytes, over the {MAX_RESULTS_BYTES:,}-byte limit of "
                        "one results file; import its parts one by one")
    try:
        with open(p, "rb") as f:
            return f.read(MAX_RESULTS_BYTES + 1)
    except OSError as e:
        raise UserError(f"--batch-import {p}: cannot be read ({e.strerror or e})") from None


def same_model(answered, asked: str) -> bool:
    """Whether a body's `model` answers a request for `asked`: the same id, or a dated snapshot of it
    (OpenAI answers gpt-4o-mini with gpt-4o-mini-2024-07-18)."""
    return isinstance(answered, str) and (answered == asked or answered.startswith(asked + "-"))


def check_models(bodies: dict[str, tuple[str, dict]], asked: str) -> None:
    """Every body names the model the run asked for; else one line listing the mismatches (issue 42:
    another model's answers were imported silently under the requested model's name)."""
    wrong = [(where, body.get("model")) for where, body in bodies.values() if not same_model(body.get("model"), asked)]
    if not wrong:
        return
    models = sorted({redact(str(m))[:60] for _, m in wrong})
    shown = "; ".join(f"{w}: {redact(str(m))[:60]!r}" for w, m in wrong[:3])
    raise UserError(f"--batch-import: {len(wrong)} result line(s) answered by another model than {asked!r} "
                    f"({', '.join(map(repr, models[:5]))}): {shown}{'; ...' if len(wrong) > 3 else ''}; nothing is "
                    "imported: import the results of this run's model, or collect with --model openai:THAT_MODEL")


def _parse(where: str, body: dict):
    """The body as the openai SDK's response object (what the direct path's parsers read)."""
    import pydantic  # lazy: imports typing_extensions, pydantic_core
    from openai.types import Completion  # lazy: imports openai, pydantic
    from openai.types.chat import ChatCompletion  # lazy: imports openai, pydantic

    kind = ChatCompletion if body.get("object") == "chat.completion" else Completion
    try:
        return kind.model_validate(body)
    except pydantic.ValidationError as e:
        raise _bad(where, f"the body is not a {'chat' if kind is ChatCompletion else 'completions'} response "
                          f"({e.error_count()} field error(s), first at {'.'.join(map(str, e.errors()[0]['loc']))})") from None


def answers_from(plan: Plan, bodies: dict[str, tuple[str, dict]], cached: set) -> Imported:
    answers, failed, missing = {}, {}, []
    for key, (method, req) in plan.asked.items():
        if key in cached:
            continue
        if method is None:
            if key not in bodies:
                missing.append(key)
                continue
            r = _parse(*bodies[key])
            texts = [(c.message.content or "") if hasattr(c, "message") else (c.text or "") for c in r.choices]
            if len(texts) < req.n:
                failed[key] = f"{len(texts)} of {req.n} texts returned"
                continue
            answers[key] = CompletionResult(texts=[mask_secrets(t) for t in texts[: req.n]], n_queries=1).__dict__
            continue
        parts = [f"{key}/{i}" for i in range(len(req.completions))] + [f"{key}/{PROMPT_PART}"]
        try:
            if key in bodies:  # a top form: one line
                r = _parse(*bodies[key])
                top = _chat_top(r) if hasattr(r.choices[0], "message") else _completion_top(r)
                if not top:
                    raise Inexact("no top log-probabilities (the answer was the end of the text)")
                absent = [c for c in req.completions if c not in top]
                if absent:
                    raise Inexact(f"{len(absent)} option(s) not among the top {len(top)} tokens; "
                                  "export with --batch-format completions-echo for exact scores")
                lps, queries = [top[c] for c in req.completions], 1
            elif all(p in bodies for p in parts):  # echo forms: one line per option, and the prompt
                parsed = {}
                for p, text in zip(parts, [req.prompt + c for c in req.completions] + [req.prompt]):
                    ch = _parse(*bodies[p]).choices[0]
                    echo = getattr(ch, "logprobs", None) is not None and getattr(ch.logprobs, "text_offset", None)
                    parsed[p] = _echo_tokens(ch, len(text)) if echo else _prompt_logprob_tokens(ch, text)
                lps = []
                for p in parts[:-1]:
                    lp = _suffix_logprob(parsed[p], len(req.prompt))
                    lps.append(lp if lp is not None else _total_logprob(parsed[p], parsed[parts[-1]]))
                queries = len(parts)
            else:
                missing.append(key)
                continue
            if not all(math.isfinite(x) for x in lps):
                raise Inexact("a log-probability is not finite")
            try:
                answers[key] = choice.exact_choice(lps, n_queries=queries).__dict__
            except ImpossibleLogprobs as e:  # +1000 is no log-probability: the file is refused, not clamped
                where = bodies[key][0] if key in bodies else bodies[parts[0]][0]
                raise _bad(where, f"{e}; not the results of a model: nothing is imported") from None
        except Inexact as e:
            failed[key] = str(e)
        except (AttributeError, TypeError, IndexError, KeyError, ValueError) as e:
            failed[key] = f"unexpected response: {redact(repr(e))[:200]}"
    return Imported(answers=answers, failed=failed, missing=missing, already=0, lines=len(bodies))


def import_batch(plan: Plan, out, paths: Sequence) -> Imported:
    """Check every results line, then commit the answers to the run's cache in one transaction."""
    bodies = read_results(paths, plan)
    store_root = Path(out)
    # answers the cache holds are kept as they are (never overwritten by a result file)
    cached = set()

    if (store_root / CACHE).is_file():
        c = RunStore(store_root).cache()
        try:
            cached = set(c.get_many(list(plan.known)))
        finally:
            c.close()
    imported = answers_from(plan, bodies, cached)
    imported.already = sum(1 for cid in bodies if cid.partition("/")[0] in cached)
    if imported.answers:
        store = RunStore.open(out, plan.identity)
        cache = store.cache()
        try:
            cache.put_many(imported.answers)
        finally:
            cache.close()
    return imported
