"""The gateway's cost: per-call latency and 32-in-flight throughput, through ``mcpdeck gateway`` vs direct,
beside ``mcp-proxy`` and IBM ContextForge (when their venvs are set up: ``python -m bench.venvs mcp-proxy
contextforge``).

The measuring client is the SDK's ``Client`` in every case. Two groups, by the server behind:

- ``everything``: ``@modelcontextprotocol/server-everything``'s ``echo`` over stdio, called directly,
  through ``mcpdeck gateway --stdio``, through ``mcpdeck gateway --port``, through the simplest
  gateway the SDK alone makes (``bench/servers/sdk_proxy.py``: its ``Server`` on its
  ``stdio_server``, each call forwarded by its ``Client``; the cost of the extra hop with no host
  around it), through the same on mcpdeck's stdio pipes with the SDK's idle spans left out
  (``sdk_proxy --pipes``: all the gateway has on a call's path but its host layer, so the gateway's
  distance from it is what the host layer costs), through the SDK alone serving streamable HTTP
  (``sdk_proxy --port``: the floor beside ``gateway --port``) and through ``mcp-proxy --port`` (which
  serves one stdio server over streamable HTTP);
- ``conformance``: ``tests/servers/conformance_server.py --http`` (a Python SDK server), called
  directly over HTTP, through ``mcpdeck gateway --port``, through ``mcpdeck gateway --stdio``,
  through ``mcp-proxy`` in its other mode (stdio in front of a streamable HTTP server) and through
  the ContextForge gateway (HTTP in front of HTTP, as ``mcpdeck gateway --port``).

Every client of a group is connected at once and the calls are interleaved (one sequential call
on each in turn, or ``--run N`` calls in a row; for throughput, one block of 32 in flight on each
in turn), so on a shared, loaded machine every case sees the same load and the ratios hold even
when the absolute numbers do not. The CPU each server-side process used per call (from ``/proc``)
is printed beside it. With one call per turn (the default) every call finds its processes' caches
cold, as a client calling now and then does; ``--run 50`` measures a client calling steadily.

    .venv/bin/python -m bench.gateway [--calls 400] [--rounds 3] [--run 1] [--history] [--before PATH/src] [--no-peers]
    .venv/bin/python -m bench.gateway --instructions [--calls 500]

``--instructions`` counts instead of timing, which other load on the machine cannot move: the
process in the middle (``mcpdeck gateway --stdio`` and ``--port``, ``mcp-proxy --port``,
ContextForge's ``translate`` bridge, each in front of server-everything) runs under
``valgrind --tool=cachegrind`` twice, once for the warm-up calls only and once with ``--calls``
sequential calls more; the difference of the two totals, divided by ``--calls``, is its work per
call in user-space instructions (the kernel's work, e.g. the syscalls, is not counted).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from bench.venvs import peer

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = ROOT / "node_modules" / ".bin" / "mcp-server-everything"
IN_FLIGHT = 32
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class Case:
    """One way of reaching a tool."""

    name: str
    target: Any
    tool: str
    args: Callable[[int], dict[str, Any]]
    pids: Callable[[], list[int]] = list
    """The process between the client and the server (its CPU is reported per call)."""
    middle: bool = True
    """Whether something stands between client and server (False: the direct baseline)."""
    headers: dict[str, str] = field(default_factory=dict[str, str])
    """HTTP headers the client sends (a bearer token)."""
    latencies: list[float] = field(default_factory=list[float])
    rates: list[float] = field(default_factory=list[float])
    cpu: float = 0.0


def _echo(i: int) -> dict[str, Any]:
    return {"message": f"call {i}"}


def _named(i: int) -> dict[str, Any]:
    return {"name": f"call {i}"}


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux /proc)."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                found.append(int(entry))
    return found


def _cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / _TICK
    return total


def _line_with(process: subprocess.Popen[str], marker: str) -> str:
    pipe = process.stdout if process.stdout is not None else process.stderr
    assert pipe is not None
    for line in pipe:
        if marker in line:
            return line[line.index(marker) :].strip()
    raise RuntimeError(f"{process.args} did not print {marker!r}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _gateway_cmd(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "gateway", *extra]


def _sdk_proxy(*face: str) -> list[str]:
    """The command of ``bench.servers.sdk_proxy`` in front of server-everything (``face``: its options)."""
    return [sys.executable, "-m", "bench.servers.sdk_proxy", *face, "everything", str(EVERYTHING)]


def _before_env(folder: Path, before: Path) -> dict[str, str]:
    """The environment of the ``--before`` gateway: its ``src`` first on the path, and ``httptools`` hidden
    (not a dependency before 2026-11-24; uvicorn then parses HTTP with h11, as it did)."""
    hidden = folder / "no-httptools" / "httptools"
    hidden.mkdir(parents=True, exist_ok=True)
    (hidden / "__init__.py").write_text('raise ImportError("hidden for the before case")\n')
    return {**os.environ, "PYTHONPATH": f"{hidden.parent}{os.pathsep}{before}"}


async def _connect(stack: AsyncExitStack, case: Case) -> Client:
    before = set(_children(os.getpid()))
    target = case.target
    if case.headers:
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=case.headers, timeout=httpx2.Timeout(30.0, read=300.0))
        )
        target = streamable_http_client(case.target, http_client=http)
    client = await stack.enter_async_context(Client(target, mode="legacy"))
    spawned = sorted(set(_children(os.getpid())) - before)
    if spawned and case.middle:  # a stdio face: the process the client started (its own children are the servers)
        case.pids = lambda: spawned
    return client


async def _measure_group(cases: list[Case], calls: int, rounds: int, run: int = 1) -> None:
    """Each round: ``calls`` sequential calls per case, ``run`` calls in a row on one case before the next
    case's turn; then one block of 32 in flight per case."""
    async with AsyncExitStack() as stack:
        clients = [await _connect(stack, case) for case in cases]
        pairs = list(zip(cases, clients, strict=True))
        for i in range(20):  # warm up
            for case, client in pairs:
                await client.call_tool(case.tool, case.args(i))
        for _ in range(rounds):
            times: dict[str, list[float]] = {case.name: [] for case in cases}
            cpu_before = {case.name: _cpu(case.pids()) for case in cases}
            for turn, first in enumerate(range(0, calls, run)):
                for case, client in pairs if turn % 2 == 0 else pairs[::-1]:
                    for i in range(first, min(first + run, calls)):
                        started = time.perf_counter()
                        await client.call_tool(case.tool, case.args(i))
                        times[case.name].append(time.perf_counter() - started)
            for case in cases:
                case.latencies.append(statistics.median(times[case.name]))
                case.cpu = (_cpu(case.pids()) - cpu_before[case.name]) / calls
            for case, client in pairs:
                case.rates.append(await _throughput(client, case, calls))


