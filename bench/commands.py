"""Whole commands, timed as a user meets them: process start to exit, wall clock.

    python -m bench.commands                       # every command, 15 interleaved rounds
    python -m bench.commands --rounds 5 --results bench/COMMANDS.md

Each round runs every command once, in a rotated order, so that drift of the machine hits
them alike; the table gives medians and the ratio of each command to its baseline in the
same run:

- ``mcpdeck --help`` against ``python -c "import click"`` (the floor of any click program):
  help, version and config-only commands must not pay for the SDK's imports.
- ``mcpdeck call`` on ``@modelcontextprotocol/server-everything`` against a bare SDK script
  that spawns the same server, initializes, calls ``echo`` and exits
  (``bench/clients/sdk_call.py``).
- ``mcpdeck call`` attached to a running ``mcpdeck serve`` (started for the run, serving the
  stdio line server ``bench/servers/line.py``) against ``python -c "import click"``: the goal
  is at most 0.1 s above it.

Nothing of the user's is read or written: the commands get their own config, HOME and
data folders in a temporary directory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

from bench.stats import median

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
NODE = ROOT / "node_modules" / ".bin" / "node"
EVERYTHING = ROOT / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@dataclass
class Command:
    name: str
    argv: list[str]
    baseline: str | None = None
    """The command this one is compared with (None: it is a baseline)."""
    goal: float | None = None
    """The highest ratio to the baseline that meets the target."""
    goal_above: float | None = None
    """Or: the most seconds above the baseline that meet the target."""
    samples: list[float] = field(default_factory=list[float])
    error: str = ""


def commands(home: Path) -> list[Command]:
    config = home / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"everything": {"command": str(NODE), "args": [str(EVERYTHING)]}}}))
    python = str(VENV_BIN / "python")
    mcpdeck = str(VENV_BIN / "mcpdeck")
    echo = ["call", "mcp__everything__echo", "--args", '{"message": "hi"}']
    return [
        Command("python -c 'import click'", [python, "-c", "import click"]),
        Command("mcpdeck --help", [mcpdeck, "--help"], baseline="python -c 'import click'", goal=2.0),
        Command("mcpdeck --version", [mcpdeck, "--version"], baseline="python -c 'import click'", goal=2.0),
        Command(
            "bare SDK: spawn, initialize, call echo, exit",
            [python, str(ROOT / "bench" / "clients" / "sdk_call.py"), str(NODE), str(EVERYTHING)],
        ),
        Command(
            "mcpdeck call (server-everything)",
            [mcpdeck, "--config", str(config), "--no-attach", *echo]
            if _has_attach(mcpdeck)
            else [mcpdeck, "--config", str(config), *echo],
            baseline="bare SDK: spawn, initialize, call echo, exit",
            goal=1.3,
        ),
        *(
            [
                Command(
                    "mcpdeck call, attached to serve",
                    [mcpdeck, "--config", str(home / SERVED), "call", "mcp__line__echo", "--args", '{"text": "hi"}'],
                    baseline="python -c 'import click'",
                    goal_above=0.1,
                )
            ]
            if _has_attach(mcpdeck)
            else []
        ),
    ]


SERVED = "served.json"
"""The config ``mcpdeck serve`` runs for during the benchmark (the line server over stdio)."""


@contextlib.contextmanager
def serve_running(home: Path, env: dict[str, str]) -> Generator[None]:
    """``mcpdeck serve`` for the line server's config, until the block ends (its server connected first)."""
    config = home / SERVED
    line = {"command": str(VENV_BIN / "python"), "args": ["-S", str(ROOT / "bench" / "servers" / "line.py")]}
    config.write_text(json.dumps({"mcpServers": {"line": line}}))
    argv = [str(VENV_BIN / "mcpdeck"), "--config", str(config), "serve", "--port", "0"]
    process = subprocess.Popen(argv, env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # its state file, then the line server connected (asked through it)
            if list((home / "run" / "mcpdeck" / "serve").glob("*.json")):
                probe = subprocess.run(
                    [str(VENV_BIN / "mcpdeck"), "--config", str(config), "list", "--json"],
                    env=env, cwd=home, capture_output=True, text=True, check=False,
                )  # fmt: skip
                if '"state": "connected"' in probe.stdout:
                    break
            time.sleep(0.2)
        yield
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _has_attach(mcpdeck: str) -> bool:
    """Whether this mcpdeck knows ``--no-attach`` (then the timed call never goes through a running serve)."""
    result = subprocess.run([mcpdeck, "--help"], capture_output=True, text=True, check=False)
    return "--no-attach" in result.stdout


def run(rounds: int) -> tuple[list[Command], dict[str, str]]:
    with tempfile.TemporaryDirectory(prefix="mcpdeck-bench-commands-") as tmp:
        home = Path(tmp)
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_RUNTIME_DIR": str(home / "run"),
            "MCPDECK_LOG_DIR": str(home / "logs"),
        }
        env.pop("MCPDECK_CONFIG", None)
        # As installed, mcpdeck's modules have their .pyc files (as click's have). With
        # PYTHONDONTWRITEBYTECODE set (some shells and CI set it) an editable checkout never gets
        # them, and every command would compile mcpdeck's sources again: 30-50 ms of a command
        # measured on this machine that no user pays. The warm-up round writes them.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        (home / "run").mkdir(mode=0o700)
        todo = commands(home)
        with serve_running(home, env):
            _rounds(todo, rounds, env, home)
    machine = {"python": sys.version.split()[0], "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    return todo, machine


def _rounds(todo: list[Command], rounds: int, env: dict[str, str], home: Path) -> None:
    for turn in range(rounds + 1):  # round 0 warms the page cache and is not counted
        shift = turn % len(todo)
        for command in todo[shift:] + todo[:shift]:
            if command.error:
                continue
            started = time.perf_counter()
            result = subprocess.run(command.argv, env=env, cwd=home, capture_output=True, text=True, check=False)
            elapsed = time.perf_counter() - started
            if result.returncode != 0:
                command.error = f"exit {result.returncode}: {(result.stderr or result.stdout).strip()[-300:]}"
            elif turn:
                command.samples.append(elapsed)
        print(f"bench.commands: round {turn}/{rounds}", file=sys.stderr, flush=True)


def render(todo: list[Command], machine: dict[str, str], rounds: int) -> str:
    by_name = {c.name: c for c in todo}
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    lines = [
        "## Whole commands (process start to exit)",
        "",
        f"`python -m bench.commands`, {rounds} interleaved rounds, {stamp}, Python {machine['python']}, "
        f"load average at the end {machine['load_average']}. Wall clock per command; ratio against its baseline "
        "in the same run.",
        "",
        "| command | n | median | x baseline | goal | verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for command in todo:
        if command.error:
            lines.append(f"| {command.name} | 0 | - | - | - | error: {command.error} |")
            continue
        value = median(command.samples) or 0.0
        ratio_text, goal_text, verdict = "-", "-", "baseline"
        base = by_name.get(command.baseline or "")
        base_value = median(base.samples) if base is not None else None
        if base_value and command.goal_above is not None:
            above = value - base_value
            ratio_text = f"{value / base_value:.2f}x (+{above * 1000:.0f} ms)"
            goal_text = f"≤ +{command.goal_above * 1000:.0f} ms"
            verdict = "met" if above <= command.goal_above else "MISSED"
        elif base_value:
            ratio = value / base_value
            ratio_text = f"{ratio:.2f}x"
            goal_text = f"≤ {command.goal:g}x" if command.goal else "-"
            verdict = "met" if command.goal is None or ratio <= command.goal else "MISSED"
        row = [command.name, str(len(command.samples)), f"{value * 1000:.0f} ms", ratio_text, goal_text, verdict]
        lines.append(f"| {' | '.join(row)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.commands", description="Whole commands, timed.")
    parser.add_argument("--rounds", type=int, default=15, help="counted rounds (default: 15)")
    parser.add_argument("--results", type=Path, help="also write the Markdown table to this file")
    args = parser.parse_args()
    todo, machine = run(args.rounds)
    report = render(todo, machine, args.rounds)
    print(report)
    if args.results is not None:
        args.results.write_text(report)
    if any(c.error for c in todo):
        sys.exit(1)


if __name__ == "__main__":
    main()
