"""mcpdeck's stdio transport, on the SDK's ``Transport`` interface.

Why not the SDK's ``stdio_client``:
- it re-joins its whole buffer with every chunk it reads (``buffer + chunk``), which is
  quadratic in the size of one message; this reader keeps a ``bytearray`` and scans each
  byte once, so a 5 MB result costs what 5 MB costs;
- it relays every message through a reader task and a writer task (two memory-stream hops,
  each a few event-loop turns, per message); here the session's own read loop reads the
  pipe and the sender writes it, so a call costs fewer turns of the event loop and no
  task serialises concurrent writes;
- it kills the server's process group only when the server itself is still alive after
  stdin closes, so a server that exits at once leaves its own children (a wrapper's
  ``node``, a browser) running; this transport always ends the whole group;
- it does not tell the host the server's pid, nor when the connection ended.

Shutdown follows the MCP spec: close stdin, wait, then SIGTERM and SIGKILL the group, all
bounded and shielded from cancellation. On Windows the SDK's transport is used instead.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self, TextIO, cast

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from mcp.client._transport import TransportStreams
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from mcpdeck._transports import watched

__all__ = ["StdioProcess", "stdio_transport"]

logger = logging.getLogger(__name__)

EXIT_GRACE = 2.0
"""Seconds a server may take to exit after its stdin closes, and again after SIGTERM."""
_POLL = 0.01


class StdioProcess:
    """What the host may know of the running server process."""

    pid: int | None = None


_BIG_LINE = 64 * 1024
_Item = SessionMessage | Exception
_PIPE_ENDED = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


def _parse(line: bytes | bytearray) -> SessionMessage | Exception:
    try:
        if len(line) < _BIG_LINE:  # (as bytes: a validation error then quotes the line as before)
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(bytes(line), by_name=False))
        # pydantic's JSON parser is the faster one for small messages, json.loads (C) for
        # big ones: 1 MB validates in ~8 ms this way and ~40 ms the other.
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(json.loads(line), by_name=False))
    except ValueError as error:
        logger.warning("a server wrote a line that is not a JSON-RPC message: %r", bytes(line[:200]))
        return error


def _ignore(error: Exception) -> None:
    pass


class _StreamEnd:
    """What both ends share: closing (or leaving ``async with``) only marks the end closed."""

    __slots__ = ("_closed",)

    def __init__(self) -> None:
        self._closed = False

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        self._closed = True
        return None


class _LineReader(_StreamEnd):
    """The read side: the server's stdout, one JSON-RPC message per line, read by the consumer's task.

    ``ended`` is set when the consumer meets the end (the pipe closed, or this stream was
    closed); ``on_error`` hears of every line that is not a message (the item is an exception).
    """

    __slots__ = ("_buffer", "_done", "_ended", "_on_error", "_scanned", "_start", "_stdout")

    def __init__(self, stdout: ByteReceiveStream, ended: anyio.Event | None, on_error: Callable[[Exception], None]):
        self._stdout = stdout
        self._ended = ended
        self._on_error = on_error
        self._buffer = bytearray()
        self._start = 0  # where the next line starts in `_buffer`
        self._scanned = 0  # bytes of `_buffer` known to hold no newline
        super().__init__()
        self._done = False  # the pipe ended

    def _end(self, error: type[Exception]) -> Exception:
        if self._ended is not None:
            self._ended.set()
        return error()

    async def receive(self) -> _Item:
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise anyio.EndOfStream from None

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> _Item:
        # The session's read loop iterates: this is the one coroutine per message.
        if self._closed:
            raise self._end(anyio.ClosedResourceError)
        buffer = self._buffer
        while True:
            start = self._start
            end = buffer.find(b"\n", max(start, self._scanned))
            if end >= 0:
                self._start = end + 1
                line = buffer[start:end]
                if not line or line.isspace():  # (``strip()`` would copy the line, 5 MB or not)
                    continue
                item = _parse(line)
                if isinstance(item, Exception):
                    self._on_error(item)
                return item
            if self._done:
                raise self._end(StopAsyncIteration)
            if start:
                del buffer[:start]
                self._start = 0
            self._scanned = len(buffer)
            try:
                chunk = await self._stdout.receive()
            except _PIPE_ENDED:
                self._done = True  # the session or the pipe went away: the read side ends either way
                raise self._end(StopAsyncIteration) from None
            if not buffer and chunk[-1:] == b"\n" and chunk.find(b"\n") == len(chunk) - 1:
                # The usual case, one whole message in one chunk: no copy into the buffer.
                if chunk.isspace():
                    continue
                item = _parse(chunk)
                if isinstance(item, Exception):
                    self._on_error(item)
                return item
            buffer += chunk


class _LineWriter(_StreamEnd):
    """The write side: each message is serialised and written to the server's stdin by its sender.

    A write the pipe refuses (the server stopped reading) ends the read side as well, so the
    session ends instead of waiting for answers that cannot come.
    """

    __slots__ = ("_stdin", "_stdout")

    def __init__(self, stdin: ByteSendStream, stdout: ByteReceiveStream):
        self._stdin = stdin
        self._stdout = stdout
        super().__init__()

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        try:
            await self._stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as error:
            with anyio.CancelScope(shield=True), contextlib.suppress(*_PIPE_ENDED):
                await self._stdout.aclose()  # wakes the read side, which then ends the session
            raise anyio.BrokenResourceError from error


async def _wait_exit(process: Process, timeout: float) -> bool:
    """Whether the process exited within ``timeout`` (polling: ``wait()`` also waits for pipe EOF)."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:  # noqa: ASYNC110 - no event tells of a child's exit without pipe EOF
            await anyio.sleep(_POLL)
        return True
    return False


