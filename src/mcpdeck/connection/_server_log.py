"""One server's log file: its stderr (stdio servers), its MCP log messages, the host's notes.

Each stdio session starts with a header line and is remembered by where it starts, so an
error message can quote what the server said in *this* session and never an old one.

The file is rotated by size whenever something is written: past ``ROTATE_BYTES`` it
becomes ``NAME.log.1`` (``.1`` becomes ``.2``, and so on; the oldest beyond ``KEEP`` is
dropped) and a new file is started, so one server never takes more than about
``ROTATE_BYTES * (KEEP + 1)`` of disk however much it writes. A stdio server's stderr
reaches the file through mcpdeck (``write_stderr``), which is what lets it rotate while
the server runs. Files are created 0600 in a 0700 folder: they can hold user data; an
older, looser file is tightened to 0600 before it is written or rotated.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Generator
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from mcpdeck._util.files import PRIVATE_FILE_MODE, ensure_private_dir, ensure_private_file

__all__ = ["KEEP", "ROTATE_BYTES", "ServerLogFile"]

logger = logging.getLogger(__name__)

ROTATE_BYTES = 5 * 1024 * 1024
"""A log file is rotated once it is larger than this (bytes)."""
KEEP = 3
"""How many rotated files (``NAME.log.1`` ... ``NAME.log.3``) are kept."""
_HINT_BYTES = 16 * 1024


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ServerLogFile:
    """The log file of one server."""

    def __init__(self, path: Path, *, rotate_bytes: int = ROTATE_BYTES, keep: int = KEEP):
        self.path = path
        self._rotate_bytes = rotate_bytes
        self._keep = keep
        self._file: BinaryIO | None = None  # open while a stdio session runs
        self._size = 0  # of the open file
        self._session_start: int | None = None  # offset of this session's stderr; None: no stderr yet
        self._warned = False
        self._made_private = False  # folder 0700 and an existing file 0600 checked once

    def write(self, line: str) -> None:
        """Append a timestamped line (never raises: a log that cannot be written is reported, not fatal)."""
        self._append(f"{_stamp()} {line}\n".encode())

    def write_stderr(self, data: bytes) -> None:
        """Append what a stdio server wrote to its stderr (never raises)."""
        self._append(data)

    def _append(self, data: bytes) -> None:
        try:
            log = self._file
            if log is not None:
                log.write(data)
                self._size += len(data)
                if self._size > self._rotate_bytes:
                    self._rotate()
                return
            with self._open() as log:
                size = log.seek(0, os.SEEK_END)
                log.write(data)
            if size + len(data) > self._rotate_bytes:
                self._rotate()
        except OSError as error:
            if not self._warned:  # once: a full disk would otherwise repeat it for every line
                self._warned = True
                logger.warning("cannot write the server log %s: %s", self.path, error)

    def _ensure_private(self) -> None:
        """The folder 0700 and the file 0600, checked once (a log an older mcpdeck left readable is
        tightened before anything is written to it or it is rotated)."""
        if not self._made_private:
            ensure_private_dir(self.path.parent)
            ensure_private_file(self.path)
            self._made_private = True

    def _open(self) -> BinaryIO:
        self._ensure_private()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
        return open(fd, "ab", buffering=0)  # unbuffered: each write is a whole chunk or line

    def _rotate(self) -> None:
        """``NAME.log`` becomes ``NAME.log.1`` (older ones move up, the oldest goes); a new file starts."""
        for n in range(self._keep - 1, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                os.replace(self._numbered(n), self._numbered(n + 1))
        if self._keep > 0:
            os.replace(self.path, self._numbered(1))
        else:
            self.path.unlink(missing_ok=True)
        if self._file is not None:
            self._file.close()
            self._file = self._open()
            self._size = 0
            if self._session_start is not None:
                self._session_start = 0  # the session goes on in the new file

    def _numbered(self, n: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{n}")

    def new_session(self) -> None:
        """Forget the previous session's stderr (until ``stderr`` opens the next)."""
        self._session_start = None

    @contextlib.contextmanager
    def stderr(self, name: str, target: str) -> Generator[BinaryIO]:
        """Open the log for one stdio session, after a header line; yield the open file.

        The file is kept open while the session runs: the server's stderr arrives in chunks
        through ``write_stderr`` (on Windows the yielded file is the child's stderr itself).
        A file past the size limit is rotated first, so a session starts in a fresh file.
        """
        self._ensure_private()
        with contextlib.suppress(FileNotFoundError):
            if self.path.stat().st_size > self._rotate_bytes:
                self._rotate()
        self._file = self._open()
        try:
            self._size = self._file.seek(0, os.SEEK_END)
            self._append(f"--- {_stamp()} mcpdeck starting {name}: {target}\n".encode())
            self._session_start = self._size
            yield self._file
        finally:
            log, self._file = self._file, None
            log.close()

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
        # The host's own notes ("<time> [mcpdeck] ...") say nothing the error does not.
        lines = [
            line.rstrip()
            for line in text.splitlines()
            if line.strip() and not line.partition(" ")[2].startswith("[mcpdeck] ")
        ]
        if not lines:
            return f" (log: {self.path})"
        return f"; stderr: {' | '.join(lines[-3:])[-500:]} (log: {self.path})"
