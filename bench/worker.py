"""A client worker: one client library in its own process, measured from inside.

``python -m bench.worker <client>`` (run from the repository root, by the interpreter of
the client's virtual environment). The harness drives; the worker measures. They speak
JSON lines: the harness writes one command, the worker answers it, and so on.

Commands (``op``) and answers (besides ``"ok": true``):

- ``hello`` → ``versions``, ``pid``
- ``open`` ``key servers concurrent`` → ``wall_s cpu_s tools``: connect the servers and list
  their tools; the connection stays open under ``key``
- ``close`` ``key`` → ``wall_s cpu_s``
- ``calls`` ``key server tool args n`` → ``durations_ns wall_s cpu_s size server_cpu_s``:
  ``n`` calls one after the other
- ``inflight`` ``key server tool args n concurrency`` → the same, with ``concurrency``
  calls in flight at once on the one connection
- ``relist`` ``key server`` / ``convert`` ``key server provider again`` → ``wall_s cpu_s tools``
  (``again``: convert the same tools a second time, right after a first conversion)
- ``agent_requests`` ``key server provider queries`` → ``all searching runs``: the ``tools``
  value of each model request the client's agent sends, tool search off and on
  (``Connection.agent_requests``)
With ``BENCH_HIDE=a,b`` in its environment, modules ``a`` and ``b`` cannot be imported (``bench.instructions
--hide``: a client measured as in an environment without them).

- ``inflight`` may carry ``profile``: a file the calls' cProfile (CPU time) is written to
- ``era`` ``key server`` → ``era``: the protocol version the client got
- ``rss`` → ``rss`` (bytes, after a full garbage collection)
- ``quit``

Every command may carry ``timeout`` (seconds). A failure answers ``"ok": false`` with
``kind`` (``unsupported``, ``timeout`` or ``error``) and ``error``; the worker stays up.
CPU is ``time.process_time()`` of this process: the client's own CPU, all threads.

Standard library only (besides the client module it loads): it runs in every peer's
virtual environment. Its stdout is the protocol channel, so fd 1 is pointed at stderr
before any library is imported.
"""

from __future__ import annotations

import asyncio
import cProfile
import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO, cast

from bench.clients import client_info
from bench.clients.base import ClientLib, Connection, ServerSpec, Unsupported, rss_bytes

__all__ = ["main"]


@dataclass
class _Open:
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    connection: Connection | None = None


