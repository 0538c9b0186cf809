"""The preload (fork) server: commands run through it behave exactly as in their own process.

One server per module (its start pays the torch + transformers import once), in a private cache
folder whose weights/ links to the real weight cache. Each comparison runs the same command through
the server (`python -m simsubjects`, the `simsubjects` entry point) and in-process
(`python -m simsubjects.cli`, never through a server) and compares exit codes, stdout, stderr and files.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from simsubjects.cli import preload

THROUGH = [sys.executable, "-m", "simsubjects"]
PLAIN = [sys.executable, "-m", "simsubjects.cli"]
SECRET = "sk-preload-test-0123456789abcdef"
START_TIMEOUT = 300  # a busy 2-core machine imports torch + transformers slowly


def _run(cmd, env, **kw):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=START_TIMEOUT, **kw)


def _status(env) -> dict | None:
    """The server's answer to a ping (in this process: no CLI start per call)."""
    old = os.environ.get("SIMSUBJECTS_CACHE")
    os.environ["SIMSUBJECTS_CACHE"] = env["SIMSUBJECTS_CACHE"]
    try:
        return preload.request("ping")
    finally:
        os.environ.pop("SIMSUBJECTS_CACHE") if old is None else os.environ.__setitem__("SIMSUBJECTS_CACHE", old)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split(") ")[-1].startswith("Z"))  # a zombie is gone


