"""Every reader of the config file in ``serve`` reads one document: an edit made in a text editor is parsed once,
and the host's servers and rules, the gateway's profiles and settings, and the API's profiles and chat model all
see it; a broken edit leaves all of them on the last good document and is reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpdeck.events import ConfigReloaded, ConfigReloadFailed
from mcpdeck.gateway import Gateway
from mcpdeck.server import ConfigFollower
from tests.api.conftest import running_api
from tests.helpers import WAIT, next_event

pytestmark = pytest.mark.anyio


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "mcpServers": {"idle": {"command": "no-such-command", "disabled": True}},
        "permissions": {"deny": ["mcp__idle__wipe"]},
        "profiles": {"coding": {"servers": ["idle"]}},
        "gateway": {"approval": "client"},
        "model": "openai:gpt-first",
    }
    return doc | changes


async def test_an_edit_is_parsed_once_and_every_reader_sees_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPDECK_MODEL", raising=False)
    first = _doc()
    rest = {key: value for key, value in first.items() if key != "mcpServers"}
    async with running_api(tmp_path, first["mcpServers"], in_process=False, history=False, **rest) as api:
        store = api.ctx.store
        assert store is not None and api.host.config_store is store  # one store, as `serve` has it
        follower = ConfigFollower(api.host, store)
        await follower.prime()
        gateway = Gateway(api.host)
        assert set(gateway.profiles) == {"coding"}
        parses = store.parses

        edited = _doc(
            mcpServers={**first["mcpServers"], "later": {"command": "no-such-command", "disabled": True}},
            permissions={"deny": ["mcp__later"]},
            profiles={"coding": {"servers": ["idle"]}, "review": {"servers": ["later"]}},
            gateway={"approval": "ask"},
            model="openai:gpt-second",
        )
        api.config.write_text(json.dumps(edited, indent=2))  # as a text editor saves it
        async with api.host.events.subscribe() as events:
            assert await follower.check()
            with anyio.fail_after(WAIT):
                reloaded = await next_event(events, ConfigReloaded)
        assert reloaded.added == ["later"]
        assert "later" in api.host.servers  # the host's servers
        assert api.host.permissions.rules.deny == ("mcp__later",)  # the gate
        assert set(gateway.profiles) == {"coding", "review"}  # the gateway, without a look of its own
        assert gateway.approval == "ask"
        listed = (await api.client.get("/api/profiles")).json()["profiles"]  # the API
        assert [p["name"] for p in listed] == ["coding", "review"]
        assert (await api.client.get("/api/chat/models")).json()["default"] == "openai:gpt-second"
        assert store.parses == parses + 1  # one parse for all of them

        api.config.write_text(json.dumps(edited)[:-7])  # cut short: not JSON
        async with api.host.events.subscribe() as events:
            assert not await follower.check()
            with anyio.fail_after(WAIT):
                failed = await next_event(events, ConfigReloadFailed)
        assert failed.server is None and failed.error.startswith(f"{api.config}:1: not valid JSON")
        assert follower.problems == {None: failed.error}
        assert set(gateway.profiles) == {"coding", "review"} and gateway.approval == "ask"  # the last good one
        assert api.host.permissions.rules.deny == ("mcp__later",) and api.host.permissions.problem is None
        listed = (await api.client.get("/api/profiles")).json()["profiles"]
        assert [p["name"] for p in listed] == ["coding", "review"]
        assert store.parses == parses + 1
