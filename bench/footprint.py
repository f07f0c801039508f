"""What a connected server costs the client, and each of its tools, against the JSON they arrive as.

    python -m bench.footprint                  # 1, 3, 4, 23, 100 and 1000 tools per server, and the SDK server
    python -m bench.footprint --sizes 1,3,23,100 --results bench/.results/footprint.md

For each size, a fresh process per client connects one server first (imports, first use),
then ``N`` more servers with that many tools each (up to 4: the line server's small tools;
beyond: its realistic filler tools, ~1.1 KB of compact JSON each), and reports per server
the growth of traced Python memory (``tracemalloc``, exact) and of RSS (after a full GC),
and per tool the slope between sizes against the tools' own JSON. The clients: mcpdeck's
``Host`` and the bare SDK's ``ClientSession`` keeping its ``list_tools()`` result (a host
must keep its tools). The line server speaks the ``initialize`` handshake; a second table
does the same with a server of today's SDK (``bench/servers/sdk_small.py``, 3 tools), which
mcpdeck reaches over the 2026-07-28 protocol with a ``subscriptions/listen`` stream.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LINE_SERVER = ROOT / "bench" / "servers" / "line.py"
SIZES = (1, 3, 4, 23, 100, 1000)
"""Tools per server (the line server's 4 small tools, then filler)."""
CLIENTS = ("sdk-session", "mcpdeck")


def _rss() -> int:
    gc.collect()
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _server_args(tools: int) -> list[str]:
    """The line server's arguments for ``tools`` tools (0: the SDK server, 3 tools)."""
    from bench.servers.line import BASE_TOOLS

    if tools == 0:
        return ["-m", "bench.servers.sdk_small"]  # (the working directory is the repository root)
    if tools <= len(BASE_TOOLS):
        return ["-S", str(LINE_SERVER), "--base", str(tools)]
    return ["-S", str(LINE_SERVER), "--filler", str(tools - len(BASE_TOOLS))]


async def _measure(client: str, tools: int, servers: int) -> dict[str, Any]:
    """In this process: connect 1 + ``servers`` servers of ``tools`` tools (0: the SDK server); growth per server."""
    from contextlib import AsyncExitStack

    args = _server_args(tools)
    async with AsyncExitStack() as stack:
        kept: list[Any] = []
        host: Any = None
        if client == "mcpdeck":
            from mcpdeck import Host

            host = await stack.enter_async_context(Host({"w": {"command": sys.executable, "args": args}}))

            async def connect(name: str) -> None:
                await host.add_server(name, {"command": sys.executable, "args": args}, save=False)

        else:
            from mcp import ClientSession, StdioServerParameters
            from mcp.client.stdio import stdio_client

            async def connect(name: str) -> None:
                read, write = await stack.enter_async_context(
                    stdio_client(StdioServerParameters(command=sys.executable, args=args))
                )
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                kept.append((session, list((await session.list_tools()).tools)))

            await connect("w")
        gc.collect()
        rss_before = _rss()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for i in range(servers):
            await connect(f"s{i}")
        gc.collect()
        after = tracemalloc.take_snapshot()
        traced = sum(d.size_diff for d in after.compare_to(before, "filename"))
        tracemalloc.stop()
        rss_after = _rss()
        if host is not None:
            assert len(host.catalog) == (tools or 3) * (servers + 1), len(host.catalog)
    return {"traced": traced / servers, "rss": (rss_after - rss_before) / servers}


def _tool_json_bytes(tools: int) -> int:
    from bench.servers.line import BASE_TOOLS, tool_definitions

    filler, base = max(0, tools - len(BASE_TOOLS)), min(tools, len(BASE_TOOLS))
    return sum(len(json.dumps(t, separators=(",", ":"))) for t in tool_definitions(filler, base))


def run(rounds: int, sizes: tuple[int, ...] = SIZES, sdk: bool = True) -> list[dict[str, Any]]:
    """Median of ``rounds`` fresh processes per client and size; ``sdk`` adds the SDK server (size 0)."""
    rows: list[dict[str, Any]] = []
    for tools in (*sizes, *((0,) if sdk else ())):
        servers = 2 if tools >= 1000 else 5
        for client in CLIENTS:
            samples: list[dict[str, Any]] = []
            for _ in range(rounds):
                out = subprocess.run(
                    [sys.executable, "-m", "bench.footprint", "--one", client, str(tools), str(servers)],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    timeout=600,
                    check=False,
                )
                if out.returncode != 0:
                    raise SystemExit(f"bench.footprint: {client} with {tools} tools failed:\n{out.stderr[-2000:]}")
                samples.append(json.loads(out.stdout.strip().splitlines()[-1]))
            samples.sort(key=lambda s: s["traced"])
            median = samples[len(samples) // 2]
            rows.append({"client": client, "tools": tools, "json": _tool_json_bytes(tools) if tools else 0, **median})
            print(f"bench.footprint: {client}, {tools} tools: {median}", file=sys.stderr, flush=True)
    return rows


def render(rows: list[dict[str, Any]], rounds: int) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    lines = [
        "## The catalog's footprint: memory per connected server and per tool",
        "",
        f"`python -m bench.footprint`, {stamp}, median of {rounds} fresh processes per cell. Per server: growth "
        "when connecting 5 more servers (2 at 1000 tools) after a first one, traced Python memory (tracemalloc) "
        "and RSS after a full GC, and each against the bare SDK's at the same size. Per tool: the traced slope "
        "from the previous size, against the tools' compact JSON. The bare SDK keeps its `list_tools()` result, "
        "as a host must. Up to 4 tools: the line server's small tools; beyond: its realistic filler tools.",
        "",
        "| client | tools/server | tool JSON/server | traced/server | x sdk-session | RSS/server | x sdk-session "
        "| traced per further tool | x its JSON |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    bare = {row["tools"]: row for row in rows if row["client"] == "sdk-session"}
    previous: dict[str, dict[str, Any]] = {}
    sdk_rows: list[str] = []
    for row in rows:
        base = bare.get(row["tools"])
        traced_x = f"{row['traced'] / base['traced']:.2f}x" if base else "-"
        rss_x = f"{row['rss'] / base['rss']:.2f}x" if base and base["rss"] > 0 else "-"
        if row["tools"] == 0:
            sdk_rows.append(
                f"| {row['client']} | {row['traced'] / 1024:,.1f} KiB | {traced_x} | {row['rss'] / 1024:,.0f} KiB "
                f"| {rss_x} |"
            )
            continue
        last = previous.get(row["client"])
        slope, times = "-", "-"
        if last is not None:
            per_tool = (row["traced"] - last["traced"]) / (row["tools"] - last["tools"])
            per_json = (row["json"] - last["json"]) / (row["tools"] - last["tools"])
            slope, times = f"{per_tool:,.0f} B", f"{per_tool / per_json:.2f}x"
        previous[row["client"]] = row
        lines.append(
            f"| {row['client']} | {row['tools']} | {row['json'] / 1024:,.1f} KiB | {row['traced'] / 1024:,.1f} KiB "
            f"| {traced_x} | {row['rss'] / 1024:,.0f} KiB | {rss_x} | {slope} | {times} |"
        )
    if sdk_rows:
        lines += [
            "",
            "A server of today's SDK (`bench/servers/sdk_small.py`, 3 small tools): the bare `ClientSession` speaks "
            "the initialize handshake to it; mcpdeck (`mcp.Client`) the 2026-07-28 protocol, with a "
            "`subscriptions/listen` stream open for its tool list changes.",
            "",
            "| client | traced/server | x sdk-session | RSS/server | x sdk-session |",
            "|---|---:|---:|---:|---:|",
            *sdk_rows,
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.footprint", description="Memory per server and per tool.")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per cell (default: 3)")
    parser.add_argument("--results", type=Path, help="also write the Markdown table to this file")
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, SIZES)),
        help=f"tools per server, comma-separated (default: {','.join(map(str, SIZES))})",
    )
    parser.add_argument("--no-sdk", action="store_true", help="leave out the SDK server")
    parser.add_argument("--one", nargs=3, metavar=("CLIENT", "TOOLS", "SERVERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        import anyio

        client, tools, servers = args.one[0], int(args.one[1]), int(args.one[2])
        print(json.dumps(anyio.run(_measure, client, tools, servers)))
        return
    sizes = tuple(int(n) for n in args.sizes.split(","))
    if any(n < 1 for n in sizes):
        parser.error("--sizes: each size is a number of tools, at least 1")
    report = render(run(args.rounds, sizes, sdk=not args.no_sdk), args.rounds)
    print(report)
    if args.results is not None:
        args.results.write_text(report)


if __name__ == "__main__":
    main()