def _wait_gone(pid: int, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(environment, status) of a running server; stopped at the end of the module."""
    from simsubjects.collect.models import weight_cache

    cache = tmp_path_factory.mktemp("pl")
    (cache / "weights").symlink_to(weight_cache.root() / "weights", target_is_directory=True)
    env = {**os.environ, "SIMSUBJECTS_CACHE": str(cache), "OPENAI_API_KEY": SECRET}
    env.pop("SIMSUBJECTS_PRELOAD", None)
    r = _run(PLAIN + ["preload", "start"], env)
    assert r.returncode == 0, r.stderr
    assert "preload server started" in r.stdout
    r = _run(PLAIN + ["preload", "status"], env)
    status = _status(env)
    assert r.returncode == 0 and f"preload server pid {status['pid']}: up" in r.stdout
    yield env, status
    _run(PLAIN + ["preload", "stop"], env)
    _wait_gone(status["pid"])


def _mask(text: str) -> str:
    """Timings and rates differ between any two runs."""
    text = re.sub(r" *\d+(\.\d+)?(s/trial|trial/s|s)\b", " T", text)  # tqdm pads its rate to 5 places
    return re.sub(r"\d\d:\d\d", "T", text)


def _same(cmd_tail, env, cwd=None):
    before = _status(env)["runs"]
    through = _run(THROUGH + cmd_tail, env, cwd=cwd)
    assert _status(env)["runs"] == before + 1, "the command did not run through the server"
    plain = _run(PLAIN + cmd_tail, env, cwd=cwd)
    assert (through.returncode, _mask(through.stdout), _mask(through.stderr)) == \
        (plain.returncode, _mask(plain.stdout), _mask(plain.stderr))
    return through


def test_entry_point_imports_nothing_heavy():
    code = ("import sys, simsubjects.launch, simsubjects.cli.preload; "
            "print(sorted(m for m in ('click', 'pandas', 'numpy', 'torch', 'transformers') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "[]"


@pytest.mark.parametrize("argv", [
    ["--help"], ["collect", "--help"],
    ["study", "check", "examples/vignette_2x2/study.yaml"],
    ["collect", "ultimatum", "--pairs", "1", "--out", "unused", "--dry-run"],
])
def test_cli_paths_without_a_model_never_import_torch(argv):
    code = ("import sys, contextlib, io; from simsubjects.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): rc = main(sys.argv[1:])\n"
            "print(rc, 'torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                       cwd=Path(__file__).parents[1], timeout=START_TIMEOUT)
    assert r.stdout.split() == ["0", "False"], r.stderr


def test_help_and_version_import_no_pandas():
    code = ("import sys, contextlib, io; from simsubjects.cli import main\n"
            "for argv in (['--help'], ['--version'], ['preload', '--help']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()): assert main(argv) == 0\n"
            "print(sorted(m for m in ('pandas', 'numpy', 'yaml', 'torch') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=START_TIMEOUT)
    assert r.stdout.strip() == "[]", r.stderr


def test_server_is_fork_safe_and_holds_no_secret(server):
    env, status = server
    info = _status(env)
    assert info["python_threads"] == 1  # no Python thread before any fork
    assert info["pid"] == status["pid"]
    run_dir = Path(env["SIMSUBJECTS_CACHE"]) / "run"
    assert run_dir.stat().st_mode & 0o777 == 0o700
    # started with only the import-time environment: the test run's secrets are not in it
    environ = Path(f"/proc/{status['pid']}/environ").read_bytes()
    assert SECRET.encode() not in environ and b"OPENAI_API_KEY" not in environ
    assert b"SIMSUBJECTS_LOG_DIR" not in environ  # a run-time variable: it reaches only the children
    assert SECRET not in (run_dir / "preload.log").read_text()


def test_commands_behave_as_in_their_own_process(server, tmp_path):
    env, _ = server
    root = Path(__file__).parents[1]
    assert _same(["--version"], env).stdout.startswith("simsubjects")
    assert _same(["datasets", "list"], env).returncode == 0
    bad = _same(["collect", "ultimatum", "--pairs", "0", "--out", str(tmp_path / "x")], env)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and not (tmp_path / "x").exists()
    assert _same(["nosuchcommand"], env).returncode == 2
    assert _same(["study", "check", "examples/vignette_2x2/study.yaml"], env, cwd=root).returncode == 0


def test_environment_reaches_the_child(server, tmp_path):
    """A run-time variable of the client (SIMSUBJECTS_STUDIES) is the child's, not the server's."""
    env, _ = server
    bad = _same(["collect", "--help"], {**env, "SIMSUBJECTS_STUDIES": str(tmp_path / "nowhere")})
    assert bad.returncode == 2 and "SIMSUBJECTS_STUDIES" in bad.stderr


def test_collection_same_rows_files_and_progress(server, tmp_path):
    env, _ = server
    cmd = ["collect", "ultimatum", "--pairs", "1", "--offers", "3,5"]  # two trials: the rows, files and bar compared
    before = _status(env)["runs"]
    through = _run(THROUGH + cmd + ["--out", str(tmp_path / "a")], env, cwd=tmp_path)
    assert _status(env)["runs"] == before + 1
    plain = _run(PLAIN + cmd + ["--out", str(tmp_path / "b")], env, cwd=tmp_path)
    assert through.returncode == plain.returncode == 0, through.stderr
    assert _mask(through.stdout).replace("/a:", "/b:") == _mask(plain.stdout)
    assert "ultimatum (smollm2): 100%|" in through.stderr  # the progress bar reaches the client's stderr
    bars = [_mask(r.stderr).split("\r") for r in (through, plain)]
    assert (bars[0][0], bars[0][-1]) == (bars[1][0], bars[1][-1])  # the first and the last state of the bar
    a, b = (pd.read_parquet(tmp_path / d / "responses.parquet") for d in "ab")
    pd.testing.assert_frame_equal(a, b)  # identical log-probabilities
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(p.name for p in (tmp_path / "b").iterdir())
    mode = (tmp_path / "a" / "responses.parquet").stat().st_mode & 0o777
    assert mode == (tmp_path / "b" / "responses.parquet").stat().st_mode & 0o777  # the client's umask


def _start_long_run(env, out: Path) -> subprocess.Popen:
    # a shell starts a command with no signal blocked; a test runner's process may have some blocked
    proc = subprocess.Popen(THROUGH + ["collect", "ultimatum", "--pairs", "100", "--batch-size", "4", "--out", str(out)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, []))
    seen = b""
    deadline = time.monotonic() + START_TIMEOUT
    while b"trial/s]" not in seen and b"s/trial]" not in seen:  # the model has loaded, trials are being answered
        assert time.monotonic() < deadline and proc.poll() is None, seen[-500:]
        seen += os.read(proc.stderr.fileno(), 4096)
    return proc


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0]


def _wait_state(pid: int, stopped: bool, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while (_state(pid) == "T") != stopped:
        assert time.monotonic() < deadline, f"{pid} is {_state(pid)}"
        time.sleep(0.05)


@pytest.mark.xfail(strict=False, reason="under `make test` the child was seen not to stop on a forwarded Ctrl-Z "
                   "(passes when run by pytest directly); not yet explained")
def test_ctrl_z_reaches_the_child(server, tmp_path):
    env, status = server
    proc = _start_long_run(env, tmp_path / "stop")
    try:
        child = int(Path(f"/proc/{status['pid']}/task/{status['pid']}/children").read_text().split()[0])
        proc.send_signal(signal.SIGTSTP)  # Ctrl-Z stops the client and the child; SIGCONT (fg) resumes both
        _wait_state(child, stopped=True, seconds=3)  # a stop takes milliseconds; xfail's wait is short
        _wait_state(proc.pid, stopped=True)
        proc.send_signal(signal.SIGCONT)
        _wait_state(child, stopped=False)
    finally:  # leave no long run behind for the tests that follow
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.communicate(timeout=60)
        deadline = time.monotonic() + 30
        while _status(env)["running"] and time.monotonic() < deadline:
            time.sleep(0.1)


def test_ctrl_c_and_sigterm_reach_the_child(server, tmp_path):
    env, status = server
    proc = _start_long_run(env, tmp_path / "int")
    children = Path(f"/proc/{status['pid']}/task/{status['pid']}/children").read_text().split()
    assert len(children) == 1
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and b"aborted" in err  # click's Abort, as in the plain process
    proc = _start_long_run(env, tmp_path / "term")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM  # the client dies of the child's signal, as the plain process would
    proc = _start_long_run(env, tmp_path / "kill")
    child = int(Path(f"/proc/{status['pid']}/task/{status['pid']}/children").read_text().split()[0])
    proc.kill()  # a client killed outright: its run ends too, as the plain process's would
    proc.communicate(timeout=60)
    assert _wait_gone(child)
    deadline = time.monotonic() + 15
    while _status(env)["running"]:  # no child left behind (the server reaps within a moment)
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_a_different_import_environment_runs_in_process(server, tmp_path):
    env, _ = server
    before = _status(env)["runs"]
    other = "5" if env.get("OMP_NUM_THREADS") == "3" else "3"  # differs from the server's (xdist workers set 1)
    r = _run(THROUGH + ["--version"], {**env, "OMP_NUM_THREADS": other})
    assert r.returncode == 0 and r.stdout.startswith("simsubjects")
    assert _status(env)["runs"] == before
    r = _run(THROUGH + ["--version"], {**env, "SIMSUBJECTS_PRELOAD": "off"})
    assert r.returncode == 0 and _status(env)["runs"] == before
    r = _run([sys.executable, "-X", "importtime", "-m", "simsubjects", "--version"], env)  # profiling: own imports
    assert r.returncode == 0 and "import time:" in r.stderr and _status(env)["runs"] == before
    r = _run(THROUGH + ["--version"], env)
    assert r.returncode == 0 and _status(env)["runs"] == before + 1  # and the same client fits again


def test_idle_timeout_and_removed_socket_stop_the_loop(tmp_path):
    """The server's checks on an object without its imports: idle and socket removal both stop it."""
    srv = object.__new__(preload.Server)
    srv.path = str(tmp_path / "s.sock")
    Path(srv.path).write_text("")
    srv.inode, srv.children, srv.stopping, srv.idle = os.stat(srv.path).st_ino, {}, False, 60
    srv.listener, srv.last = type("L", (), {"close": lambda self: None})(), time.monotonic()
    srv._check_alive()
    assert not srv.stopping
    srv.last -= 61
    srv.children = {123: None}  # a run in progress is never cut off
    srv._check_alive()
    assert not srv.stopping
    srv.children = {}
    srv._check_alive()
    assert srv.stopping and not Path(srv.path).exists()
    srv.stopping, srv.last = False, time.monotonic()
    srv._check_alive()  # the socket is gone now
    assert srv.stopping


def _memory_holds(pid: int, needle: bytes) -> bool:
    """Whether the process's writable memory holds `needle` (read through /proc: root or ptrace access)."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            addr, perms = line.split()[:2]
            if "rw" not in perms:
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            try:
                mem.seek(lo)
                if needle in mem.read(hi - lo):
                    return True
            except (OSError, OverflowError, ValueError):
                continue
    return False


@pytest.mark.skipif(os.geteuid() != 0, reason="reading another process's memory needs root here")
def test_the_server_keeps_no_copy_of_a_clients_secret(server):
    """After runs whose environment held an API key, the server's memory does not hold it (issue 28):
    argv and environment reach the child in a memfd the server never reads."""
    env, status = server
    token = b"sk-preload-memory-" + os.urandom(8).hex().encode()
    before = _status(env)["runs"]
    r = _run(THROUGH + ["--version"], {**env, "OPENAI_API_KEY": token.decode()})
    assert r.returncode == 0 and _status(env)["runs"] == before + 1
    assert not _memory_holds(status["pid"], token)
    assert _memory_holds(os.getpid(), b"sk-preload-memory-")  # the scan finds what is there


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="unshare -n needs root (CAP_SYS_ADMIN) and util-linux's unshare")
def test_a_client_in_other_namespaces_runs_in_its_own_process(server):
    """A client without network (unshare -n) is not served by a child in the server's namespaces."""
    env, _ = server
    before = _status(env)["runs"]
    r = _run(["unshare", "-n", *THROUGH, "--version"], env)
    assert r.returncode == 0 and r.stdout.startswith("simsubjects")
    assert _status(env)["runs"] == before  # ran in-process, inside its own namespaces
    assert _run(THROUGH + ["--version"], env).returncode == 0 and _status(env)["runs"] == before + 1


@pytest.mark.skipif(os.geteuid() != 0, reason="playing a second user needs root (setuid to 65534)")
def test_another_user_cannot_reach_the_server(server):
    """A forked child that setuid()s to another uid cannot even open the socket (the folder is 0700)."""
    import socket

    env, _ = server
    path = str(Path(env["SIMSUBJECTS_CACHE"]) / "run" / "preload.sock")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                code = 0
            except PermissionError:
                code = 13
        finally:
            os._exit(code)
    os.close(r), os.close(w)
    _, st = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(st) == 13


def test_stop(server):
    """Last in the module: `preload stop` ends the server (socket removed); then commands run in-process."""
    env, status = server
    r = _run(PLAIN + ["preload", "stop"], env)
    assert r.returncode == 0 and f"preload server {status['pid']} stopped" in r.stdout
    assert _wait_gone(status["pid"])
    assert not (Path(env["SIMSUBJECTS_CACHE"]) / "run" / "preload.sock").exists()
    r = _run(PLAIN + ["preload", "status"], env)
    assert (r.returncode, r.stdout) == (1, "no preload server\n") and _status(env) is None
    r = _run(THROUGH + ["--version"], env)
    assert r.returncode == 0 and r.stdout.startswith("simsubjects")


def test_start_refuses_a_socket_path_too_long(tmp_path):
    """Checked before anything starts: one line, exit 2, no server, no socket."""
    cache = tmp_path / ("c" * 120)
    env = {**os.environ, "SIMSUBJECTS_CACHE": str(cache)}
    r = _run(PLAIN + ["preload", "start"], env)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert "too long for a unix socket" in r.stderr and "SIMSUBJECTS_CACHE" in r.stderr
    assert not cache.exists()
