"""The run folder: request cache, atomic writes of tables and manifest, resumption.

A run is complete only when manifest.json says status "complete"; it is written last, after the
tables, each through a temporary file and a rename, so an interrupted run never looks complete.
The SQLite cache (WAL) commits every finished batch before the next starts: a re-run with the
same parameters asks the model only what is missing and rebuilds the identical table.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

import pandas as pd

from ..errors import UserError
from .untrusted import inside

MANIFEST = "manifest.json"
RESPONSES = "responses.parquet"
ITEMS = "items.parquet"
RECORDS = "records.jsonl"
TRANSCRIPTS = "transcripts.jsonl"  # a session's decisions, the exact text scored (studyfile/session_def.py)
CACHE = "cache.sqlite"


def stable_hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def _publish(tmp: str, path: Path) -> None:
    """Rename a finished temporary file into place, readable like any file the user writes."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; a replication package is shared
    os.replace(tmp, path)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_parquet(df: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        df.to_parquet(tmp, index=False)
        with open(tmp, "rb+") as f:  # on disk before the rename, like atomic_write_bytes
            os.fsync(f.fileno())
        _publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(obj, path: Path) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n").encode())


class RequestCache:
    """Finished model answers keyed by (model fingerprint, request); JSON values, never pickle."""

    def __init__(self, path: Path):
        self.path = path
        self.db = sqlite3.connect(path, timeout=60)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self.db.commit()

    def get_many(self, keys: Iterable[str]) -> dict[str, dict]:
        keys = list(dict.fromkeys(keys))
        out: dict[str, dict] = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            q = f"SELECT key, value FROM answers WHERE key IN ({','.join('?' * len(part))})"
            out.update({k: json.loads(v) for k, v in self.db.execute(q, part)})
        return out

    def put_many(self, items: dict[str, dict]) -> None:
        with self.db:  # one transaction: a batch is cached whole or not at all
            self.db.executemany(
                "INSERT OR REPLACE INTO answers (key, value) VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in items.items()],
            )

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        self.db.close()


class OverlayCache:
    """The run's cache read-only (when the run folder has one), with writes kept in memory; it
    remembers every key the collection looked up, cached or not."""

    def __init__(self, run_cache=None):
        self.run_cache = run_cache
        self.memory: dict[str, dict] = {}
        self.hits: set[str] = set()

    def get_many(self, keys) -> dict[str, dict]:
        keys = list(keys)
        found = {k: self.memory[k] for k in keys if k in self.memory}
        rest = [k for k in keys if k not in found]
        if self.run_cache is not None and rest:
            got = self.run_cache.get_many(rest)
            self.hits.update(got)
            found.update(got)
        return found

    def put_many(self, items: dict[str, dict]) -> None:
        self.memory.update(items)

    def __len__(self) -> int:
        return len(self.memory)

    def close(self) -> None:
        pass


class RunStore:
    """One run folder. `open` checks that an existing folder holds the same run before resuming."""

    def __init__(self, root: Path):
        self.root = Path(root)

    @classmethod
    def check_out(cls, root: str | os.PathLike, identity: dict, overwrite: bool = False) -> None:
        """Refuse a bad --out before the slow part (loading a model): a file, a path under a file,
        or a folder holding a run whose identity differs in any key given in `identity` (a partial
        identity, e.g. study and parameters without the model fingerprint)."""
        store = cls(Path(root))
        _check_folder_path(store.root, f"--out {root}")
        check_writable(store.root, f"--out {root}")
        old = store.read_manifest(missing_ok=True)
        if old is None or overwrite:
            return
        theirs = old.get("identity")
        theirs = theirs if isinstance(theirs, dict) else {}
        mine = json.loads(json.dumps(identity, default=str))
        if any(theirs.get(k) != v for k, v in mine.items()):
            raise UserError(_other_run_message(root, old))

    @classmethod
    def open(cls, root: str | os.PathLike, identity: dict, overwrite: bool = False) -> "RunStore":
        store = cls(Path(root))
        _check_folder_path(store.root, f"--out {root}")
        old = store.read_manifest(missing_ok=True)
        if old is not None and old.get("identity") != identity and not overwrite:
            raise UserError(_other_run_message(root, old))
        if overwrite and old is not None and old.get("identity") != identity:
            for name in (MANIFEST, RESPONSES, ITEMS, RECORDS, TRANSCRIPTS, CACHE, CACHE + "-wal", CACHE + "-shm"):
                (store.root / name).unlink(missing_ok=True)
        try:
            store.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"--out {root}: cannot create the folder ({e.strerror or e})") from None
        # Temporary files of writes a killed run left behind (the renamed-in files are whole).
        for name in (MANIFEST, RESPONSES, ITEMS, RECORDS, TRANSCRIPTS):
            for tmp in store.root.glob(f".{name}.*.tmp"):
                tmp.unlink(missing_ok=True)
        store.previous_manifest = old
        # Mark the folder as a run in progress: analyze refuses it until the final manifest lands.
        atomic_write_json({**(old or {}), "status": "running", "identity": identity}, store.root / MANIFEST)
        return store

    def restore_manifest(self, nothing_cached: bool = False) -> None:
        """After a failed start: put back a complete manifest that `open` marked as running (its
        tables were not rewritten), or remove what `open` added to a folder that held no run."""
        old = getattr(self, "previous_manifest", None)
        if old is not None and old.get("status") == "complete":
            atomic_write_json(old, self.root / MANIFEST)
        elif old is None and nothing_cached:
            for name in (MANIFEST, CACHE, CACHE + "-wal", CACHE + "-shm"):
                (self.root / name).unlink(missing_ok=True)

    def cache(self) -> RequestCache:
        return RequestCache(self.root / CACHE)

    def read_manifest(self, missing_ok: bool = False) -> dict | None:
        path = self.root / MANIFEST
        if not path.exists():
            if missing_ok:
                return None
            raise UserError(f"{self.root}: no {MANIFEST}; is this a run folder written by `simsubjects collect`?")
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UserError(f"{path}: not valid JSON ({e.msg if hasattr(e, 'msg') else e}); re-run the collection") from None
        except OSError as e:
            raise UserError(f"{path}: cannot be read ({e.strerror or e})") from None
        if not isinstance(manifest, dict):
            raise UserError(f"{path}: not a run manifest (a JSON object is expected); re-run the collection")
        return manifest

    def finish(self, responses: pd.DataFrame, items: pd.DataFrame, manifest: dict,
               records: list[dict] | None = None) -> None:
        atomic_write_parquet(responses, self.root / RESPONSES)
        atomic_write_parquet(items, self.root / ITEMS)
        if records is not None:
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
            atomic_write_bytes(self.root / RECORDS, data.encode())
        atomic_write_json({**manifest, "status": "complete"}, self.root / MANIFEST)


