"""Opening and closing a host: what it starts with loaded, its task group, its servers started and stopped.

Entering loads the servers and the permission rules first, so a broken config file raises
as it is (inside the task group it would come out wrapped in an ``ExceptionGroup``), then
starts every server's supervisor in the host's task group. Leaving closes every supervisor
and waits for the task group: no task and no child process outlives the host. Tasks of the
program (the agent's loop) run in the same task group, beside the servers.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import anyio
from anyio.abc import TaskGroup

from mcpdeck.config import McpConfig
from mcpdeck.host._admin import ServerAdmin, ServerSpec, load_config, load_permissions
from mcpdeck.permissions import PermissionGate, PermissionRules

__all__ = ["HostLifecycle"]


class HostLifecycle:
    """A host's task group: opened once with its servers started in it, closed once with all of them."""

    def __init__(
        self,
        admin: ServerAdmin,
        gate: PermissionGate,
        servers: Mapping[str, ServerSpec] | McpConfig | None,
        rules: PermissionRules | Mapping[str, Any] | None,
        *,
        only: Iterable[str] | None,
        wait: bool,
    ):
        """``servers`` and ``rules`` are what the host was given in code (None: the config file's)."""
        self._admin = admin
        self._gate = gate
        self._servers = servers
        self._rules = rules
        self._only = set(only) if only is not None else None
        self._wait = wait
        self._tg: TaskGroup | None = None
        self._started: set[anyio.CancelScope] = set()  # tasks of start_task, cancelled at close
        self._stack: AsyncExitStack | None = None

    async def open(self) -> None:
        """Load the config and the permission rules, then start every server in a new task group.

        Raises:
            RuntimeError: The host is open already.
            ConfigError: The config file cannot be read.
        """
        if self._stack is not None:
            raise RuntimeError("this Host is already open; create a new one")
        config = load_config(self._servers, self._admin.store)
        load_permissions(self._gate, self._rules, self._admin.store)
        async with AsyncExitStack() as stack:
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.push_async_callback(self._admin.registry.close)
            await self._admin.open(self._tg, config, only=self._only, wait=self._wait)
            self._stack = stack.pop_all()

    async def close(self) -> None:
        """Close every supervisor and wait for the task group (nothing happens when the host is not open)."""
        stack, self._stack = self._stack, None
        if stack is not None:
            for scope in list(self._started):  # the caller's tasks end first: they may be using the servers
                scope.cancel()
            # The host's body's own exception is not handed to the task group: it would come out
            # wrapped in an ExceptionGroup, and `except ToolNotFoundError` would miss it.
            await stack.aclose()

    def start_task(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any, name: str | None) -> None:
        """Run ``fn(*args)`` in the task group, in a cancel scope that ``close`` cancels.

        Raises:
            RuntimeError: The host is not open.
        """
        if self._tg is None:
            raise RuntimeError("the host is not open; use `async with host:` first")

        scope = anyio.CancelScope()  # kept from now: a close before the task runs cancels it too
        self._started.add(scope)

        async def run() -> None:
            try:
                with scope:
                    await fn(*args)
            finally:
                self._started.discard(scope)

        self._tg.start_soon(run, name=name)
