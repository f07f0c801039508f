"""Resources, prompts, completions, logs, history, permissions and the process's own endpoint, over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.api.conftest import Api, running_api
from tests.helpers import WAIT, stdio_server
from tests.servers.features import LANGUAGES, TEMPLATE
from tests.support.api_events import events_of

pytestmark = pytest.mark.anyio


@pytest.fixture
async def features(tmp_path: Path) -> AsyncIterator[Api]:
    async with running_api(tmp_path, {"features": stdio_server("features")}, in_process=False) as api:
        yield api


async def test_resources_templates_read_and_subscribe(features: Api) -> None:
    listed = (await features.client.get("/api/resources")).json()
    uris = [r["uri"] for r in listed["resources"]]
    assert "features://info" in uris
    assert listed["templates"][0]["uriTemplate"] == TEMPLATE
    templates = (await features.client.get("/api/resources/templates", params={"server": "features"})).json()
    assert templates == listed["templates"]
    read = (await features.client.post("/api/resources/read", json={"uri": "features://info"})).json()
    assert read["contents"][0]["text"] == "the features server"
    missing = await features.client.post("/api/resources/read", json={"uri": "nowhere://x", "server": "nope"})
    assert missing.status_code == 404

    opened, updated = anyio.Event(), anyio.Event()

    async def watch() -> None:
        async for event in events_of(features.client, opened=opened):
            if event["type"] == "ResourceUpdated" and event["uri"] == "note://first":
                updated.set()
                return

    subscribed = await features.client.post("/api/resources/subscribe", json={"uri": "note://first"})
    assert subscribed.json() == {"subscribed": "note://first"}
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        with anyio.fail_after(WAIT):
            await opened.wait()
        await features.client.post("/api/tools/mcp__features__touch/call", json={"arguments": {"uri": "note://first"}})
        with anyio.fail_after(WAIT):
            await updated.wait()
    gone = await features.client.post("/api/resources/unsubscribe", json={"uri": "note://first"})
    assert gone.json() == {"unsubscribed": "note://first"}


async def test_prompts_and_completions(features: Api) -> None:
    prompts = (await features.client.get("/api/prompts")).json()
    assert [p["prompt"] for p in prompts] == ["review", "greet", "plain"]
    one = (await features.client.get("/api/prompts/mcp__features__greet")).json()
    assert one["arguments"] == [{"name": "name", "description": None, "required": True}]
    got = await features.client.post("/api/prompts/mcp__features__greet/get", json={"arguments": {"name": "Ada"}})
    assert got.json()["messages"][0]["content"]["text"] == "Hello, Ada!"
    missing_arg = await features.client.post("/api/prompts/mcp__features__greet/get", json={"arguments": {}})
    assert missing_arg.status_code == 422
    assert (
        missing_arg.json()["error"]["message"]
        == "invalid arguments for mcp__features__greet: 'name' is a required argument"
    )
    unknown = await features.client.get("/api/prompts/mcp__features__nope")
    assert unknown.json()["error"]["code"] == "prompt-not-found"
    languages = await features.client.post(
        "/api/completions", json={"prompt": "mcp__features__review", "argument": "language", "value": "p"}
    )
    starting_p = [lang for lang in LANGUAGES if lang.startswith("p")]
    assert languages.json() == {"values": starting_p, "total": len(starting_p), "hasMore": False}
    notes = await features.client.post(
        "/api/completions", json={"server": "features", "uriTemplate": TEMPLATE, "argument": "id", "value": "s"}
    )
    assert notes.json() == {"values": ["second"], "total": 1, "hasMore": False}
    neither = await features.client.post("/api/completions", json={"argument": "id"})
    assert neither.status_code == 422


async def test_a_log_is_tailed_and_followed(api: Api) -> None:
    tail = (await api.client.get("/api/servers/basic/logs", params={"lines": 1000})).json()
    assert tail["path"].endswith("basic.log")
    assert any("mcpdeck starting basic" in line for line in tail["lines"])
    none = await api.client.get("/api/servers/inproc/logs")
    assert none.status_code == 404
    assert none.json()["error"]["message"] == "'inproc' runs in-process; it has no log file"

    lines: list[str] = []

    async def follow() -> None:
        async for event in events_of(api.client, "/api/servers/basic/logs/follow?lines=0"):
            lines.append(event["line"])
            if "mcpdeck starting basic" in event["line"]:
                return

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await api.client.post("/api/servers/basic/reconnect")  # a new session writes a header line
    assert "mcpdeck starting basic" in lines[-1]


async def test_history_lists_calls_with_filters(api: Api) -> None:
    await api.client.post("/api/tools/mcp__basic__echo/call", json={"arguments": {"text": "one"}})
    await api.client.post("/api/tools/mcp__basic__fail/call", json={"arguments": {"message": "boom"}})
    await api.client.post("/api/tools/mcp__inproc__add/call", json={"arguments": {"a": 1, "b": 2}})
    every = (await api.client.get("/api/history/calls")).json()
    assert [c["name"] for c in every["toolCalls"]] == ["mcp__inproc__add", "mcp__basic__fail", "mcp__basic__echo"]
    by_server = (await api.client.get("/api/history/calls", params={"server": "basic"})).json()["toolCalls"]
    assert [c["tool"] for c in by_server] == ["fail", "echo"]
    errors = (await api.client.get("/api/history/calls", params={"status": "tool-error"})).json()["toolCalls"]
    assert [c["tool"] for c in errors] == ["fail"]
    text = (await api.client.get("/api/history/calls", params={"q": "ECHO", "limit": 1})).json()["toolCalls"]
    assert [c["tool"] for c in text] == ["echo"]
    # `total` counts every call the filters match, not only the page the limit lets through.
    assert every["total"] == 3
    page = (await api.client.get("/api/history/calls", params={"limit": 2})).json()
    assert (len(page["toolCalls"]), page["total"]) == (2, 3)
    narrowed = (await api.client.get("/api/history/calls", params={"server": "basic", "q": "A", "limit": 1})).json()
    assert ([c["tool"] for c in narrowed["toolCalls"]], narrowed["total"]) == (["fail"], 2)
    ok = (await api.client.get("/api/history/calls", params={"status": "ok", "limit": 1})).json()
    assert ([c["tool"] for c in ok["toolCalls"]], ok["total"]) == (["add"], 2)
    conversations = (await api.client.get("/api/history/conversations")).json()
    assert conversations["conversations"] == []
    missing = await api.client.get("/api/history/conversations/7")
    assert missing.status_code == 404
    # One call, with the start of its result (the list carries none).
    assert "result" not in every["toolCalls"][0]
    one = (await api.client.get(f"/api/history/calls/{every['toolCalls'][0]['callId']}")).json()
    assert (one["toolCall"]["name"], one["toolCall"]["result"]) == ("mcp__inproc__add", "3")
    unknown = await api.client.get("/api/history/calls/nope")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "call-not-found"


async def test_permissions_are_read_and_replaced_in_the_config(api: Api) -> None:
    assert (await api.client.get("/api/permissions")).json() == {"allow": [], "ask": [], "deny": [], "problem": None}
    rules = {"allow": ["mcp__basic__echo"], "ask": [], "deny": ["mcp__basic__crash"]}
    answer = await api.client.put("/api/permissions", json=rules)
    assert answer.json() == rules | {"problem": None}
    assert api.file()["permissions"] == {"allow": ["mcp__basic__echo"], "deny": ["mcp__basic__crash"]}
    decision = api.host.permissions.decide_by_rules(api.host.catalog.get("mcp__basic__crash"))  # type: ignore[arg-type]
    assert decision is not None and not decision.allowed
    bad = await api.client.put("/api/permissions", json={"allow": [""]})
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == "permissions.allow[0]: expected a non-empty pattern string, got ''"
    assert api.file()["permissions"]["deny"] == ["mcp__basic__crash"]


async def test_the_host_endpoint_and_the_global_switch(api: Api) -> None:
    info = (await api.client.get("/api/host")).json()
    assert info["config"] == str(api.config)
    assert info["enabled"] is True
    off = (await api.client.post("/api/host/disable")).json()
    assert off["enabled"] is False
    assert api.file()["mcpEnabled"] is False
    assert api.host.servers["basic"].state == "stopped"
    on = (await api.client.post("/api/host/enable")).json()
    assert on["enabled"] is True
    assert api.host.servers["basic"].state == "connected"


async def test_errors_for_unknown_routes_and_bad_bodies_keep_the_one_shape(api: Api) -> None:
    unknown = await api.client.get("/api/nothing-here")
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "not-found"
    bad = await api.client.post("/api/servers", content=b"{not json", headers={"content-type": "application/json"})
    assert bad.status_code == 422
    assert set(bad.json()) == {"error"}
    wrong = await api.client.post("/api/servers", json={"name": "x"})
    assert wrong.status_code == 422
    body: dict[str, Any] = wrong.json()
    assert body["error"]["code"] == "invalid-request"
    assert "config" in body["error"]["message"]
    method = await api.client.delete("/api/tools")
    assert method.status_code == 405
    assert json.loads(method.text)["error"]["code"] == "method-not-allowed"
