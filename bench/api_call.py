"""A tool call through the REST API of ``mcpdeck serve`` against the same call made in-process.

    python -m bench.api_call                  # 1000 calls each way, 3 alternating blocks
    python -m bench.api_call --calls 300 --blocks 2

One ``Host`` runs the stdio line server (``bench/servers/line.py``) as ``mcpdeck serve`` sets
it up (traffic recorded, the console's approver and handlers), and serves the whole app
(guard, API, console) with uvicorn on 127.0.0.1. The in-process figure is
``await host.call_tool("mcp__line__echo", ...)`` in a loop; the API figure is
``POST /api/tools/mcp__line__echo/call`` from another process over one keep-alive
connection (``http.client``, as the attached CLI makes it), timed in that process. Blocks
alternate so drift hits both alike. The goal (issue #12): the API call at most 1 ms above
the in-process call.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import anyio
import uvicorn

from bench.stats import median
from mcpdeck.api import ApiContext, ChatRoom
from mcpdeck.config import ConfigStore
from mcpdeck.host import Host
from mcpdeck.server._app import build_app
from mcpdeck.traffic import Traffic

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-token-" + "x" * 32
GOAL = 0.001

_CLIENT = r"""
import http.client, json, socket, sys, time
port, token, calls = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
conn.connect()
conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as the CLI does (no Nagle wait)
body = json.dumps({"arguments": {"text": "hi"}}).encode()
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json", "Accept": "application/json"}
samples = []
cpu = 0.0
for i in range(calls + 50):
    if i == 50:
        cpu = time.process_time()
    started = time.perf_counter()
    conn.request("POST", "/api/tools/mcp__line__echo/call", body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    elapsed = time.perf_counter() - started
    if response.status != 200:
        sys.exit(f"HTTP {response.status}: {data[:300]!r}")
    if i >= 50:
        samples.append(elapsed)
print(json.dumps({"samples": samples, "cpu": time.process_time() - cpu}))
"""


async def _direct(host: Host, calls: int) -> tuple[list[float], float]:
    """Wall clock per call, and this process's CPU time for them all."""
    samples: list[float] = []
    cpu = 0.0
    for i in range(calls + 50):
        if i == 50:
            cpu = time.process_time()
        started = time.perf_counter()
        await host.call_tool("mcp__line__echo", {"text": "hi"})
        if i >= 50:
            samples.append(time.perf_counter() - started)
    return samples, time.process_time() - cpu


async def _through_api(port: int, calls: int) -> tuple[list[float], float, float]:
    """Wall clock per call (timed by the client), this process's CPU time, and the client's."""
    cpu = time.process_time()
    done = await anyio.run_process([sys.executable, "-c", _CLIENT, str(port), TOKEN, str(calls)], check=False)
    cpu = time.process_time() - cpu  # the client's 50 warm-up calls included: a slight overestimate
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace") or done.stdout.decode(errors="replace"))
    answer = json.loads(done.stdout)
    return answer["samples"], cpu * calls / (calls + 50), answer["cpu"]


async def measure(calls: int, blocks: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="mcpdeck-bench-api-") as tmp:
        folder = Path(tmp)
        config = folder / "mcp.json"
        line = {"command": sys.executable, "args": ["-S", str(ROOT / "bench" / "servers" / "line.py")]}
        config.write_text(json.dumps({"mcpServers": {"line": line}}))
        store = ConfigStore(config)
        chats = ChatRoom()
        host = Host(
            store=store,
            log_dir=folder / "logs",
            traffic=Traffic(),
            approve=chats.asks.approve,
            elicitation=chats.asks.elicit,
            sampling=chats.sample,
        )
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as `mcpdeck serve` binds it
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        port: int = sock.getsockname()[1]
        results: dict[str, list[float]] = {"in-process": [], "api": [], "cpu": [0.0, 0.0, 0.0]}
        with sock:
            async with host:
                ctx = ApiContext(host=host, store=store, chats=chats)
                off = ctx.attach()
                app = build_app(ctx, token=TOKEN, hosts={f"127.0.0.1:{port}"})
                server = uvicorn.Server(
                    uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
                )
                async with anyio.create_task_group() as tg:
                    tg.start_soon(server.serve, [sock])
                    for block in range(blocks):
                        print(f"bench.api_call: block {block + 1}/{blocks}", file=sys.stderr, flush=True)
                        samples, cpu = await _direct(host, calls)
                        results["in-process"] += samples
                        results["cpu"][0] += cpu
                        samples, cpu, client_cpu = await _through_api(port, calls)
                        results["api"] += samples
                        results["cpu"][1] += cpu
                        results["cpu"][2] += client_cpu
                    ctx.stop()
                    server.should_exit = True
                off()
        return results


def render(results: dict[str, list[float]], calls: int, blocks: int) -> str:
    direct, api = median(results["in-process"]) or 0.0, median(results["api"]) or 0.0
    above = api - direct
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    verdict = "met" if above <= GOAL else "MISSED"
    n = len(results["in-process"]) or 1
    direct_cpu, serve_cpu, client_cpu = (x / n * 1e6 for x in results["cpu"])
    return "\n".join(
        [
            "## A tool call through the REST API vs in-process",
            "",
            f"`python -m bench.api_call`, {blocks} alternating blocks of {calls} calls, {stamp}, load average {load}. "
            "Median wall clock per call (`mcp__line__echo` on the stdio line server).",
            "",
            "| path | n | median | above in-process | goal | verdict |",
            "|---|---:|---:|---:|---:|---|",
            f"| `Host.call_tool` in-process | {len(results['in-process'])} | {direct * 1e6:.0f} µs "
            "| - | - | baseline |",
            f"| `POST /api/tools/.../call` (http.client, keep-alive, another process) | {len(results['api'])} | "
            f"{api * 1e6:.0f} µs | +{above * 1e6:.0f} µs | ≤ +1000 µs | {verdict} |",
            "",
            f"CPU per call: host process {direct_cpu:.0f} µs in-process, {serve_cpu:.0f} µs serving the API "
            f"(+{serve_cpu - direct_cpu:.0f} µs); the HTTP client process {client_cpu:.0f} µs. Under load the wall "
            "clock adds the scheduling of a third process (the client) to every call.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.api_call", description="A tool call through the REST API vs in-process."
    )
    parser.add_argument("--calls", type=int, default=1000, help="calls per block and path (default: 1000)")
    parser.add_argument("--blocks", type=int, default=3, help="alternating blocks (default: 3)")
    parser.add_argument("--results", type=Path, help="also write the Markdown table to this file")
    args = parser.parse_args()
    results = anyio.run(measure, args.calls, args.blocks)
    report = render(results, args.calls, args.blocks)
    print(report)
    if args.results is not None:
        args.results.write_text(report + "\n")


if __name__ == "__main__":
    main()
