"""Files that can hold user data: atomic replacement, and folders and files only their owner can read.

Shared by the config store, the token store, the history database and the server logs.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = [
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "atomic_write",
    "ensure_private_dir",
    "ensure_private_file",
    "private_opener",
]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def atomic_write(path: Path, text: str, *, mode: int = 0o600) -> None:
    """Replace ``path`` with ``text``: a reader sees the old file or the new one, never half of one.

    The text goes to a temp file in the same folder (``0600`` from its first byte, by
    ``mkstemp``), is flushed and fsynced, gets ``mode``, and is renamed over ``path``; the
    folder is fsynced where the platform allows. On any failure the temp file is removed
    and ``path`` is untouched.
    """
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode != 0o600:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    with contextlib.suppress(OSError):  # not every platform can fsync a folder
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


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
