"""One server's log file: its stderr (stdio servers), its MCP log messages, the host's notes.

Each stdio session starts with a header line and is remembered by where it starts, so an
error message can quote what the server said in *this* session and never an old one.
The file is rotated to ``NAME.log.1`` when it passes 2 MB at a session start.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Generator
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

__all__ = ["ServerLog"]

logger = logging.getLogger(__name__)

ROTATE_BYTES = 2 * 1024 * 1024
_HINT_BYTES = 16 * 1024


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ServerLog:
    """The log file of one server."""

    def __init__(self, path: Path):
        self.path = path
        self._session_start: int | None = None  # offset of this session's stderr; None: no stderr yet

    def write(self, line: str) -> None:
        """Append a timestamped line (never raises: a log that cannot be written is reported, not fatal)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as log:
                log.write(f"{_stamp()} {line}\n")
        except OSError as error:
            logger.warning("cannot write the server log %s: %s", self.path, error)

    def new_session(self) -> None:
        """Forget the previous session's stderr (until ``stderr`` opens the next)."""
        self._session_start = None

    @contextlib.contextmanager
    def stderr(self, name: str, target: str) -> Generator[BinaryIO]:
        """The file a stdio server's stderr goes to for one session, after a header line.

        Unbuffered: the child writes to the file descriptor itself and mcpdeck only writes
        the header, so a buffer would only cost memory (8 KB per server).
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if self.path.stat().st_size > ROTATE_BYTES:
                os.replace(self.path, self.path.with_suffix(".log.1"))
        with open(self.path, "ab", buffering=0) as log:
            log.write(f"--- {_stamp()} mcpdeck starting {name}: {target}\n".encode())
            self._session_start = log.tell()
            yield log

    def size(self) -> int:
        """The length of the file now (0 if there is none)."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def cut_since(self, start: int, *, markers: tuple[str, ...]) -> int:
        """Drop what was written after offset ``start`` from the first line with one of ``markers`` on; return the
        number of lines dropped.

        For noise a server writes about a request it did not understand (the host notes what
        happened in one line instead); what it wrote before that stays. Truncated in place:
        the server's stderr is appended to the same file (O_APPEND), so what it writes next
        lands after the cut.
        """
        try:
            with open(self.path, "r+b") as log:
                log.seek(start)
                text = log.read()
                lowered = text.lower()
                found = [at for at in (lowered.find(m.lower().encode()) for m in markers) if at >= 0]
                if not found:
                    return 0
                cut = text.rfind(b"\n", 0, min(found)) + 1
                log.truncate(start + cut)
        except OSError:
            return 0
        return text.count(b"\n", cut)

    def hint(self) -> str:
        """The last lines the server wrote to stderr in this session, for an error message ("" if none)."""
        start = self._session_start
        if start is None:
            return ""
        try:
            with open(self.path, "rb") as log:
                end = log.seek(0, os.SEEK_END)
                log.seek(max(start, end - _HINT_BYTES))
                text = log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        lines = [line.rstrip() for line in text.splitlines() if line.strip()]
        if not lines:
            return f" (log: {self.path})"
        return f"; stderr: {' | '.join(lines[-3:])[-500:]} (log: {self.path})"
