"""Files that can hold user data: atomic replacement through symlinks, an inter-process lock for
read-modify-write, and folders and files only their owner can read.

Shared by the config store, the token store, the history database and the server logs.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
import time
from collections.abc import Generator
from pathlib import Path

__all__ = [
    "LOCK_TIMEOUT",
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "atomic_write",
    "ensure_private_dir",
    "ensure_private_file",
    "locked",
    "private_opener",
    "real_path",
]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
LOCK_TIMEOUT = 30.0
"""Seconds :func:`locked` waits for another process to finish its change."""


def real_path(path: Path) -> Path:
    """Where writing ``path`` must land: a symlink's target (followed all the way), else ``path`` itself.

    A dotfiles setup often links the config into place; replacing the link with a file would
    leave the real file stale.
    """
    return Path(os.path.realpath(path))


def atomic_write(path: Path, text: str, *, mode: int = 0o600) -> None:
    """Replace ``path`` with ``text``: a reader sees the old file or the new one, never half of one.

    A symlink is written through: its target is replaced and the link stays. The text goes
    to a temp file in the target's folder (``0600`` from its first byte, by ``mkstemp``), is
    flushed and fsynced, gets ``mode`` and the owner of the file it replaces (when that is
    someone else, which only root can keep), and is renamed over the target; the folder is
    fsynced where the platform allows. On any failure the temp file is removed and the
    target is untouched.

    Raises:
        OSError: The file cannot be written, or its owner (another user) cannot be kept.
    """
    target = real_path(path)
    try:
        old = target.stat()
    except FileNotFoundError:
        old = None
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:  # the text as it is: "\r\n" stays, "\n" too
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode != 0o600:
            os.chmod(temp, mode)
        if old is not None and hasattr(os, "chown"):
            _keep_owner(temp, target, old)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    with contextlib.suppress(OSError):  # not every platform can fsync a folder
        folder = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _keep_owner(temp: str, target: Path, old: os.stat_result) -> None:
    new = os.stat(temp)
    if new.st_uid != old.st_uid:
        try:
            os.chown(temp, old.st_uid, old.st_gid)
        except PermissionError:
            raise PermissionError(
                f"{target} belongs to another user (uid {old.st_uid}); writing it would make it yours: run as that user"
            ) from None
    elif new.st_gid != old.st_gid:
        with contextlib.suppress(OSError):  # a group the writer is not in: the file keeps the folder's
            os.chown(temp, -1, old.st_gid)


@contextlib.contextmanager
def locked(path: Path, *, timeout: float = LOCK_TIMEOUT) -> Generator[None]:
    """Hold the inter-process lock of ``path`` (a symlink's target) for a read-modify-write.

    The lock is an ``flock`` on the file itself, so nothing is left beside it. A write
    replaces the file by renaming a new one over it (``atomic_write``), so the lock held is
    on a file that the path no longer names once the write is done: a process that was
    waiting for that lock then holds it on the old file. So a lock counts only while the
    path still names the locked file; when it does not, the lock is let go and taken on the
    file the path names now, which holds every change made so far. A missing file is
    created empty to be locked (an empty file reads as an empty config), and removed again
    if it is still empty when the lock is let go. The lock goes with the open file, so a
    process that dies releases it; threads of one process exclude each other too.

    On Windows a file cannot be renamed over while it is open, so there the lock is a
    ``msvcrt`` lock on a file of its own in the temp folder, named by the target's path.

    Raises:
        TimeoutError: Another process held the lock for ``timeout`` seconds.
    """
    target = real_path(path)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    deadline = time.monotonic() + timeout
    while True:
        fd, created = _open_lock(target)
        try:
            _wait_for_lock(fd, target, deadline, timeout)
            if _names(target, fd):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # replaced (or removed) while we waited: lock what the path names now
    try:
        _forget_old_lock_file(target)
        yield
    finally:
        try:
            if created and _names(target, fd) and os.fstat(fd).st_size == 0:
                with contextlib.suppress(OSError):
                    os.unlink(target)  # made only to be locked, and nothing was written
        finally:
            os.close(fd)  # closing the last descriptor releases the lock


def _wait_for_lock(fd: int, target: Path, deadline: float, timeout: float) -> None:
    pause = 0.001
    while not _try_lock(fd):
        if time.monotonic() >= deadline:
            raise TimeoutError(f"another process has been changing {target} for {timeout:g} s; try again")
        time.sleep(pause)  # a real wait for another process; there is nothing to be told by
        pause = min(pause * 2, 0.05)


def _forget_old_lock_file(target: Path) -> None:
    """Remove the empty ``.<name>.lock`` that earlier versions left beside the file (their lock)."""
    old = target.with_name(f".{target.name}.lock")
    with contextlib.suppress(OSError):
        info = old.lstat()
        if stat.S_ISREG(info.st_mode) and info.st_size == 0:
            old.unlink()


if sys.platform == "win32":
    import hashlib
    import msvcrt

    def _open_lock(target: Path) -> tuple[int, bool]:
        folder = Path(tempfile.gettempdir()) / "mcpdeck-locks"
        folder.mkdir(exist_ok=True)
        name = hashlib.sha256(os.path.normcase(str(target)).encode()).hexdigest()[:32]
        return os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600), False

    def _names(target: Path, fd: int) -> bool:
        return True  # the lock file is never replaced

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

else:
    import fcntl

    def _open_lock(target: Path) -> tuple[int, bool]:
        """The file opened to be locked, and whether it was made for that (it was missing)."""
        while True:
            try:
                return os.open(target, os.O_RDWR | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE), True
            except FileExistsError:
                pass
            try:
                return os.open(target, os.O_RDWR), False
            except PermissionError:  # a read-only file: a lock needs no write access
                return os.open(target, os.O_RDONLY), False
            except FileNotFoundError:
                continue  # removed meanwhile: make it

    def _names(target: Path, fd: int) -> bool:
        """Whether ``target`` still names the file open as ``fd``."""
        try:
            now = os.stat(target)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def ensure_private_dir(path: Path, *, tighten: bool = True) -> None:
    """Create ``path`` and any missing parents as ``0700``; with ``tighten``, make an existing ``path`` ``0700`` too.

    ``tighten=False`` is for a folder the user named that may hold other things (the
    folder of a history file given by path): mcpdeck then only decides the mode of what it
    creates.
    """
    missing: list[Path] = []
    folder = path
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            folder.mkdir(mode=PRIVATE_DIR_MODE)
    if os.name != "posix":
        return
    for folder in [path] if tighten else missing:
        with contextlib.suppress(OSError):  # not ours to change: reading it will say so
            if stat.S_IMODE(folder.stat().st_mode) != PRIVATE_DIR_MODE:
                os.chmod(folder, PRIVATE_DIR_MODE)


def ensure_private_file(path: Path) -> None:
    """Create ``path`` empty as ``0600`` if it is missing; make an existing one ``0600`` if it is looser."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & ~PRIVATE_FILE_MODE:
            os.chmod(path, mode & PRIVATE_FILE_MODE)


def private_opener(path: str, flags: int) -> int:
    """An ``opener`` for ``open()`` that creates a missing file ``0600`` (``open(p, "a", opener=private_opener)``)."""
    return os.open(path, flags, PRIVATE_FILE_MODE)


def try_lock_file(path: Path) -> int | None:
    """Take the lock of ``path`` (an ``flock``, made ``0600`` if missing) without waiting: the open file
    descriptor that holds it, or None when another holder has it. ``os.close`` releases it, and so does the
    holder's death, at once: a dead holder never keeps it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
    if _try_lock(fd):
        return fd
    os.close(fd)
    return None
