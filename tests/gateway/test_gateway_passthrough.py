"""What a client gets through the gateway is what it gets from the server directly.

server-everything (the npm reference server) is asked the same things directly, by an SDK
client of its own, and through a gateway (over streamable HTTP) whose host also runs the
basic test server (resources offered, none listed) and the handshake-era server (no
resources): completions, arguments the server refuses, and a resource it does not have.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters

from mcpdeck import Host
from mcpdeck.gateway import Gateway
from tests.gateway.support import ALLOW_ALL
from tests.helpers import NODE_BIN, WAIT, serve_asgi, stdio_server

pytestmark = pytest.mark.anyio

EVERYTHING = str(NODE_BIN / "mcp-server-everything")
PROFILES = {
    "ev": {"servers": ["everything"], "prefix": False},
    "old": {"servers": ["old"], "prefix": False},
}
TEMPLATE = "demo://resource/dynamic/text/{resourceId}"


@dataclass
class Faces:
    """server-everything directly, and the gateway's URLs."""

    direct: Client
    base: str

    def url(self, profile: str | None = None) -> str:
        return f"{self.base}/mcp" + (f"/{profile}" if profile else "")


@pytest.fixture(scope="module")
async def faces(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Faces]:
    servers: dict[str, Any] = {
        "everything": {"command": EVERYTHING},
        "basic": stdio_server("basic"),
        "old": stdio_server("handshake_era"),
    }
    log_dir = tmp_path_factory.mktemp("logs")
    async with (
        Host(servers, log_dir=log_dir, permissions=ALLOW_ALL) as host,
        Gateway(host, profiles=PROFILES) as gateway,
        serve_asgi(gateway.asgi()) as base,
        Client(StdioServerParameters(command=EVERYTHING)) as direct,
    ):
        yield Faces(direct, base)


# The same request through the whole catalog (names mcp__everything__...) and a profile with no prefix.
THROUGH = [(None, "mcp__everything__"), ("ev", "")]


@pytest.mark.parametrize(("profile", "prefix"), THROUGH)
async def test_a_completion_reaches_the_client_as_the_server_gave_it(
    faces: Faces, profile: str | None, prefix: str
) -> None:
    template = types.ResourceTemplateReference(type="ref/resource", uri=TEMPLATE)
    prompt = types.PromptReference(type="ref/prompt", name="completable-prompt")
    served_prompt = types.PromptReference(type="ref/prompt", name=f"{prefix}completable-prompt")
    argument = {"name": "department", "value": "E"}
    with anyio.fail_after(WAIT):
        async with Client(faces.url(profile)) as via:
            through = [
                await via.complete(template, {"name": "resourceId", "value": "1"}),
                await via.complete(served_prompt, argument),
            ]
        direct = [
            await faces.direct.complete(template, {"name": "resourceId", "value": "1"}),
            await faces.direct.complete(prompt, argument),
        ]
    assert direct[0].completion.total == 1 and direct[0].completion.has_more is False  # what the server says
    assert [r.completion for r in through] == [r.completion for r in direct]


@pytest.mark.parametrize(("profile", "prefix"), THROUGH)
async def test_arguments_the_server_refuses_get_its_own_answer(faces: Faces, profile: str | None, prefix: str) -> None:
    with anyio.fail_after(WAIT):
        async with Client(faces.url(profile)) as via:
            tool = await via.call_tool(f"{prefix}get-sum", {"a": "one"})
            with pytest.raises(MCPError) as prompt:
                await via.get_prompt(f"{prefix}args-prompt", {"state": "NY"})
        direct_tool = await faces.direct.call_tool("get-sum", {"a": "one"})
        with pytest.raises(MCPError) as direct_prompt:
            await faces.direct.get_prompt("args-prompt", {"state": "NY"})
    assert direct_tool.is_error and "get-sum" in str(direct_tool.content)
    assert (tool.is_error, tool.content) == (direct_tool.is_error, direct_tool.content)
    assert (prompt.value.code, prompt.value.message) == (direct_prompt.value.code, direct_prompt.value.message)
    assert "mcp__" not in prompt.value.message


async def test_an_unknown_resource_gets_the_servers_own_error_where_one_server_is_asked(faces: Faces) -> None:
    # The whole catalog has two servers offering resources; demo:// is server-everything's scheme.
    uri = "demo://resource/static/document/no-such-file.md"
    with anyio.fail_after(WAIT):
        with pytest.raises(MCPError) as direct:
            await faces.direct.read_resource(uri)
        for profile in (None, "ev"):
            async with Client(faces.url(profile)) as via:
                with pytest.raises(MCPError) as through:
                    await via.read_resource(uri)
            assert (through.value.code, through.value.message) == (direct.value.code, direct.value.message)


async def test_a_resource_no_server_could_be_asked_for_is_the_gateways_error(faces: Faces) -> None:
    with anyio.fail_after(WAIT):
        async with Client(faces.url("old")) as via:  # its one server offers no resources
            with pytest.raises(MCPError) as unknown:
                await via.read_resource("note://anything")
        async with Client(faces.url()) as via:  # no server's resources use this scheme, and two offer resources
            with pytest.raises(MCPError) as unclaimed:
                await via.read_resource("nothing://here")
    assert unknown.value.code == unclaimed.value.code == -32002  # resource not found
    assert unknown.value.message == "no server of this gateway offers 'note://anything'"
    assert unclaimed.value.message == "no server of this gateway offers 'nothing://here'"
