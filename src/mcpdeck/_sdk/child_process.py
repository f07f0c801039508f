"""A stdio server's child process: how it ended, its stdin written and its stdout and stderr read by the event
loop, its group ended.

Shutdown follows the MCP spec: close stdin, wait a moment (``STDIN_GRACE``), then SIGTERM
and SIGKILL the server's whole process group (a wrapper's ``node``, a browser it started),
all bounded; a server that exits at once does not leave its children running.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import signal
from collections.abc import Callable

import anyio
from anyio.abc import Process

from mcpdeck._sdk.transports import PipeReading

__all__ = ["STDIN_GRACE", "TERM_GRACE", "StderrPipe", "StdinPipe", "StdioProcess", "StdoutPipe", "end_child"]

logger = logging.getLogger(__name__)

STDIN_GRACE = 0.2
"""Seconds a server may take to exit by itself after its stdin closes, before SIGTERM."""
TERM_GRACE = 2.0
"""Seconds its process group may take to exit after SIGTERM, before SIGKILL."""
_POLL = 0.01
_STDERR_CHUNK = 65536
_STDOUT_BEHIND = 1024 * 1024
"""Bytes of the server's stdout read but not yet taken, past which the loop stops reading the pipe."""


class StdioProcess:
    """What the host may know of the server process: its pid, and how it ended (``returncode``,
    negative for a signal; ``ended_by_host``: whether it was still running when the host ended it)."""

    pid: int | None = None
    returncode: int | None = None
    ended_by_host: bool = False

    def exit_text(self) -> str:
        """How the process ended, in words ("" while it runs)."""
        code = self.returncode
        if code is None:
            return ""
        if code < 0:
            try:
                how = f"was ended by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was ended by signal {-code}"
        else:
            how = f"exited with status {code}"
        return f"{how}{' (sent by mcpdeck at shutdown)' if self.ended_by_host and code < 0 else ''}"


def _group_running(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (zombies do not count).

    ``killpg(pgid, 0)`` also counts zombies, and an orphaned zombie lasts until init reaps
    it, which some inits (those of containers and VMs) do only every second or so; on Linux
    /proc tells the two apart.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True  # no /proc: trust the probe
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue  # it ended while we looked
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            return True
    return False


async def _end_group(process: Process, grace: float) -> None:
    """SIGTERM the server's process group, wait up to ``grace`` for it to end, then SIGKILL what is left."""
    pgid = process.pid  # its own session: the leader's pid is the group's id, even after the leader is gone
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    except PermissionError:
        logger.info("no permission to signal all of process group %d", pgid)
    with anyio.move_on_after(grace):
        while _group_running(pgid):
            _ = process.returncode  # reaps the leader where that is how it is reaped
            await anyio.sleep(_POLL)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _wait_exit(process: Process, timeout: float) -> bool:
    """Whether the process exited within ``timeout`` (polling: ``wait()`` also waits for pipe EOF)."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:  # noqa: ASYNC110 - no event tells of a child's exit without pipe EOF
            await anyio.sleep(_POLL)
        return True
    return False


class StderrPipe:
    """The server's stderr: a pipe whose end is read by the event loop as data arrives, handed to ``sink``.

    No task, stream or buffer per server (a connected server keeps this object and a file
    descriptor): the loop calls ``_read`` when the pipe is readable, which reads what is
    there without blocking. It is closed at the pipe's end (the server and its children
    closed theirs), or when the host stops reading; ``closed`` waits for that.
    """

    __slots__ = ("_closed", "_fd", "_sink", "_waiter", "child_end")

    def __init__(self, sink: Callable[[bytes], None]):
        self._fd, self.child_end = os.pipe()
        os.set_blocking(self._fd, False)
        self._sink = sink
        self._closed = False
        self._waiter: anyio.Event | None = None  # only while someone waits for the end

    def start(self) -> None:
        """The child has its end: close this process's copy, and read as data arrives."""
        os.close(self.child_end)
        self.child_end = -1
        asyncio.get_running_loop().add_reader(self._fd, self._read)

    async def closed(self) -> None:
        """Wait until the pipe has ended (or was closed)."""
        if not self._closed:
            if self._waiter is None:
                self._waiter = anyio.Event()
            await self._waiter.wait()

    def _read(self) -> None:
        try:
            while chunk := os.read(self._fd, _STDERR_CHUNK):
                self._sink(chunk)
                if len(chunk) < _STDERR_CHUNK:
                    return  # read what there was: back to the loop until more comes
        except BlockingIOError:
            return
        except OSError:
            pass
        self.close()  # the end of the pipe (or it failed): nothing more will come

    def close(self) -> None:
        """Stop reading and close the pipe (also the child's end if the child never got it)."""
        if self._closed:
            return
        self._closed = True
        if self.child_end >= 0:
            os.close(self.child_end)
            self.child_end = -1
        with contextlib.suppress(RuntimeError):  # (a loop that is already closed)
            asyncio.get_running_loop().remove_reader(self._fd)
        os.close(self._fd)
        if self._waiter is not None:
            self._waiter.set()


