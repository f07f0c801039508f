"""mcpdeck's stdio transport, on the SDK's ``Transport`` interface.

Why not the SDK's ``stdio_client``:
- it re-joins its whole buffer with every chunk it reads (``buffer + chunk``), which is
  quadratic in the size of one message; this reader keeps a ``bytearray`` and scans each
  byte once, so a 5 MB result costs what 5 MB costs;
- it relays every message through a reader task and a writer task (two memory-stream hops,
  each a few event-loop turns, per message); here the session's own read loop takes what
  the event loop read from the pipe (``StdoutPipe``: no ``StreamReader``, and not a turn
  later as asyncio's subprocess pipes hand it on) and the sender writes it (``StdinPipe``:
  no turn of the loop unless the pipe is full), so a call costs fewer turns of the event
  loop and no task serialises concurrent writes;
- it kills the server's process group only when the server itself is still alive after
  stdin closes, so a server that exits at once leaves its own children (a wrapper's
  ``node``, a browser) running; this transport always ends the whole group;
- it does not tell the host the server's pid, nor when the connection ended;
- one line without a newline grows its buffer without bound; here a message larger than
  ``max_message`` bytes ends the session with ``MessageTooLargeError`` (checked once per
  chunk read, never per byte);
- a line that is not a message is handed to the session as an exception; here it is
  reported once (``on_error``) and skipped, and an answer nested too deeply to read fails
  the request it answers instead of leaving it waiting.

Shutdown follows the MCP spec (``_child_process.end_child``): close stdin, wait a moment,
then SIGTERM and SIGKILL the group, all bounded and shielded from cancellation. On Windows
the SDK's transport is used instead.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any, Self, TextIO, cast

import anyio
import anyio.lowlevel
import mcp_types as types
import pydantic_core
from mcp.client._transport import TransportStreams
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCResponse

from mcpdeck._sdk.child_process import StderrPipe, StdinPipe, StdioProcess, StdoutPipe, end_child
from mcpdeck._sdk.transports import (
    TOO_DEEP,
    EndSignal,
    MessageTooLargeError,
    NotAMessageError,
    StreamEnd,
    held_result,
    let_go,
    parse_message,
    unreadable_reason,
    watched,
)

__all__ = ["stdio_transport"]

logger = logging.getLogger(__name__)

_QUOTE = 300  # characters of a line that is not a message kept for the log
_Item = SessionMessage | Exception
_PIPE_ENDED = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)
_ID_FIRST = re.compile(rb'\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[][{}]')
_KEY_VALUE = re.compile(rb'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def _parse(line: bytes | bytearray) -> SessionMessage | Exception:
    try:
        return parse_message(line)
    except (ValueError, RecursionError) as error:
        reason = unreadable_reason(error)
        if reason is TOO_DEEP and (answer := _unreadable_answer(line)) is not None:
            return answer
        return NotAMessageError(bytes(line[:_QUOTE]).decode("utf-8", "replace"), reason)


def _unreadable_answer(line: bytes | bytearray) -> SessionMessage | None:
    """An error answer to the request a too-deeply nested response was meant for, if its id can be found.

    Only on this rare path is the line scanned in Python: the id at the top level, first
    where the SDKs put it, else anywhere (strings are skipped whole, so brackets inside them
    do not count).
    """
    match = _ID_FIRST.match(line)
    if match is None:
        depth = 0
        for token in _TOKEN.finditer(line):
            text = token.group()
            if text in (b"{", b"["):
                depth += 1
            elif text in (b"}", b"]"):
                depth -= 1
            elif depth == 1 and text == b'"id"':
                match = _KEY_VALUE.match(line, token.end())
                if match is not None:
                    break
        if match is None:
            return None
    try:
        request_id: types.RequestId = pydantic_core.from_json(match.group(1))
    except ValueError:
        return None
    error = types.ErrorData(
        code=types.PARSE_ERROR, message="the server's answer is nested too deeply to read (more than 200 levels)"
    )
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _ignore(error: Exception) -> None:
    pass


class _LineReader(StreamEnd):
    """The read side: the server's stdout, one JSON-RPC message per line, read by the consumer's task.

    ``ended`` is set when the consumer meets the end (the pipe closed, or this stream was
    closed); ``on_error`` hears of every line that is not a message (``NotAMessageError``;
    the line is skipped) and of a message over ``limit`` bytes (``MessageTooLargeError``;
    the read side ends, and with it the session).
    """

    __slots__ = ("_buffer", "_done", "_ended", "_held", "_limit", "_on_error", "_scanned", "_start", "_stdout")

    def __init__(
        self,
        stdout: StdoutPipe,
        ended: EndSignal | None,
        on_error: Callable[[Exception], None],
        limit: int,
    ):
        self._stdout = stdout
        self._ended = ended
        self._on_error = on_error
        self._limit = limit
        self._buffer = bytearray()
        self._start = 0  # where the next line starts in `_buffer`
        self._scanned = 0  # bytes of `_buffer` known to hold no newline
        super().__init__()
        self._done = False  # the pipe ended
        self._held: JSONRPCResponse | None = None  # the last response handed on (see ``held_result``)

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
        if self._held is not None:
            let_go(self._held)
            self._held = None
        if self.closed:
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
                    self._on_error(item)  # reported once, here; the session has no use for it
                    continue
                self._held = held_result(item)
                return item
            if self._done:
                raise self._end(StopAsyncIteration)
            if start:
                del buffer[:start]
                self._start = 0
            scanned = self._scanned = len(buffer)
            if scanned > self._limit:  # part of one message, and already too much: stop reading
                self._done = True
                buffer.clear()
                self._on_error(MessageTooLargeError(self._limit))
                raise self._end(StopAsyncIteration)
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
                    continue
                self._held = held_result(item)
                return item
            buffer += chunk


class _LineWriter(StreamEnd):
    """The write side: each message is serialised and written to the server's stdin by its sender.

    A write the pipe refuses (the server stopped reading) ends the read side as well, so the
    session ends instead of waiting for answers that cannot come.
    """

    __slots__ = ("_stdin", "_stdout")

    def __init__(self, stdin: StdinPipe, stdout: StdoutPipe):
        self._stdin = stdin
        self._stdout = stdout
        super().__init__()

    async def send(self, item: SessionMessage, /) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        try:
            await self._stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as error:
            with anyio.CancelScope(shield=True), contextlib.suppress(*_PIPE_ENDED):
                await self._stdout.aclose()  # wakes the read side, which then ends the session
            raise anyio.BrokenResourceError from error


@asynccontextmanager
async def stdio_transport(
    params: StdioServerParameters,
    errlog: IO[Any],
    info: StdioProcess | None = None,
    *,
    ended: EndSignal | None = None,
    on_error: Callable[[Exception], None] | None = None,
    max_message: int,
    on_stderr: Callable[[bytes], None] | None = None,
) -> AsyncGenerator[TransportStreams]:
    """Start the server and exchange newline-delimited JSON-RPC messages over its stdio.

    ``ended`` is set when the read side ends (the server exited or closed stdout);
    ``on_error`` hears of each line that is not a JSON-RPC message, and of a message larger
    than ``max_message`` bytes (which ends the session). ``info`` learns the pid, and how
    the process ended. The server's stderr goes to ``on_stderr`` chunk by chunk (read by the
    event loop as it arrives, to its end: see ``StderrPipe``), else straight into ``errlog``
    (always on Windows).
    """
    if sys.platform == "win32":  # pragma: no cover - the SDK handles Job Objects there
        transport = stdio_client(params, errlog=cast(TextIO, errlog))
        async with watched(transport, ended or anyio.Event(), on_error or _ignore) as streams:
            yield streams
        return
    stdin, stdout = StdinPipe(), StdoutPipe()
    stderr = StderrPipe(on_stderr) if on_stderr is not None else None
    try:
        process = await anyio.open_process(
            [params.command, *params.args],
            env=params.env,
            cwd=Path(params.cwd) if params.cwd is not None else None,
            stdin=stdin.child_end,
            stdout=stdout.child_end,
            stderr=errlog if stderr is None else stderr.child_end,
            start_new_session=True,  # its own process group: shutdown reaches its children too
        )
    except BaseException:
        stdin.close()
        stdout.close()
        if stderr is not None:
            stderr.close()
        raise
    if stderr is not None:
        stderr.start()
    if info is not None:
        info.pid = process.pid
    try:
        await stdin.start()
        await stdout.start()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await end_child(process, info, stdin, stdout, stderr)
        raise
    read_stream = _LineReader(stdout, ended, on_error or _ignore, max_message)
    write_stream = _LineWriter(stdin, stdout)
    try:
        yield read_stream, write_stream
    finally:
        with anyio.CancelScope(shield=True):
            read_stream.close()
            write_stream.close()
            await end_child(process, info, stdin, stdout, stderr)
    await anyio.lowlevel.cancel_shielded_checkpoint()
