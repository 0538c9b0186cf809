"""A preload (fork-server) process: warm `simsubjects` runs skip the ~7 s torch + transformers import.

`simsubjects preload start` starts a background process that imports torch, transformers, Llama's
modeling code and simsubjects.cli.commands once, then waits on a unix socket in a private (0700) folder of the
user cache ($SIMSUBJECTS_CACHE, else ~/.cache/simsubjects; see weight_cache.root). The `simsubjects`
command (simsubjects.launch) connects when a server answers, passes its argv, working folder,
environment, umask and its stdin/stdout/stderr file descriptors (SCM_RIGHTS, as Python's
multiprocessing.forkserver does), and the server forks a child that takes them over and runs
cli.main(). The client forwards SIGINT/SIGTERM/SIGHUP (and Ctrl-Z) to the child and exits with its
exit status.
No server, or one that does not fit the caller (another Python, package or import-time environment,
or package files changed since it started) -> the ordinary in-process run, unchanged.

Fork safety: the server runs no torch op and starts no Python thread before forking (checked before
every fork), so CUDA and torch's thread pools are first created in the child. Library imports do start
idle native pools (numpy's and scipy's OpenBLAS, pyarrow's jemalloc); these libraries re-initialize
them in a forked child through their own pthread_atfork handlers.

Secrets: the server is started with only the import-time environment (no API keys). A client's argv
and environment travel in a memfd that the server passes to the forked child without reading it, so
they live only in the child's memory; the server's receive buffer is zeroed after each request. The
server's log (preload.log) holds its own life-cycle lines, never an argv or an environment.

Who: the client connects only when the runtime folder is a real folder of this user with mode 0700,
and after connecting checks the server's user id with SO_PEERCRED (the kernel's word, not the socket
file's owner, which could change between a check and the connect); the server checks each client's
the same way. Namespaces: a child runs in the server's namespaces, so a client whose namespaces
(net, mnt, pid, user, ipc, uts, cgroup, time) differ from the server's (`unshare -n`, a container) is
refused and runs in its own process. The child also runs in the server's cgroup (its memory and CPU
limits and accounting, not the client terminal's); docs/robustness.md says so. Source changes are
detected by a sha256 of the package's .py files, not their mtimes.

Only the standard library is imported at module level: the client side must stay cheap.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import time
import atexit
import importlib
import io
import select
import stat
import threading

from simsubjects import __version__

IDLE_MINUTES = 30
ANSWER_SECONDS = 60  # a server forks within milliseconds; even a swamped machine answers in far less
# variables read while torch / transformers / numpy / huggingface_hub are imported (thread counts,
# cache folders, offline mode, locale): a client whose values differ runs in its own process
IMPORT_ENV_PREFIXES = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "TORCH", "PYTORCH_", "CUDA_", "OMP_", "MKL_",
                       "OPENBLAS_", "KMP_", "GOTO", "TOKENIZERS_", "PYTHON", "LD_", "LC_", "ARROW_", "USE_")
IMPORT_ENV_NAMES = ("LANG", "HOME", "XDG_CACHE_HOME", "SIMSUBJECTS_CACHE", "PATH", "NVIDIA_VISIBLE_DEVICES",
                    "TMPDIR", "TEMP", "TMP")  # tempfile caches its folder on first use (torch's imports use it)
NAMESPACES = ("net", "mnt", "pid", "user", "ipc", "uts", "cgroup", "time")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGTSTP)
PRELOAD_MODULES = (  # what a local-model collection imports; the bundled studies are added in _preload()
    "torch", "transformers", "transformers.models.llama.modeling_llama", "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto", "transformers.modeling_gguf_pytorch_utils", "safetensors.torch",
    "tqdm.auto", "simsubjects.cli.commands", "simsubjects.collect.pipeline", "simsubjects.collect.models.hf",
    "simsubjects.collect.models.generation", "simsubjects.collect.choice")


# --- where, and who -------------------------------------------------------------------------------
def runtime_dir() -> str:
    """<cache>/run: the socket and the server's log (the cache folder as weight_cache.root finds it)."""
    cache = os.environ.get("SIMSUBJECTS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "simsubjects")
    return os.path.join(os.path.abspath(cache), "run")  # absolute: the server's working folder is another


def socket_path() -> str:
    return os.path.join(runtime_dir(), "preload.sock")


# folders: made absolute, since the server runs in another working folder (a relative SIMSUBJECTS_CACHE
# was read there a second time, and the server bound a socket under a doubled path: issue 42)
IMPORT_ENV_FOLDERS = ("SIMSUBJECTS_CACHE", "XDG_CACHE_HOME", "HOME", "TMPDIR", "TEMP", "TMP", "HF_HOME",
                      "HF_HUB_CACHE", "TRANSFORMERS_CACHE")


def import_env(environ=None) -> dict:
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if k.startswith(IMPORT_ENV_PREFIXES) or k in IMPORT_ENV_NAMES}
    return {k: os.path.abspath(v) if k in IMPORT_ENV_FOLDERS and v else v for k, v in env.items()}


