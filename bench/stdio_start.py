"""How soon ``mcpdeck serve --stdio`` and ``gateway --stdio`` answer a client's ``initialize``, whatever
their servers do, beside the floor: a bare server of the SDK doing the same.

    python -m bench.stdio_start                    # 10 interleaved rounds
    python -m bench.stdio_start --rounds 20

A client (Claude Desktop, Cursor) starts the gateway and sends ``initialize`` at once; one that hears
nothing for long gives up on it. Each round starts the command as such a client does and times the
process start to the answer to ``initialize``, every case once, in turn:

- ``python -c "import click"``, start to exit: the floor of any click program (for scale);
- the floor: ``bench/servers/sdk_small.py``, the SDK's ``MCPServer`` with three tools on the SDK's
  stdio, as the SDK's own docs write a server. Any server or gateway built on the SDK imports at least
  what it imports (``import mcp`` brings pydantic's models of two protocol versions, starlette and
  uvicorn) before it can read a message; mcpdeck's faces are reported as a ratio to it;
- ``serve --stdio`` with ``@modelcontextprotocol/server-everything``;
- the same plus a server that never answers (it reads its stdin and says nothing): the goal is an
  answer within 1 s here too, the slow server's tools following with ``list_changed``;
- ``gateway --stdio`` with those same two servers.

Each case gets its own config and data folders in a temporary directory; nothing of the user's is read.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.stats import median

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
NODE = ROOT / "node_modules" / ".bin" / "node"
EVERYTHING = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
HANG = "import sys\nwhile sys.stdin.buffer.read(4096): pass"
FLOOR = "SDK stdio server (floor)"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
LIMIT = 60.0
GOAL = 1.0


def _cpu(pid: int) -> float:
    """CPU seconds (user and system) the process has used so far (``/proc``, Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _initialize_time(argv: list[str], env: dict[str, str], cpu: list[float]) -> float:
    """Seconds from the start of ``argv`` (in the repository's root) to the first line it writes to stdout
    after ``initialize``; the CPU seconds the process had used by then go to ``cpu``."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        process.stdin.flush()
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(LIMIT):
                raise TimeoutError(f"no answer within {LIMIT:g} s")
        line = process.stdout.readline()
        answered = time.perf_counter() - started
        cpu.append(_cpu(process.pid))
        if b'"result"' not in line:
            raise RuntimeError(f"not an answer to initialize: {line[:200]!r}")
        return answered
    finally:
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _click_time(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([str(VENV_BIN / "python"), "-c", "import click"], check=True, env=env)
    return time.perf_counter() - started


def run(rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    everything = {"command": str(NODE), "args": [str(EVERYTHING)]}
    hang = {"command": sys.executable, "args": ["-c", HANG]}
    both = {"everything": everything, "hang": hang}
    cases = {
        "serve --stdio (server-everything)": ("serve", {"everything": everything}),
        "serve --stdio (server-everything + a server that never answers)": ("serve", both),
        "gateway --stdio (server-everything + a server that never answers)": ("gateway", both),
    }
    samples: dict[str, list[float]] = {'python -c "import click"': [], FLOOR: [], **{name: [] for name in cases}}
    cpu: dict[str, list[float]] = {name: [] for name in [FLOOR, *cases]}
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        env = {
            **os.environ,
            "HOME": str(home),
            "MCPDECK_HOME": str(home / "mcpdeck"),
            "MCPDECK_HISTORY": "off",
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CONFIG_HOME": str(home / "config"),
        }
        argvs: dict[str, list[str]] = {FLOOR: [str(VENV_BIN / "python"), "-m", "bench.servers.sdk_small"]}
        for index, (name, (face, servers)) in enumerate(cases.items()):
            config = home / f"mcp{index}.json"
            config.write_text(json.dumps({"mcpServers": servers}))
            argvs[name] = [str(VENV_BIN / "mcpdeck"), "--config", str(config), "--no-attach", face, "--stdio"]
        names = list(samples)
        for round_ in range(rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                if name in argvs:
                    samples[name].append(_initialize_time(argvs[name], env, cpu[name]))
                else:
                    samples[name].append(_click_time(env))
    return samples, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    samples, cpu = run(args.rounds)
    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds, {os.cpu_count()} cores, load average {load:.1f}")
    floor = median(samples[FLOOR]) or 0.0
    floor_cpu = median(cpu[FLOOR]) or 0.0
    print(f"{'case':<68} {'median':>8} {'max':>8} {'CPU':>7} {'x floor':>8} {'CPU x':>6}")
    for name, values in samples.items():
        middle = median(values) or 0.0
        used = (median(cpu[name]) or 0.0) if name in cpu else 0.0
        used_text = f"{used:>6.2f}s" if name in cpu else ""
        ratio = f"{middle / floor:>7.2f}x" if floor and name in cpu else ""
        cpu_ratio = f"{used / floor_cpu:>5.2f}x" if floor_cpu and name in cpu else ""
        goal = "" if name.startswith("python") else ("  goal met" if max(values) <= GOAL else f"  over {GOAL:g} s")
        if name == FLOOR:
            goal = "  (the floor is under the goal)" if floor <= GOAL else f"  (the floor itself is over {GOAL:g} s)"
        print(f"{name:<68} {middle:>7.3f}s {max(values):>7.3f}s {used_text:>7} {ratio:>8} {cpu_ratio:>6}{goal}")


if __name__ == "__main__":
    main()
