"""The gateway over streamable HTTP, driven by real clients: the SDK ``Client`` and mcpdeck's own ``Host``.

Behind it runs the conformance test server (over stdio), so what a client sees through the
gateway can be compared with what the same server says directly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import PromptsListChanged, ResourceUpdated

from mcpdeck import Host
from mcpdeck._util.version import __version__
from mcpdeck.gateway import GatewayToken
from mcpdeck.history import History
from mcpdeck.status import ServerState
from tests.gateway.support import Seen, client, handshake_era, served_gateway
from tests.helpers import ROOT, WAIT, stdio_server
from tests.servers.conformance_server import AUDIO, PNG

pytestmark = pytest.mark.anyio

NO_PREFIX = {"conf": {"servers": ["conf"], "prefix": False}}


def _direct(seen: Seen, **options: Any) -> Client:
    """An SDK client connected straight to the conformance server (no gateway)."""
    args = ["-m", "tests.servers.conformance_server"]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))
    return client(params, seen, **options)


def _dump(items: list[Any]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items]


async def test_a_no_prefix_profile_lists_exactly_what_the_server_lists(log_dir: Path) -> None:
    async with served_gateway(log_dir, profiles=NO_PREFIX) as served:
        async with client(served.url("conf"), Seen()) as via, _direct(Seen()) as direct:
            with anyio.fail_after(WAIT):
                for method in ("list_tools", "list_resources", "list_resource_templates", "list_prompts"):
                    got: Any = await getattr(via, method)()
                    want: Any = await getattr(direct, method)()
                    field = {
                        "list_tools": "tools",
                        "list_resources": "resources",
                        "list_resource_templates": "resource_templates",
                        "list_prompts": "prompts",
                    }[method]
                    assert _dump(getattr(got, field)) == _dump(getattr(want, field)), method


async def test_the_whole_catalog_is_served_under_catalog_names_with_content_unchanged(log_dir: Path) -> None:
    async with served_gateway(log_dir) as served, client(served.url(), Seen()) as via:
        with anyio.fail_after(WAIT):
            names = [tool.name for tool in (await via.list_tools()).tools]
            mixed = await via.call_tool("mcp__conf__test_multiple_content_types", {})
            audio = await via.call_tool("mcp__conf__test_audio_content", {})
            listed = (await via.list_tools()).tools
    schema_tool = next(t for t in listed if t.name == "mcp__conf__json_schema_2020_12_tool")
    assert "mcp__conf__test_simple_text" in names and "test_simple_text" not in names
    image, resource = mixed.content[1], mixed.content[2]
    assert isinstance(image, types.ImageContent) and image.data == PNG and image.mime_type == "image/png"
    assert isinstance(resource, types.EmbeddedResource)
    assert resource.resource.model_dump(mode="json", by_alias=True, exclude_none=True) == {
        "uri": "test://mixed-content-resource",
        "mimeType": "application/json",
        "text": json.dumps({"test": "data", "value": 123}),
    }
    assert isinstance(audio.content[0], types.AudioContent) and audio.content[0].data == AUDIO
    assert schema_tool.input_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema_tool.input_schema["additionalProperties"] is False


async def test_progress_and_log_messages_of_a_call_arrive_before_its_result(log_dir: Path) -> None:
    seen = Seen()
    updates: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total))

    async with served_gateway(log_dir, profiles=NO_PREFIX) as served, client(served.url("conf"), seen) as via:
        with anyio.fail_after(WAIT):
            with handshake_era():
                await via.set_logging_level("debug")  # pyright: ignore[reportDeprecated]
            await via.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
            logged = await via.call_tool("test_tool_with_logging", {})
            logs_at_result = [log.data for log in seen.logs]
    assert updates == [(0.0, 100.0), (50.0, 100.0), (100.0, 100.0)]
    assert not logged.is_error
    assert logs_at_result == ["Tool execution started", "Tool processing data", "Tool execution completed"]


async def test_elicitation_and_sampling_go_to_the_client_that_made_the_call(log_dir: Path) -> None:
    seen = Seen()
    answer = {"username": "ada", "email": "ada@example.com"}
    async with served_gateway(log_dir, profiles=NO_PREFIX) as served:
        async with client(served.url("conf"), seen, answer=answer) as via:
            with anyio.fail_after(WAIT):
                asked = await via.call_tool("test_elicitation", {"message": "who are you?"})
                sampled = await via.call_tool("test_sampling", {"prompt": "say something"})
    assert [e.message for e in seen.elicitations] == ["who are you?"]
    assert isinstance(asked.content[0], types.TextContent)
    assert asked.content[0].text == f"User response: action=accept, content={json.dumps(answer)}"
    assert len(seen.samplings) == 1
    first = seen.samplings[0].messages[0].content
    assert isinstance(first, types.TextContent) and first.text == "say something"
    assert isinstance(sampled.content[0], types.TextContent)
    assert sampled.content[0].text == "LLM response: sampled by the client"


async def test_a_client_without_elicitation_gets_the_hosts_answer_instead(log_dir: Path) -> None:
    async with served_gateway(log_dir, profiles=NO_PREFIX) as served:
        async with client(served.url("conf"), Seen(), elicitation=False, sampling=False) as via:
            with anyio.fail_after(WAIT):
                asked = await via.call_tool("test_elicitation", {"message": "who are you?"})
                with pytest.raises(MCPError) as sampled:  # the server's call fails: no one could sample
                    await via.call_tool("test_sampling", {"prompt": "hi"})
    assert isinstance(asked.content[0], types.TextContent)
    assert asked.content[0].text == "User response: action=decline, content=null"  # the host has no handler
    assert "sampling" in sampled.value.message


async def test_errors_keep_the_servers_codes_and_messages(log_dir: Path) -> None:
    async with served_gateway(log_dir, profiles=NO_PREFIX) as served, client(served.url("conf"), Seen()) as via:
        with anyio.fail_after(WAIT):
            failed = await via.call_tool("test_error_handling", {})
            with pytest.raises(MCPError) as missing:
                await via.read_resource("test://nothing-here")
            with pytest.raises(MCPError) as unknown:
                await via.call_tool("no_such_tool", {})
    assert failed.is_error
    assert isinstance(failed.content[0], types.TextContent)
    assert failed.content[0].text == "This tool intentionally returns an error for testing"
    assert missing.value.code == -32002 and missing.value.message == "Resource not found: test://nothing-here"
    assert unknown.value.code == -32602 and "no_such_tool" in unknown.value.message


async def test_resources_prompts_and_completions_pass_through(log_dir: Path) -> None:
    async with served_gateway(log_dir, profiles=NO_PREFIX) as served, client(served.url("conf"), Seen()) as via:
        with anyio.fail_after(WAIT):
            binary = await via.read_resource("test://static-binary")
            templated = await via.read_resource("test://template/42/data")
            prompt = await via.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
            done = await via.complete(
                types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                {"name": "arg1", "value": "par"},
            )
            with handshake_era():
                await via.subscribe_resource("test://watched-resource")  # pyright: ignore[reportDeprecated]
                await via.unsubscribe_resource("test://watched-resource")  # pyright: ignore[reportDeprecated]
    blob = binary.contents[0]
    assert isinstance(blob, types.BlobResourceContents) and blob.blob == PNG
    text = templated.contents[0]
    assert isinstance(text, types.TextResourceContents)
    assert json.loads(text.text) == {"id": "42", "templateTest": True, "data": "Data for ID: 42"}
    message = prompt.messages[0].content
    assert isinstance(message, types.TextContent) and message.text == "Prompt with arguments: arg1='a', arg2='b'"
    assert done.completion.values == ["paris", "park", "party"]


async def test_list_changes_and_resource_updates_reach_subscribed_clients(log_dir: Path) -> None:
    servers = {"features": stdio_server("features", "--legacy")}
    seen = Seen()
    async with served_gateway(log_dir, servers) as served, client(served.url(), seen) as via:
        with anyio.fail_after(WAIT):
            with handshake_era():
                await via.subscribe_resource("note://first")  # pyright: ignore[reportDeprecated]
            await via.call_tool("mcp__features__touch", {"uri": "note://first"})
            await via.call_tool("mcp__features__grow_prompts", {"prompt_name": "grown"})
            await seen.arrival("notifications/resources/updated").wait()
            await seen.arrival("notifications/prompts/list_changed").wait()
            prompts = [p.name for p in (await via.list_prompts()).prompts]
    assert "mcp__features__grown" in prompts


async def test_a_token_guards_http_and_a_bound_token_opens_only_its_profile(log_dir: Path) -> None:
    tokens = {"all": GatewayToken("secret-all"), "conf": GatewayToken("secret-conf", profile="conf")}
    async with served_gateway(log_dir, profiles=NO_PREFIX, tokens=tokens) as served:
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        async with httpx2.AsyncClient() as http:
            bare = await http.post(served.url(), json=body)
            wrong = await http.post(served.url(), json=body, headers={"Authorization": "Bearer nope"})
            other = await http.post(served.url("other"), json=body, headers={"Authorization": "Bearer secret-conf"})
        assert bare.status_code == 401 and bare.headers["www-authenticate"].startswith("Bearer")
        assert wrong.status_code == 401
        assert other.status_code == 403
        # mcpdeck's own host as the client: a gateway of gateways.
        specs = {
            "all": {"type": "http", "url": served.url(), "headers": {"Authorization": "Bearer secret-all"}},
            "one": {"type": "http", "url": served.url(), "headers": {"Authorization": "Bearer secret-conf"}},
        }
        async with Host(specs, log_dir=log_dir / "outer") as outer:
            assert outer.servers["all"].state is ServerState.CONNECTED, outer.servers["all"].error
            assert outer.servers["one"].state is ServerState.CONNECTED, outer.servers["one"].error
            assert "mcp__all__mcp__conf__test_simple_text" in outer.catalog
            assert "mcp__one__test_simple_text" in outer.catalog  # the bound token's profile, no prefix
            with anyio.fail_after(WAIT):
                result = await outer.call_tool("mcp__one__test_simple_text", {})
    assert result.text() == "This is a simple text response for testing."


async def test_a_request_with_a_foreign_host_header_is_refused(log_dir: Path) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    async with served_gateway(log_dir) as served, httpx2.AsyncClient() as http:
        evil = await http.post(served.url(), json=body, headers={**headers, "Host": "evil.example.com"})
        local = await http.post(served.url(), json=body, headers=headers)
        unknown = await http.post(served.url("nope"), json=body, headers=headers)
    assert 400 <= evil.status_code < 500
    assert local.status_code == 200
    assert unknown.status_code == 404 and "no profile named 'nope'" in unknown.text


def test_a_hundred_clients_at_once_each_get_their_own_answers(log_dir: Path) -> None:
    """100 HTTP sessions at once, two calls each, every answer checked against its own call.

    A plain test running its own event loop with its own bound (60 s), not the suite's 30 s:
    100 sessions cost a few seconds of CPU, and the machine the suite runs on may be busy. The clients
    share one HTTP client: each one of its own would load the CA bundle for its TLS context (~0.2 s of
    CPU each, in this loop, for plain HTTP), most of what the test cost."""
    failures: list[str] = []
    clients_seen: list[int] = []

    async def run() -> None:
        with anyio.fail_after(60):
            await serve()

    async def serve() -> None:
        shared = httpx2.AsyncClient(timeout=httpx2.Timeout(WAIT, read=None), limits=httpx2.Limits(max_connections=None))
        async with served_gateway(log_dir, profiles=NO_PREFIX) as served, shared:

            async def one(index: int) -> None:
                transport = streamable_http_client(served.url("conf"), http_client=shared)
                async with client(transport, Seen(), name=f"client-{index}", mode="legacy") as via:
                    for round_ in range(2):
                        name = f"client-{index}-round-{round_}"
                        result = await via.call_tool("json_schema_2020_12_tool", {"name": name})
                        text = result.content[0]
                        if result.is_error or not isinstance(text, types.TextContent):
                            failures.append(f"{name}: {result}")
                        elif json.loads(text.text.removeprefix("Received: ")) != {"name": name}:
                            failures.append(f"{name} got {text.text}")
                    clients_seen.append(len(served.gateway.clients))

            async with anyio.create_task_group() as tg:
                for index in range(100):
                    tg.start_soon(one, index)

    anyio.run(run)
    assert failures == []
    assert max(clients_seen) > 1  # they really were connected at the same time


async def test_the_gate_applies_and_every_call_is_in_the_history_with_its_client(log_dir: Path, tmp_path: Path) -> None:
    rules = {"deny": ["mcp__conf__test_error_handling"], "ask": ["mcp__conf__test_simple_text"]}
    history = History(tmp_path / "history.db")
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX) as served:
        served.host.history = history
        async with client(served.url("conf"), Seen(), answer={"decision": "once"}, name="asker") as yes_client:
            with anyio.fail_after(WAIT):
                denied = await yes_client.call_tool("test_error_handling", {})
                allowed = await yes_client.call_tool("test_simple_text", {})
        async with client(served.url("conf"), Seen(), answer={"decision": "deny"}, name="refuser") as no_client:
            with anyio.fail_after(WAIT):
                refused = await no_client.call_tool("test_simple_text", {})
        async with client(served.url("conf"), Seen(), elicitation=False, name="mute") as mute:
            with anyio.fail_after(WAIT):
                unasked = await mute.call_tool("test_simple_text", {})
    records = {(r.caller, r.tool, r.status) for r in history.tool_calls()}
    history.close()
    assert denied.is_error and "denied by the rule" in str(denied.content[0])
    assert not allowed.is_error
    assert refused.is_error and "refused by refuser 1.0 (it answered deny)" in str(refused.content[0])
    assert unasked.is_error and "mute 1.0 cannot be asked" in str(unasked.content[0])
    assert ("asker 1.0 (via profile conf)", "test_simple_text", "ok") in records
    assert ("asker 1.0 (via profile conf)", "test_error_handling", "denied") in records
    assert ("mute 1.0 (via profile conf)", "test_simple_text", "denied") in records


async def test_a_gateway_in_front_names_its_client_to_the_gateway_behind_when_told_to(
    log_dir: Path, tmp_path: Path
) -> None:
    """Two gateways chained (as ``serve --stdio`` attached to a running ``serve``): with ``forwardCaller`` on
    the front host's entry for the gateway behind, the history behind names the front's client, beside the
    front gateway that relayed it; without it, the front gateway only, and a stated name is made safe."""
    history = History(tmp_path / "history.db")
    async with served_gateway(log_dir, profiles=NO_PREFIX) as behind:
        behind.host.history = history
        entry = {"type": "http", "url": behind.url("conf")}
        fronts = {"told": {**entry, "forwardCaller": True}, "untold": entry}
        async with served_gateway(log_dir / "front", fronts) as front:
            async with client(front.url(), Seen(), name="claude-ai", mode="legacy") as via:
                with anyio.fail_after(WAIT):
                    told = await via.call_tool("mcp__told__test_simple_text", {})
                    untold = await via.call_tool("mcp__untold__test_simple_text", {})
        async with client(behind.url("conf"), Seen(), name="liar") as direct:
            with anyio.fail_after(WAIT):
                stated: types.RequestParamsMeta = {"io.mcpdeck/client": "x\x1b[2Jy" + "z" * 300}
                await direct.session.call_tool("test_simple_text", {}, meta=stated)
    callers = [r.caller for r in history.tool_calls()]
    history.close()
    assert not told.is_error and not untold.is_error
    front_client = f"mcpdeck {__version__} (via profile conf)"
    assert f"claude-ai 1.0 (via {front_client})" in callers
    assert front_client in callers
    lie = next(c for c in callers if c is not None and "liar" in c)
    assert lie.startswith("x\\x1b[2Jy") and "\x1b" not in lie  # shown escaped, never acted on
    assert lie.endswith("\u2026 (via liar 1.0 (via profile conf))")  # cut short


async def test_clients_of_the_old_sse_transport_are_served_too(log_dir: Path) -> None:
    async with served_gateway(log_dir, profiles=NO_PREFIX) as served:
        specs = {
            "all": {"type": "sse", "url": f"{served.url()}/sse"},
            "one": {"type": "sse", "url": f"{served.url('conf')}/sse"},
        }
        async with Host(specs, log_dir=log_dir / "outer") as outer:
            assert outer.servers["all"].state is ServerState.CONNECTED, outer.servers["all"].error
            assert outer.servers["one"].state is ServerState.CONNECTED, outer.servers["one"].error
            with anyio.fail_after(WAIT):
                via_all = await outer.call_tool("mcp__all__mcp__conf__test_simple_text", {})
                via_one = await outer.call_tool("mcp__one__test_image_content", {})
    assert via_all.text() == "This is a simple text response for testing."
    image = via_one.content[0]
    assert isinstance(image, types.ImageContent) and image.data == PNG


async def test_a_2026_client_is_asked_the_servers_questions_in_rounds(log_dir: Path) -> None:
    seen = Seen()
    answer = {"username": "m", "email": "m@example.com"}
    async with served_gateway(log_dir, profiles=NO_PREFIX, modern=True) as served:
        async with client(served.url("conf"), seen, answer=answer, mode="auto") as via:
            with anyio.fail_after(WAIT):
                asked = await via.call_tool("test_elicitation", {"message": "in rounds?"})
                sampled = await via.call_tool("test_sampling", {"prompt": "hello"})
                protocol = via.protocol_version
    assert protocol == "2026-07-28"
    assert [e.message for e in seen.elicitations] == ["in rounds?"]
    assert isinstance(asked.content[0], types.TextContent)
    assert asked.content[0].text == f"User response: action=accept, content={json.dumps(answer)}"
    assert isinstance(sampled.content[0], types.TextContent)
    assert sampled.content[0].text == "LLM response: sampled by the client"
    assert served.gateway.parked == {}  # every parked call was collected


async def test_resources_and_prompts_the_rules_deny_are_neither_listed_nor_served(log_dir: Path) -> None:
    rules = {"allow": ["mcp__*"], "deny": ["mcp__conf__resource:test://static-binary", "mcp__conf__prompt:*image*"]}
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX) as served:
        async with client(served.url("conf"), Seen()) as via:
            with anyio.fail_after(WAIT):
                uris = {str(r.uri) for r in (await via.list_resources()).resources}
                prompts = {p.name for p in (await via.list_prompts()).prompts}
                with pytest.raises(MCPError) as read:
                    await via.read_resource("test://static-binary")
                with pytest.raises(MCPError) as prompt:
                    await via.get_prompt("test_prompt_with_image")
                allowed = await via.read_resource("test://static-text")
    assert "test://static-binary" not in uris and "test://static-text" in uris
    assert "test_prompt_with_image" not in prompts and "test_simple_prompt" in prompts
    assert "Permission denied" in read.value.message and "static-binary" in read.value.message
    assert "Permission denied" in prompt.value.message
    assert allowed.contents


async def test_a_2026_client_listens_for_list_changes_and_resource_updates(log_dir: Path) -> None:
    servers = {"features": stdio_server("features", "--legacy")}
    async with served_gateway(log_dir, servers) as served, client(served.url(), Seen(), mode="auto") as via:
        events: list[object] = []
        with anyio.fail_after(WAIT):
            assert via.protocol_version == "2026-07-28"
            async with via.listen(prompts_list_changed=True, resource_subscriptions=["note://first"]) as stream:
                during = served.gateway.clients.subscribed()
                await via.call_tool("mcp__features__touch", {"uri": "note://first"})
                events.append(await anext(stream))
                await via.call_tool("mcp__features__touch", {"uri": "note://other"})  # not asked for
                await via.call_tool("mcp__features__grow_prompts", {"prompt_name": "grown"})
                events.append(await anext(stream))
            prompts = [p.name for p in (await via.list_prompts()).prompts]
    assert served.gateway.clients.subscribed() == set()  # the stream's subscription ended with it
    assert during == {"note://first"}
    assert events == [ResourceUpdated(uri="note://first"), PromptsListChanged()]
    assert "mcp__features__grown" in prompts


async def test_wrong_tokens_from_many_loopback_addresses_are_limited_yet_the_right_token_passes(log_dir: Path) -> None:
    """``gateway --port`` had no limit at all: any number of guesses, from any number of addresses."""
    from tests.support.token_guesses import guesses_from_many_addresses

    tokens = {"all": GatewayToken("secret-all-0123456789")}
    async with served_gateway(log_dir, {}, tokens=tokens) as served:
        codes = await guesses_from_many_addresses(served.base, "/mcp", 60)
        assert codes[:10] == [401] * 10
        assert set(codes[10:]) == {429}
        headers = {"Authorization": "Bearer secret-all-0123456789", "Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient() as http:
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            answer = await http.post(served.url(), json=ping, headers=headers)  # the user is never locked out
            wrong = await http.post(served.url(), json=ping, headers={**headers, "Authorization": "Bearer nope"})
    assert answer.status_code not in (401, 429), answer.text  # past the token check (a ping with no session)
    assert "session" in answer.text
    assert wrong.status_code == 429
    assert int(wrong.headers["retry-after"]) > 0
