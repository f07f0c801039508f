"""The built-in resource tools against real servers: listing and reading resources."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer

from mcpdeck import Host, PermissionDeniedError
from mcpdeck.agent import Agent, RunFinished, ToolCallDone
from mcpdeck.agent._builtins import _contents, resource_tools  # pyright: ignore[reportPrivateUsage]
from mcpdeck.agent._tools import NativeTool
from mcpdeck.permissions import Approval, ApprovalRequest
from mcpdeck.status import ServerState
from tests.helpers import WAIT, stdio_server
from tests.llm.scripted import Call, Reply, Step, serve_scripted
from tests.servers import basic, features
from tests.servers.features import LOGO, RESOURCES


@pytest.fixture(scope="module")
async def host(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Host]:
    """The features server over stdio and the basic server (no resources) in-process."""
    servers = {"features": stdio_server("features"), "basic": basic.build_server()}
    async with Host(servers, log_dir=tmp_path_factory.mktemp("logs"), yes=True) as opened:
        assert opened.servers["features"].state is ServerState.CONNECTED, opened.servers["features"].error
        yield opened


def by_name(host: Host, max_listed: int = 200, servers: set[str] | None = None) -> dict[str, NativeTool]:
    return {made.name: made for made in resource_tools(host, max_listed=max_listed, servers=servers)}


@pytest.mark.anyio
async def test_the_resource_tools_are_read_only_and_described(host: Host) -> None:
    tools = by_name(host)
    assert list(tools) == ["list_mcp_resources", "read_mcp_resource"]
    assert all(made.read_only for made in tools.values())
    read = tools["read_mcp_resource"]
    assert read.input_schema["required"] == ["uri"]
    assert "list_mcp_resources" in read.description
    assert "description" in read.input_schema["properties"]["server"]


@pytest.mark.anyio
async def test_list_shows_every_servers_resources_and_templates(host: Host) -> None:
    listing = by_name(host)["list_mcp_resources"]
    with anyio.fail_after(WAIT):
        result = await listing.call({})
    assert not result.is_error
    lines = result.text().splitlines()
    assert lines[0] == f"Resources ({len(RESOURCES)}):"
    assert [line.split()[1] for line in lines[1 : 1 + len(RESOURCES)]] == RESOURCES
    assert "- features://info [server: features] info (About) (text/plain)" in lines
    assert "- features://logo [server: features] logo (image/png)" in lines
    assert lines[-2].startswith("URI templates (1;")
    assert lines[-1] == f"- {features.TEMPLATE} [server: features] note (text/plain)"
    assert result.text() == (await listing.call({"server": "features"})).text()


@pytest.mark.anyio
async def test_list_for_one_server_an_unknown_server_and_a_long_list(host: Host) -> None:
    tools = by_name(host, max_listed=2)
    listing = tools["list_mcp_resources"]
    with anyio.fail_after(WAIT):
        none = await listing.call({"server": "basic"})
        unknown = await listing.call({"server": "nope"})
        short = await listing.call({})
    assert not none.is_error and none.text() == "No resources: server 'basic' offers none."
    assert unknown.is_error and unknown.text() == "no server named 'nope'; the servers are: basic, features"
    assert "... and 3 more; give `server` to list one server's." in short.text()
    assert short.text().count("\n- ") == 3  # two resources, one template


@pytest.mark.anyio
async def test_kept_to_some_servers_the_tools_see_only_theirs(host: Host) -> None:
    basic_only = by_name(host, servers={"basic"})
    features_only = by_name(host, servers={"features"})
    with anyio.fail_after(WAIT):
        nothing = await basic_only["list_mcp_resources"].call({})
        other = await basic_only["list_mcp_resources"].call({"server": "features"})
        unread = await basic_only["read_mcp_resource"].call({"uri": "note://second"})
        read = await features_only["read_mcp_resource"].call({"uri": "note://42"})
        listed = await features_only["list_mcp_resources"].call({})
    assert nothing.text() == "No resources: the connected servers offer none."
    assert other.is_error and other.text() == "no server named 'features'; the servers are: basic"
    assert unread.is_error and "not available" not in unread.text() and "basic" in unread.text()
    assert (read.is_error, read.text()) == (False, "note 42 (from the template)")
    assert listed.text() == (await by_name(host)["list_mcp_resources"].call({})).text()


@pytest.mark.anyio
async def test_read_gives_text_templates_and_images(host: Host) -> None:
    read = by_name(host)["read_mcp_resource"]
    with anyio.fail_after(WAIT):
        note = await read.call({"uri": "note://second"})
        templated = await read.call({"uri": "note://42", "server": "features"})
        logo = await read.call({"uri": "features://logo"})
    assert (note.is_error, note.text()) == (False, "the second note")
    assert (note.name, note.server, note.tool) == ("read_mcp_resource", "", "read_mcp_resource")
    assert templated.text() == "note 42 (from the template)"
    assert logo.images() == [("image/png", LOGO)]


@pytest.mark.anyio
async def test_read_failures_are_error_results_that_say_what_to_do(host: Host) -> None:
    read = by_name(host)["read_mcp_resource"]
    with anyio.fail_after(WAIT):
        missing = await read.call({"uri": "nothing://here"})
        wrong_server = await read.call({"uri": "note://first", "server": "nope"})
        unsupported = await read.call({"uri": "note://first", "server": "basic"})
        no_uri = await read.call({})
    assert missing.is_error
    assert missing.text() == "no connected server offers 'nothing://here'; call list_mcp_resources to see what there is"
    assert wrong_server.is_error and "no server named 'nope'" in wrong_server.text()
    assert unsupported.is_error and unsupported.text().startswith("could not read 'note://first': server 'basic'")
    assert no_uri.is_error and "uri: Field required" in no_uri.text()


@pytest.mark.anyio
async def test_a_uri_several_servers_offer_needs_a_server(tmp_path: Path) -> None:
    servers = {"one": features.build_server("one"), "two": features.build_server("two")}
    async with Host(servers, log_dir=tmp_path / "logs", yes=True) as host:
        read = by_name(host)["read_mcp_resource"]
        with anyio.fail_after(WAIT):
            both = await read.call({"uri": "features://info"})
            chosen = await read.call({"uri": "features://info", "server": "two"})
    assert both.is_error
    assert both.text() == (
        "2 servers offer 'features://info' (one, two); call read_mcp_resource again with `server` set to one of them"
    )
    assert chosen.text() == "the two server"


# ----- the permission gate ------------------------------------------------------------------


def vault_server(reads: list[str]) -> MCPServer:
    """A server with a secret resource and a prompt, noting every read and prompt that reaches it."""
    server = MCPServer("vault")

    @server.resource("secret://key", name="key", mime_type="text/plain")
    def key() -> str:
        reads.append("secret://key")
        return "TOPSECRET"

    @server.resource("secret://{name}", name="any", mime_type="text/plain")
    def any_secret(name: str) -> str:
        reads.append(f"secret://{name}")
        return f"TOPSECRET {name}"

    @server.prompt()
    def leak() -> str:
        reads.append("prompt leak")
        return "TOPSECRET prompt"

    return server


@pytest.mark.anyio
@pytest.mark.parametrize("rule", ["mcp__vault", "mcp__vault__*", "mcp__vault__resource:*"])
async def test_the_agent_never_gets_a_resource_of_a_denied_server(tmp_path: Path, rule: str) -> None:
    reads: list[str] = []
    servers = {"vault": vault_server(reads), "basic": basic.build_server()}
    host = Host(servers, log_dir=tmp_path / "logs", yes=True, permissions={"deny": [rule]})
    script: list[Step] = [
        Reply(
            tool_calls=[
                Call("list_mcp_resources", {}),
                Call("list_mcp_resources", {"server": "vault"}),
                Call("read_mcp_resource", {"uri": "secret://key"}),
                Call("read_mcp_resource", {"uri": "secret://key", "server": "vault"}),
                Call("read_mcp_resource", {"uri": "secret://unlisted"}),  # no server lists it: still vault's
            ]
        ),
        lambda request: Reply(text=" | ".join(text for _, text in request.tool_results)),
    ]
    async with host, serve_scripted("openai", script) as server:
        agent = Agent(host, model="openai:scripted-model", api_key="test-key", base_url=server.base_url)
        async with agent:
            with anyio.fail_after(WAIT):
                events = [event async for event in agent.run("read the vault")]
    final = events[-1]
    assert isinstance(final, RunFinished)
    assert reads == []
    assert "TOPSECRET" not in final.text and "secret://key" not in final.text.split(" | ")[0]
    results = [e.result.text() for e in events if isinstance(e, ToolCallDone)]
    assert results[0] == "No resources: the connected servers offer none."
    assert results[1] == f"the resources of server 'vault' are not available: denied by the rule {rule!r}"
    for text in results[2:]:
        assert text.startswith("Permission denied for mcp__vault__resource:secret://"), text
        assert f"denied by the rule {rule!r}" in text


@pytest.mark.anyio
async def test_a_resource_rule_fences_off_some_resources_of_a_real_server(tmp_path: Path) -> None:
    servers = {"features": stdio_server("features")}
    deny = ["mcp__features__resource:note://*"]
    async with Host(servers, log_dir=tmp_path / "logs", yes=True, permissions={"deny": deny}) as host:
        tools = by_name(host)
        with anyio.fail_after(WAIT):
            listing = await tools["list_mcp_resources"].call({})
            note = await tools["read_mcp_resource"].call({"uri": "note://first"})
            info = await tools["read_mcp_resource"].call({"uri": "features://info"})
    assert "note://" not in listing.text() and "features://info" in listing.text()
    assert note.is_error and note.text().startswith("Permission denied for mcp__features__resource:note://first")
    assert (info.is_error, info.text()) == (False, "the features server")


@pytest.mark.anyio
async def test_a_read_is_asked_about_like_a_tool_call_and_once_means_once(tmp_path: Path) -> None:
    reads: list[str] = []
    asked: list[ApprovalRequest] = []

    async def approve(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval.once() if len(asked) == 1 else Approval.deny("no more")

    async with Host({"vault": vault_server(reads)}, log_dir=tmp_path / "logs", approve=approve) as host:
        read = by_name(host)["read_mcp_resource"]
        with anyio.fail_after(WAIT):
            first = await read.call({"uri": "secret://key"})
            second = await read.call({"uri": "secret://key"})
    assert first.text() == "TOPSECRET" and reads == ["secret://key"]
    assert second.is_error and "the user declined: no more" in second.text()
    assert [(r.name, r.server, r.arguments) for r in asked] == [
        ("mcp__vault__resource:secret://key", "vault", {"uri": "secret://key"})
    ] * 2


@pytest.mark.anyio
async def test_host_reads_and_prompts_for_a_model_pass_the_gate_and_direct_ones_do_not(tmp_path: Path) -> None:
    reads: list[str] = []
    async with Host(
        {"vault": vault_server(reads)}, log_dir=tmp_path / "logs", permissions={"deny": ["mcp__vault"]}
    ) as host:
        with anyio.fail_after(WAIT):
            with pytest.raises(PermissionDeniedError) as resource:
                await host.read_resource("secret://key", check_permission=True)
            with pytest.raises(PermissionDeniedError) as prompt:
                await host.get_prompt("mcp__vault__leak", check_permission=True)
            assert reads == []
            direct = await host.read_resource("secret://key")  # the user's own read: no gate
    assert resource.value.tool == "mcp__vault__resource:secret://key"
    assert prompt.value.tool == "mcp__vault__prompt:leak" and prompt.value.approved_by == "denied-by-rule"
    assert reads == ["secret://key"] and direct.contents[0].uri == "secret://key"


def test_contents_of_every_kind_become_blocks() -> None:
    pdf = types.BlobResourceContents(
        uri="file:///a.pdf", mime_type="application/pdf", blob=base64.b64encode(b"x" * 2048).decode()
    )
    raw = types.BlobResourceContents(uri="file:///raw", blob=base64.b64encode(b"abc").decode())
    text = types.TextResourceContents(uri="file:///a.txt", mime_type="text/plain", text="hello")
    png = types.BlobResourceContents(uri="file:///a.png", mime_type="image/png", blob=base64.b64encode(LOGO).decode())
    assert _contents([]) == [types.TextContent(text="(the resource is empty)")]
    [note] = _contents([pdf])
    assert note == types.TextContent(
        text="[binary resource <file:///a.pdf>: application/pdf, 2.0 KB; not shown as text]"
    )
    assert _contents([raw]) == [
        types.TextContent(text="[binary resource <file:///raw>: unknown type, 3 bytes; not shown as text]")
    ]
    several = _contents([text, png])
    assert several[0] == types.TextContent(text="[file:///a.txt (text/plain)]")
    assert several[1] == types.TextContent(text="hello")
    assert several[2] == types.TextContent(text="[file:///a.png (image/png)]")
    assert isinstance(several[3], types.ImageContent) and several[3].mime_type == "image/png"
