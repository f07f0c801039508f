"""Private files: a folder only its owner can enter, files only its owner can read, atomic writes."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["ensure_private_dir", "write_private"]

_DIR_MODE = 0o700


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (and its parents) if needed, and make it ``0700``."""
    path.mkdir(parents=True, exist_ok=True, mode=_DIR_MODE)
    if os.name == "posix" and stat.S_IMODE(path.stat().st_mode) != _DIR_MODE:
        os.chmod(path, _DIR_MODE)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically; the file is ``0600`` from its first byte.

    The text goes to a temp file in the same folder (created ``0600`` by ``mkstemp``), is
    flushed and fsynced, then renamed over ``path``: a reader sees the old file or the new
    one, never half of one.
    """
    ensure_private_dir(path.parent)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
