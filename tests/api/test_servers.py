"""``/api/servers`` and ``/api/import`` over HTTP, against real servers (stdio, in-process, a dead remote)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from mcpdeck.events import ConfigChanged
from mcpdeck.status import ServerState, ServerStatus
from tests.api.conftest import SECRET, Api
from tests.helpers import ROOT, WAIT, next_event, stdio_server

pytestmark = pytest.mark.anyio

STATUS_KEYS = set(ServerStatus("x", state=ServerState.CONNECTED, transport="stdio", target="").to_json())


async def test_list_shows_each_server_with_status_tools_transport_and_counts(api: Api) -> None:
    answer = await api.client.get("/api/servers")
    assert answer.status_code == 200
    body = answer.json()
    assert body["config"] == str(api.config)
    servers = {s["name"]: s for s in body["servers"]}
    assert servers["basic"]["state"] == "connected"
    assert servers["basic"]["transport"] == "stdio"
    assert servers["basic"]["toolCount"] == 13
    assert servers["basic"]["uptime"] >= 0
    assert servers["inproc"]["transport"] == "in-process"
    assert servers["remote"]["state"] == "failed"
    assert servers["remote"]["error"]
    assert servers["remote"]["target"] == "http://127.0.0.1:9/mcp?key=****"
    for server in servers.values():  # the CLI's `list --json` shape, plus what a long-running process knows
        assert STATUS_KEYS <= set(server)
        assert {"uptime", "calls", "errors", "lastCallAt"} <= set(server)


async def test_get_shows_the_config_masked_and_the_tool_names(api: Api) -> None:
    body = (await api.client.get("/api/servers/basic")).json()
    assert body["config"]["env"]["API_TOKEN"] == "s3c…****"
    assert body["config"]["env"]["PLAIN"] == "****"  # every env value: a name says little about a value
    assert body["status"]["state"] == "connected"
    assert "echo" in body["tools"]
    assert body["disabledTools"] == []


async def test_an_unknown_server_is_a_404_in_the_error_shape_with_the_cli_wording(api: Api) -> None:
    answer = await api.client.get("/api/servers/nope")
    assert answer.status_code == 404
    assert answer.json() == {
        "error": {"code": "server-not-found", "message": f"no server named 'nope' in {api.config}"}
    }


async def test_add_saves_connects_and_refuses_a_duplicate_name(api: Api) -> None:
    config = stdio_server("basic")
    answer = await api.client.post("/api/servers", json={"name": "second", "config": config})
    assert answer.status_code == 201, answer.text
    assert answer.json()["status"]["state"] == "connected"
    assert api.file()["mcpServers"]["second"]["command"] == sys.executable
    again = await api.client.post("/api/servers", json={"name": "second", "config": config})
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "server-exists"


async def test_add_with_a_bad_config_says_which_key_and_why_and_saves_nothing(api: Api) -> None:
    answer = await api.client.post("/api/servers", json={"name": "bad", "config": {"command": "x", "url": "http://a"}})
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "code": "config-error",
        "message": "server 'bad': give either 'command' (stdio) or 'url' (remote), not both",
    }
    bad_name = await api.client.post("/api/servers", json={"name": "a__b", "config": {"command": "x"}})
    assert bad_name.status_code == 400
    assert "'__'" in bad_name.json()["error"]["message"]
    assert "bad" not in api.file()["mcpServers"]


async def test_a_server_that_does_not_start_is_not_saved_unless_asked_to_save_it_anyway(api: Api) -> None:
    # As `mcpdeck add`: it is tried first and saved only if it connects ...
    before = api.config.read_text()
    config = {"command": "mcpdeck-test-no-such-command"}
    answer = await api.client.post("/api/servers", json={"name": "ghost", "config": config})
    assert answer.status_code == 502, answer.text
    error = answer.json()["error"]
    assert error["code"] == "did-not-connect"
    assert error["message"].startswith("'ghost' did not connect, so it was not saved: command")
    assert "was not found on PATH" in error["message"]
    assert "saveAnyway" in error["message"]  # ... and the message says how to save it all the same
    assert api.config.read_text() == before
    assert "ghost" not in api.host.servers
    # ... or whatever happens, when the caller says so.
    anyway = await api.client.post("/api/servers", json={"name": "ghost", "config": config, "saveAnyway": True})
    assert anyway.status_code == 201, anyway.text
    status = anyway.json()["status"]
    assert status["state"] == "failed"
    assert "was not found on PATH" in status["error"]
    assert api.file()["mcpServers"]["ghost"] == config


async def test_a_disabled_server_is_saved_without_trying_it(api: Api) -> None:
    config = {"command": "mcpdeck-test-no-such-command", "disabled": True}
    answer = await api.client.post("/api/servers", json={"name": "later", "config": config})
    assert answer.status_code == 201, answer.text
    assert answer.json()["status"]["state"] == "disabled"
    assert api.file()["mcpServers"]["later"] == config


async def test_update_sends_back_the_masked_config_and_the_real_secret_is_kept(api: Api) -> None:
    shown = (await api.client.get("/api/servers/basic")).json()["config"]
    shown["timeout"] = 90
    answer = await api.client.put("/api/servers/basic", json={"config": shown})
    assert answer.status_code == 200, answer.text
    saved = api.file()["mcpServers"]["basic"]
    assert saved["env"]["API_TOKEN"] == SECRET
    assert saved["timeout"] == 90
    assert answer.json()["status"]["state"] == "connected"
    # The secret still reaches the server: the mask was never written over it.
    result = await api.client.post("/api/tools/mcp__basic__env/call", json={"arguments": {"name": "API_TOKEN"}})
    assert result.json()["content"][0]["text"] == "****"  # the answer is redacted ...
    assert api.host.servers["basic"].state == "connected"


async def test_a_masked_value_with_nothing_stored_behind_it_is_refused(api: Api) -> None:
    config = {**stdio_server("basic"), "env": {"NEW_KEY": "****"}}
    answer = await api.client.put("/api/servers/basic", json={"config": config})
    assert answer.status_code == 400
    assert "env.NEW_KEY holds a masked value" in answer.json()["error"]["message"]


async def test_the_name_is_locked_on_update(api: Api) -> None:
    answer = await api.client.put("/api/servers/basic", json={"name": "other", "config": stdio_server("basic")})
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "name-locked"
    patch = await api.client.patch("/api/servers/basic", json={"name": "other"})
    assert patch.json()["error"]["code"] == "name-locked"


async def test_patch_changes_one_key_and_keeps_the_rest(api: Api) -> None:
    answer = await api.client.patch("/api/servers/basic", json={"timeout": 120})
    assert answer.status_code == 200, answer.text
    saved = api.file()["mcpServers"]["basic"]
    assert saved["timeout"] == 120
    assert saved["env"]["API_TOKEN"] == SECRET


async def test_disable_enable_disconnect_reconnect_move_the_server(api: Api) -> None:
    disabled = await api.client.post("/api/servers/basic/disable")
    assert disabled.json()["state"] == "disabled"
    assert api.file()["mcpServers"]["basic"]["disabled"] is True
    enabled = await api.client.post("/api/servers/basic/enable")
    assert enabled.json()["state"] == "connected"
    assert "disabled" not in api.file()["mcpServers"]["basic"]
    stopped = await api.client.post("/api/servers/basic/disconnect")
    assert stopped.json()["state"] == "stopped"
    pid = api.host.servers["basic"].pid
    back = await api.client.post("/api/servers/basic/reconnect")
    assert back.json()["state"] == "connected"
    assert back.json()["pid"] not in (None, pid)


async def test_reconnect_refuses_a_disabled_server_and_says_to_enable_it(api: Api) -> None:
    await api.client.post("/api/servers/basic/disable")
    answer = await api.client.post("/api/servers/basic/reconnect")
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"] == {
        "code": "server-disabled",
        "message": "server 'basic' is disabled, so it was not reconnected; enable it first "
        "(POST /api/servers/basic/enable, `mcpdeck enable basic`, or its switch in the console)",
    }
    assert api.host.servers["basic"].state == "disabled"
    assert api.file()["mcpServers"]["basic"]["disabled"] is True


async def test_remove_disconnects_and_deletes_the_entry(api: Api) -> None:
    answer = await api.client.delete("/api/servers/basic")
    assert answer.json() == {"removed": "basic"}
    assert "basic" not in api.file()["mcpServers"]
    assert (await api.client.get("/api/servers/basic")).status_code == 404


async def test_test_without_saving_reports_tools_and_leaves_the_file_alone(api: Api) -> None:
    before = api.config.read_text()
    answer = await api.client.post("/api/test", json={"name": "trial", "config": stdio_server("basic")})
    body = answer.json()
    assert body["ok"] is True
    assert body["name"] == "trial"
    assert "echo" in body["tools"]
    failed = await api.client.post("/api/test", json={"config": {"command": "mcpdeck-test-no-such-command"}})
    assert failed.json()["ok"] is False
    assert "was not found on PATH" in failed.json()["error"]
    configured = await api.client.post("/api/servers/basic/test")
    assert configured.json()["ok"] is True
    assert api.config.read_text() == before


async def test_a_tool_can_be_disabled_and_enabled_in_the_config(api: Api) -> None:
    off = await api.client.post("/api/servers/basic/tools/echo/disable")
    assert off.status_code == 200, off.text
    assert off.json()["disabledTools"] == ["echo"]
    assert api.file()["mcpServers"]["basic"]["tools"] == {"exclude": ["echo"]}
    assert api.host.catalog.get("mcp__basic__echo") is None
    on = await api.client.post("/api/servers/basic/tools/echo/enable")
    assert on.json()["disabledTools"] == []
    assert "tools" not in api.file()["mcpServers"]["basic"]
    assert api.host.catalog.get("mcp__basic__echo") is not None


async def test_import_previews_first_then_adds(api: Api, tmp_path: Path) -> None:
    source = tmp_path / "claude_desktop_config.json"
    source.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "imported": {"command": sys.executable, "args": ["-m", "tests.servers.basic"], "cwd": str(ROOT)},
                    "basic": {"command": "whatever"},
                }
            }
        )
    )
    preview = await api.client.post("/api/import/preview", json={"source": "claude-desktop", "path": str(source)})
    assert preview.status_code == 200, preview.text
    found = {s["name"]: s for s in preview.json()["servers"]}
    assert found["basic"]["exists"] is True
    assert found["imported"]["exists"] is False
    assert "imported" not in api.file()["mcpServers"]
    done = await api.client.post("/api/import", json={"source": "claude-desktop", "path": str(source)})
    body = done.json()
    assert body["imported"] == ["imported"]
    assert "basic" in body["skipped"]
    assert body["servers"][0]["state"] == "connected"
    assert api.file()["mcpServers"]["basic"]["command"] == sys.executable  # not replaced without force


async def test_commands_racing_on_one_server_all_get_an_answer(api: Api) -> None:
    answers: list[int] = []

    async def send(path: str) -> None:
        answers.append((await api.client.post(path)).status_code)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(send, "/api/servers/inproc/disconnect")
                tg.start_soon(send, "/api/servers/inproc/reconnect")
    assert answers == [200] * 10
    final = (await api.client.post("/api/servers/inproc/reconnect")).json()
    assert final["state"] == "connected"


async def test_while_a_server_it_added_connects_the_config_follower_is_not_held_off(api: Api) -> None:
    """The follower holds off while the API writes the file and switches the server, not while the server connects:
    an edit made by another replica meanwhile would wait for the server's startup timeout (30 s by default)."""
    slow = stdio_server("hang", startupTimeout=3 * WAIT)
    async with api.host.events.subscribe() as events, anyio.create_task_group() as tg:

        async def add() -> None:
            await api.client.post("/api/servers", json={"name": "slow", "config": slow, "saveAnyway": True})

        tg.start_soon(add)
        with anyio.fail_after(WAIT):
            added = await next_event(events, ConfigChanged)
        assert (added.server, api.host.servers["slow"].state) == ("slow", ServerState.CONNECTING)
        assert api.ctx.changing == 0  # the request still waits for the server: the follower may look
        tg.cancel_scope.cancel()
