"""Shared fixtures: the embedded model is loaded once per test session."""

import os

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def smollm2():
    from simsubjects.collect.models import load_model

    return load_model("smollm2")


@pytest.fixture(scope="session", autouse=True)
def _crash_log_dir(tmp_path_factory):
    """Crash logs of the CLI's top-level guard (simsubjects.crash) go here, subprocesses included."""
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
