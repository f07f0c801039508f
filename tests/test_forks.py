"""The test processes' fork server (``tests/forks.py``) outlives a launcher that dies before it answers it:
otherwise every later test of that worker whose servers are forks fails with "connection refused"."""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
from collections.abc import Generator
from pathlib import Path

import anyio
import pytest

from mcpdeck import Host
from mcpdeck.config import ConfigStore
from tests import forks
from tests.helpers import ROOT, WAIT, descendants, stdio_server

pytestmark = pytest.mark.anyio


def _fork_server() -> int:
    """This test process's fork server's pid."""
    (pid,) = (pid for pid in descendants() if b"tests.forks" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"))
    return pid


@contextlib.contextmanager
def _stopped(pid: int) -> Generator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _launch_and_vanish() -> None:
    """What a launcher killed at once sends: a whole request with its three descriptors, then its end closed."""
    request = json.dumps({"name": "basic", "args": [], "cwd": str(ROOT), "env": dict(os.environ)}).encode()
    stdin, feed = os.pipe()
    drain, stdout = os.pipe()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(str(forks.SOCKET))
            fds = array.array("i", [stdin, stdout, stdout])
            connection.sendmsg(
                [len(request).to_bytes(4, "big"), request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
            )
    finally:
        for fd in (stdin, feed, drain, stdout):
            os.close(fd)


async def test_a_launcher_gone_before_its_answer_leaves_the_fork_server_serving(tmp_path: Path) -> None:
    # The fork server is held still while the launcher comes and goes, so it answers a closed socket.
    with _stopped(_fork_server()):
        _launch_and_vanish()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"basic": stdio_server("basic")}}))
    async with Host(store=ConfigStore(config), log_dir=tmp_path / "logs") as host:
        with anyio.fail_after(WAIT):
            result = await host.call_tool("mcp__basic__add", {"a": 1, "b": 2})
    assert result.text() == "3"
