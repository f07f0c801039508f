"""Atomic file replacement, shared by the config store and the token store."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write"]


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
