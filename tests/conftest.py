"""Shared fixtures: the embedded model is loaded once per test session (once per xdist worker).

`make test` runs the suite on pytest-xdist workers (`-n 2 --dist loadfile`, see the Makefile):
a module's tests, and so its module-scoped fixtures, stay on one worker. Each worker is one
process with one torch thread, so two workers fill two cores without oversubscribing them.
"""

import fcntl
import gc
import os
from pathlib import Path

import pytest

from simsubjects.cli.commands import GC_THRESHOLDS

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# ppi-python (a test reference only; the package has no numba code) compiles its @njit functions with
# numba on first call: 10-20 s per process for inputs of a few hundred rows. Run as the plain Python
# they are written in, the same functions give the same numbers (every comparison still holds to its
# tolerance) in milliseconds. Set before numba is first imported.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", ... under xdist; None in a plain run
if WORKER:
    # Set before torch is first imported (test modules import it after conftest): each worker and
    # the CLI subprocesses it starts use one thread, so `-n 2` does not run four threads on two cores.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")

# The files that take longest, first: xdist's loadfile hands out whole files in collection order,
# so a long file started last would leave the other worker idle at the end (longest-first
# scheduling). The Makefile passes --no-loadscope-reorder: by default xdist re-sorts the files by
# their number of tests, which put the one-test kill/resume file last. Order measured with
# --durations (a file's total, see docs/testing.md); unlisted files keep their order.
HEAVY_FIRST = [
    "test_replicate.py",  # one tiny `replicate all` in a subprocess, then R, Stata, report and two-run checks on it
    "test_openai_backend.py",  # the loopback llama.cpp server, faults injected by a proxy
    "test_check_r.py",  # R CMD build + check with the vignette; rpy2 twins of every built-in
    "test_qualtrics.py",  # every sample survey imported, checked and dry-run; an experiment on the model
    "test_qualtrics41.py",  # imports of edited surveys; analyses and the report's figures on a model side from people
    "test_studyfile.py",
    "test_preload.py",  # CLI runs through a fork server of its own (private cache folder)
    "test_ray_engine.py",  # a loopback Ray cluster, two actors loading the model
    "test_cap_hostile.py",  # llama.cpp's server behind a usage-rewriting proxy; a Ray cluster in a subprocess
    "test_sessions.py",
    "test_generation.py",
    "test_kill_resume.py",  # ten SIGKILLs of a collection on the model
    "test_bench.py",  # the toy bench on the model, a killed `bench run` resumed in a subprocess, the R twin
    "test_secrets.py",
    "test_session_players.py",
    "test_hostile3.py",  # issue 42: three short sessions on the model, Qualtrics imports, the loopback server
    "test_sessions41.py",  # issue 41: three small sessions on the model (sampled, enumerated with chance moves)
    "test_people_fit.py",  # issue 39: a respondents table with both --ablate twins, a Qualtrics import, on the model
    "test_estimand40.py",  # issue 40: a small session and a small vignette run on the model
    "test_people_sessions.py",  # issue 39: paths: people with its three ablation twins on the model, a SIGKILL resume
    "test_conjoint.py",
    "test_network.py",
    "test_check_r_studyfile.py",
    "test_batch_files.py",
    "test_hf_backend.py",
    "test_fuzz.py",
    "test_studyfile_builtins.py",
    "test_report.py",
    "test_crash_consistency.py",
    "test_representativeness.py",
    "test_rep_coverage.py",  # 100 simulated studies, each with a double bootstrap (issue 40's coverage check)
    "test_garden_path.py",
    "test_perf_paths.py",
    "test_opinion_survey.py",
    "test_inference_units.py",
    "test_milgram_studyfile.py",
    "test_amce.py",
    "test_received_run.py",
    "test_budget.py",
    "test_fast.py",
]


# The collector as the CLI's process sets it (simsubjects.cli.commands.batch_gc), and what is alive once
# the tests are collected (the imported packages) and once the model is loaded is frozen out of every
# later collection: a full collection then walks the objects the running tests made, not the ~million
# from torch, transformers and pandas. Measured on test_studyfile + test_sessions: 9.6 s of the
# worker's CPU in the collector before, 2.7 s after (163 s to 150 s CPU in all, the same peak memory).
gc.set_threshold(*GC_THRESHOLDS)


def pytest_collection_finish(session):
    gc.freeze()


def pytest_collection_modifyitems(session, config, items):
    if not WORKER:  # a plain run keeps pytest's order
        return
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    # sorted() is stable: tests inside a file, and unlisted files, keep pytest's order
    items[:] = sorted(items, key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))


@pytest.fixture(scope="session")
def smollm2(tmp_path_factory):
    from simsubjects.collect.models import load_model

    # On a fresh machine the first load converts the GGUF into the weight cache (~40 s). Workers
    # take turns, so the second reads the entry the first wrote instead of converting it again.
    lock = tmp_path_factory.getbasetemp().parent / "smollm2-load.lock" if WORKER else None
    if lock is None:
        model = load_model("smollm2")
    else:
        with open(lock, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                model = load_model("smollm2")
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
    gc.freeze()  # it lives for the session (see pytest_collection_finish)
    return model


@pytest.fixture(scope="session", autouse=True)
def _crash_log_dir(tmp_path_factory):
    """Crash logs of the CLI's top-level guard (simsubjects.cli.crash) go here, subprocesses included."""
    d = tmp_path_factory.mktemp("crash-logs")
    os.environ["SIMSUBJECTS_LOG_DIR"] = str(d)
    return d


@pytest.fixture(autouse=True)
def _no_internal_errors(request, _crash_log_dir):
    """Any traceback is a failure: the guard turns one into a crash log, so a new log fails the test."""
    before = set(_crash_log_dir.iterdir())
    yield
    new = sorted(set(_crash_log_dir.iterdir()) - before)
    if new and request.node.get_closest_marker("internal_error") is None:
        pytest.fail("an internal error (traceback) was logged:\n" + new[0].read_text(errors="replace")[-3000:])
