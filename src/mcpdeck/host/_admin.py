"""Administration of the host's servers, and what is saved of it: the config file's side of ``Host``.

Loading the servers and permission rules a host starts with, and starting them; adding,
changing and removing a server, and the global switch, each saved to the config file first
(in a worker thread: the store waits for the file's lock and fsyncs) and then applied to the
running connections; trying a server apart from the catalog (``test_server``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.abc import TaskGroup

from mcpdeck.config import (
    AnyServerConfig,
    ConfigStore,
    InProcessServer,
    InProcessServerConfig,
    McpConfig,
    as_server_config,
    parse_server_config,
    validate_server_name,
)
from mcpdeck.errors import ConfigError
from mcpdeck.events import ConfigChanged, Event, EventBus
from mcpdeck.host._registry import ServerRegistry
from mcpdeck.permissions import PermissionGate, PermissionRules, parse_permissions
from mcpdeck.status import ServerState, ServerStatus

__all__ = ["ServerAdmin", "ServerSpec", "ServerTest", "load_config", "load_permissions"]

ServerSpec = AnyServerConfig | InProcessServer | Mapping[str, Any]
"""What a server can be given as in code: a config model, its JSON form, or an SDK server object."""


@dataclass(frozen=True)
class ServerTest:
    """What ``Host.test_server`` found.

    Attributes:
        status: The server's status at the end of the attempt (``connected`` on success).
        tools: The tools it listed (after filters).
        duration: Seconds the attempt took.
    """

    status: ServerStatus
    tools: list[types.Tool]
    duration: float

    @property
    def ok(self) -> bool:
        """Whether the server connected and listed its tools."""
        return self.status.state is ServerState.CONNECTED


def load_config(initial: Mapping[str, ServerSpec] | McpConfig | None, store: ConfigStore | None) -> McpConfig:
    """The servers a host starts with: those given in code (bad entries kept as problems), else the store's."""
    if isinstance(initial, McpConfig):
        return initial
    if initial is not None:
        servers: dict[str, Any] = {}
        problems: dict[str, ConfigError] = {}
        for name, spec in initial.items():
            try:
                validate_server_name(name)
                servers[name] = as_server_config(name, spec)
            except ConfigError as error:
                problems[name] = error
        return McpConfig(servers=servers, problems=problems)
    if store is not None:
        return store.read()
    return McpConfig()


def load_permissions(
    gate: PermissionGate, rules: PermissionRules | Mapping[str, Any] | None, store: ConfigStore | None
) -> None:
    """Give ``gate`` its rules: those given in code, else the store's. A broken rule file closes the gate."""
    gate.store, gate.problem = store, None
    try:
        if isinstance(rules, PermissionRules):
            gate.rules = rules
        elif rules is not None:
            gate.rules = parse_permissions({"permissions": dict(rules)})
        elif store is not None:
            document = store.document()  # read already for the servers: the same parse
            document.check("permissions")
            gate.rules = document.permissions
    except ConfigError as error:  # the servers still start
        gate.problem = str(error)


class ServerAdmin:
    """Adds, changes and removes servers, flips the global switch, and saves each change first.

    Attributes:
        enabled: The global switch: False means no server is connected.
        registry: The servers it adds to, changes and removes.
        store: The config file changes are saved to, if any.
    """

    def __init__(self, registry: ServerRegistry, events: EventBus, store: ConfigStore | None):
        self.enabled = True
        self.registry = registry
        self._events = events
        self.store = store

    async def open(self, tg: TaskGroup, config: McpConfig, *, only: set[str] | None, wait: bool) -> None:
        """Start the servers a host was loaded with in ``tg``: those left out by ``only``, or all when
        the file's global switch is off, stay stopped. With ``wait``, return once all have settled."""
        registry = self.registry
        registry.options.npm_registry = config.npm_registry
        registry.problems = dict(config.problems)
        self.enabled = enabled = config.enabled
        await registry.open(
            tg, config.servers, wanted=lambda name: enabled and (only is None or name in only), wait=wait
        )

    async def add(self, name: str, config: ServerSpec, *, save: bool, wait: bool = True) -> ServerStatus:
        """Add a server or replace its config, (re)connect it, and (with ``wait``) wait until it has settled."""
        validate_server_name(name)
        resolved = as_server_config(name, config)
        registry = self.registry
        existed = name in registry.connections
        if save and self.store is not None and not isinstance(resolved, InProcessServerConfig):
            await anyio.to_thread.run_sync(self.store.put_server, name, resolved)
        registry.problems.pop(name, None)
        connection = registry.connections[name] if existed else registry.start(name, resolved, wanted=self.enabled)
        if existed:
            connection.switch(resolved)
        status = await connection.wait_settled() if wait else connection.status()
        self._events.publish(ConfigChanged(server=name, change="updated" if existed else "added"))
        return status

    async def update(self, name: str, changes: Mapping[str, Any], *, save: bool, wait: bool = True) -> ServerStatus:
        """Change some keys of a server's config (JSON names) and reconnect it (``wait``: until it has settled)."""
        current = self.registry.get(name).config
        if isinstance(current, InProcessServerConfig):
            raise ConfigError(f"server {name!r} runs in-process; replace it with add_server", server=name)
        merged = {**current.to_json(), **changes}
        return await self.add(name, parse_server_config(name, merged), save=save, wait=wait)

    async def remove(self, name: str, *, save: bool) -> None:
        """Disconnect a server and delete its config (also an entry that could not be used)."""
        registry = self.registry
        if name in registry.problems and name not in registry.connections:
            registry.problems.pop(name)
        else:
            await registry.remove(name)
        if save and self.store is not None:
            await anyio.to_thread.run_sync(self.store.remove_server, name)
        self._events.publish(ConfigChanged(server=name, change="removed"))

    async def set_enabled(self, enabled: bool, *, save: bool) -> None:
        """The global switch: off stops every server, on connects every enabled one."""
        self.enabled = enabled
        if save and self.store is not None:
            await anyio.to_thread.run_sync(self.store.set_enabled, enabled)
        async with anyio.create_task_group() as tg:
            for connection in self.registry.connections.values():
                tg.start_soon(connection.reconnect if enabled else connection.disconnect)
        self._events.publish(ConfigChanged(server=None, change="enabled" if enabled else "disabled"))

    async def test(self, config: ServerSpec | str, *, name: str | None) -> ServerTest:
        """Connect a server apart from the catalog, list its tools, disconnect; nothing is saved."""
        if isinstance(config, str):
            name, spec = name or config, self.registry.get(config).config
        else:
            name = validate_server_name(name or "test")
            spec = as_server_config(name, config)
        if spec.disabled:
            spec = spec.model_copy(update={"disabled": False})
        events: list[Event] = []
        connection = self.registry.options.connection(
            name, spec, publish=events.append, on_change=lambda _server, _kind: None, trial=True
        )
        started = time.perf_counter()
        tests: list[ServerTest] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(connection.run)
            status = await connection.wait_settled()
            tools = [listed.tool() for listed in connection.tools]
            tests.append(ServerTest(status=status, tools=tools, duration=time.perf_counter() - started))
            await connection.close()
        return tests[0]
