"""Server logs: rotation by size while a server runs, what the host records there, and a quick exit.

Against real stdio servers: ``tests/servers/hostile.py`` (a tool that floods stderr),
commands that fail, and ``tests/servers/stubborn.py``, which ignores its stdin closing.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import anyio
import pytest

from mcpdeck import Host, ServerState
from mcpdeck.connection._server_log import KEEP, ROTATE_BYTES
from tests.helpers import WAIT, stdio_server

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_log_rotates_by_size_while_its_server_runs_and_keeps_a_few_files(log_dir: Path) -> None:
    async with Host({"loud": stdio_server("hostile")}, log_dir=log_dir) as host:
        # Over 5 files' worth in one session: the old rotation (only at a session start) kept it all.
        assert (await host.call_tool("mcp__loud__noisy", {"megabytes": 26})).text() == "done"
        assert (await host.call_tool("mcp__loud__noisy", {"megabytes": 0.01})).text() == "done"
        assert host.servers["loud"].state is ServerState.CONNECTED
    log = log_dir / "loud.log"
    rotated = [log_dir / f"loud.log.{n}" for n in range(1, KEEP + 1)]
    assert all(path.exists() for path in rotated)
    assert not (log_dir / f"loud.log.{KEEP + 1}").exists()
    for path in [log, *rotated]:
        assert path.stat().st_size <= ROTATE_BYTES + 64 * 1024, path  # at most one chunk past the limit
        assert _mode(path) == 0o600, path
    assert _mode(log_dir) == 0o700
    # The session goes on in the new file: the last words of the server are in it.
    assert "noisy: done" in log.read_text()
    assert "process" in log.read_text()  # the exit record, written after the last rotation


async def test_the_log_records_a_missing_command_a_startup_timeout_and_an_exit_status(log_dir: Path) -> None:
    servers = {
        "missing": {"command": "mcpdeck-no-such-command"},
        "hung": stdio_server("hang", startupTimeout=1),
        "quitter": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
    }
    async with Host(servers, log_dir=log_dir) as host:
        assert {status.state for status in host.servers.values()} == {ServerState.FAILED}
    missing = (log_dir / "missing.log").read_text()
    assert "[mcpdeck] failed: command 'mcpdeck-no-such-command' was not found on PATH" in missing
    hung = (log_dir / "hung.log").read_text()
    assert "[mcpdeck] failed: did not finish initializing within 1 s" in hung
    assert "exited with status 0" in hung  # it leaves when its stdin closes
    quitter = (log_dir / "quitter.log").read_text()
    assert "exited with status 3" in quitter
    assert "[mcpdeck] failed: " in quitter


async def test_a_server_that_ignores_stdin_closing_is_ended_by_sigterm_at_shutdown(log_dir: Path) -> None:
    """After ``STDIN_GRACE`` once its stdin is closed (what a whole ``mcpdeck call`` on this server costs, its end
    included, is measured by ``python -m bench.commands``: bench/RESULTS.md)."""
    # Not server-everything, which stayed on one machine's Node and left by itself on another's (CI).
    with anyio.fail_after(WAIT):  # it never leaves by itself: a host that waited for it would not exit
        async with Host({"stubborn": stdio_server("stubborn")}, log_dir=log_dir) as host:
            result = await host.call_tool("mcp__stubborn__echo", {"text": "hi"})
            assert "hi" in result.text()
    assert "was ended by SIGTERM (sent by mcpdeck at shutdown)" in (log_dir / "stubborn.log").read_text()
