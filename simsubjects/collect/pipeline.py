"""One collection from start to run folder: model, trials, cache, tidy table, manifest."""

from __future__ import annotations

import errno
import platform
import shutil
import sqlite3
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from importlib.metadata import PackageNotFoundError, version

import pandas as pd
import numpy

from .. import __version__
from ..datasets.registry import as_dataset, checksum
from ..errors import UserError
from simsubjects.collect.schema import check_responses
from ..redact import redact, redact_obj
from .models import BACKENDS, ModelSpec, check_model_options, load_model, model_spec
from .defaults import BATCH_SIZE, SAMPLES
from .runner import collect_trials
from .store import RunStore, stable_hash
from .budget import remaining_estimate
from .resume_record import keep_first_record  # a finished run keeps its own record (issue 25)
from simsubjects.collect.store import write_error


def versions() -> dict:
    """The versions a run records. torch and transformers are read from their installed metadata (the same
    strings as their __version__), not imported: a run on a server's model never needs them, and importing
    them costs a collection several seconds. None: not installed."""

    def installed(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    return {"simsubjects": __version__, "python": platform.python_version(), "pandas": pd.__version__,
            "numpy": numpy.__version__, "torch": installed("torch"), "transformers": installed("transformers")}


def base_manifest(study: str, model, params: dict, datasets: list[str], templates: list[str] | None,
                  started: float) -> dict:
    return {
        "study": study,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
        "model": {"spec": model.info.spec, "backend": model.info.backend, "name": model.info.name,
                  "revision": model.info.revision, **model.info.details},
        "parameters": params,
        "seed": params.get("seed"),
        "datasets": {as_dataset(d).name: checksum(as_dataset(d)) for d in datasets},
        "prompt_template_sha256": [stable_hash(t) for t in templates or []],
        "timings": {"seconds": round(time.perf_counter() - started, 3)},
    }


def numeric_identity(backend: str, batch_size: int) -> dict:
    """The run-identity part for settings that change numbers without changing the question.

    A local model's exact log-probabilities depend on which sequences share a forward pass (float
    sums in another order: up to 2.4e-6 between --batch-size 1 and 2), so its batch size is part of
    the run's identity: a run is never resumed with another one (see docs/conventions.md). A
    server's batching is the server's own and not ours to pin, so there it is left out.
    """
    return {} if BACKENDS[backend].server else {"numerics": {"batch_size": int(batch_size)}}


@contextmanager
def refused_writes(out):
    """sqlite3's and the file system's refusals (disk full, read-only) as a UserError naming --out."""
    try:
        yield
    except sqlite3.Error as e:
        if not any(w in str(e) for w in ("full", "readonly", "read-only", "disk I/O", "unable to open")):
            raise
        raise UserError(f"--out {out}: cannot write ({e}); the answers cached so far are kept: run the same "
                        "command again when the disk has space to resume") from None
    except OSError as e:  # not EACCES: a model file that cannot be read is not about --out
        if e.errno not in (errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EFBIG):
            raise
        raise write_error(e, "--out", Path(out)) from None


def _budgeted(model, budget, study, spec, out, trials, params, method, n, batch_size):
    wrapped = budget.wrap(model, spec, chat_template=bool(params.get("chat_template")))
    wrapped.remaining = lambda: remaining_estimate(study, model, out, trials, params, method=method, n=n,
                                                   batch_size=batch_size, budget=budget, counter=wrapped.counter)
    return wrapped


def run_study(study, spec: ModelSpec | str, out, **kw) -> tuple[pd.DataFrame, dict]:
    """Collect `study` (a StudyDef) into the run folder `out`; returns (responses, manifest).
    `spec`: the command line's parsed ModelSpec, or a script's text (parsed here, the Python API's edge)."""
    with refused_writes(out):  # a full disk or a read-only folder mid-run: one line, the cache kept
        return _run_study(study, model_spec(spec), out, **kw)


def _run_study(study, spec: ModelSpec, out, *, params: dict, method: str = "exact", n: int = SAMPLES,
               overwrite: bool = False, model_options: dict | None = None, show_progress: bool = True,
               model=None, batch_size: int = BATCH_SIZE, budget=None, engine: dict | None = None) -> tuple[pd.DataFrame, dict]:
    started = time.perf_counter()
    mo = model_options or {}
    backend = check_model_options(spec, mo.get("base_url"), mo.get("timeout"))  # before anything is written
    if method not in study.methods:
        raise UserError(f"--method {method}: {study.name} supports {', '.join(study.methods)}")
    if method != "exact" and n < 1:
        raise UserError(f"--n {n}: must be at least 1")
    trials, items = study.make(**params)
    if len(trials) == 0:
        raise UserError(f"{study.name}: these options select no trial; nothing to collect")
    params = {**params, "method": method, "n": n if method != "exact" else None}
    numerics = numeric_identity(backend, batch_size)
    # --out is checked before the model loads: a file, or a folder holding another run, fails at once.
    RunStore.check_out(out, {"study": study.name, "parameters": params, **numerics}, overwrite=overwrite)
    created = not Path(out).exists()
    if model is None and engine and engine.get("name") == "ray":  # a pool of actors (collect/ray_engine.py)
        from .ray_engine import RayEngine  # lazy: looked up per call (tests replace RayEngine)

        model = RayEngine(spec, mo, address=engine.get("address"), actors=engine.get("actors"),
                          threads=engine.get("threads", 1), batch_size=batch_size)
    model = model or load_model(spec, **mo)
    # an engine with several workers is handed one batch per worker at once; it cuts them back into
    # --batch-size shards, so each forward pass holds what a local run's would
    chunk = batch_size * int(getattr(model, "parallel", 1))
    identity = {"study": study.name, "model": model.fingerprint(), "parameters": params, **numerics}
    store = RunStore.open(out, identity, overwrite=overwrite)
    if budget is not None:  # --max-cost: every batch priced before it is sent (collect/budget.py)
        model = _budgeted(model, budget, study, spec, out, trials, params, method, n, batch_size)
    nothing_cached = True
    usage_before = model.usage() if hasattr(model, "usage") else None
    try:
        cache = store.cache()
        try:
            responses, stats, records = collect_trials(study, model, cache, trials, params, method=method, n=n,
                                                       chunk=chunk, show_progress=show_progress)
        finally:
            try:
                nothing_cached = len(cache) == 0
            except Exception:  # noqa: BLE001 - only decides what to clean up
                nothing_cached = False
            cache.close()
            engine_used = model.engine_record() if hasattr(model, "engine_record") else {"name": "local"}
            if engine and engine.get("name") == "ray":
                model.close()  # the actors end with the collection
        if study.finalize is not None:
            responses = study.finalize(responses, params)
        if "model" in responses:  # the spec as shown: no URL credentials, no key (simsubjects.redact)
            responses["model"] = responses["model"].map({m: redact(m) for m in responses["model"].unique()})
        responses = check_responses(responses, f"{study.name} responses")
    except UserError:
        # A bad input found only now (e.g. an unreachable server): leave no half-made run behind.
        if created and nothing_cached:
            shutil.rmtree(out, ignore_errors=True)
        else:
            store.restore_manifest(nothing_cached)
        raise
    manifest = base_manifest(study.name, model, params, study.datasets, study.templates(), started)
    manifest["identity"] = identity
    manifest["engine"] = engine_used  # local, or ray with its nodes, actors and versions
    if trials.attrs.get("column_labels"):  # labels of study-specific columns (persona attributes) for exports
        manifest["column_labels"] = dict(trials.attrs["column_labels"])
    if trials.attrs.get("panel"):  # a raked persona panel: Kish n of its weights, trimming, margin error
        manifest["panel"] = dict(trials.attrs["panel"])
    manifest["counts"] = {k: v for k, v in stats.items() if k not in ("failures", "short", "seconds")}
    manifest["failures"] = stats.get("failures", [])
    manifest["short"] = stats.get("short", [])
    manifest["timings"]["collection_seconds"] = stats.get("seconds")
    if usage_before is not None:  # tokens actually used by this collection (a --dry-run counts the same)
        manifest["usage"] = {k: v - usage_before.get(k, 0) for k, v in model.usage().items()}
    if budget is not None:  # --max-cost: what was charged, and whether the server's or the local count priced it
        manifest["budget"] = model.record()
    manifest = redact_obj(manifest)  # what is written and shown: no URL credentials, no key, scrubbed server ids

    manifest = keep_first_record(getattr(store, "previous_manifest", None), manifest)
    store.finish(responses, items, manifest, records)
    return responses, manifest
