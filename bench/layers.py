"""Where mcpdeck's per-call time goes: the same ``echo`` call through each layer, in one process.

``python -m bench.layers [--transport stdio|http] [--calls 2000] [--rounds 5] [--inflight 32]``
``python -m bench.layers --instructions [--transport http] [--calls 500] [--inflight 32] [--layers 2,7]``

Over HTTP, ``--protocol handshake`` (the default) or ``modern`` is the era every layer speaks:
mcpdeck's config ``"protocol"``, ``mcp.Client``'s mode (``legacy``, or ``auto``, which the server
answers with 2026-07-28) and the bare session's opening (``initialize``, or the SDK's own
``server/discover`` negotiation). ``--service-ms S`` has the HTTP server take S ms per request,
one at a time (``bench.servers.http --service-ms``): the client then gets its answers one by
one, as from a server that costs more than the client, instead of in bursts.

One ``Host`` connects the near-free server; the call is then made, in interleaved rounds,
through each layer of the stack mcpdeck builds on that one connection, and through the bare
SDK on its own connection, so the difference between two rows is what the layer between
them costs:

1. ``sdk ClientSession``: ``stdio_client`` / ``streamable_http_client`` + ``ClientSession``
   (its own connection; the harness's baseline).
2. ``sdk mcp.Client``: ``mcp.Client`` (its own connection).
3. ``mcpdeck transport + ClientSession``: ``client.session.call_tool`` on mcpdeck's connection
   (mcpdeck's transport, the SDK's session).
4. ``+ mcp.Client``: ``client.call_tool`` on mcpdeck's connection.
5. ``+ progress callback``: the same with a ``progress_callback`` (mcpdeck always passes one).
6. ``+ ServerConnection.call_tool``: mcpdeck's request rules (timeout scope, progress relay,
   reconnect wait, error mapping).
7. ``+ Host.call_tool``: the catalog lookup, argument validation, events, ``ToolResult``.

Then the pure-CPU pieces of ``Host.call_tool`` on their own (no I/O). ``--inflight N``
also runs each layer with N calls in flight. Wall times on a busy machine are noisy; the
CPU columns (``time.process_time``) are steadier. ``--profile FILE`` writes a cProfile
(CPU time) of ``Host.call_tool`` calls.

``--instructions`` counts instead of timing, which other load on the machine cannot move:
each layer runs in a process of its own under ``valgrind --tool=cachegrind`` (needs
valgrind; with ``--calls 500``, about a minute per layer over stdio), twice, with ``--calls``
calls more the second time, and the difference of the two totals of client instructions,
divided by ``--calls``, is the layer's cost per call (the server is another process, not counted). Instructions are
not microseconds (a syscall counts as one, an instruction that misses the cache as one),
but a layer that adds 30k instructions to a call adds work, whatever the machine is doing.
With ``--inflight N`` the calls are made N at a time, as the ``http-inflight`` metric makes them;
``--layers`` counts only the layers given (numbered from 1 as above).

This reads mcpdeck's private attributes (``Host._servers``, ``ServerConnection._supervisor``)
to reach the inner layers: a diagnostic, not an API user; it says so if they moved.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client._probe import negotiate_auto  # pyright: ignore[reportPrivateUsage]
from mcp.client.streamable_http import streamable_http_client

from bench.harness import LINE_SERVER, ROOT
from mcpdeck import Host
from mcpdeck.connection import ServerConnection
from mcpdeck.events import ToolCallStarted
from mcpdeck.results import ToolResult

__all__ = ["main"]

Call = Callable[[], Awaitable[object]]
ARGS = {"text": "hello"}
LAYERS: tuple[str, ...] = (
    "sdk ClientSession (own connection)",
    "sdk mcp.Client (own connection)",
    "mcpdeck transport + ClientSession",
    "+ mcp.Client",
    "+ progress callback",
    "+ ServerConnection.call_tool",
    "+ Host.call_tool",
)


@asynccontextmanager
async def _http_server(service_ms: float = 0.0) -> AsyncGenerator[str]:
    command = [sys.executable, "-S", "-m", "bench.servers.http", "--service-ms", str(service_ms)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE)  # noqa: ASYNC220 - once, before measuring
    assert process.stdout is not None
    try:
        port = int(process.stdout.readline().split()[1])
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait()
        process.stdout.close()


async def _measure(call: Call, n: int, inflight: int) -> tuple[list[float], float]:
    """Per-call wall seconds and CPU seconds per call."""
    durations: list[float] = []
    remaining = n

    async def lane() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            began = time.perf_counter()
            await call()
            durations.append(time.perf_counter() - began)

    cpu = time.process_time()
    await asyncio.gather(*(lane() for _ in range(inflight)))
    return durations, (time.process_time() - cpu) / n


def _cpu_pieces(host: Host, connection: ServerConnection, raw: types.CallToolResult) -> list[tuple[str, float]]:
    entry = host.catalog.get("mcp__s__echo")
    assert entry is not None
    n = 20000

    def each(fn: Callable[[], object]) -> float:
        return min(timeit.repeat(fn, number=n, repeat=5)) / n

    def started() -> None:
        host.events.publish(
            ToolCallStarted(call_id=uuid.uuid4().hex, name=entry.name, server="s", tool="echo", arguments=ARGS)
        )

    def scope() -> None:  # run inside the current task, as ServerConnection.request does
        with anyio.CancelScope(deadline=anyio.current_time() + 60):  # noqa: ASYNC100 - its cost is the point
            pass

    return [
        ("catalog.get", each(lambda: host.catalog.get("mcp__s__echo"))),
        ("CatalogTool.validate_arguments (jsonschema)", each(lambda: entry.validate_arguments(dict(ARGS)))),
        ("uuid.uuid4().hex", each(lambda: uuid.uuid4().hex)),
        ("ToolCallStarted(...) + events.publish", each(started)),
        ("ToolResult.from_mcp", each(lambda: ToolResult.from_mcp(raw, name="n", server="s", tool="t", duration=0))),
        ("anyio.CancelScope(deadline) enter + exit", each(scope)),
        ("ServerConnection.request_timeout", each(lambda: connection.request_timeout)),
    ]


@dataclass(frozen=True)
class Setup:
    """What the layers run against: the transport, the era (HTTP), the HTTP server's time per request."""

    transport: str = "stdio"
    protocol: str = "handshake"
    service_ms: float = 0.0

    def args(self) -> list[str]:
        """These as the command line's options."""
        return ["--transport", self.transport, "--protocol", self.protocol, "--service-ms", str(self.service_ms)]


