"""The gateway's cost: per-call latency and 32-in-flight throughput, through ``mcpdeck gateway`` vs direct.

The measuring client is the SDK's ``Client`` in every case. Over stdio the server is
``@modelcontextprotocol/server-everything`` (its ``echo`` tool), started directly or behind
``mcpdeck gateway --stdio``; over HTTP it is ``tests/servers/conformance_server.py --http``,
reached directly or through ``mcpdeck gateway --port 0`` (which reaches it over HTTP).

    .venv/bin/python -m bench.gateway [--calls 300] [--rounds 3]

Prints medians over the rounds and the gateway/direct ratios. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = ROOT / "node_modules" / ".bin" / "mcp-server-everything"
IN_FLIGHT = 32


async def _measure(target: Any, tool: str, args: Callable[[int], dict[str, Any]], calls: int) -> tuple[float, float]:
    """(median seconds per sequential call, calls per second with 32 in flight)."""
    async with Client(target, mode="legacy") as client:
        for i in range(20):  # warm up
            await client.call_tool(tool, args(i))
        times: list[float] = []
        for i in range(calls):
            started = time.perf_counter()
            await client.call_tool(tool, args(i))
            times.append(time.perf_counter() - started)
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for lane in range(IN_FLIGHT):

                async def run(lane: int = lane) -> None:
                    for i in range(calls // IN_FLIGHT):
                        await client.call_tool(tool, args(lane * 1000 + i))

                tg.start_soon(run)
        rate = (calls // IN_FLIGHT) * IN_FLIGHT / (time.perf_counter() - started)
    return statistics.median(times), rate


def _line_with(process: subprocess.Popen[str], marker: str) -> str:
    pipe = process.stdout if process.stdout is not None else process.stderr
    assert pipe is not None
    for line in pipe:
        if marker in line:
            return line[line.index(marker) :].strip()
    raise RuntimeError(f"{process.args} did not print {marker!r}")


def _gateway_cmd(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "gateway", *extra]


def _echo(i: int) -> dict[str, Any]:
    return {"message": f"call {i}"}


def _named(i: int) -> dict[str, Any]:
    return {"name": f"call {i}"}


Case = tuple[Any, str, Callable[[int], dict[str, Any]]]


async def _measure_all(cases: dict[str, Case], calls: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (target, tool, args) in cases.items():
            results[name].append(await _measure(target, tool, args, calls))
    return results


def main(calls: int, rounds: int) -> None:
    """Start the servers and the HTTP gateway, measure every case, print the table."""
    folder = Path(tempfile.mkdtemp(prefix="mcpdeck-bench-gateway-"))
    os.environ["MCPDECK_HISTORY"] = "off"  # the cost of the gateway, not of the history database
    os.environ["MCPDECK_LOG_DIR"] = str(folder / "logs")
    server = [sys.executable, "-m", "tests.servers.conformance_server", "--http"]
    upstream = subprocess.Popen(server, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    direct_url = _line_with(upstream, "http://")
    config = folder / "mcp.json"
    servers = {"everything": {"command": str(EVERYTHING)}, "conf": {"type": "http", "url": direct_url}}
    config.write_text(json.dumps({"mcpServers": servers, "permissions": {"allow": ["mcp__*"]}}))
    gateway = subprocess.Popen(
        _gateway_cmd(config, "--port", "0", "--no-token"), cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    gateway_url = _line_with(gateway, "http://")
    through = StdioServerParameters(
        command=sys.executable, args=_gateway_cmd(config, "--stdio")[1:], cwd=str(ROOT), env=dict(os.environ)
    )
    cases: dict[str, Case] = {
        "stdio direct": (StdioServerParameters(command=str(EVERYTHING)), "echo", _echo),
        "stdio gateway": (through, "mcp__everything__echo", _echo),
        "http direct": (direct_url, "json_schema_2020_12_tool", _named),
        "http gateway": (gateway_url, "mcp__conf__json_schema_2020_12_tool", _named),
    }
    try:
        results = anyio.run(_measure_all, cases, calls, rounds)
    finally:
        for process in (gateway, upstream):
            process.terminate()
            process.wait(timeout=10)
    load = os.getloadavg()[0]
    print(f"load average at the end: {load:.1f} on {os.cpu_count()} cores; {calls} calls x {rounds} rounds")
    medians = {
        name: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
        for name, runs in results.items()
    }
    for name, (latency, rate) in medians.items():
        print(f"{name:14} {latency * 1e3:8.2f} ms/call   {rate:8.0f} calls/s with {IN_FLIGHT} in flight")
    for transport in ("stdio", "http"):
        (d_lat, d_rate), (g_lat, g_rate) = medians[f"{transport} direct"], medians[f"{transport} gateway"]
        print(f"{transport}: gateway latency {g_lat / d_lat:.2f}x direct, throughput {g_rate / d_rate:.2f}x direct")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The gateway's per-call cost against direct calls.")
    parser.add_argument("--calls", type=int, default=320)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    main(options.calls, options.rounds)
