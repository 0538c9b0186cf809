"""Crash-consistent output folders for `analyze` and `export`: a set of files that is whole or absent.

Every file of a new set is written into a staging folder *beside* the target (same file system),
then the staging folder is swapped with the target in one rename. A process killed at any point
(SIGKILL, power loss) therefore leaves either the previous complete set or the new complete set,
never a mix, and never a half-written file under the target's name.

Files already in the target that the new set does not rewrite (another export format, a user's
own notes) are carried into the staging folder as hard links first, so a later `export --to rds`
keeps the csv of an earlier `export --to csv`, as it always did.

Why hand-written: no maintained library swaps a *folder* atomically; `os.replace` does files only.
Linux's renameat2(RENAME_EXCHANGE) swaps two paths in one step; elsewhere (or on file systems that
lack it) the old folder is renamed aside first, and a later call puts it back if the process died
between the two renames.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import os
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from simsubjects.errors import UserError

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
    from simsubjects.collect.store import _check_folder_path  # the run store's own check, same messages

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
