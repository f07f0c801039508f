"""What the choice of protocol era costs: connect time of a server of today's SDK, and per-call latency in each era.

``"protocol": "auto"`` opens with the ``initialize`` handshake, so that a server's questions in the
middle of a call reach the host, except over streamable HTTP for a host nobody answers for (no
elicitation or sampling handler, no router, no roots), which opens with ``server/discover`` first.
This measures, in one run, with every case's turns interleaved round by
round (so a loaded machine weighs on each alike):

- **connect**: ``async with Host({one server})`` until it is connected (tools listed), for a
  server on the SDK's ``MCPServer`` that speaks both eras (``bench/servers/sdk_small.py``) over
  stdio (a new process each time) and over streamable HTTP (a running server): ``auto`` now, by a
  host that nobody answers for (no handlers: over HTTP ``server/discover`` first) and by one that
  answers (an elicitation handler: the handshake first), ``auto`` of an older checkout
  (``--before PATH/src``: its ``src`` first on ``PYTHONPATH``, a host with no handlers),
  ``"protocol": "handshake"`` and ``"protocol": "modern"``; and for a server that speaks only
  2026-07-28 (``tests/servers/asking.py --modern-only``: it refuses ``initialize`` naming its
  versions), ``auto`` (the refused handshake, then ``server/discover`` on the same connection)
  against ``modern`` (``server/discover`` at once): the round trip ``auto`` spends on it;
- **calls**: sequential ``echo`` calls through ``host.call_tool`` on one open host, in each era,
  over stdio and HTTP.

Each measuring host runs in a worker process (``python -m bench.era --worker``), one for this
checkout and one for ``--before``. It prints medians and p90 (ms) and each case's ratio to its
reference, as a markdown table.

    git archive main src | tar -x -C /tmp/before     # the checkout to compare with
    .venv/bin/python -m bench.era [--before /tmp/before/src] [--rounds 5] [--connects 4] [--calls 100]
    .venv/bin/python -m bench.era --transports http      # the HTTP cases alone (no process per connect)
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["main"]


# ----- the worker: one host at a time, measured from inside ---------------------------------------


def _worker() -> None:
    """Answer JSON-line commands on stdin: ``connect`` (config, n) and ``calls`` (key, config, n)."""
    import anyio

    from mcpdeck import Host, ServerState
    from mcpdeck.callbacks import ElicitationRequest, ElicitationResponse

    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # what anything prints goes to stderr: stdout is the protocol channel
    logs = Path(tempfile.mkdtemp(prefix="bench-era-"))
    hosts: dict[str, Any] = {}

    async def decline(request: ElicitationRequest) -> ElicitationResponse:
        return ElicitationResponse(action="decline")

    def handlers(answers: bool) -> dict[str, Any]:
        """A host that answers servers' questions (an elicitation handler), or one nobody answers for."""
        return {"elicitation": decline} if answers else {}

    async def connect(config: dict[str, Any], n: int, answers: bool) -> list[float]:
        times: list[float] = []
        for _ in range(n):
            started = time.perf_counter()
            async with Host({"s": config}, log_dir=logs, **handlers(answers)) as host:
                took = time.perf_counter() - started
                status = host.servers["s"]
                if status.state is not ServerState.CONNECTED:
                    raise RuntimeError(f"not connected: {status.error}")
            times.append(took)
        return times

    async def calls(key: str, config: dict[str, Any], n: int, answers: bool) -> list[float]:
        if key not in hosts:
            host = Host({"s": config}, log_dir=logs, **handlers(answers))
            await host.__aenter__()
            hosts[key] = host
        host = hosts[key]
        times: list[float] = []
        for i in range(n):
            started = time.perf_counter()
            await host.call_tool("mcp__s__echo", {"text": f"call {i}"})
            times.append(time.perf_counter() - started)
        return times

    async def run() -> None:
        try:
            while line := await anyio.to_thread.run_sync(sys.stdin.readline):
                command = json.loads(line)
                answers = bool(command.get("answers"))
                if command["op"] == "connect":
                    answer = await connect(command["config"], command["n"], answers)
                else:
                    answer = await calls(command["key"], command["config"], command["n"], answers)
                out.write(json.dumps(answer) + "\n")
        finally:
            for host in reversed(hosts.values()):  # last opened, first closed: each holds a task group
                await host.__aexit__(None, None, None)

    anyio.run(run)


# ----- the driver ----------------------------------------------------------------------------------


@dataclass
class Case:
    """One measured case: which worker, what it does, and what its ratio is taken against."""

    name: str
    worker: str
    op: str
    config: dict[str, Any]
    reference: str | None = None
    answers: bool = False
    """Whether the case's host answers servers' questions (an elicitation handler)."""
    samples: list[float] = field(default_factory=list[float])


