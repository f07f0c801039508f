"""The gate on every request through the gateway, and what one client's session and approvals are worth to
another: real SDK clients over streamable HTTP (and the old HTTP+SSE transport), two tokens.

DESIGN.md: a ``deny`` covers every request to that server, whatever its kind and whatever face it came
through; nothing is allowed silently on another client's approval.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

from mcpdeck import Host
from mcpdeck.gateway import Gateway, GatewayToken
from mcpdeck.traffic import Traffic
from tests.gateway.support import Seen, client, handshake_era, served_gateway
from tests.helpers import WAIT, serve_asgi, stdio_server

pytestmark = pytest.mark.anyio

NO_PREFIX = {"conf": {"servers": ["conf"], "prefix": False}}
TOKENS = {"alice": GatewayToken("secret-alice"), "bob": GatewayToken("secret-bob")}
EITHER: TypeAdapter[types.CallToolResult | types.InputRequiredResult] = TypeAdapter(
    types.CallToolResult | types.InputRequiredResult
)
LISTS = {"tools/list", "resources/list", "resources/templates/list", "prompts/list", "ping"}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _http(token: str, seen_sessions: list[str] | None = None) -> httpx2.AsyncClient:
    """An HTTP client presenting ``token``; the session ids the gateway hands it go to ``seen_sessions``."""

    async def note(response: httpx2.Response) -> None:
        session = response.headers.get("mcp-session-id")
        if seen_sessions is not None and session and session not in seen_sessions:
            seen_sessions.append(session)

    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, event_hooks={"response": [note]})


async def test_a_denied_server_is_sent_no_completion_subscription_or_log_level(log_dir: Path) -> None:
    """Completions, subscriptions and log levels went to a server a ``deny`` rule covers: only calls, reads and
    prompts were gated. The traffic the host keeps shows what reached each server."""
    rules = {"allow": ["mcp__*"], "deny": ["mcp__conf"]}
    servers = {"conf": stdio_server("conformance_server"), "other": stdio_server("conformance_server")}
    traffic = Traffic()
    async with (
        Host(servers, log_dir=log_dir, permissions=rules, traffic=traffic) as host,
        Gateway(host, profiles={"conf": {"servers": ["conf"], "prefix": False}}) as gateway,
        serve_asgi(gateway.asgi()) as base,
    ):
        async with client(f"{base}/mcp/conf", Seen()) as via, client(f"{base}/mcp", Seen()) as everything:
            with anyio.fail_after(WAIT):
                prompt = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
                with pytest.raises(MCPError) as completed:
                    await via.complete(prompt, {"name": "arg1", "value": "par"})
                template = types.ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data")
                with pytest.raises(MCPError) as templated:
                    await via.complete(template, {"name": "id", "value": "4"})
                with handshake_era(), pytest.raises(MCPError) as subscribed:
                    await via.subscribe_resource("test://watched-resource")  # pyright: ignore[reportDeprecated]
                with handshake_era():
                    await everything.set_logging_level("debug")  # pyright: ignore[reportDeprecated]
        upstream = gateway.clients.subscribed()
    sent = {(m.server, m.method) for m in traffic.recent() if m.direction == "out" and m.kind == "request"}
    assert "Permission denied" in completed.value.message and "'mcp__conf'" in completed.value.message
    assert "Permission denied" in templated.value.message
    assert "Permission denied" in subscribed.value.message and "watched-resource" in subscribed.value.message
    assert upstream == set()
    assert {method for server, method in sent if server == "conf"} <= {"initialize", "server/discover"} | LISTS
    assert ("other", "logging/setLevel") in sent  # the allowed server got it


async def test_what_a_deny_covers_is_not_listed_tools_included(log_dir: Path) -> None:
    """The tools of a server denied as a whole were listed (calling them was refused) while its resources and
    prompts were hidden. Now a deny hides what it covers, tools too: the whole server, or single tools."""
    rules = {"allow": ["mcp__*"], "deny": ["mcp__conf", "mcp__other__test_simple_*"]}
    servers = {"conf": stdio_server("conformance_server"), "other": stdio_server("conformance_server")}
    async with served_gateway(log_dir, servers, permissions=rules) as served:
        async with client(served.url(), Seen()) as via:
            with anyio.fail_after(WAIT):
                tools = {tool.name for tool in (await via.list_tools()).tools}
                prompts = {prompt.name for prompt in (await via.list_prompts()).prompts}
                refused = await via.call_tool("mcp__other__test_simple_text", {})
    assert tools and not {name for name in tools if name.startswith("mcp__conf__")}
    assert "mcp__other__test_simple_text" not in tools and "mcp__other__test_image_content" in tools
    assert prompts and not {name for name in prompts if name.startswith("mcp__conf__")}
    assert refused.is_error and "denied by the rule 'mcp__other__test_simple_*'" in str(refused.content)


async def test_a_deny_on_some_resources_keeps_their_subscriptions_but_not_the_others(log_dir: Path) -> None:
    rules = {"allow": ["mcp__*"], "deny": ["mcp__conf__resource:test://watched-*"]}
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX) as served:
        async with client(served.url("conf"), Seen()) as via:
            with anyio.fail_after(WAIT), handshake_era():
                with pytest.raises(MCPError) as refused:
                    await via.subscribe_resource("test://watched-resource")  # pyright: ignore[reportDeprecated]
                await via.subscribe_resource("test://static-text")  # pyright: ignore[reportDeprecated]
                during = served.gateway.clients.subscribed()
    assert "Permission denied" in refused.value.message
    assert during == {"test://static-text"}


async def test_a_2026_listen_stream_does_not_subscribe_to_a_denied_resource(log_dir: Path) -> None:
    rules = {"allow": ["mcp__*"], "deny": ["mcp__conf__resource:test://watched-*"]}
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX, modern=True) as served:
        async with client(served.url("conf"), Seen(), mode="auto") as via:
            with anyio.fail_after(WAIT):
                assert via.protocol_version == "2026-07-28"
                with pytest.raises(MCPError) as refused:
                    async with via.listen(resource_subscriptions=["test://watched-resource"]):
                        pass
    assert "Permission denied" in refused.value.message
    assert served.gateway.clients.subscribed() == set()


async def test_a_session_belongs_to_the_token_that_opened_it(log_dir: Path) -> None:
    """Bob, holding his own token and Alice's session id (from a log, a proxy), is told the session does not
    exist, as if it never did: he cannot call in it, read its stream, or end it."""
    async with served_gateway(log_dir, profiles=NO_PREFIX, tokens=TOKENS) as served:
        sessions: list[str] = []
        async with _http("secret-alice", sessions) as alice_http:
            transport = streamable_http_client(served.url("conf"), http_client=alice_http)
            async with client(transport, Seen(), name="alice") as alice:
                with anyio.fail_after(WAIT):
                    await alice.list_tools()
                    (session,) = sessions
                    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
                    call["params"] = {"name": "test_simple_text", "arguments": {}}  # type: ignore[assignment]
                    as_bob = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
                    async with _http("secret-bob") as bob:
                        posted = await bob.post(served.url("conf"), json=call, headers=as_bob)
                        streamed = await bob.get(served.url("conf"), headers={**as_bob, "Accept": "text/event-stream"})
                        ended = await bob.delete(served.url("conf"), headers=as_bob)
                    still = await alice.call_tool("test_simple_text", {})  # her session is untouched
    for answer in (posted, streamed, ended):
        assert answer.status_code == 404, f"{answer.request.method}: {answer.status_code} {answer.text}"
        assert "Session not found" in answer.text
    assert not still.is_error


async def test_a_session_approval_is_worth_nothing_to_another_client_or_token(log_dir: Path) -> None:
    """Alice allows a tool "for this session": her later calls are not asked again; Bob's are, and so are
    those of a second session under her own token."""
    rules = {"ask": ["mcp__conf__test_simple_text"]}
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX, tokens=TOKENS) as served:
        alice_seen, again_seen, bob_seen = Seen(), Seen(), Seen()
        session = {"decision": "session"}
        async with _http("secret-alice") as alice_http, _http("secret-bob") as bob_http:
            alice_transport = streamable_http_client(served.url("conf"), http_client=alice_http)
            again_transport = streamable_http_client(served.url("conf"), http_client=alice_http)
            bob_transport = streamable_http_client(served.url("conf"), http_client=bob_http)
            async with (
                client(alice_transport, alice_seen, answer=session, name="alice") as alice,
                client(again_transport, again_seen, answer={"decision": "deny"}, name="alice-again") as again,
                client(bob_transport, bob_seen, answer={"decision": "deny"}, name="bob") as bob,
            ):
                with anyio.fail_after(WAIT):
                    first = await alice.call_tool("test_simple_text", {})
                    second = await alice.call_tool("test_simple_text", {})
                    by_bob = await bob.call_tool("test_simple_text", {})
                    by_again = await again.call_tool("test_simple_text", {})
    assert not first.is_error and not second.is_error
    assert len(alice_seen.elicitations) == 1  # asked once, for the session
    assert by_bob.is_error and len(bob_seen.elicitations) == 1
    assert by_again.is_error and len(again_seen.elicitations) == 1
    assert served.host.permissions.session_allowed == set()  # nothing allowed for the whole host


async def test_a_2026_client_is_not_offered_a_session_approval_and_allowing_one_allows_one_call(log_dir: Path) -> None:
    """A 2026-07-28 client has no session: its form offers "once" and "deny" only, and a client that answers
    "session" anyway allows that one call; its next call is asked again."""
    rules = {"ask": ["mcp__conf__test_simple_text"]}
    seen = Seen()
    async with served_gateway(log_dir, permissions=rules, profiles=NO_PREFIX) as served:
        async with client(served.url("conf"), seen, answer={"decision": "session"}, mode="auto") as modern:
            assert modern.protocol_version == "2026-07-28"
            with anyio.fail_after(WAIT):
                first = await modern.call_tool("test_simple_text", {})
                second = await modern.call_tool("test_simple_text", {})
    assert not first.is_error and not second.is_error
    assert len(seen.elicitations) == 2  # asked each time: nothing was kept for a session it does not have
    form = seen.elicitations[0]
    assert isinstance(form, types.ElicitRequestFormParams)
    choices = [c["const"] for c in form.requested_schema["properties"]["decision"]["oneOf"]]
    assert choices == ["once", "deny"]
    assert served.host.permissions.session_allowed == set()


async def test_an_old_sse_session_belongs_to_the_token_that_opened_it(log_dir: Path) -> None:
    """The HTTP+SSE transport (2024-11-05): the ``messages/`` path with Alice's ``session_id`` refuses Bob."""
    async with served_gateway(log_dir, profiles=NO_PREFIX, tokens=TOKENS) as served:
        url = f"{served.url('conf')}/sse"
        async with _http("secret-alice") as alice, alice.stream("GET", url) as stream:
            with anyio.fail_after(WAIT):
                lines = stream.aiter_lines()
                endpoint = ""
                while not endpoint.startswith("data: "):
                    endpoint = await anext(lines)
                post_to = f"{served.base}{endpoint.removeprefix('data: ').strip()}"
                ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
                async with _http("secret-bob") as bob:
                    refused = await bob.post(post_to, json=ping)
                accepted = await alice.post(post_to, json=ping)
    assert refused.status_code in (403, 404), f"{refused.status_code} {refused.text}"
    assert accepted.status_code == 202, f"{accepted.status_code} {accepted.text}"


