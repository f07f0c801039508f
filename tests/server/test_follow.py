"""The config follower: edits made to the file elsewhere reach the running host, and only what changed moves."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpdeck import Host
from mcpdeck.config import ConfigStore, parse_server_config
from mcpdeck.events import ConfigReloaded, ConfigReloadFailed, Subscription
from mcpdeck.server import ConfigFollower
from mcpdeck.store import ConfigNotices, History
from tests.helpers import WAIT, next_event, stdio_server
from tests.postgres import Postgres

pytestmark = pytest.mark.anyio


@dataclass
class Followed:
    host: Host
    follower: ConfigFollower
    store: ConfigStore
    path: Path
    events: Subscription

    def write(self, servers: dict[str, Any], **extra: Any) -> None:
        self.path.write_text(json.dumps({"mcpServers": servers, **extra}, indent=2))

    async def applied(self) -> ConfigReloaded:
        """Check the file now (as the follower's loop does) and return what it applied."""
        assert await self.follower.check()
        return await next_event(self.events, ConfigReloaded)


@pytest.fixture
async def followed(tmp_path: Path) -> AsyncIterator[Followed]:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"one": stdio_server("basic"), "two": stdio_server("basic")}}))
    host = Host(store=ConfigStore(path), log_dir=tmp_path / "logs")
    async with host, host.events.subscribe() as events:
        store = ConfigStore(path)
        follower = ConfigFollower(host, store)
        await follower.prime()
        yield Followed(host, follower, store, path, events)


async def test_an_unchanged_file_is_not_even_read(followed: Followed) -> None:
    """A look is one stat while nothing changed (what that costs: ``python -m bench.micro``)."""
    store = followed.store
    reads, parses = store.reads, store.parses
    assert not await followed.follower.check()
    followed.path.touch()  # a new mtime, same content: read, compared, not parsed, nothing applied
    assert not await followed.follower.check()
    assert followed.follower.checks == 2
    assert (store.reads - reads, store.parses - parses) == (1, 0)


async def test_an_added_entry_connects_and_the_others_are_untouched(followed: Followed) -> None:
    pids = {name: s.pid for name, s in followed.host.servers.items()}
    followed.write({"one": stdio_server("basic"), "two": stdio_server("basic"), "three": stdio_server("basic")})
    done = await followed.applied()
    assert (done.added, done.updated, done.removed) == (["three"], [], [])
    with anyio.fail_after(WAIT):
        await followed.host.wait_settled("three")
    servers = followed.host.servers
    assert servers["three"].state == "connected"
    assert {name: servers[name].pid for name in pids} == pids


async def test_a_changed_entry_reconnects_only_that_server(followed: Followed) -> None:
    pid_one, pid_two = followed.host.servers["one"].pid, followed.host.servers["two"].pid
    followed.write({"one": stdio_server("basic", timeout=99), "two": stdio_server("basic")})
    done = await followed.applied()
    assert (done.added, done.updated, done.removed) == ([], ["one"], [])
    with anyio.fail_after(WAIT):
        await followed.host.wait_settled("one")
    servers = followed.host.servers
    assert servers["one"].pid not in (None, pid_one)
    assert servers["two"].pid == pid_two
    config = followed.host.config_of("one")
    assert getattr(config, "timeout", None) == 99


async def test_a_server_that_never_answers_holds_up_no_later_edit(followed: Followed) -> None:
    """An edit adding a server that never answers (its startup timeout far beyond the wait) is applied at once and
    the next edit after it too: the follower starts servers and does not wait for them (it waited up to the
    startup timeout, 30 s by default, and every replica saw later edits that much later)."""
    slow = stdio_server("hang", startupTimeout=3 * WAIT)
    followed.write({"one": stdio_server("basic"), "two": stdio_server("basic"), "slow": slow})
    with anyio.fail_after(WAIT):
        done = await followed.applied()
        assert done.added == ["slow"] and followed.host.servers["slow"].state == "connecting"
        followed.write(
            {"one": stdio_server("basic"), "two": stdio_server("basic"), "slow": slow, "three": stdio_server("basic")}
        )
        done = await followed.applied()
    assert done.added == ["three"]


async def test_a_removed_entry_is_disconnected(followed: Followed) -> None:
    followed.write({"two": stdio_server("basic")})
    done = await followed.applied()
    assert done.removed == ["one"]
    assert "one" not in followed.host.servers
    assert followed.host.catalog.get("mcp__one__echo") is None