class Worker:
    """A worker process (this checkout's ``src`` or an older one first on ``PYTHONPATH``)."""

    def __init__(self, src: str | None):
        env = dict(os.environ)
        if src is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.era", "--worker"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, command: dict[str, Any]) -> list[float]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(command) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"the worker ended (exit {self.process.wait()}); its stderr says why")
        return json.loads(line)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def _http_server(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    stdout: IO[str] | None = process.stdout
    assert stdout is not None
    url = stdout.readline().strip()
    if not url.startswith("http://"):
        process.kill()
        raise RuntimeError(f"{args} did not print its URL (exit {process.wait()})")
    return process, url


def _cases(both_url: str, modern_only_url: str, before: bool) -> list[Case]:
    stdio = {"command": sys.executable, "args": ["-m", "bench.servers.sdk_small"], "cwd": str(ROOT)}
    modern_only = {"command": sys.executable, "args": ["-m", "tests.servers.asking", "--modern-only"], "cwd": str(ROOT)}
    cases: list[Case] = []
    for transport, server, only in (
        ("stdio", stdio, modern_only),
        ("http", {"type": "http", "url": both_url}, {"type": "http", "url": modern_only_url}),
    ):
        auto = f"connect {transport}: auto, nobody answers"
        modern = f"connect {transport}: modern"
        cases.append(Case(auto, "after", "connect", server, reference=modern))
        cases.append(Case(f"connect {transport}: auto, the host answers", "after", "connect", server, modern, True))
        if before:
            cases.append(Case(f"connect {transport}: auto before, nobody answers", "before", "connect", server, auto))
        cases.append(
            Case(f"connect {transport}: handshake", "after", "connect", server | {"protocol": "handshake"}, modern)
        )
        cases.append(Case(modern, "after", "connect", server | {"protocol": "modern"}))
        only_modern = f"connect {transport}, modern-only server: modern"
        cases.append(Case(f"connect {transport}, modern-only server: auto", "after", "connect", only, only_modern))
        cases.append(Case(only_modern, "after", "connect", only | {"protocol": "modern"}))
    for transport, server in (("stdio", stdio), ("http", {"type": "http", "url": both_url})):
        modern = f"call {transport}: 2026-07-28 session"
        cases.append(
            Case(f"call {transport}: handshake session", "after", "calls", server | {"protocol": "handshake"}, modern)
        )
        cases.append(Case(modern, "after", "calls", server | {"protocol": "modern"}))
        cases.append(Case(f"call {transport}: auto, nobody answers", "after", "calls", server, modern))
        if before:
            cases.append(Case(f"call {transport}: auto before, nobody answers", "before", "calls", server, modern))
    return cases


def _command(case: Case, n: int) -> dict[str, Any]:
    """What a worker is asked to do for ``case``, ``n`` times."""
    return {"op": case.op, "key": case.name, "config": case.config, "n": n, "answers": case.answers}


def _transport(case: Case) -> str:
    """The transport a case's server is reached over."""
    return "http" if case.config.get("type") == "http" else "stdio"


def _ms(value: float) -> str:
    return f"{value * 1000:.2f}"


def _table(cases: list[Case]) -> str:
    by_name = {case.name: case for case in cases}
    lines = ["| case | n | median ms | p90 ms | ratio | to |", "|---|---|---|---|---|---|"]
    for case in cases:
        ordered = sorted(case.samples)
        median = statistics.median(ordered)
        p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
        ratio, to = "", ""
        if case.reference is not None:
            ratio = f"{median / statistics.median(by_name[case.reference].samples):.3f}x"
            to = case.reference
        lines.append(f"| {case.name} | {len(ordered)} | {_ms(median)} | {_ms(p90)} | {ratio} | {to} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.era", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--before", help="the src folder of an older checkout, to measure its auto too")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connects", type=int, default=4, help="connects per case per round")
    parser.add_argument("--calls", type=int, default=100, help="calls per case per round")
    parser.add_argument(
        "--transports",
        default="stdio,http",
        help="comma-separated: stdio, http (default: both; stdio starts a process per connect)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:
        _worker()
        return
    if options.rounds < 1 or options.connects < 1 or options.calls < 1:
        parser.error("--rounds, --connects and --calls take a number of at least 1")
    transports = set(options.transports.split(","))
    if not transports or not transports <= {"stdio", "http"}:
        parser.error(f"--transports takes stdio, http or both, not {options.transports!r}")
    servers = [
        _http_server(["bench.servers.sdk_small", "--http"]),
        _http_server(["tests.servers.asking", "--http", "--modern-only"]),
    ]
    workers = {"after": Worker(None)}
    if options.before:
        workers["before"] = Worker(options.before)
    try:
        cases = [c for c in _cases(servers[0][1], servers[1][1], "before" in workers) if _transport(c) in transports]
        for case in cases:  # a first connect or call of each, not measured (imports, caches)
            workers[case.worker].ask(_command(case, 1))
        started = time.monotonic()
        for round_ in range(options.rounds):
            turn = cases[round_ % len(cases) :] + cases[: round_ % len(cases)]
            for case in turn:
                n = options.connects if case.op == "connect" else options.calls
                case.samples += workers[case.worker].ask(_command(case, n))
        took = time.monotonic() - started
    finally:
        for worker in workers.values():
            worker.close()
        for process, _ in servers:
            process.terminate()
            process.wait(timeout=10)
    load = os.getloadavg()[0]
    print(f"{options.rounds} rounds in {took:.0f} s; load average {load:.1f} on {os.cpu_count()} cores\n")
    print(_table(cases))


if __name__ == "__main__":
    main()
