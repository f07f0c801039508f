"""mcpdeck's stdio transport, on the SDK's ``Transport`` interface.

Why not the SDK's ``stdio_client``:
- it re-joins its whole buffer with every chunk it reads (``buffer + chunk``), which is
  quadratic in the size of one message; this reader keeps a ``bytearray`` and scans each
  byte once, so a 5 MB result costs what 5 MB costs;
- it kills the server's process group only when the server itself is still alive after
  stdin closes, so a server that exits at once leaves its own children (a wrapper's
  ``node``, a browser) running; this transport always ends the whole group;
- it does not tell the host the server's pid.

Shutdown follows the MCP spec: close stdin, wait, then SIGTERM and SIGKILL the group, all
bounded and shielded from cancellation. On Windows the SDK's transport is used instead.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any, TextIO, cast

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

__all__ = ["StdioProcess", "stdio_transport"]

logger = logging.getLogger(__name__)

EXIT_GRACE = 2.0
"""Seconds a server may take to exit after its stdin closes, and again after SIGTERM."""
_POLL = 0.01


class StdioProcess:
    """What the host may know of the running server process."""

    pid: int | None = None


_BIG_LINE = 64 * 1024


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        if len(line) < _BIG_LINE:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        # pydantic's JSON parser is the faster one for small messages, json.loads (C) for
        # big ones: 1 MB validates in ~8 ms this way and ~40 ms the other.
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(json.loads(line), by_name=False))
    except ValueError as error:
        logger.warning("a server wrote a line that is not a JSON-RPC message: %r", line[:200])
        return error


async def _wait_exit(process: Process, timeout: float) -> bool:
    """Whether the process exited within ``timeout`` (polling: ``wait()`` also waits for pipe EOF)."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:  # noqa: ASYNC110 - no event tells of a child's exit without pipe EOF
            await anyio.sleep(_POLL)
        return True
    return False


@asynccontextmanager
async def stdio_transport(
    params: StdioServerParameters, errlog: IO[Any], info: StdioProcess | None = None
) -> AsyncGenerator[TransportStreams]:
    """Start the server and exchange newline-delimited JSON-RPC messages over its stdio."""
    if sys.platform == "win32":  # pragma: no cover - the SDK handles Job Objects there
        async with stdio_client(params, errlog=cast(TextIO, errlog)) as streams:
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
    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        scanned = 0  # bytes of `buffer` known to hold no newline
        try:
            async with read_send:
                async for chunk in process.stdout:
                    buffer += chunk
                    start = 0
                    while (end := buffer.find(b"\n", max(start, scanned))) >= 0:
                        line = bytes(buffer[start:end])
                        start = end + 1
                        if line.strip():
                            await read_send.send(_parse(line))
                    if start:
                        del buffer[:start]
                    scanned = len(buffer)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass  # the session or the pipe went away; the read side closes either way

    async def write() -> None:
        assert process.stdin is not None
        try:
            async with write_receive:
                async for message in write_receive:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                    await process.stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the server stopped reading: end the session, don't hang it

    async def stop() -> None:
        read_stream.close()
        write_stream.close()
        assert process.stdin is not None and process.stdout is not None
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        if not await _wait_exit(process, EXIT_GRACE):
            logger.info("server process %d did not exit after stdin closed; terminating it", process.pid)
        # Always, even when the server exited by itself: its children may still be running.
        await terminate_posix_process_tree(process, EXIT_GRACE)
        await _wait_exit(process, EXIT_GRACE)
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()
        transport = getattr(getattr(process, "_process", None), "_transport", None)
        close = getattr(transport, "close", None)
        if callable(close):  # otherwise asyncio warns at garbage collection
            with contextlib.suppress(PermissionError):
                close()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        tg.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await stop()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