class _PipeEnds:
    """A pipe to the server: its end until the server has it, this process's until the event loop's
    transport owns it (-1 once either is gone)."""

    __slots__ = ("_fd", "child_end")

    _fd: int
    child_end: int

    def _hand_over(self, mode: str) -> io.FileIO:
        """The server has its end: close this process's copy; this end as the file the transport will own
        (and close)."""
        os.close(self.child_end)
        self.child_end = -1
        pipe = io.FileIO(self._fd, mode)
        self._fd = -1
        return pipe

    def _close_ends(self) -> None:
        """Close the ends no transport owns yet (the server's, if it never got it)."""
        for fd in (self.child_end, self._fd):
            if fd >= 0:
                os.close(fd)
        self.child_end = self._fd = -1


class _Writing(asyncio.Protocol):
    """What the event loop tells ``StdinPipe`` of its pipe: full, drained, gone."""

    def __init__(self, pipe: StdinPipe):
        self._pipe = pipe

    def pause_writing(self) -> None:
        self._pipe.full = True

    def resume_writing(self) -> None:
        self._pipe.drained()

    def connection_lost(self, exc: Exception | None) -> None:
        self._pipe.lost()


class StdinPipe(_PipeEnds):
    """The server's stdin: a pipe written through the event loop's pipe transport.

    A write that the pipe takes at once returns without yielding to the loop (anyio's
    process stdin yields once on every send, even when nothing had to wait: one more turn of
    the loop per request, a cost bench/RESULTS.md gives for ``gateway --stdio``); what the
    pipe cannot take yet stays in the transport's buffer, whole and in order, and past the
    transport's high-water mark (64 KiB) a send waits until the server has read it down. A
    cancelled wait leaves its message to go out whole. Once the pipe is gone (the server
    closed its stdin or exited) every send raises ``BrokenResourceError``.
    """

    __slots__ = ("_drained", "_gone", "_transport", "full")

    def __init__(self) -> None:
        self.child_end, self._fd = os.pipe()
        self._transport: asyncio.WriteTransport | None = None
        self._drained: anyio.Event | None = None  # only while a send waits for the pipe to drain
        self._gone = False
        self.full = False  # over the high-water mark: senders wait

    async def start(self) -> None:
        """The child has its end: close this process's copy, and hand the pipe to the event loop."""
        pipe = self._hand_over("wb")
        transport, _ = await asyncio.get_running_loop().connect_write_pipe(lambda: _Writing(self), pipe)
        self._transport = transport

    async def send(self, data: bytes) -> None:
        """Write ``data``; wait only while the pipe is full."""
        transport = self._transport
        if self._gone or transport is None or transport.is_closing():
            raise anyio.BrokenResourceError
        transport.write(data)
        if transport.is_closing():  # the write failed (the server closed its stdin): this message is lost
            raise anyio.BrokenResourceError
        while self.full and not self._gone:
            if self._drained is None:
                self._drained = anyio.Event()
            await self._drained.wait()

    def drained(self) -> None:
        self.full = False
        if self._drained is not None:
            self._drained.set()
            self._drained = None

    def lost(self) -> None:
        self._gone = True
        self.drained()

    def close(self) -> None:
        """Close stdin (what is buffered still goes out first), and the child's end if it never got it."""
        self._close_ends()
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Drop what is still buffered and close the pipe now (the server is gone)."""
        self.close()
        if self._transport is not None and self._transport.get_write_buffer_size():  # (else it is closed or closing)
            self._transport.abort()


def _stdout_failed(error: Exception) -> None:
    logger.debug("reading a server's stdout failed: %s", error)


class StdoutPipe(_PipeEnds):
    """The server's stdout: a pipe read by the event loop's pipe transport, taken chunk by chunk with ``receive``.

    asyncio's subprocess pipes hand each chunk to their stream a turn of the loop later
    (``call_soon``) and through a ``StreamReader``; here the chunk the loop read wakes the
    reader at once, one turn fewer for every answer a server sends. Past ``_STDOUT_BEHIND``
    bytes not yet taken, the loop stops reading and the server waits on its full pipe.
    """

    __slots__ = ("_behind", "_chunks", "_closed", "_eof", "_paused", "_transport", "_waiter")

    def __init__(self) -> None:
        self._fd, self.child_end = os.pipe()
        self._transport: asyncio.ReadTransport | None = None
        self._chunks: list[bytes] = []
        self._behind = 0  # bytes in `_chunks`
        self._eof = False
        self._closed = False
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    async def start(self) -> None:
        """The child has its end: close this process's copy, and hand the pipe to the event loop."""
        pipe = self._hand_over("rb")
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: PipeReading(self.arrived, _stdout_failed), pipe
        )
        self._transport = transport
        if self._closed:
            transport.close()

    def arrived(self, data: bytes) -> None:
        """The loop read ``data`` (``b""``: the end of the pipe): keep it and wake the reader."""
        if data:
            self._chunks.append(data)
            self._behind += len(data)
            if self._behind > _STDOUT_BEHIND and self._transport is not None and not self._paused:
                self._transport.pause_reading()
                self._paused = True
        else:
            self._eof = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def receive(self) -> bytes:
        """What the server wrote since the last call (at least one byte).

        Raises:
            anyio.ClosedResourceError: ``aclose`` was called.
            anyio.EndOfStream: The server closed its stdout (it exited).
        """
        while not self._chunks:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._eof:
                raise anyio.EndOfStream
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        chunks = self._chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._behind = 0
        if self._paused and self._transport is not None and not self._closed:
            self._paused = False
            self._transport.resume_reading()
        return data

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """Stop reading and close the pipe (also the child's end if the child never got it); a waiting
        ``receive`` raises ``ClosedResourceError``."""
        if self._closed:
            return
        self._closed = True
        self._chunks.clear()
        self._close_ends()
        if self._transport is not None:
            self._transport.close()
        self._wake()


async def end_child(
    process: Process, info: StdioProcess | None, stdin: StdinPipe, stdout: StdoutPipe, stderr: StderrPipe | None
) -> None:
    """End a server the transport started: stdin closed, a short grace, then its whole group; its pipes closed."""
    stdin.close()
    # A short grace: most servers exit at once when stdin closes; many (node servers among
    # them) never do, and a command should not wait seconds for them after its answer.
    if not await _wait_exit(process, STDIN_GRACE):
        logger.debug("server process %d did not exit after stdin closed; terminating it", process.pid)
        if info is not None:
            info.ended_by_host = True
    # Always, even when the server exited by itself: its children may still be running.
    await _end_group(process, TERM_GRACE)
    await _wait_exit(process, TERM_GRACE)
    if info is not None:
        info.returncode = process.returncode
    if stderr is not None:
        with anyio.move_on_after(TERM_GRACE):  # what it wrote last often says why it ended
            await stderr.closed()
        stderr.close()
    stdin.abort()  # (a server that never read all of it: nothing is left to read it now)
    stdout.close()
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):  # otherwise asyncio warns at garbage collection
        with contextlib.suppress(PermissionError):
            close()