async def test_a_2026_call_waiting_for_its_client_belongs_to_the_token_that_made_it(log_dir: Path) -> None:
    """A 2026-07-28 call that asked its client something waits in the gateway under a ``requestState``. Bob,
    presenting Alice's, must not answer her question and take her call's result: for him it names no call."""
    bob_took: list[object] = []
    async with served_gateway(log_dir, profiles=NO_PREFIX, tokens=TOKENS, modern=True) as served:
        async with _http("secret-bob") as bob_http, _http("secret-alice") as alice_http:
            bob_transport = streamable_http_client(served.url("conf"), http_client=bob_http)
            async with client(bob_transport, Seen(), name="bob") as bob:

                async def answer_as_bob(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
                    if bob_took:  # asked again (her first question was answered by someone else)
                        return types.ElicitResult(action="accept", content={"who": "alice"})
                    (state,) = served.gateway.parked  # Alice's call, waiting for her answer
                    request = types.CallToolRequest(
                        params=types.CallToolRequestParams(
                            name="test_elicitation",
                            arguments={"message": "bob's own"},
                            request_state=state,
                            input_responses={"q1": types.ElicitResult(action="accept", content={"who": "bob"})},
                        )
                    )
                    bob_took.append(await bob.session.send_request(request, EITHER))
                    return types.ElicitResult(action="accept", content={"who": "alice"})

                alice_transport = streamable_http_client(served.url("conf"), http_client=alice_http)
                alice = Client(
                    alice_transport,
                    client_info=types.Implementation(name="alice", version="1.0"),
                    elicitation_callback=answer_as_bob,
                )
                async with alice:
                    with anyio.fail_after(WAIT):
                        assert alice.protocol_version == "2026-07-28"
                        hers = await alice.call_tool("test_elicitation", {"message": "alice's"})
    (took,) = bob_took
    assert '"who": "bob"' not in str(took), f"Bob answered Alice's question and took her call's result: {took}"
    assert '"who": "alice"' in str(hers.content[0])  # her call waited for her own answer
