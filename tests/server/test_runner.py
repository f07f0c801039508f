"""The process runner every long-running mode runs on (``serve``, ``gateway --port``, ``--stdio``, attached stdio):
the history attached and closed, the stop within bounded time, a signal said back, an error raised as itself.

The modes themselves are run as processes in tests/server/test_process.py and tests/gateway/test_gateway_processes.py.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from mcpdeck.errors import ConfigError
from mcpdeck.history import History
from mcpdeck.host import Host
from mcpdeck.server._runner import ProcessRunner
from mcpdeck.status import ServerState
from tests.helpers import WAIT
from tests.servers import basic

pytestmark = pytest.mark.anyio


async def test_the_faces_calls_are_recorded_and_the_history_is_closed_after_the_exit_steps(tmp_path: Path) -> None:
    history = History(tmp_path / "h.sqlite3")
    host = Host({"basic": basic.build_server()}, log_dir=tmp_path / "logs", wait=False)
    runner = ProcessRunner(host, history=history)
    seen: list[str] = []

    async def faces() -> None:
        await host.wait_settled("basic")
        await host.call_tool("mcp__basic__add", {"a": 1, "b": 2})

    runner.on_exit(lambda: seen.append(f"first, {len(history.tool_calls())} recorded, host closed: {_closed(host)}"))
    runner.on_exit(lambda: seen.append("second"))
    with anyio.fail_after(WAIT):
        stopped_by = await runner.run(faces)
    assert stopped_by is None
    assert seen == ["first, 1 recorded, host closed: True", "second"]
    with pytest.raises(Exception, match="closed"):
        history.tool_calls()
    with History(tmp_path / "h.sqlite3") as again:
        assert [call.tool for call in again.tool_calls()] == ["add"]


async def test_a_stop_asks_the_faces_to_stop_then_cancels_them_after_the_grace(tmp_path: Path) -> None:
    host = Host({"basic": basic.build_server()}, log_dir=tmp_path / "logs", wait=False)
    runner = ProcessRunner(host, grace=0.05)
    stop = anyio.Event()
    asked: list[bool] = []

    async def deaf_faces() -> None:
        stop.set()
        await anyio.sleep_forever()  # it never returns by itself: the runner must cancel it

    with anyio.fail_after(WAIT):
        stopped_by = await runner.run(deaf_faces, stop_faces=lambda: asked.append(True), stop=stop)
    assert stopped_by is None
    assert asked == [True]
    assert _closed(host)


async def test_a_signal_stops_the_run_and_is_said_back(tmp_path: Path) -> None:
    host = Host({"basic": basic.build_server()}, log_dir=tmp_path / "logs", wait=False)

    async def faces() -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # caught by the runner while it runs, not by the default action
        await anyio.sleep_forever()

    with anyio.fail_after(WAIT):
        stopped_by = await ProcessRunner(host).run(faces)
    assert stopped_by is signal.SIGTERM
    assert _closed(host)


async def test_an_error_of_the_faces_is_raised_as_itself_and_the_history_still_closed(tmp_path: Path) -> None:
    history = History(tmp_path / "h.sqlite3")
    host = Host({"basic": basic.build_server()}, log_dir=tmp_path / "logs", wait=False)

    async def faces() -> None:
        raise ConfigError("no profile named 'x'")

    with anyio.fail_after(WAIT), pytest.raises(ConfigError, match="no profile named"):
        await ProcessRunner(host, history=history).run(faces)
    with pytest.raises(Exception, match="closed"):
        history.tool_calls()


def _closed(host: Host) -> bool:
    return all(status.state is ServerState.STOPPED for status in host.servers.values())
