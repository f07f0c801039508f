"""A stdio server's child process: how it ended, its stderr read by the event loop, its group ended.

Shutdown follows the MCP spec: close stdin, wait a moment (``STDIN_GRACE``), then SIGTERM
and SIGKILL the server's whole process group (a wrapper's ``node``, a browser it started),
all bounded; a server that exits at once does not leave its children running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable

import anyio
from anyio.abc import Process

__all__ = ["STDIN_GRACE", "TERM_GRACE", "StderrPipe", "StdioProcess", "end_child"]

logger = logging.getLogger(__name__)

STDIN_GRACE = 0.2
"""Seconds a server may take to exit by itself after its stdin closes, before SIGTERM."""
TERM_GRACE = 2.0
"""Seconds its process group may take to exit after SIGTERM, before SIGKILL."""
_POLL = 0.01
_STDERR_CHUNK = 65536


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


_CLOSED = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)


async def end_child(process: Process, info: StdioProcess | None, stderr: StderrPipe | None) -> None:
    """End a server the transport started: stdin closed, a short grace, then its whole group; its pipes closed."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(*_CLOSED):
        await process.stdin.aclose()
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
    with contextlib.suppress(*_CLOSED):
        await process.stdout.aclose()
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):  # otherwise asyncio warns at garbage collection
        with contextlib.suppress(PermissionError):
            close()
