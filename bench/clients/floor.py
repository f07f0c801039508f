"""The floor: a JSON-RPC line echo over a pipe between two Python processes, no MCP.

It talks to the same line server as every client (so the server's cost is the same), but
without a handshake, validation, sessions or models: one ``json.dumps``, one pipe write,
one line read, one ``json.loads`` per call.

- ``floor``: asyncio pipes, with a reader task matching answers to requests by id (calls
  may be in flight at once).
- ``floor-blocking``: blocking pipe I/O, one call at a time; the lowest a Python client
  can go.

Over HTTP there is no floor (``connect`` raises ``Unsupported``). Standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import subprocess
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from bench.clients.base import ClientLib, Connection, ServerSpec, Unsupported, group

__all__ = ["FloorLib", "make"]

_LIMIT = 64 * 1024 * 1024
_ENV_KEYS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
"""What the server's environment keeps: the same short list the SDK's ``stdio_client`` passes on.
The server also gets its own session, as the SDK and mcpdeck give it (with the kernel's
scheduler autogroups, that decides its share of a busy machine's CPU)."""


def _environment() -> dict[str, str]:
    return {key: value for key in _ENV_KEYS if (value := os.environ.get(key)) is not None}


def _text_size(answer: dict[str, Any]) -> int:
    if "error" in answer:
        raise RuntimeError(f"the server answered an error: {answer['error']}")
    return sum(len(block.get("text", "")) for block in answer["result"].get("content", []))


class _AsyncPipe:
    def __init__(self, process: asyncio.subprocess.Process):
        self._process = process
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self._process.stdout is not None
        while line := await self._process.stdout.readline():
            answer: dict[str, Any] = json.loads(line)
            future = self._waiting.pop(answer.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(answer)
        for future in self._waiting.values():
            future.set_exception(ConnectionError("the server closed its stdout"))

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self._process.stdin is not None
        request_id = next(self._ids)
        future = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
        self._process.stdin.write(json.dumps(message).encode() + b"\n")
        await self._process.stdin.drain()
        return await future

    async def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._process.wait(), 5)
        if self._process.returncode is None:
            self._process.kill()
            await self._process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


class _BlockingPipe:
    def __init__(self, process: subprocess.Popen[bytes]):
        self._process = process
        self._ids = itertools.count(1)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
        self._process.stdin.write(json.dumps(message).encode() + b"\n")
        self._process.stdin.flush()
        while True:
            line = self._process.stdout.readline()
            if not line:
                raise ConnectionError("the server closed its stdout")
            answer: dict[str, Any] = json.loads(line)
            if answer.get("id") == request_id:
                return answer

    async def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


_Pipe = _AsyncPipe | _BlockingPipe


class _Connection(Connection):
    def __init__(self, pipes: dict[str, _Pipe], tools: int):
        self._pipes = pipes
        self._tools = tools

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> int:
        return _text_size(await self._pipes[server].request("tools/call", {"name": tool, "arguments": arguments}))

    def tool_count(self) -> int:
        return self._tools

    async def relist(self, server: str) -> int:
        return len((await self._pipes[server].request("tools/list"))["result"]["tools"])

    async def server_cpu(self) -> float | None:
        total = 0.0
        for pipe in self._pipes.values():
            total += float((await pipe.request("bench/stats"))["result"]["cpu_s"])
        return total


class FloorLib(ClientLib):
    def __init__(self, blocking: bool):
        self._blocking = blocking

    @asynccontextmanager
    async def _open(self, spec: ServerSpec) -> AsyncGenerator[tuple[_Pipe, int]]:
        pipe: _Pipe
        command = [spec.command, *spec.args]
        if self._blocking:
            popen = subprocess.Popen(  # noqa: ASYNC220 - the blocking floor blocks on purpose
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_environment(), start_new_session=True
            )
            pipe = _BlockingPipe(popen)
        else:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                limit=_LIMIT,
                env=_environment(),
                start_new_session=True,
            )
            pipe = _AsyncPipe(process)
        try:
            listed = await pipe.request("tools/list")
            yield pipe, len(listed["result"]["tools"])
        finally:
            await pipe.close()

    def connect(self, servers: list[ServerSpec], *, concurrent: bool) -> AbstractAsyncContextManager[Connection]:
        if any(s.transport != "stdio" for s in servers):
            raise Unsupported("the floor is stdio only")

        @asynccontextmanager
        async def connected() -> AsyncGenerator[Connection]:
            async with group(servers, self._open, concurrent=concurrent) as opened:
                pipes: dict[str, _Pipe] = {name: pipe for name, (pipe, _) in opened.items()}
                yield _Connection(pipes, sum(count for _, count in opened.values()))

        return connected()


def make(name: str) -> ClientLib:
    return FloorLib(blocking=name == "floor-blocking")
