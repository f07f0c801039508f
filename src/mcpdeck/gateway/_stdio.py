"""The gateway's stdin/stdout, read and written by the SDK's own loop: no worker thread, no relay task.

The SDK's ``stdio_server`` reads and writes through ``anyio.wrap_file`` (every line in and
out is a hop to a worker thread and back) and relays each message through a reader task and
a writer task over memory streams. Here the server's read loop iterates ``StdinLines``, whose
buffer the event loop fills as the pipe becomes readable (the pipe stays registered with the
loop's selector: no registering and unregistering it per message, no read that finds it
empty), and each sender writes its answer straight to the pipe with ``StdoutLines``: a call
costs two pipe operations and no extra turns of the event loop.

As the SDK does, the protocol gets private duplicates of fd 0 and 1 while fd 0 is pointed
at the null device and fd 1 at stderr, so a stray ``print`` (or a child inheriting the
descriptors) cannot corrupt the stream; both are put back on exit.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Self

import anyio
from mcp.shared.message import SessionMessage

from mcpdeck._sdk.transports import PipeReading, StreamEnd, parse_message

__all__ = ["StdinLines", "StdoutLines", "stdio_streams"]

logger = logging.getLogger(__name__)

_CHUNK = 256 * 1024
_BEHIND = 4 * _CHUNK  # unread bytes past which the loop stops reading the pipe until the reader catches up
MAX_LINE = 64 * 1024 * 1024
"""The longest line a client may write (bytes); past it the connection ends."""
STALLED_WRITE = 60.0
"""Seconds a line may wait for a client that stopped reading before its stream is closed."""


def _parse(line: bytes | bytearray) -> SessionMessage | Exception:
    try:
        return parse_message(line)
    except (ValueError, RecursionError) as error:
        logger.warning("a client wrote a line that is not a JSON-RPC message: %r", bytes(line[:200]))
        return error if isinstance(error, ValueError) else ValueError("the message is nested too deeply")


def _reading_failed(error: Exception) -> None:
    logger.warning("reading stdin failed: %s", error)


class StdinLines(StreamEnd):
    """The client's messages, one JSON-RPC message per line of a non-blocking pipe, read by the consumer.

    The event loop reads the pipe (asyncio's pipe transport): the fd stays registered with the
    loop's selector, and each chunk it reads wakes the consumer, so a message costs one read and
    no (un)registration. A regular file (``< file``), which the loop cannot watch, is read directly.
    """

    __slots__ = ("_buffer", "_eof", "_fd", "_paused", "_scanned", "_start", "_transport", "_waiter")

    def __init__(self, fd: int):
        super().__init__()
        self._fd = fd
        self._buffer = bytearray()
        self._start = 0  # where the next line starts in `_buffer`
        self._scanned = 0  # bytes of `_buffer` known to hold no newline
        self._eof = False
        self._transport: asyncio.ReadTransport | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    def __aiter__(self) -> Self:
        return self

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise anyio.EndOfStream from None

    def close(self) -> None:
        """Stop reading (the loop lets go of the fd at once; the fd itself stays open)."""
        self.closed = True
        if self._transport is not None:
            self._transport.close()

    async def aclose(self) -> None:
        self.close()

    def arrived(self, data: bytes) -> None:
        """The loop read ``data`` (``b""``: the end): keep it and wake the reader."""
        if data:
            self._buffer += data
            if len(self._buffer) - self._start > _BEHIND and self._transport is not None and not self._paused:
                self._transport.pause_reading()  # the reader is behind: let the pipe hold the rest
                self._paused = True
        else:
            self._eof = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def __anext__(self) -> SessionMessage | Exception:
        buffer = self._buffer
        while not self.closed:
            start = self._start
            end = buffer.find(b"\n", max(start, self._scanned))
            if end >= 0:
                self._start = end + 1
                line = buffer[start:end]
                if line.strip():
                    return _parse(line)
                continue
            if start:
                del buffer[:start]
                self._start = 0
            self._scanned = len(buffer)
            if self._eof:
                break  # (a last line without a newline is not a whole message)
            if len(buffer) > MAX_LINE:
                logger.warning("a client wrote a line of more than %d bytes: the connection ends", MAX_LINE)
                break
            if not await self._more():
                break
        raise StopAsyncIteration

    async def _more(self) -> bool:
        """Wait for more of the pipe in ``_buffer`` (False: reading failed)."""
        if self._transport is None and not await self._watch():
            try:
                chunk = os.read(self._fd, _CHUNK)  # a regular file: never blocks
            except OSError as error:
                logger.warning("reading stdin failed: %s", error)
                return False
            self.arrived(chunk)
            return True
        if self._paused and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        return True

    async def _watch(self) -> bool:
        """Have the event loop read the pipe from now on (False: it cannot, stdin is a regular file)."""
        if self._eof:
            return False
        pipe = os.fdopen(self._fd, "rb", buffering=0, closefd=False)  # (closing the transport leaves the fd open)
        try:
            transport, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: PipeReading(self.arrived, _reading_failed), pipe
            )
        except ValueError:
            pipe.close()
            return False
        self._transport = transport
        if self.closed:
            transport.close()
        return True


class StdoutLines(StreamEnd):
    """Each message written to a non-blocking pipe by the task that sends it, as one line.

    A line the pipe takes at once (the usual case) is written without waiting; one it takes
    only in part is finished under a lock, shielded from cancellation, so lines never mix.
    """

    __slots__ = ("_fd", "_lock")

    def __init__(self, fd: int):
        super().__init__()
        self._fd = fd
        self._lock = anyio.Lock()

    async def send(self, item: SessionMessage, /) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        if self._lock.locked():  # another line is part-way out: queue behind it
            async with self._lock:
                await self._finish(memoryview(data))
            return
        try:
            written = os.write(self._fd, data)
        except BlockingIOError:
            written = 0
        except OSError as error:  # the client closed its end
            raise anyio.BrokenResourceError from error
        if written == len(data):
            return
        self._lock.acquire_nowait()  # free: nothing awaited since the check above
        try:
            await self._finish(memoryview(data)[written:])
        finally:
            self._lock.release()

    async def _finish(self, data: memoryview) -> None:
        # Shielded: half a line would corrupt the stream for good. Bounded: a client that stops
        # reading without closing its end must not hold the gateway up for ever; the stream ends.
        with anyio.CancelScope(shield=True, deadline=anyio.current_time() + STALLED_WRITE):
            while data:
                try:
                    data = data[os.write(self._fd, data) :]
                except BlockingIOError:
                    await anyio.wait_writable(self._fd)
                except OSError as error:
                    self.closed = True
                    raise anyio.BrokenResourceError from error
        if data:
            self.closed = True
            logger.warning("the client read nothing for %g s: its stream is closed", STALLED_WRITE)
            raise anyio.BrokenResourceError


def _claim(fd: int, diversion: int) -> int:
    """A private duplicate of ``fd`` (above the standard range); ``fd`` itself now points at ``diversion``."""
    import fcntl  # POSIX only; Windows uses the SDK's streams

    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(diversion, fd)
    os.set_blocking(private, False)
    return private


@asynccontextmanager
async def stdio_streams() -> AsyncGenerator[tuple[StdinLines, StdoutLines]]:
    """The read and write streams of this process's stdin/stdout, for ``serve_loop`` or ``Server.run``."""
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        stdin = _claim(0, null)
    finally:
        os.close(null)
    try:
        stdout = _claim(1, 2)
    except OSError:
        os.dup2(stdin, 0)
        os.close(stdin)
        raise
    lines = StdinLines(stdin)
    try:
        yield lines, StdoutLines(stdout)
    finally:
        lines.close()  # the loop lets go of the fd before it is closed
        for fd, private in ((0, stdin), (1, stdout)):
            os.set_blocking(private, True)
            os.dup2(private, fd)
            os.close(private)