async def _layers(stack: AsyncExitStack, setup: Setup) -> tuple[Host, ServerConnection, Client, list[tuple[str, Call]]]:
    """Connect everything the layers need: the host, its connection, its client, and the layers."""
    transport, modern = setup.transport, setup.protocol == "modern"
    if transport == "http":
        url = await stack.enter_async_context(_http_server(setup.service_ms))
        config: dict[str, Any] = {"type": "http", "url": url, "protocol": setup.protocol}
        config["startupTimeout"] = 600  # under valgrind, on a busy machine, connecting takes a while
        sdk_transport = streamable_http_client(url)
        sdk_target: str | StdioServerParameters = url
    else:
        params = StdioServerParameters(command=sys.executable, args=["-S", str(LINE_SERVER)])
        config = {"command": params.command, "args": params.args}
        sdk_transport = stdio_client(params)
        sdk_target = params
    host = await stack.enter_async_context(Host({"s": config}, log_dir=tempfile.mkdtemp()))
    try:
        connection: ServerConnection = host._servers.connections["s"]  # pyright: ignore[reportPrivateUsage]
        client = connection._supervisor.client  # pyright: ignore[reportPrivateUsage]
    except (AttributeError, KeyError) as error:
        sys.exit(f"bench.layers: mcpdeck's internals moved ({error!r}); update bench/layers.py")
    assert client is not None
    read, write = await stack.enter_async_context(sdk_transport)
    session = await stack.enter_async_context(ClientSession(read, write))
    if modern:
        await negotiate_auto(session)  # what mcp.Client does in mode "auto"
    else:
        await session.initialize()
    await session.list_tools()
    sdk_client = await stack.enter_async_context(Client(sdk_target, mode="auto" if modern else "legacy"))
    await sdk_client.list_tools()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        return None

    calls: list[Call] = [  # one per name in LAYERS
        lambda: session.call_tool("echo", ARGS),
        lambda: sdk_client.call_tool("echo", ARGS),
        lambda: client.session.call_tool("echo", ARGS),
        lambda: client.call_tool("echo", ARGS),
        lambda: client.call_tool("echo", ARGS, progress_callback=on_progress),
        lambda: connection.call_tool("echo", dict(ARGS)),
        lambda: host.call_tool("mcp__s__echo", ARGS),
    ]
    layers: list[tuple[str, Call]] = list(zip(LAYERS, calls, strict=True))
    return host, connection, client, layers


