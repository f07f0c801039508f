"""Private files: a folder only its owner can enter, files only its owner can read, atomic writes."""

from __future__ import annotations

from pathlib import Path

from mcpdeck._util.files import atomic_write, ensure_private_dir

__all__ = ["ensure_private_dir", "write_private"]


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically, in a private folder; the file is ``0600`` from its first byte."""
    ensure_private_dir(path.parent)
    atomic_write(path, text, mode=0o600)