def load_manifest(root: str | os.PathLike) -> dict:
    """The checked manifest of a complete run folder (load_run's first half: no table is read)."""
    store = RunStore(Path(root))
    if not store.root.is_dir():
        raise UserError(f"{root}: no such run folder")

    for name in (MANIFEST, RESPONSES, ITEMS):  # a received run's files are its own: no link leads outside
        if (store.root / name).is_symlink():
            inside(store.root, name, f"{store.root / name}")
    manifest = store.read_manifest()
    if manifest.get("status") != "complete":
        raise UserError(f"{root}: the collection did not finish; run the same `simsubjects collect` command again to resume it")
    if not isinstance(manifest.get("study"), str):
        raise UserError(f"{store.root / MANIFEST}: names no study; re-run the collection")
    from simsubjects.collect.runcheck import check_manifest  # lazy: imports collect.untrusted, collect.runcheck

    check_manifest(manifest, store.root / MANIFEST)
    return manifest


def load_run(root: str | os.PathLike) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """(manifest, responses, items) of a complete run folder, with errors that say what to do."""
    manifest = load_manifest(root)
    store = RunStore(Path(root))
    from simsubjects.collect.runcheck import check_tables  # lazy: imports collect.untrusted, collect.runcheck

    tables = []
    for name in (RESPONSES, ITEMS):
        path = store.root / name
        try:
            tables.append(pd.read_parquet(path))
        except FileNotFoundError:
            raise UserError(f"{path}: missing; re-run the collection into {root}") from None
        except Exception as e:  # pyarrow raises several types for truncated or foreign files
            raise UserError(f"{path}: cannot be read as parquet ({type(e).__name__}); re-run the collection") from None
    from simsubjects.collect.schema import CORE_COLUMNS  # lazy: imports collect.option_order, collect.schema

    missing = [c for c in CORE_COLUMNS if c not in tables[0].columns]
    if missing:
        raise UserError(f"{store.root / RESPONSES}: missing column(s) {', '.join(missing)}; "
                        "not a responses table of docs/schema.md")
    if tables[0].empty:
        raise UserError(f"{store.root / RESPONSES}: no rows; re-run the collection")
    check_tables(manifest, tables[0], tables[1], store.root)
    return manifest, tables[0], tables[1]