class Worker:
    """Runs commands against one client library."""

    def __init__(self, lib: ClientLib):
        self._lib = lib
        self._open: dict[str, _Open] = {}

    def _connection(self, key: str) -> Connection:
        held = self._open.get(key)
        if held is None or held.connection is None:
            raise KeyError(f"nothing open under {key!r}")
        return held.connection

    async def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        op = command["op"]
        handler = getattr(self, f"op_{op}", None)
        if handler is None:
            raise ValueError(f"unknown op {op!r}")
        run = cast(Callable[[dict[str, Any]], Awaitable[dict[str, Any]]], handler)
        timeout = command.get("timeout")
        return await asyncio.wait_for(run(command), timeout=float(timeout) if timeout else None)

    async def op_hello(self, command: dict[str, Any]) -> dict[str, Any]:
        return {"versions": self._lib.versions(), "pid": os.getpid()}

    async def op_rss(self, command: dict[str, Any]) -> dict[str, Any]:
        return {"rss": rss_bytes()}

    async def op_open(self, command: dict[str, Any]) -> dict[str, Any]:
        key = str(command["key"])
        if key in self._open:
            raise KeyError(f"{key!r} is already open")
        servers = [ServerSpec.from_json(s) for s in command["servers"]]
        held = self._open[key] = _Open()
        ready: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()

        async def hold() -> None:
            try:
                async with self._lib.connect(servers, concurrent=bool(command.get("concurrent", True))) as conn:
                    ready.set_result(conn)
                    await held.stop.wait()
            except Exception as error:
                if not ready.done():
                    ready.set_exception(error)
                else:
                    print(f"bench worker: closing {key!r} failed: {error!r}", file=sys.stderr)
            finally:
                if not ready.done():
                    ready.set_exception(RuntimeError("the connection ended before it was ready"))

        cpu, start = time.process_time(), time.perf_counter()
        held.task = asyncio.create_task(hold())
        try:
            held.connection = await ready
        except BaseException:
            del self._open[key]
            held.task.cancel()
            raise
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        try:
            tools: int | None = held.connection.tool_count()
        except Unsupported:
            tools = None
        return {"wall_s": wall, "cpu_s": cpu, "tools": tools}

    async def op_close(self, command: dict[str, Any]) -> dict[str, Any]:
        held = self._open.pop(str(command["key"]), None)
        cpu, start = time.process_time(), time.perf_counter()
        if held is not None and held.task is not None:
            held.stop.set()
            await held.task
        return {"wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}

    async def op_calls(self, command: dict[str, Any]) -> dict[str, Any]:
        conn = self._connection(str(command["key"]))
        server, tool, args, n = str(command["server"]), str(command["tool"]), dict(command["args"]), int(command["n"])
        durations: list[int] = []
        size = 0
        clock = time.perf_counter_ns
        server_cpu = await conn.server_cpu()
        cpu, start = time.process_time(), clock()
        for _ in range(n):
            began = clock()
            size = await conn.call(server, tool, args)
            durations.append(clock() - began)
        wall, cpu = (clock() - start) / 1e9, time.process_time() - cpu
        after = await conn.server_cpu()
        return {
            "durations_ns": durations,
            "wall_s": wall,
            "cpu_s": cpu,
            "size": size,
            "server_cpu_s": None if server_cpu is None or after is None else after - server_cpu,
        }

    async def op_inflight(self, command: dict[str, Any]) -> dict[str, Any]:
        conn = self._connection(str(command["key"]))
        server, tool, args = str(command["server"]), str(command["tool"]), dict(command["args"])
        n, concurrency = int(command["n"]), int(command["concurrency"])
        durations: list[int] = []
        sizes: list[int] = []
        clock = time.perf_counter_ns
        remaining = n

        async def lane() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                began = clock()
                sizes.append(await conn.call(server, tool, args))
                durations.append(clock() - began)

        profile = str(command.get("profile") or "")
        profiler = cProfile.Profile(time.process_time) if profile else None
        cpu, start = time.process_time(), clock()
        if profiler is not None:
            profiler.enable()
        await asyncio.gather(*(lane() for _ in range(concurrency)))
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(profile)
        wall, cpu = (clock() - start) / 1e9, time.process_time() - cpu
        return {"durations_ns": durations, "wall_s": wall, "cpu_s": cpu, "size": min(sizes, default=0)}

    async def op_era(self, command: dict[str, Any]) -> dict[str, Any]:
        return {"era": self._connection(str(command["key"])).protocol_version(str(command["server"]))}

    async def op_relist(self, command: dict[str, Any]) -> dict[str, Any]:
        conn = self._connection(str(command["key"]))
        cpu, start = time.process_time(), time.perf_counter()
        tools = await conn.relist(str(command["server"]))
        return {"wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu, "tools": tools}

    async def op_convert(self, command: dict[str, Any]) -> dict[str, Any]:
        conn = self._connection(str(command["key"]))
        server, provider, again = str(command["server"]), str(command["provider"]), bool(command.get("again"))
        cpu, start = time.process_time(), time.perf_counter()
        tools = await conn.convert(server, provider, again=again)
        return {"wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu, "tools": tools}

    async def op_agent_requests(self, command: dict[str, Any]) -> dict[str, Any]:
        conn = self._connection(str(command["key"]))
        queries = [str(q) for q in command["queries"]]
        return await conn.agent_requests(str(command["server"]), str(command["provider"]), queries)

    async def op_quit(self, command: dict[str, Any]) -> dict[str, Any]:
        for key in list(self._open):
            await self.op_close({"key": key})
        return {}


def _failure(error: BaseException) -> dict[str, Any]:
    if isinstance(error, Unsupported):
        return {"ok": False, "kind": "unsupported", "error": str(error)}
    if isinstance(error, TimeoutError):
        return {"ok": False, "kind": "timeout", "error": "no answer within the time limit"}
    leaves: list[BaseException] = [error]
    while isinstance(leaves[0], BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], leaves[0])
        leaves = list(group.exceptions)
    first = leaves[0]
    text = f"{type(first).__name__}: {first}".strip().rstrip(":")
    return {"ok": False, "kind": "error", "error": text[:500]}


async def _serve(lib: ClientLib, commands: BinaryIO, answers: BinaryIO) -> None:
    worker = Worker(lib)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, commands.readline)
        if not line:
            break
        command: dict[str, Any] = json.loads(line)
        try:
            reply = {"ok": True, **await worker.handle(command)}
        except Exception as error:
            if not isinstance(error, Unsupported):
                traceback.print_exc(file=sys.stderr)
            reply = _failure(error)
        answers.write(json.dumps(reply).encode() + b"\n")
        answers.flush()
        if command["op"] == "quit":
            break


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.exit("usage: python -m bench.worker CLIENT")
    # The protocol gets private copies of fds 0 and 1; libraries and servers get /dev/null and stderr.
    commands = os.fdopen(os.dup(0), "rb", buffering=0)
    answers = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    info = client_info(args[0])
    for hidden in filter(None, os.environ.get("BENCH_HIDE", "").split(",")):
        sys.modules[hidden] = cast(Any, None)  # `import hidden` fails: as in an environment without it
    module = importlib.import_module(f"bench.clients.{info.module}")
    make = cast(Callable[[str], ClientLib], module.make)
    asyncio.run(_serve(make(info.name), commands, answers))


if __name__ == "__main__":
    main()
