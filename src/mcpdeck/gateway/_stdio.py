"""The gateway's stdin/stdout: the SDK's server streams, without a worker thread per line.

The SDK's ``stdio_server`` reads and writes through ``anyio.wrap_file``: every line in and
every line out is a hop to a worker thread and back, about a dozen per call. On a busy
machine those hops, not the work, set the gateway's latency. Here both pipes are made
non-blocking and served from the event loop (``wait_readable`` / ``wait_writable``).

As the SDK does, the protocol gets private duplicates of fd 0 and 1 while fd 0 is pointed
at the null device and fd 1 at stderr, so a stray ``print`` (or a child inheriting the
descriptors) cannot corrupt the stream; both are put back on exit.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

__all__ = ["stdio_streams"]

logger = logging.getLogger(__name__)

_CHUNK = 256 * 1024
_BIG_LINE = 64 * 1024


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        if len(line) < _BIG_LINE:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(json.loads(line), by_name=False))
    except ValueError as error:
        logger.warning("a client wrote a line that is not a JSON-RPC message: %r", line[:200])
        return error


def _claim(fd: int, diversion: int) -> int:
    """A private duplicate of ``fd`` (above the standard range); ``fd`` itself now points at ``diversion``."""
    import fcntl  # POSIX only; Windows uses the SDK's streams

    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(diversion, fd)
    os.set_blocking(private, False)
    return private


async def _read(fd: int, send: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    buffer = b""
    async with send:
        while True:
            await anyio.wait_readable(fd)
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    await send.send(_parse(line))


async def _write(fd: int, receive: MemoryObjectReceiveStream[SessionMessage]) -> None:
    async with receive:
        async for message in receive:
            data = memoryview(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
            while data:
                try:
                    data = data[os.write(fd, data) :]
                except BlockingIOError:
                    await anyio.wait_writable(fd)


@asynccontextmanager
async def stdio_streams() -> AsyncGenerator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
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
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read, stdin, read_send)
            tg.start_soon(_write, stdout, write_receive)
            yield read_receive, write_send
            tg.cancel_scope.cancel()
    finally:
        for fd, private in ((0, stdin), (1, stdout)):
            os.set_blocking(private, True)
            os.dup2(private, fd)
            os.close(private)
