"""Reading a server's log file from outside: its last lines, and what was written since a given offset.

``mcpdeck logs`` (``--follow`` too) and the API's ``/api/servers/{name}/logs`` read the file
the same way. A file that shrank was rotated or truncated: it is read from its start again.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["last_lines", "read_new"]


def last_lines(path: Path, lines: int) -> list[str]:
    """The file's last ``lines`` lines (all of them for 0 or less); [] when there is no file."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    return text[-lines:] if lines > 0 else text


def read_new(path: Path, offset: int) -> tuple[int, bytes]:
    """What the file holds past ``offset`` (from 0 again if it was rotated or truncated), and the new offset."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return 0, b""
    if size < offset:
        offset = 0
    if size == offset:
        return offset, b""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read(size - offset)
    return offset + len(data), data
