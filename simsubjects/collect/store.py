"""The run folder: request cache, atomic writes of tables and manifest, resumption.

A run is complete only when manifest.json says status "complete"; it is written last, after the
tables, each through a temporary file and a rename, so an interrupted run never looks complete.
The SQLite cache (WAL) commits every finished batch before the next starts: a re-run with the
same parameters asks the model only what is missing and rebuilds the identical table.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..errors import UserError

MANIFEST = "manifest.json"
RESPONSES = "responses.parquet"
ITEMS = "items.parquet"
RECORDS = "records.jsonl"
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
            for name in (MANIFEST, RESPONSES, ITEMS, RECORDS, CACHE, CACHE + "-wal", CACHE + "-shm"):
                (store.root / name).unlink(missing_ok=True)
        try:
            store.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(f"--out {root}: cannot create the folder ({e.strerror or e})") from None
        # Temporary files of writes a killed run left behind (the renamed-in files are whole).
        for name in (MANIFEST, RESPONSES, ITEMS, RECORDS):
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


def load_run(root: str | os.PathLike) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """(manifest, responses, items) of a complete run folder, with errors that say what to do."""
    store = RunStore(Path(root))
    if not store.root.is_dir():
        raise UserError(f"{root}: no such run folder")
    manifest = store.read_manifest()
    if manifest.get("status") != "complete":
        raise UserError(f"{root}: the collection did not finish; run the same `simsubjects collect` command again to resume it")
    if not isinstance(manifest.get("study"), str):
        raise UserError(f"{store.root / MANIFEST}: names no study; re-run the collection")
    from simsubjects.collect.runcheck import check_manifest, check_tables

    check_manifest(manifest, store.root / MANIFEST)
    tables = []
    for name in (RESPONSES, ITEMS):
        path = store.root / name
        try:
            tables.append(pd.read_parquet(path))
        except FileNotFoundError:
            raise UserError(f"{path}: missing; re-run the collection into {root}") from None
        except Exception as e:  # pyarrow raises several types for truncated or foreign files
            raise UserError(f"{path}: cannot be read as parquet ({type(e).__name__}); re-run the collection") from None
    from simsubjects.collect.schema import CORE_COLUMNS

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
        from simsubjects.collect.output import write_error

        raise write_error(e, what.split(" ")[0], path) from None
    if free < MIN_FREE:
        raise UserError(f"{what}: only {free:,} bytes free on its file system; a collection needs at least "
                        f"{MIN_FREE >> 20} MiB")


def _other_run_message(root, old: dict) -> str:
    model = old.get("model")
    spec = model.get("spec") if isinstance(model, dict) else None
    return (f"--out {root}: holds a run with other parameters ({old.get('study')}, {spec}); "
            "choose another folder or pass --overwrite")