@asynccontextmanager
async def stdio_transport(
    params: StdioServerParameters,
    errlog: IO[Any],
    info: StdioProcess | None = None,
    *,
    ended: anyio.Event | None = None,
    on_error: Callable[[Exception], None] | None = None,
) -> AsyncGenerator[TransportStreams]:
    """Start the server and exchange newline-delimited JSON-RPC messages over its stdio.

    ``ended`` is set when the read side ends (the server exited or closed stdout);
    ``on_error`` hears of each line that is not a JSON-RPC message.
    """
    if sys.platform == "win32":  # pragma: no cover - the SDK handles Job Objects there
        transport = stdio_client(params, errlog=cast(TextIO, errlog))
        async with watched(transport, ended or anyio.Event(), on_error or _ignore) as streams:
            yield streams
        return
    process = await anyio.open_process(
        [params.command, *params.args],
        env=params.env,
        cwd=Path(params.cwd) if params.cwd is not None else None,
        stderr=errlog,
        start_new_session=True,  # its own process group: shutdown reaches its children too
    )
    if info is not None:
        info.pid = process.pid
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    read_stream = _LineReader(stdout, ended, on_error or _ignore)
    write_stream = _LineWriter(stdin, stdout)

    async def stop() -> None:
        read_stream.close()
        write_stream.close()
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stdin.aclose()
        if not await _wait_exit(process, EXIT_GRACE):
            logger.info("server process %d did not exit after stdin closed; terminating it", process.pid)
        # Always, even when the server exited by itself: its children may still be running.
        await terminate_posix_process_tree(process, EXIT_GRACE)
        await _wait_exit(process, EXIT_GRACE)
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stdout.aclose()
        transport = getattr(getattr(process, "_process", None), "_transport", None)
        close = getattr(transport, "close", None)
        if callable(close):  # otherwise asyncio warns at garbage collection
            with contextlib.suppress(PermissionError):
                close()

    try:
        yield read_stream, write_stream
    finally:
        with anyio.CancelScope(shield=True):
            await stop()
    await anyio.lowlevel.cancel_shielded_checkpoint()
