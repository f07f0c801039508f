"""Private files: a folder only its owner can enter, files only its owner can read, atomic writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from mcpdeck._files import atomic_write

__all__ = ["ensure_private_dir", "write_private"]

_DIR_MODE = 0o700


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (and its parents) if needed, and make it ``0700``."""
    path.mkdir(parents=True, exist_ok=True, mode=_DIR_MODE)
    if os.name == "posix" and stat.S_IMODE(path.stat().st_mode) != _DIR_MODE:
        os.chmod(path, _DIR_MODE)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically, in a private folder; the file is ``0600`` from its first byte."""
    ensure_private_dir(path.parent)
    atomic_write(path, text, mode=0o600)