def _check_folder_path(path: Path, what: str) -> None:
    """A folder that exists or can be created: neither it nor any parent is a file."""
    if path.exists() and not path.is_dir():
        raise UserError(f"{what}: exists and is not a folder")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{what}: {parent} is a file, not a folder")
            break


MIN_FREE = 16 << 20  # bytes free on --out's file system before a collection starts (cache, tables)


def check_writable(path: Path, what: str) -> None:
    """The folder (or the nearest existing parent that will hold it) takes new files and has space.

    Tried with an unnamed temporary file (O_TMPFILE where the system has it), so nothing is left
    behind; os.access alone would say yes to root on a read-only mount.
    """
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is None:
        return
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
        free = shutil.disk_usage(existing).free
    except OSError as e:

        raise write_error(e, what.split(" ")[0], path) from None
    if free < MIN_FREE:
        raise UserError(f"{what}: only {free:,} bytes free on its file system; a collection needs at least "
                        f"{MIN_FREE >> 20} MiB")


def _other_run_message(root, old: dict) -> str:
    model = old.get("model")
    spec = model.get("spec") if isinstance(model, dict) else None
    return (f"--out {root}: holds a run with other parameters ({old.get('study')}, {spec}); "
            "choose another folder or pass --overwrite")


# ---------------------------------------------------------------- output folders (was output.py)
# Crash-consistent output folders for `analyze` and `export`: a set of files that is whole or absent.
#
# Every file of a new set is written into a staging folder *beside* the target (same file system),
# then the staging folder is swapped with the target in one rename. A process killed at any point
# (SIGKILL, power loss) therefore leaves either the previous complete set or the new complete set,
# never a mix, and never a half-written file under the target's name.
#
# Files already in the target that the new set does not rewrite (another export format, a user's
# own notes) are carried into the staging folder as hard links first, so a later `export --to rds`
# keeps the csv of an earlier `export --to csv`, as it always did.
#
# Why hand-written: no maintained library swaps a *folder* atomically; `os.replace` does files only.
# Linux's renameat2(RENAME_EXCHANGE) swaps two paths in one step; elsewhere (or on file systems that
# lack it) the old folder is renamed aside first, and a later call puts it back if the process died
# between the two renames.

STAGE = ".{name}.staging-"  # prefix of staging folders beside the target
ASIDE = ".{name}.previous-"  # prefix of an old set moved aside by the two-rename fallback
# Left inside an output folder by versions before this module (or by killed atomic writes):
# removed when a new set is written. Names written by users never look like these.
LEGACY_LEFTOVERS = (".export-",)
RENAME_EXCHANGE = 2
WRITE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    try:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _leftover(entry: Path) -> bool:
    """A file or folder a killed writer left behind: not part of any complete set."""
    n = entry.name
    if n.startswith(LEGACY_LEFTOVERS):
        return True
    if n.startswith(".") and n.endswith(".tmp"):  # atomic_write_* temporary files
        return True
    if entry.suffix == ".png" and entry.is_file() and entry.stat().st_size == 0:  # a figure cut off at creation
        return True
    return False