def fingerprint() -> dict:
    """What the server's imports depend on; a client runs through it only when all of it is equal."""
    # interpreter options too (-X importtime, -W error, -O): such a run wants its own imports; -P
    # (safe_path) is the server's own and only decides sys.path[0], which the child takes from the client
    flags = {f: getattr(sys.flags, f) for f in sys.flags.__match_args__ if f != "safe_path"}
    # the whole simsubjects package (this file is in simsubjects/cli/)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {"python": sys.executable, "package": package,
            "version": __version__, "env": import_env(),
            "interpreter": [flags, sys.warnoptions, {k: str(v) for k, v in sys._xoptions.items()}]}


def package_signature(package: str) -> list:
    """sha256 over the package's .py files (names and contents) and their number: an edit or an
    upgrade retires the server, also one that keeps a file's mtime (touch -r, a copy with -p)."""
    import hashlib  # lazy: off --help's path (hashlib)

    h, count = hashlib.sha256(), 0
    for folder, dirs, files in os.walk(package):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                with open(path, "rb") as fh:
                    data = fh.read()
                h.update(f"{os.path.relpath(path, package)}\0{len(data)}\0".encode() + data)
                count += 1
    return [h.hexdigest(), count]


# --- messages: a 4-byte length, then JSON; replies are JSON lines ----------------------------------
def send_msg(sock: socket.socket, obj: dict, fds=()) -> None:
    data = json.dumps(obj).encode()
    data = struct.pack("!I", len(data)) + data
    sent = socket.send_fds(sock, [data], list(fds)) if fds else sock.send(data)
    if sent < len(data):  # (an empty sendall after the server's answer and close would fail)
        sock.sendall(data[sent:])


MAX_MSG = 1 << 20  # a request is a few kB (its argv and environment travel in a memfd, see run_via_server)


def recv_msg(sock: socket.socket, maxfds: int = 0) -> tuple[dict, list]:
    data, fds, _, _ = socket.recv_fds(sock, 1 << 16, maxfds)
    data = bytearray(data)
    try:
        if len(data) < 4:
            raise ConnectionError("short message")
        size = struct.unpack("!I", data[:4])[0]
        if size > MAX_MSG:
            raise ConnectionError("message too long")
        while len(data) < size + 4:
            more = sock.recv(size + 4 - len(data))
            if not more:
                raise ConnectionError("connection closed")
            data += more
        return json.loads(data[4:4 + size]), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    finally:
        data[:] = bytes(len(data))  # the received bytes do not outlive the request


def reply(sock: socket.socket, obj: dict) -> None:
    sock.sendall(json.dumps(obj).encode() + b"\n")


def read_reply(f) -> dict | None:
    line = f.readline()
    return json.loads(line) if line else None


def runtime_dir_ok(d: str | None = None) -> bool:
    """The runtime folder is this user's own: a real folder (not a link), owned by us, mode 0700. Checked
    before any connect: in a shared folder another user could otherwise place a socket there."""
    try:
        st = os.lstat(runtime_dir() if d is None else d)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700


def peer_uid(s: socket.socket) -> int:
    return struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]


def connect(timeout: float = 2.0) -> socket.socket | None:
    """A connection to this user's server, or None. The folder is checked before connecting and the
    peer's user id (SO_PEERCRED, from the kernel) after: a check of the socket file's owner alone would
    leave a gap between that check and the connect (time of check, time of use)."""
    path = socket_path()
    if not runtime_dir_ok() or not os.path.exists(path):
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        uid = peer_uid(s)
    except OSError:  # a socket left by a killed server
        s.close()
        return None
    if uid != os.getuid():  # another user's process listens there: nothing is sent to it
        s.close()
        print(f"simsubjects: ignored a preload socket served by user id {uid}, not yours ({path}); running "
              "in this process", file=sys.stderr)
        return None
    return s