async def run(setup: Setup, calls: int, rounds: int, inflight: int, profile: str | None) -> None:
    async with AsyncExitStack() as stack:
        host, connection, client, layers = await _layers(stack, setup)
        modes = [1, inflight] if inflight > 1 else [1]
        for mode in modes:
            walls: dict[str, list[float]] = {name: [] for name, _ in layers}
            cpus: dict[str, list[float]] = {name: [] for name, _ in layers}
            for _, call in layers:
                await _measure(call, min(200, calls), mode)  # warm-up
            for turn in range(rounds):
                shift = turn % len(layers)
                for name, call in layers[shift:] + layers[:shift]:
                    durations, cpu = await _measure(call, calls, mode)
                    walls[name] += durations
                    cpus[name].append(cpu)
            print(f"\n{_title(setup)}, {'sequential' if mode == 1 else f'{mode} in flight'}: {rounds} x {calls} calls")
            print(f"{'layer':42} {'median':>10} {'CPU/call':>10} {'Δ CPU':>9}")
            previous: float | None = None
            for name, _ in layers:
                cpu = statistics.median(cpus[name])
                delta = "" if previous is None or name.startswith("sdk") else f"{(cpu - previous) * 1e6:+8.1f}"
                print(f"{name:42} {statistics.median(walls[name]) * 1e6:8.1f}µs {cpu * 1e6:8.1f}µs {delta:>9}")
                previous = cpu
        raw = await client.call_tool("echo", ARGS)
        print("\nCPU pieces of Host.call_tool (no I/O):")
        for name, seconds in _cpu_pieces(host, connection, raw):
            print(f"  {name:48} {seconds * 1e6:8.2f}µs")
        if profile:
            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
            for _ in range(calls):
                await host.call_tool("mcp__s__echo", ARGS)
            profiler.disable()
            profiler.dump_stats(profile)
            print(f"\ncProfile (CPU time) of {calls} Host.call_tool calls: {profile}")
        with contextlib.suppress(Exception):
            await asyncio.sleep(0)


_WARM_CALLS = 50


def _title(setup: Setup) -> str:
    if setup.transport != "http":
        return setup.transport
    paced = f", the server {setup.service_ms:g} ms per request" if setup.service_ms else ""
    return f"http ({setup.protocol}{paced})"


async def _run_one(setup: Setup, layer: int, calls: int, inflight: int) -> None:
    """The child of ``--instructions``: connect, warm up, then ``calls`` calls through one layer
    (``inflight`` at a time), and nothing else."""
    async with AsyncExitStack() as stack:
        _, _, _, layers = await _layers(stack, setup)
        call = layers[layer][1]
        await _measure(call, _WARM_CALLS, inflight)
        if calls:
            await _measure(call, calls, inflight)


def _instructions_of(valgrind: str, setup: Setup, layer: int, calls: int, inflight: int) -> int:
    command = [
        valgrind,
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "bench.layers",
        *setup.args(),
        "--_one-layer",
        str(layer),
        "--calls",
        str(calls),
        "--inflight",
        str(inflight),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same dicts and sets in both runs
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"bench.layers: the run under valgrind failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def instructions(setup: Setup, calls: int, inflight: int, only: list[int] | None) -> None:
    """Client instructions per call of each layer (or the ``only`` ones): two runs per layer, ``calls`` apart."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("bench.layers: --instructions needs valgrind on PATH")
    mode = "sequential" if inflight == 1 else f"{inflight} in flight"
    print(f"{_title(setup)}, {mode}: client instructions per call ({calls} calls apart, under valgrind)")
    print(f"{'layer':42} {'instr/call':>12} {'Δ':>10}")
    previous: float | None = None
    for layer, name in enumerate(LAYERS):
        if only is not None and layer not in only:
            continue
        base = _instructions_of(valgrind, setup, layer, 0, inflight)
        per_call = (_instructions_of(valgrind, setup, layer, calls, inflight) - base) / calls
        delta = "" if previous is None or name.startswith("sdk") else f"{per_call - previous:+10,.0f}"
        print(f"{name:42} {per_call:12,.0f} {delta:>10}", flush=True)
        previous = per_call


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.layers", description="Where mcpdeck's per-call time goes.")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument(
        "--protocol",
        choices=["handshake", "modern"],
        default="handshake",
        help="HTTP: the era every layer speaks (default: handshake; modern is 2026-07-28)",
    )
    parser.add_argument(
        "--service-ms", type=float, default=0.0, help="HTTP: the server takes this long per request, one at a time"
    )
    parser.add_argument("--calls", type=int, default=2000, help="calls per layer per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--inflight",
        type=int,
        help="timing: also measure with this many calls in flight (default: 32); --instructions: count with "
        "this many in flight instead of one at a time",
    )
    parser.add_argument(
        "--layers", help="--instructions: only these layers (comma-separated numbers from 1, as listed above)"
    )
    parser.add_argument("--profile", help="write a cProfile of Host.call_tool calls to this file")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count client instructions per call under valgrind instead of timing (load-independent; slow)",
    )
    parser.add_argument("--_one-layer", type=int, dest="one_layer", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.transport != "http" and args.protocol == "modern":
        parser.error("--protocol modern needs --transport http (the stdio line server speaks only the handshake)")
    setup = Setup(args.transport, args.protocol, args.service_ms)
    if args.one_layer is not None:
        asyncio.run(_run_one(setup, args.one_layer, args.calls, args.inflight or 1))
    elif args.instructions:
        only = None if args.layers is None else [int(n) - 1 for n in args.layers.split(",")]
        instructions(setup, args.calls, args.inflight or 1, only)
    else:
        asyncio.run(run(setup, args.calls, args.rounds, args.inflight or 32, args.profile))


if __name__ == "__main__":
    main()