async def test_a_broken_file_is_reported_and_everything_keeps_running(followed: Followed) -> None:
    followed.path.write_text('{"mcpServers": {"one": ')
    assert not await followed.follower.check()  # nothing applied: the last good document stays in use
    failed = await next_event(followed.events, ConfigReloadFailed)
    assert failed.server is None
    assert "not valid JSON" in failed.error
    assert str(followed.path) in failed.error
    assert followed.follower.problems[None] == failed.error
    assert all(s.state == "connected" for s in followed.host.servers.values())
    # The next good edit applies, and the problem is gone.
    followed.write({"one": stdio_server("basic")})
    done = await followed.applied()
    assert done.removed == ["two"]
    assert followed.follower.problems == {}


async def test_a_broken_entry_keeps_its_last_good_config_running(followed: Followed) -> None:
    pid = followed.host.servers["one"].pid
    followed.write({"one": {"command": "x", "url": "http://both"}, "two": stdio_server("basic")})
    assert await followed.follower.check()
    failed = await next_event(followed.events, ConfigReloadFailed)
    assert failed.server == "one"
    assert "not both" in failed.error
    assert followed.host.servers["one"].state == "connected"
    assert followed.host.servers["one"].pid == pid


async def test_permission_rules_and_the_global_switch_follow_the_file(followed: Followed) -> None:
    servers = {"one": stdio_server("basic"), "two": stdio_server("basic")}
    followed.write(servers, permissions={"deny": ["mcp__one"]}, mcpEnabled=False)
    assert await followed.follower.check()
    assert followed.host.permissions.rules.deny == ("mcp__one",)
    assert followed.host.enabled is False
    assert followed.host.servers["one"].state == "stopped"
    followed.write(servers, permissions={"deny": "oops"})
    assert await followed.follower.check()
    failed = await next_event(followed.events, ConfigReloadFailed)
    assert failed.server == "permissions"
    assert followed.host.permissions.problem is not None  # a broken rule closes the gate
    assert followed.host.enabled is True


async def test_the_host_s_own_saves_give_the_follower_nothing_to_do(followed: Followed) -> None:
    await followed.host.update_server("one", {"timeout": 7})
    pid = followed.host.servers["one"].pid
    seen: list[object] = []
    followed.host.events.on(seen.append)
    assert await followed.follower.check()  # the file changed: read and compared ...
    assert seen == []  # ... and found to be what runs: nothing reconnected, nothing to tell
    assert followed.host.servers["one"].pid == pid


async def test_while_a_change_of_ours_is_made_the_follower_holds_off(followed: Followed) -> None:
    changing = [True]
    follower = ConfigFollower(followed.host, ConfigStore(followed.path), paused=lambda: changing[0])
    await follower.prime()
    followed.write({"one": stdio_server("basic")})
    assert not await follower.check()  # held off: "two" is still there
    assert "two" in followed.host.servers
    changing[0] = False
    assert await follower.check()
    assert "two" not in followed.host.servers


async def test_on_postgresql_a_write_by_another_replica_wakes_the_follower_at_once(
    tmp_path: Path, postgres: Postgres
) -> None:
    """Replica A writes the file through its store, which sends a NOTIFY; B's follower, whose own look comes only
    every hour here, applies the edit at once (the interval is the fallback; the notice made it look)."""
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {}}))
    writer = ConfigStore(path)
    host = Host(store=ConfigStore(path), log_dir=tmp_path / "logs")
    with postgres.database() as url, History(url, replica="a") as on_a, History(url, replica="b") as on_b:
        told, heard = ConfigNotices(on_a.store, path, "a"), ConfigNotices(on_b.store, path, "b")
        writer.written.append(told.notify)
        try:
            async with host, host.events.subscribe() as events, anyio.create_task_group() as tg:
                follower = ConfigFollower(host, ConfigStore(path), interval=3600)
                await follower.prime()
                tg.start_soon(follower.run)
                heard.listen(follower.wake)
                with anyio.fail_after(WAIT):
                    assert await anyio.to_thread.run_sync(heard.listening.wait, WAIT)
                    late = parse_server_config("late", {"command": "no-such-command", "disabled": True})
                    await anyio.to_thread.run_sync(writer.put_server, "late", late)
                    reloaded = await next_event(events, ConfigReloaded)
                assert reloaded.added == ["late"] and "late" in host.servers
                tg.cancel_scope.cancel()
        finally:
            heard.close()
