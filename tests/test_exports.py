"""The public surface: a short top-level list, events and errors in their own modules, typed event fields."""

from __future__ import annotations

import importlib
from pathlib import Path

import anyio
import pytest

import mcpdeck
import mcpdeck.errors as errors
from mcpdeck import Host
from mcpdeck.events import ConfigChanged, Event, ServerStatusChanged
from mcpdeck.status import ServerState
from tests.servers import basic

pytestmark = pytest.mark.anyio

MODULES = ("mcpdeck.events", "mcpdeck.errors", "mcpdeck.callbacks", "mcpdeck.catalog", "mcpdeck.config")


def test_the_top_level_keeps_what_a_program_needs_first_and_each_name_resolves() -> None:
    assert 15 <= len(mcpdeck.__all__) <= 22
    assert mcpdeck.__all__ == sorted(mcpdeck.__all__, key=lambda n: (n.startswith("_"), n))
    for name in mcpdeck.__all__:
        assert getattr(mcpdeck, name) is not None
    assert dir(mcpdeck) == sorted(mcpdeck.__all__)


def test_a_name_that_left_the_top_level_says_where_it_lives_now() -> None:
    with pytest.raises(AttributeError, match=r"'ToolsChanged'; import it from mcpdeck\.events"):
        _ = mcpdeck.ToolsChanged  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(AttributeError, match=r"'ServerTimeoutError'; import it from mcpdeck\.errors"):
        _ = mcpdeck.ServerTimeoutError  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(AttributeError, match=r"has no attribute 'nothing_here'$"):
        _ = mcpdeck.nothing_here  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.parametrize("module", MODULES)
def test_every_name_a_public_module_lists_is_importable_from_it(module: str) -> None:
    loaded = importlib.import_module(module)
    for name in loaded.__all__:
        assert getattr(loaded, name) is not None, name


def test_every_exception_class_of_the_library_is_defined_in_mcpdeck_errors() -> None:
    import mcpdeck.auth
    import mcpdeck.providers

    exported = {getattr(errors, name) for name in errors.__all__}
    classes = {e for e in exported if isinstance(e, type)}
    assert all(issubclass(e, errors.MCPDeckError) for e in classes)
    assert all(e.__module__ == "mcpdeck.errors" for e in classes)
    # the old places still give the same classes
    assert mcpdeck.auth.AuthorizationRequiredError is errors.AuthorizationRequiredError
    assert mcpdeck.providers.ToolCallError is errors.ToolCallError
    assert issubclass(errors.AuthorizationError, errors.ServerError)


def test_the_two_server_log_classes_have_two_names() -> None:
    import mcpdeck.connection._server_log
    import mcpdeck.events

    assert hasattr(mcpdeck.events, "ServerLog") and not hasattr(mcpdeck.events, "ServerLogFile")
    assert hasattr(mcpdeck.connection._server_log, "ServerLogFile") and not hasattr(
        mcpdeck.connection._server_log, "ServerLog"
    )


async def test_a_real_host_s_events_carry_typed_fields(tmp_path: Path) -> None:
    seen: list[Event] = []
    async with Host({"basic": basic.build_server()}, log_dir=tmp_path) as host:
        host.events.on(seen.append)
        with anyio.fail_after(10):
            await host.disconnect("basic")
            await host.set_enabled(False, save=False)
    statuses = [e for e in seen if isinstance(e, ServerStatusChanged)]
    assert statuses and all(isinstance(e.state, ServerState) and isinstance(e.previous, ServerState) for e in statuses)
    assert (statuses[0].previous, statuses[0].state) == (ServerState.CONNECTED, ServerState.STOPPED)
    assert [e.change for e in seen if isinstance(e, ConfigChanged)] == ["disabled"]