def request(op: str, timeout: float = 5.0) -> dict | None:
    """ping / stop: the server's answer, or None when no server answers."""
    s = connect(timeout)
    if s is None:
        return None
    try:
        with s:
            send_msg(s, {"op": op})
            return read_reply(s.makefile("rb"))
    except (OSError, ValueError):
        return None


# --- the client (simsubjects.launch) ---------------------------------------------------------------
def run_via_server(argv: list[str]) -> int | None:
    """Run argv in a child of the preload server; None when no fitting server answers (run in-process)."""
    if os.environ.get("SIMSUBJECTS_PRELOAD", "").lower() in ("0", "off", "no", "false"):
        return None
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)  # a closed stdin/stdout/stderr cannot be passed on
        cwd = os.getcwd()  # (a removed working folder: the in-process run reports it)
    except OSError:
        return None
    s = connect()
    if s is None:
        return None
    umask = os.umask(0o022)
    os.umask(umask)
    streams = [[f.encoding, f.errors, f.line_buffering, f.write_through] if f is not None else None
               for f in (sys.stdin, sys.stdout, sys.stderr)]
    # The command line and the environment (API keys) travel in a memfd that the server passes to its
    # child unread: the long-lived server never holds a client's secrets in its memory (issue 28).
    payload = {"argv": argv, "argv0": sys.argv[0], "cwd": cwd, "env": dict(os.environ), "umask": umask,
               "sigmask": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])), "streams": streams,
               "sys_path": sys.path}
    try:
        memfd = os.memfd_create("simsubjects-request", os.MFD_CLOEXEC)
        os.write(memfd, json.dumps(payload).encode())
    except (AttributeError, OSError):  # no memfd here: the in-process run
        s.close()
        return None
    req = {"op": "run", "fingerprint": fingerprint()}
    pending: list[int] = []
    child = {"pid": None}

    def forward(signum, _frame):
        if child["pid"] is None:
            pending.append(signum)
        elif signum == signal.SIGTSTP:  # Ctrl-Z: the child stops, then this process; both go on together
            _signal_child(child["pid"], signum)
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)  # returns once the shell continues this process (fg, bg)
            signal.signal(signum, forward)
            _signal_child(child["pid"], signal.SIGCONT)
        else:
            _signal_child(child["pid"], signum)

    old = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        with s:
            try:
                send_msg(s, req, fds=(0, 1, 2, memfd))
                f = s.makefile("rb")
                s.settimeout(ANSWER_SECONDS)
                first = read_reply(f)
            except TimeoutError:  # it may have started the run: never run it a second time here
                print(f"error: the preload server did not answer within {ANSWER_SECONDS} s; stop it with "
                      "`simsubjects preload stop` or set SIMSUBJECTS_PRELOAD=off", file=sys.stderr)
                return 70
            except (OSError, ValueError):  # refused before reading: nothing started
                first = None
            if first and "pid" in first:
                s.settimeout(None)
                child["pid"] = first["pid"]
                for sig in pending:
                    forward(sig, None)
                last = _read_final(f)
    finally:
        os.close(memfd)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if child["pid"] is None:  # no fitting server: run in-process
        for sig in pending:  # a Ctrl-C while asking: the in-process run gets it, as it would have
            signal.raise_signal(sig)
        return None
    if last is None:
        print("error: the preload server stopped during the run (see `simsubjects preload status`)", file=sys.stderr)
        return 70
    if "signal" in last:  # the child died of a signal: so does this process, as the plain run would
        signal.signal(last["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), last["signal"])
        return 128 + last["signal"]
    return last["code"]


def _read_final(f) -> dict | None:
    while True:
        try:
            return read_reply(f)
        except InterruptedError:
            continue
        except (OSError, ValueError):
            return None


def _signal_child(pid: int, signum: int) -> None:
    """SIGINT/SIGTSTP/SIGCONT go to the child's process group, as a terminal's Ctrl-C and Ctrl-Z reach a
    command and its subprocesses (Rscript); SIGTERM/SIGHUP to the child itself, as `kill PID` would."""
    try:
        if signum in (signal.SIGINT, signal.SIGTSTP, signal.SIGCONT):
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass


# --- starting and stopping (simsubjects preload start|stop|status) --------------------------------
def private_dir() -> str:
    """The runtime folder, created 0700 and refused when another user owns it or it is a link."""
    from simsubjects.errors import UserError  # lazy: off --help's path (errors)

    d = runtime_dir()
    os.makedirs(d, mode=0o700, exist_ok=True)
    st = os.lstat(d)
    if not os.path.isdir(d) or os.path.islink(d) or st.st_uid != os.getuid():
        raise UserError(f"{d}: not a folder of this user; remove it or set SIMSUBJECTS_CACHE to another folder")
    os.chmod(d, 0o700)
    return d


def start(idle_minutes: float = IDLE_MINUTES, wait: float = 300.0) -> tuple[dict, bool]:
    """Start a server unless one answers; (its status, whether it was started now)."""
    import subprocess  # lazy: off --help's path (fcntl, locale)

    from simsubjects.errors import UserError  # lazy: off --help's path (errors)

    if not hasattr(socket, "SO_PEERCRED"):  # the server checks each caller's user id this way
        raise UserError("simsubjects preload needs Linux (unix sockets with SO_PEERCRED)")
    status = request("ping")
    if status:
        return status, False
    path = socket_path()
    if len(path.encode()) > 107:  # sockaddr_un's limit; checked before anything is created
        raise UserError(f"{path}: too long for a unix socket (107 bytes); set SIMSUBJECTS_CACHE to a shorter folder")
    d = private_dir()
    if os.path.exists(path):
        os.unlink(path)  # left by a killed server (connect failed above)
    fd = os.open(os.path.join(d, "preload.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    # only the import-time environment: API keys and other secrets never enter the long-lived server
    # the server runs the commands' entry point, handed to it here: this module (also the light client
    # that `simsubjects.launch` imports) never imports the commands itself
    code = ("from simsubjects.cli.commands import main; from simsubjects.cli.preload import serve; "
            f"serve({idle_minutes!r}, main)")
    proc = subprocess.Popen([sys.executable, "-P", "-c", code], env=import_env(), cwd=d, stdin=subprocess.DEVNULL,
                            stdout=fd, stderr=fd, start_new_session=True)
    os.close(fd)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        status = request("ping")
        if status:
            return status, True
        if proc.poll() is not None:
            raise UserError(f"the preload server exited with code {proc.returncode}; see {d}/preload.log")
        time.sleep(0.1)
    proc.terminate()
    raise UserError(f"the preload server did not answer within {wait:g} s; see {d}/preload.log")


def stop(wait: float = 10.0) -> dict | None:
    """Ask the server to stop; None when none answers. Running children finish first."""
    answer = request("stop")
    if answer is None:
        return None
    deadline = time.monotonic() + wait
    while os.path.exists(socket_path()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return answer


# --- the server ------------------------------------------------------------------------------------
def _preload() -> None:
    import gc  # lazy: off --help's path (gc)

    for name in PRELOAD_MODULES:
        importlib.import_module(name)
    from simsubjects.collect.studies.registry import _package_modules  # lazy: off --help's path (collect.studies.registry, datasets)

    for name in _package_modules():  # the bundled studies; user study files are read per run
        importlib.import_module(name)
    import torch  # lazy: off --help's path (torch, numpy)

    assert not torch.cuda.is_initialized()  # CUDA must first start in a child
    gc.collect()
    gc.freeze()  # the children's garbage collector leaves the shared pages alone (fewer copies)


def _log(msg: str) -> None:
    print(time.strftime("%Y-%m-%d %H:%M:%S"), f"[{os.getpid()}]", msg, file=sys.stderr, flush=True)


class Server:
    def __init__(self, idle_minutes: float, entry):
        self.entry = entry  # the commands' main(), run in each forked child
        self.fingerprint, before = fingerprint(), dict(os.environ)  # as a client sees it: before the imports
        t0 = time.monotonic()
        _preload()
        self.import_seconds = round(time.monotonic() - t0, 2)
        # variables the imports set (torch: TORCHINDUCTOR_CACHE_DIR); a plain process has them too
        self.import_set = {k: v for k, v in os.environ.items() if before.get(k) != v}
        self.idle = idle_minutes * 60
        self.signature = package_signature(self.fingerprint["package"])
        self.started, self.last = time.time(), time.monotonic()
        self.children: dict[int, socket.socket | None] = {}  # pid -> its client's connection
        self.runs, self.stopping = 0, False
        self.path = socket_path()
        tmp = f"{self.path}.{os.getpid()}"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(tmp)
        self.listener.listen(16)
        os.rename(tmp, self.path)  # the socket appears only once the server answers
        self.inode = os.stat(self.path).st_ino
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)  # SIGCHLD wakes select() up
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.asked = None  # set by SIGTERM; acted on in the loop (a handler closing the listener would
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "asked", "SIGTERM"))  # break select's retry)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        _log(f"serving {self.path}: imports took {self.import_seconds} s; idle timeout {idle_minutes:g} min")

    def status(self) -> dict:
        return {"pid": os.getpid(), "socket": self.path, "uptime_s": round(time.time() - self.started, 1),
                "idle_timeout_s": self.idle, "idle_s": round(time.monotonic() - self.last, 1), "runs": self.runs,
                "running": len(self.children), "import_seconds": self.import_seconds,
                "python": self.fingerprint["python"], "package": self.fingerprint["package"],
                "python_threads": threading.active_count(), "native_threads": len(os.listdir("/proc/self/task"))
                if os.path.isdir("/proc/self/task") else None}

    def stop(self, why: str) -> None:
        if self.stopping:
            return
        self.stopping = True
        self.listener.close()
        try:
            if os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        _log(f"stopping ({why}); {len(self.children)} run(s) still running")

    def loop(self) -> None:
        while True:
            if self.asked:
                self.stop(self.asked)
            if not self.stopping:
                self._check_alive()
            if self.stopping and not self.children:
                break
            conns = [c for c in self.children.values() if c is not None]
            ready = select.select([self.wake_r, *conns, *([] if self.stopping else [self.listener])], [], [], 1.0)[0]
            self._reap()  # first: a status asked for after a run ended counts it as ended
            for r in ready:
                if r is self.wake_r:
                    os.read(self.wake_r, 512)
                elif r is self.listener:
                    self._accept()
                else:
                    self._client_gone(r)
            self._reap()
        _log("stopped")

    def _check_alive(self) -> None:
        try:
            ours = os.stat(self.path).st_ino == self.inode
        except FileNotFoundError:
            ours = False
        if not ours:
            self.stop("socket removed")
        elif not self.children and time.monotonic() - self.last > self.idle:
            self.stop("idle timeout")

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        fds: list[int] = []
        try:
            conn.settimeout(5)
            pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if uid != os.getuid():
                raise ConnectionError("another user")
            msg, fds = recv_msg(conn, maxfds=4)
            self.last = time.monotonic()
            self._handle(conn, msg, fds, pid)
        except (OSError, ValueError, ConnectionError):
            conn.close()
        finally:
            for fd in fds:  # the child has its copies: the server never holds a client's terminal or pipe
                os.close(fd)

    def _handle(self, conn: socket.socket, msg: dict, fds: list[int], peer: int = 0) -> None:
        op = msg.get("op")
        if op == "ping":
            reply(conn, self.status())
            conn.close()
        elif op == "stop":
            reply(conn, {"stopping": True, **self.status()})
            conn.close()
            self.stop("asked")
        elif op == "run" and len(fds) == 4:
            why = self._refuse(msg, peer)
            if why:
                reply(conn, {"refused": why})
                conn.close()
                if why in ("package files changed", "python threads"):
                    self.stop(why)
                return
            pid = os.fork()
            if pid == 0:
                self._child(conn, msg, fds)  # never returns
            msg.clear()  # the request (fingerprint only: argv and environment stay in the child's memfd)
            self.children[pid] = conn
            self.runs += 1
            try:
                conn.settimeout(None)
                reply(conn, {"pid": pid})
            except OSError:  # the client is gone already: so is its run
                _signal_child(pid, signal.SIGTERM)
                conn.close()
                self.children[pid] = None
        else:
            conn.close()

    def _refuse(self, msg: dict, peer: int = 0) -> str | None:
        """Why this request runs in the client's own process instead (the client is told only this)."""
        theirs = msg.get("fingerprint", {})
        for key in ("python", "package", "version", "env", "interpreter"):
            if theirs.get(key) != self.fingerprint[key]:
                return f"different {key}"
        if namespaces(peer) != namespaces(os.getpid()):
            # a child runs in the server's namespaces: a client started in others (unshare -n, a
            # container) would escape them through it, so it runs itself
            return "different namespaces"
        if package_signature(self.fingerprint["package"]) != self.signature:
            return "package files changed"
        if threading.active_count() != 1:  # fork safety: never fork with a second Python thread
            return "python threads"
        return None

    def _client_gone(self, conn: socket.socket) -> None:
        """The client hung up before its child finished (it was killed): the child is ended too."""
        for pid, c in self.children.items():
            if c is conn:
                try:
                    if conn.recv(1):
                        continue  # the protocol sends nothing more; ignore
                except OSError:
                    pass
                _signal_child(pid, signal.SIGTERM)
                conn.close()
                self.children[pid] = None
                return

    def _reap(self) -> None:
        for pid in list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if not done:
                continue
            conn = self.children.pop(pid)
            self.last = time.monotonic()
            if conn is None:
                continue
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            try:
                reply(conn, {"signal": sig} if sig else {"code": os.waitstatus_to_exitcode(status)})
            except OSError:
                pass
            conn.close()

    def _child(self, conn: socket.socket, msg: dict, fds: list[int]) -> None:
        code = 70
        try:
            signal.set_wakeup_fd(-1)
            for fd in (self.wake_r, self.wake_w):
                os.close(fd)
            for c in (conn, self.listener, *[c for c in self.children.values() if c is not None]):
                c.close()
            code = run_child(msg, fds, self.import_set, self.entry)
        except BaseException as e:  # noqa: BLE001 - never back into the server's loop
            try:
                print(f"error: the preload child failed ({type(e).__name__}); run with SIMSUBJECTS_PRELOAD=off",
                      file=sys.stderr, flush=True)
            except BaseException:  # noqa: BLE001
                pass
        finally:
            os._exit(code)


def namespaces(pid: int) -> dict | None:
    """A process's namespaces as the kernel names them (None when they cannot be read)."""
    try:
        return {n: os.readlink(f"/proc/{pid}/ns/{n}") for n in NAMESPACES if os.path.exists(f"/proc/self/ns/{n}")}
    except OSError:
        return None


def _read_request(fd: int) -> dict:
    """The client's argv, environment, folder ... from the memfd it passed (read in the child only)."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks))


def run_child(msg: dict, fds: list[int], import_set: dict, main) -> int:
    """In the forked child: become the client's process (folder, environment, umask, stdio), run the CLI."""
    msg = {**msg, **_read_request(fds[3])}
    fds = fds[:3]
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGTSTP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setpgid(0, 0)  # its own process group: the client's Ctrl-C reaches it and its subprocesses
    for target, fd in enumerate(fds):
        os.dup2(fd, target)  # objects holding the server's old streams now write to the client's too
        os.close(fd)
    os.chdir(msg["cwd"])
    os.umask(msg["umask"])
    # the client's blocked signals, not the server's (inherited from whatever started it): a stop or
    # interrupt the client forwards must reach this child as it would reach a plain process
    signal.pthread_sigmask(signal.SIG_SETMASK, msg.get("sigmask", []))
    os.environ.clear()
    os.environ.update({**import_set, **msg["env"]})
    sys.path[:] = msg["sys_path"]
    sys.argv = [msg["argv0"], *msg["argv"]]
    _reopen_streams(msg["streams"])
    if "numpy" in sys.modules:  # a fresh process seeds numpy's global generator from the OS; so does this one
        sys.modules["numpy"].random.seed()
    try:
        code = main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except KeyboardInterrupt:  # a Ctrl-C outside click's own handling: die of SIGINT, as Python does
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    atexit._run_exitfuncs()  # what interpreter exit runs in the plain process (os._exit skips it)
    _flush()
    return code


def _reopen_streams(streams: list) -> None:
    """sys.stdin/stdout/stderr as the client's Python built them (encoding, errors, buffering)."""
    for fd, name, spec in zip((0, 1, 2), ("stdin", "stdout", "stderr"), streams):
        if spec is None:
            setattr(sys, name, None)
            continue
        encoding, errors, line_buffering, write_through = spec
        buffered = open(fd, "rb" if fd == 0 else "wb", buffering=0 if write_through and fd else -1, closefd=False)
        stream = io.TextIOWrapper(buffered, encoding=encoding, errors=errors, newline="\n",
                                  line_buffering=line_buffering, write_through=write_through)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _flush() -> None:
    for f in (sys.stdout, sys.stderr):
        try:
            f and f.flush()
        except (OSError, ValueError):
            pass


def serve(idle_minutes: float, entry) -> None:
    """The server process's body (started by `start`); `entry` is the commands' main()."""
    server = Server(idle_minutes, entry)
    try:
        server.loop()
    except BaseException as e:  # noqa: BLE001 - log the kind, remove the socket
        _log(f"failed: {type(e).__name__}")
        server.stop("failure")
        raise
