"""What ``Host.call_tool`` checks before sending: only what is certain to fail, and nothing with validate=False.

Against a real stdio server whose tools carry the schemas that tripped hosts up (a required
property with a default, a ``$ref`` loop); it answers with the arguments it received.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from mcpdeck import Host, ServerState
from mcpdeck.errors import InvalidArgumentsError
from tests.helpers import WAIT, stdio_server

pytestmark = pytest.mark.anyio


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    async with Host({"s": stdio_server("schemas")}, log_dir=tmp_path / "logs") as opened:
        assert opened.servers["s"].state is ServerState.CONNECTED, opened.servers["s"].error
        yield opened


async def test_a_required_property_with_a_default_is_sent_with_the_default_not_refused(host: Host) -> None:
    with anyio.fail_after(WAIT):
        result = await host.call_tool("mcp__s__shot", {"name": "a"})
        given = await host.call_tool("mcp__s__shot", {"name": "b", "scale": "device"})
    assert result.text() == 'shot got {"name": "a", "scale": "css"}'
    assert given.text() == 'shot got {"name": "b", "scale": "device"}'


async def test_what_is_certain_to_fail_is_still_refused_before_sending(host: Host) -> None:
    with pytest.raises(InvalidArgumentsError, match="'name' is a required property"):
        await host.call_tool("mcp__s__shot", {})


async def test_validate_false_sends_the_arguments_as_they_are(host: Host) -> None:
    with anyio.fail_after(WAIT):
        result = await host.call_tool("mcp__s__shot", {"name": 5}, validate=False)
    assert result.text() == 'shot got {"name": 5}'  # unchecked, and no default filled in either


async def test_a_ref_loop_is_a_clear_error_for_that_tool_and_the_host_goes_on(host: Host) -> None:
    with pytest.raises(InvalidArgumentsError, match="loops back to itself") as caught:
        await host.call_tool("mcp__s__loop", {"x": 1})
    assert "validate=False" in str(caught.value)
    with anyio.fail_after(WAIT):
        sent = await host.call_tool("mcp__s__loop", {"x": 1}, validate=False)
        other = await host.call_tool("mcp__s__shot", {"name": "c"})
    assert sent.text() == 'loop got {"x": 1}'
    assert not other.is_error
