"""The preload client never talks to another user's server (issue 28, docs/robustness.md).

Two users on one machine: as root, a forked child that setuid()s to another uid (65534, `nobody`)
plays the other user and listens on a unix
socket where the client looks for its server. The client must send it nothing: it checks the
runtime folder (its own, mode 0700, not a link) before any connect and the peer's uid
(SO_PEERCRED) after. No preload server (and no torch import) is needed: these are the client's checks.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from simsubjects.cli import preload

OTHER = 65534
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="playing a second user needs root (setuid to 65534); "
                                                          "run the suite as root, as CI does, to cover it")

def _listen(path: str, seconds: float, out: int) -> None:
    """The listener's body in the forked child: bind PATH, say "ready UID", count connections and bytes."""
    import socket
    import time

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o777)
    s.listen(8)
    s.settimeout(0.2)
    os.write(out, f"ready {os.getuid()}\n".encode())
    conns = nbytes = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        conns += 1
        c.settimeout(0.5)
        try:
            while d := c.recv(65536):
                nbytes += len(d)
        except OSError:
            pass
        c.close()
    os.write(out, f"{conns} {nbytes}\n".encode())


class Other:
    """A listener in a forked child that setuid()s to another user first (as_other); `.result()` ->
    (connections, bytes received)."""

    def __init__(self, path: Path, seconds: float = 1.5, as_other: bool = True):
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: only system calls and this function, then _exit (no pytest teardown)
            code = 1
            try:
                os.close(r)
                if as_other:
                    os.setgroups([])
                    os.setgid(OTHER)
                    os.setuid(OTHER)
                _listen(str(path), seconds, w)
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        self.out = os.fdopen(r)
        first = self.out.readline().split()
        assert first and first[0] == "ready", first
        self.uid = int(first[1])

    def result(self) -> tuple[int, int]:
        line = self.out.readline()
        _, status = os.waitpid(self.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        conns, nbytes = map(int, line.split())
        return conns, nbytes


def _as_other(fn) -> None:
    """Run fn() in a forked child as the other user; raise if it failed."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(OTHER)
            os.setuid(OTHER)
            fn()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def cache(monkeypatch):
    """A cache folder in a world-writable sticky folder, as /tmp is: where another user can create things
    (directly under /tmp: pytest's own temporary folders are private to this user)."""
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="simsubjects-users-", dir="/tmp"))
    os.chmod(shared, 0o1777)
    c = shared / "cache"
    monkeypatch.setenv("SIMSUBJECTS_CACHE", str(c))
    monkeypatch.delenv("SIMSUBJECTS_PRELOAD", raising=False)
    yield c
    shutil.rmtree(shared, ignore_errors=True)


@ROOT_ONLY
def test_a_runtime_folder_of_another_user_is_never_connected_to(cache, capsys):
    """The other user creates CACHE/run first (the sticky shared folder lets them) and serves there."""
    rundir = cache / "run"
    cache.mkdir()
    os.chmod(cache, 0o777)
    _as_other(lambda: os.mkdir(rundir, 0o700))
    other = Other(rundir / "preload.sock")
    assert other.uid == OTHER and rundir.stat().st_uid == OTHER
    assert preload.connect() is None
    assert preload.run_via_server(["--version"]) is None  # the in-process run
    assert preload.request("ping") is None
    assert other.result() == (0, 0)  # not even a connection


@ROOT_ONLY
def test_a_server_of_another_user_in_our_folder_is_refused_after_connecting(cache, capsys):
    """The socket in our own 0700 folder belongs to another user's process (bound elsewhere, moved in:
    what a race between checking the socket file and connecting allows). SO_PEERCRED tells; nothing is sent."""
    rundir = cache / "run"
    rundir.mkdir(parents=True, mode=0o700)
    theirs = cache.parent / "theirs"
    theirs.mkdir()
    shutil.chown(theirs, OTHER, OTHER)
    other = Other(theirs / "s.sock")
    os.rename(theirs / "s.sock", rundir / "preload.sock")
    os.chown(rundir / "preload.sock", os.getuid(), os.getgid(), follow_symlinks=False)  # the owner check passes
    assert preload.connect() is None
    assert "served by user id 65534" in capsys.readouterr().err
    assert preload.run_via_server(["--version"]) is None
    assert other.result() == (2, 0)  # it saw the connects, and not one byte: no argv, no environment, no fds


def test_our_own_listener_is_connected_to(cache, tmp_path):
    """The same setup with this user's listener: the checks above are what refused, not the setup."""
    rundir = cache / "run"
    rundir.mkdir(parents=True, mode=0o700)
    os.chmod(rundir, 0o700)
    ours = Other(rundir / "preload.sock", seconds=1.0, as_other=False)
    s = preload.connect()
    assert s is not None
    s.sendall(b"hello")
    s.close()
    assert ours.result() == (1, 5)


@pytest.mark.parametrize("how", ["mode 0755", "mode 0770", "a link to our own folder"])
def test_a_runtime_folder_that_is_not_private_is_refused_before_connecting(cache, tmp_path, how):
    rundir = cache / "run"
    if how.startswith("mode"):
        rundir.mkdir(parents=True)
        os.chmod(rundir, int(how.split()[1], 8))
        real = rundir
    else:
        real = tmp_path / "real"
        real.mkdir(mode=0o700)
        cache.mkdir()
        rundir.symlink_to(real, target_is_directory=True)
    ours = Other(real / "preload.sock", seconds=1.0, as_other=False)
    assert not preload.runtime_dir_ok()
    assert preload.connect() is None
    assert ours.result() == (0, 0)


def test_a_relative_cache_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMSUBJECTS_CACHE", "rel/cache")
    assert preload.runtime_dir() == str(tmp_path / "rel" / "cache" / "run")


def test_an_edit_that_keeps_the_mtime_changes_the_signature(tmp_path):
    """The server retires when its sources change; an edit that restores the mtime is noticed too."""
    pkg = tmp_path / "pkg"
    assert Path(preload.fingerprint()["package"]).name == "simsubjects"  # the whole package is watched
    shutil.copytree(preload.fingerprint()["package"], pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    before = preload.package_signature(str(pkg))
    f = pkg / "errors.py"
    st = f.stat()
    f.write_text(f.read_text().replace("exit code 2", "exit code 3"))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_mtime_ns == st.st_mtime_ns
    assert preload.package_signature(str(pkg)) != before
    f.write_text(f.read_text().replace("exit code 3", "exit code 2"))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert preload.package_signature(str(pkg)) == before


def test_a_request_larger_than_the_limit_is_dropped():
    import socket
    import struct

    a, b = socket.socketpair()
    with a, b:
        a.sendall(struct.pack("!I", preload.MAX_MSG + 1) + b"{}")
        with pytest.raises(ConnectionError, match="too long"):
            preload.recv_msg(b)


def test_namespaces_are_read_from_the_kernel():
    mine = preload.namespaces(os.getpid())
    assert mine and mine["net"].startswith("net:[")
    assert preload.namespaces(os.getpid()) == mine
    assert preload.namespaces(2 ** 22 + 7) is None  # no such process: refused, never assumed equal
    assert stat.S_IMODE(0o700) == 0o700