async def _throughput(client: Client, case: Case, calls: int) -> float:
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for lane in range(IN_FLIGHT):

            async def run(lane: int = lane) -> None:
                for i in range(calls // IN_FLIGHT):
                    await client.call_tool(case.tool, case.args(lane * 1000 + i))

            tg.start_soon(run)
    return (calls // IN_FLIGHT) * IN_FLIGHT / (time.perf_counter() - started)


def _report(title: str, cases: list[Case]) -> None:
    """Medians over the rounds, with each round's lowest and highest beside them (the spread)."""
    base = cases[0]
    lat0, rate0 = statistics.median(base.latencies), statistics.median(base.rates)
    print(f"\n{title} (ratios against {base.name}, interleaved in one run; [lowest-highest round])")
    print(f"{'':34} {'latency':>25} {'ratio':>6} {'calls/s @32':>17} {'ratio':>6} {'CPU/call between':>17}")
    for case in cases:
        lat, rate = statistics.median(case.latencies), statistics.median(case.rates)
        spread = f"[{min(case.latencies) * 1e3:.2f}-{max(case.latencies) * 1e3:.2f}]"
        rates = f"[{min(case.rates):.0f}-{max(case.rates):.0f}]"
        cpu = f"{case.cpu * 1e6:.0f} us" if case.pids() else "-"
        print(
            f"{case.name:34} {lat * 1e3:7.2f}ms {spread:>15} {lat / lat0:5.2f}x {rate:6.0f} {rates:>10} "
            f"{rate / rate0:5.2f}x {cpu:>17}"
        )


def main(
    calls: int, rounds: int, before: Path | None = None, *, history: bool = False, run: int = 1, peers: bool = True
) -> None:
    """Start the servers, the gateways, mcp-proxy and ContextForge (``peers``); measure both groups; print tables."""
    folder = Path(tempfile.mkdtemp(prefix="mcpdeck-bench-gateway-"))
    os.environ["MCPDECK_HISTORY"] = "off"  # the cost of the gateway, not of the history database
    os.environ["MCPDECK_LOG_DIR"] = str(folder / "logs")
    processes: list[subprocess.Popen[str]] = []

    def start(cmd: list[str], **options: Any) -> subprocess.Popen[str]:
        process = subprocess.Popen(cmd, cwd=ROOT, text=True, **options)
        processes.append(process)
        return process

    try:
        everything, conformance = _cases(folder, start, before, history=history, peers=peers)
        anyio.run(_measure_group, everything, calls, rounds, run)
        anyio.run(_measure_group, conformance, calls, rounds, run)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
    load = os.getloadavg()[0]
    turns = "one call per case in turn" if run == 1 else f"{run} calls in a row per case in turn"
    print(
        f"load average at the end: {load:.1f} on {os.cpu_count()} cores; "
        f"{calls} calls x {rounds} rounds per case, {turns}"
    )
    _report("server-everything echo (stdio behind)", everything)
    _report("conformance server (HTTP behind)", conformance)


def _cases(
    folder: Path,
    start: Callable[..., subprocess.Popen[str]],
    before: Path | None = None,
    *,
    history: bool = False,
    peers: bool = True,
) -> tuple[list[Case], list[Case]]:
    """Start what stands between client and servers; the cases of both groups (``history``: also
    ``gateway --stdio`` recording every call, as it does by default; ``peers``: mcp-proxy and
    ContextForge too)."""
    upstream = start([sys.executable, "-m", "tests.servers.conformance_server", "--http"], stdout=subprocess.PIPE)
    direct_url = _line_with(upstream, "http://")
    config = folder / "mcp.json"
    servers = {"everything": {"command": str(EVERYTHING)}, "conf": {"type": "http", "url": direct_url}}
    config.write_text(json.dumps({"mcpServers": servers, "permissions": {"allow": ["mcp__*"]}}))
    gateway = start(_gateway_cmd(config, "--port", "0", "--no-token"), stderr=subprocess.PIPE)
    gateway_url = _line_with(gateway, "http://")
    stdio_gateway = StdioServerParameters(
        command=sys.executable, args=_gateway_cmd(config, "--stdio")[1:], cwd=str(ROOT), env=dict(os.environ)
    )
    everything: list[Case] = [
        Case("direct (stdio)", StdioServerParameters(command=str(EVERYTHING)), "echo", _echo, middle=False),
        Case("mcpdeck gateway --stdio", stdio_gateway, "mcp__everything__echo", _echo),
        Case("mcpdeck gateway --port", gateway_url, "mcp__everything__echo", _echo, lambda: [gateway.pid]),
    ]

    def floor(*face: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable, args=_sdk_proxy(*face)[1:], cwd=str(ROOT), env=dict(os.environ)
        )

    everything.append(Case("the SDK alone (Server + Client)", floor(), "mcp__everything__echo", _echo))
    everything.append(Case("the SDK on mcpdeck's pipes (floor)", floor("--pipes"), "mcp__everything__echo", _echo))
    sdk_served = start(_sdk_proxy("--port", "0"), stdout=subprocess.PIPE)
    sdk_url = _line_with(sdk_served, "http://")
    everything.append(
        Case("the SDK alone over HTTP", sdk_url, "mcp__everything__echo", _echo, lambda: [sdk_served.pid])
    )
    if history:
        recording = {**os.environ, "MCPDECK_HISTORY": str(folder / "history.sqlite3")}
        recorded = StdioServerParameters(
            command=sys.executable, args=_gateway_cmd(config, "--stdio")[1:], cwd=str(ROOT), env=recording
        )
        everything.append(Case("mcpdeck gateway --stdio (history on)", recorded, "mcp__everything__echo", _echo))
    if before is not None:
        env = _before_env(folder, before)
        old = start(_gateway_cmd(config, "--port", "0", "--no-token"), stderr=subprocess.PIPE, env=env)
        old_url = _line_with(old, "http://")
        old_stdio = StdioServerParameters(
            command=sys.executable, args=_gateway_cmd(config, "--stdio")[1:], cwd=str(ROOT), env=env
        )
        everything.append(Case("mcpdeck gateway --stdio (before)", old_stdio, "mcp__everything__echo", _echo))
        everything.append(
            Case("mcpdeck gateway --port (before)", old_url, "mcp__everything__echo", _echo, lambda: [old.pid])
        )
    conformance: list[Case] = [
        Case("direct (HTTP)", direct_url, "json_schema_2020_12_tool", _named, middle=False),
        Case(
            "mcpdeck gateway --port", gateway_url, "mcp__conf__json_schema_2020_12_tool", _named, lambda: [gateway.pid]
        ),
        Case("mcpdeck gateway --stdio", stdio_gateway, "mcp__conf__json_schema_2020_12_tool", _named),
    ]
    if not peers:
        print("mcp-proxy and ContextForge: not started (--no-peers)")
        return everything, conformance
    proxy = peer("mcp-proxy")
    status = proxy.status()
    if status.get("ok"):
        command = str(proxy.path / "bin" / "mcp-proxy")
        port = _free_port()
        served = start([command, "--port", str(port), "--log-level", "WARNING", str(EVERYTHING)])
        proxy_url = f"http://127.0.0.1:{port}/mcp"
        everything.append(Case("mcp-proxy --port", proxy_url, "echo", _echo, lambda: [served.pid]))
        in_front = StdioServerParameters(
            command=command, args=["--log-level", "WARNING", "--transport", "streamablehttp", direct_url]
        )
        conformance.append(Case("mcp-proxy (stdio in front of HTTP)", in_front, "json_schema_2020_12_tool", _named))
        _wait_for_port(port)
    else:
        print(f"mcp-proxy: not measured ({status.get('error') or 'its venv is not ready'})")
    forge = peer("contextforge")
    status = forge.status()
    if status.get("ok"):
        _add_contextforge(forge.path, folder, start, direct_url, everything, conformance)
    else:
        print(f"ContextForge: not measured ({status.get('error') or 'its venv is not ready'})")
    return everything, conformance


def _contextforge_env(folder: Path) -> dict[str, str]:
    """The settings a ContextForge process needs to start (it refuses placeholder secrets) and to be measured:
    its database in the run's folder, no UI, loopback servers allowed, no rate limit."""
    return {
        **os.environ,
        "JWT_SECRET_KEY": secrets.token_hex(32),
        "AUTH_ENCRYPTION_SECRET": secrets.token_hex(32),
        "PLATFORM_ADMIN_EMAIL": "admin@example.com",
        "PLATFORM_ADMIN_PASSWORD": f"Bench-{secrets.token_hex(8)}!",
        "BASIC_AUTH_PASSWORD": f"Bench-{secrets.token_hex(8)}!",
        "DATABASE_URL": f"sqlite:///{folder / 'contextforge.db'}",
        "MCPGATEWAY_UI_ENABLED": "false",
        "MCPGATEWAY_ADMIN_API_ENABLED": "true",
        "SSRF_ALLOW_LOCALHOST": "true",
        "SSRF_ALLOW_PRIVATE_NETWORKS": "true",
        "RATE_LIMITING_ENABLED": "false",
        "LOG_LEVEL": "WARNING",
    }


def _add_contextforge(
    venv: Path,
    folder: Path,
    start: Callable[..., subprocess.Popen[str]],
    direct_url: str,
    everything: list[Case],
    conformance: list[Case],
) -> None:
    """Start ContextForge's stdio bridge and its gateway (the stdio server behind the bridge, the
    conformance server registered directly) and add their cases."""
    env = _contextforge_env(folder)
    python = str(venv / "bin" / "python")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    bridge_port, gateway_port = _free_port(), _free_port()
    bridge_args = ["--stdio", str(EVERYTHING), "--expose-streamable-http", "--port", str(bridge_port)]
    bridge = start([python, "-m", "mcpgateway.translate", *bridge_args, "--logLevel", "warning"], **quiet)
    gateway = start([str(venv / "bin" / "mcpgateway"), "--host", "127.0.0.1", "--port", str(gateway_port)], **quiet)
    _wait_for_port(bridge_port)
    _wait_for_port(gateway_port, limit=180.0)  # it migrates its database first
    made = subprocess.run(
        [python, "-m", "mcpgateway.utils.create_jwt_token", "-u", "admin@example.com", "--admin", "-e", "600"],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    auth = {"Authorization": f"Bearer {made.stdout.strip().splitlines()[-1]}"}
    base = f"http://127.0.0.1:{gateway_port}"
    bridge_url = f"http://127.0.0.1:{bridge_port}/mcp"
    for name, url in (("everything", bridge_url), ("conf", direct_url)):
        _rest(f"{base}/gateways", auth, {"name": name, "url": url, "transport": "STREAMABLEHTTP"})
    listed = _rest(f"{base}/tools", auth)
    tools: list[dict[str, Any]] = cast(list[dict[str, Any]], listed if isinstance(listed, list) else listed["items"])
    names = [str(tool["name"]) for tool in tools]

    def named(server: str, tool: str) -> str:
        found = [n for n in names if n.startswith(server) and n.endswith(tool.replace("_", "-"))]
        if not found:
            raise RuntimeError(f"ContextForge lists no tool {tool!r} of {server!r}: {names}")
        return found[0]

    everything.append(Case("ContextForge translate --port", bridge_url, "echo", _echo, lambda: [bridge.pid]))
    everything.append(
        Case(
            "ContextForge gateway (+ translate)",
            f"{base}/mcp",
            named("everything", "echo"),
            _echo,
            lambda: [gateway.pid, bridge.pid],
            headers=auth,
        )
    )
    conformance.append(
        Case(
            "ContextForge gateway",
            f"{base}/mcp",
            named("conf", "json_schema_2020_12_tool"),
            _named,
            lambda: [gateway.pid],
            headers=auth,
        )
    )


def _rest(url: str, headers: dict[str, str], body: dict[str, Any] | None = None) -> Any:
    """One JSON request to ContextForge's REST API (POST with a body, else GET)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={**headers, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def _wait_for_port(port: int, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listened on port {port} within {limit:g} s")


async def _calls_through(target: Any, tool: str, calls: int) -> None:
    async with Client(target, mode="legacy") as client:
        for i in range(20 + calls):  # 20 warm-up calls in both runs
            await client.call_tool(tool, _echo(i))


def _counted(
    valgrind: str, cmd: list[str], *, calls: int, tool: str, port: int | None, env: dict[str, str] | None = None
) -> int:
    """Instructions of ``cmd`` (run under cachegrind) for a session of 20 + ``calls`` calls; ``port``:
    it serves HTTP there (else it is a stdio server)."""
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        counted = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        counted += [f"--log-file={log.name}", *cmd]
        if port is None:
            params = StdioServerParameters(
                command=counted[0], args=counted[1:], cwd=str(ROOT), env=env or dict(os.environ)
            )
            anyio.run(_calls_through, params, tool, calls)
        else:
            quiet = subprocess.DEVNULL
            process = subprocess.Popen(counted, cwd=ROOT, stdout=quiet, stderr=quiet, env=env)
            try:
                _wait_for_port(port, limit=300.0)
                anyio.run(_calls_through, f"http://127.0.0.1:{port}/mcp", tool, calls)
            finally:
                process.terminate()
                process.wait(timeout=300)
        found = [line for line in Path(log.name).read_text().splitlines() if "I   refs" in line or "I refs" in line]
    if not found:
        raise RuntimeError(f"valgrind reported no instruction count for {cmd[:4]}")
    return int(found[-1].rsplit(maxsplit=1)[-1].replace(",", ""))


def instructions(calls: int, before: Path | None = None) -> None:
    """Each middle process's instructions per sequential call, in front of server-everything."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("bench.gateway: --instructions needs valgrind on PATH")
    folder = Path(tempfile.mkdtemp(prefix="mcpdeck-bench-gateway-"))
    os.environ["MCPDECK_HISTORY"] = "off"
    os.environ["MCPDECK_LOG_DIR"] = str(folder / "logs")
    config = folder / "mcp.json"
    servers = {"everything": {"command": str(EVERYTHING)}}
    config.write_text(json.dumps({"mcpServers": servers, "permissions": {"allow": ["mcp__*"]}}))
    tool = "mcp__everything__echo"

    def stdio(_: int) -> list[str]:
        return _gateway_cmd(config, "--stdio")

    def served(port: int) -> list[str]:
        return _gateway_cmd(config, "--port", str(port), "--no-token")

    cases: list[tuple[str, Callable[[int], list[str]], str, bool, dict[str, str] | None]] = [
        ("mcpdeck gateway --stdio", stdio, tool, False, None),
        ("the SDK on mcpdeck's pipes (floor)", lambda _: _sdk_proxy("--pipes"), tool, False, None),
        ("the SDK alone (Server + Client)", lambda _: _sdk_proxy(), tool, False, None),
        ("mcpdeck gateway --port", served, tool, True, None),
        ("the SDK alone over HTTP", lambda port: _sdk_proxy("--port", str(port)), tool, True, None),
    ]
    if before is not None:
        env = _before_env(folder, before)
        cases += [
            ("mcpdeck gateway --stdio (before)", stdio, tool, False, env),
            ("mcpdeck gateway --port (before)", served, tool, True, env),
        ]
    proxy, forge = peer("mcp-proxy"), peer("contextforge")
    if proxy.status().get("ok"):
        command = str(proxy.path / "bin" / "mcp-proxy")
        cases.append(
            (
                "mcp-proxy --port",
                lambda p: [command, "--port", str(p), "--log-level", "WARNING", str(EVERYTHING)],
                "echo",
                True,
                None,
            )
        )
    if forge.status().get("ok"):
        python = str(forge.path / "bin" / "python")
        os.environ.update({k: v for k, v in _contextforge_env(folder).items() if k not in os.environ})
        bridge = ["-m", "mcpgateway.translate", "--stdio", str(EVERYTHING), "--expose-streamable-http"]
        cases.append(
            (
                "ContextForge translate --port",
                lambda p: [python, *bridge, "--port", str(p), "--logLevel", "warning"],
                "echo",
                True,
                None,
            )
        )
    print(f"user-space instructions per sequential call of the process in the middle ({calls} calls apart, cachegrind)")
    for name, cmd, called, http, environment in cases:
        runs: list[int] = []
        for extra in (0, calls):
            listen = _free_port() if http else None
            runs.append(_counted(valgrind, cmd(listen or 0), calls=extra, tool=called, port=listen, env=environment))
        print(f"{name:34} {(runs[1] - runs[0]) / calls:12,.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The gateway's per-call cost against direct calls and mcp-proxy.")
    parser.add_argument("--calls", type=int, default=320)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--instructions", action="store_true", help="count each middle process's instructions per call (valgrind)"
    )
    parser.add_argument(
        "--before", type=Path, help="also measure the gateway of an older checkout's src (e.g. from git archive)"
    )
    parser.add_argument(
        "--history",
        action="store_true",
        help="also measure gateway --stdio with the history on (the default for users; off in the other cases)",
    )
    parser.add_argument(
        "--run",
        type=int,
        default=1,
        help="sequential calls in a row on one case before the next case's turn (1: every call cold, "
        "after a call on each other case; 50: a client calling steadily)",
    )
    parser.add_argument(
        "--no-peers",
        action="store_true",
        help="leave mcp-proxy and ContextForge out (fewer processes on the machine; mcpdeck and the SDK alone)",
    )
    options = parser.parse_args()
    if options.run < 1:
        parser.error(f"--run must be 1 or more (calls in a row per case), not {options.run}")
    before = options.before.resolve() if options.before else None
    if options.instructions:
        instructions(options.calls, before)
    else:
        main(
            options.calls,
            options.rounds,
            before,
            history=options.history,
            run=options.run,
            peers=not options.no_peers,
        )
