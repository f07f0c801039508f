"""Profiles edited while clients are connected: the config file changes, the profile's clients hear of it."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcpdeck import Host
from mcpdeck.config import ConfigStore, put_profile, remove_profile
from mcpdeck.errors import ConfigError
from mcpdeck.gateway import Gateway
from tests.gateway.support import ALLOW_ALL, Seen, client
from tests.helpers import WAIT, serve_asgi, stdio_server

pytestmark = pytest.mark.anyio


def _config(tmp_path: Path, profiles: dict[str, object]) -> Path:
    path = tmp_path / "mcp.json"
    doc = {"mcpServers": {"conf": stdio_server("conformance_server")}, "permissions": ALLOW_ALL, "profiles": profiles}
    path.write_text(json.dumps(doc))
    return path


@asynccontextmanager
async def _through(path: Path, profile: str, seen: Seen) -> AsyncGenerator[Client]:
    """A host for the config at ``path``, its gateway over HTTP, and a client of ``profile``'s endpoint."""
    async with (
        Host.from_file(path, log_dir=path.parent / "logs") as host,
        Gateway(host) as gateway,
        serve_asgi(gateway.asgi()) as base,
        client(f"{base}/mcp/{profile}", seen) as via,
    ):
        yield via


async def test_a_profile_edited_in_the_file_tells_its_clients_and_only_them(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        {
            # (profiles are told in name order: "aside", told wrongly, would hear before "narrow")
            "aside": {"servers": ["conf"], "tools": {"include": ["test_image_content"]}},
            "narrow": {"servers": ["conf"], "tools": {"include": ["test_simple_text"]}},
        },
    )
    seen, elsewhere = Seen(), Seen()
    async with (
        Host.from_file(path, log_dir=tmp_path / "logs") as host,
        Gateway(host) as gateway,
        serve_asgi(gateway.asgi()) as base,
        client(f"{base}/mcp/narrow", seen) as narrow,
        client(f"{base}/mcp/aside", elsewhere) as aside,
    ):
        with anyio.fail_after(WAIT):
            before = [t.name for t in (await narrow.list_tools()).tools]
            await aside.list_tools()  # registered with the gateway: a client it could wrongly tell
            include = ["test_simple_text", "test_error_handling"]
            await anyio.to_thread.run_sync(
                lambda: put_profile(ConfigStore(path), "narrow", {"servers": ["conf"], "tools": {"include": include}})
            )
            await seen.arrival("notifications/tools/list_changed").wait()
            after = [t.name for t in (await narrow.list_tools()).tools]
            await aside.list_tools()  # one more round trip for anything wrongly sent to it
    assert before == ["mcp__conf__test_simple_text"]
    assert sorted(after) == ["mcp__conf__test_error_handling", "mcp__conf__test_simple_text"]
    assert {"notifications/resources/list_changed", "notifications/prompts/list_changed"} <= set(seen.notifications)
    assert "notifications/tools/list_changed" not in elsewhere.notifications


async def test_a_removed_profile_tells_its_clients_and_then_refuses_them_by_name(tmp_path: Path) -> None:
    path = _config(tmp_path, {"gone": {"servers": ["conf"]}})
    seen = Seen()
    async with _through(path, "gone", seen) as via:
        with anyio.fail_after(WAIT):
            assert (await via.list_tools()).tools
            await anyio.to_thread.run_sync(lambda: remove_profile(ConfigStore(path), "gone"))
            await seen.arrival("notifications/tools/list_changed").wait()
            with pytest.raises(Exception, match="no profile named 'gone'") as refused:
                await via.list_tools()
    assert "known: none" in str(refused.value)


async def test_a_broken_edit_keeps_the_profiles_that_ran(tmp_path: Path) -> None:
    path = _config(tmp_path, {"kept": {"servers": ["conf"], "tools": {"include": ["test_simple_text"]}}})
    seen = Seen()
    async with (
        Host.from_file(path, log_dir=tmp_path / "logs") as host,
        Gateway(host) as gateway,
        serve_asgi(gateway.asgi()) as base,
        client(f"{base}/mcp/kept", seen) as via,
    ):
        with anyio.fail_after(WAIT):
            await via.list_tools()
            doc = json.loads(path.read_text())
            doc["profiles"]["kept"]["prefix"] = False
            doc["profiles"]["kept"]["servers"] = ["conf", "another"]  # prefix false needs exactly one server
            path.write_text(json.dumps(doc))
            assert host.config_store is not None
            document = host.config_store.document()  # the look at the file the gateway takes twice a second
            still = [t.name for t in (await via.list_tools()).tools]
            with pytest.raises(ConfigError, match="exactly one server"):  # said, not "no such profile"
                Gateway(host, profile="another")
    assert still == ["mcp__conf__test_simple_text"]
    assert "exactly one server" in str(document.problems["profiles"])
    assert "notifications/tools/list_changed" not in seen.notifications