def recover(target: Path) -> None:
    """Undo what a killed writer left beside `target`: stale staging folders; an old set moved aside."""
    parent, name = target.parent, target.name
    if not parent.is_dir():
        return
    aside = sorted(parent.glob(ASIDE.format(name=name) + "*"), key=lambda p: p.stat().st_mtime)
    if aside and not target.exists():
        os.rename(aside.pop(), target)  # the process died between the two renames: the old set is whole
    for p in aside + list(parent.glob(STAGE.format(name=name) + "*")):
        shutil.rmtree(p, ignore_errors=True)


def _carry(target: Path, stage: Path) -> None:
    """Hard-link (or copy) the target's entries that the new set did not write into the stage."""
    if not target.is_dir():
        return
    for entry in target.iterdir():
        if (stage / entry.name).exists() or (stage / entry.name).is_symlink() or _leftover(entry):
            continue
        dest = stage / entry.name
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, dest, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry, dest)


def _link_or_copy(src, dst) -> None:
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        shutil.copy2(src, dst, follow_symlinks=False)


@contextmanager
def _locked(parent: Path) -> Iterator[None]:
    """One writer at a time per folder (two `analyze` at once must not clean each other's stage)."""
    fd = os.open(parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def check_target(target: Path, what: str) -> None:
    """Before any work: the target is a folder or can become one (no file in the way)."""
    # the run store's own check (_check_folder_path above), same messages

    _check_folder_path(target, f"{what} {target}")


def write_error(e: OSError, what: str, target: Path) -> UserError:
    """One line that names the folder the user gave, not an internal temporary file."""
    reason = e.strerror or str(e)
    if e.errno == errno.ENOSPC:
        reason = "no space left on the device"
    elif e.errno in (errno.EROFS,):
        reason = "read-only file system"
    elif e.errno in (errno.EACCES, errno.EPERM):
        reason = "permission denied"
    return UserError(f"{what} {target}: cannot write ({reason}); nothing was changed")


@contextmanager
def staged_folder(target: str | os.PathLike, carry: bool = True, what: str = "--out") -> Iterator[Path]:
    """Yield a staging folder; on success it replaces `target` whole (see the module docstring).

    `carry`: entries of an existing target that the new set did not write are kept (hard links).
    A write refused by the file system (full disk, read-only, permissions)
    becomes a UserError naming `target`, and the target is left as it was.
    """
    target = Path(target).absolute()
    check_target(target, what)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise write_error(e, what, target) from None
    with _locked(target.parent):
        try:
            recover(target)
            stage = Path(tempfile.mkdtemp(dir=target.parent, prefix=STAGE.format(name=target.name)))
        except OSError as e:
            raise write_error(e, what, target) from None
        try:
            os.chmod(stage, 0o777 & ~_umask())  # mkdtemp makes 0700 folders; outputs are shared
            yield stage
            if carry:
                _carry(target, stage)
            _fsync_tree(stage)
            _swap(stage, target)
        except OSError as e:
            if e.errno in WRITE_ERRNOS:
                raise write_error(e, what, target) from None
            raise
        finally:
            shutil.rmtree(stage, ignore_errors=True)  # after a swap: the previous set


def _swap(stage: Path, target: Path) -> None:
    if not target.exists():
        os.rename(stage, target)
    elif not _exchange(stage, target):
        aside = target.parent / (ASIDE.format(name=target.name) + uuid.uuid4().hex[:12])
        os.rename(target, aside)  # killed right after this: recover() renames it back
        os.rename(stage, target)
        shutil.rmtree(aside, ignore_errors=True)
    _fsync_dir(target.parent)


def _fsync_tree(root: Path) -> None:
    """Data on disk before the rename that publishes it (a power cut must not publish empty files)."""
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            if os.path.islink(p):
                continue
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(dirpath))


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m
