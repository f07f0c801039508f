"""What the host's servers offer besides tools: resources, prompts and completions, the ``Host`` side of them.

Each request finds its server first (by URI, by a prompt's public name, or by name), then
passes the permission gate when asked to (as ``mcp__<server>__resource:<uri>`` or
``mcp__<server>__prompt:<name>``), then goes to that server's connection. A prompt's
required arguments are checked here (unless the caller lets the server judge), so a missing
one is refused before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping

import mcp_types as types

from mcpdeck.connection import ServerConnection
from mcpdeck.errors import InvalidArgumentsError
from mcpdeck.host._call_path import CallPath
from mcpdeck.host._registry import ServerRegistry
from mcpdeck.permissions import Access, ApprovalCallback, CallingClient, GateApprover

__all__ = ["ServerContent"]


class ServerContent:
    """Reads resources, gets prompts and asks for completions on the server that offers each."""

    def __init__(self, registry: ServerRegistry, calls: CallPath):
        self._registry = registry
        self._calls = calls

    async def read_resource(
        self,
        uri: str,
        server: str | None,
        *,
        timeout: float | None,
        check_permission: bool,
        approver: ApprovalCallback | CallingClient | GateApprover | None,
    ) -> types.ReadResourceResult:
        """Read ``uri`` from ``server``, or from the one server that offers it."""
        connection = self._registry.server_for_uri(uri, server)
        if check_permission:
            await self._calls.check_access(Access("resource", connection.name, uri), {"uri": uri}, approver)
        return await connection.read_resource(uri, timeout=timeout)

    async def subscribe_resource(self, uri: str, server: str | None, *, subscribe: bool) -> None:
        """Ask for (or stop) ``ResourceUpdated`` events of ``uri`` on the server that offers it."""
        await self._registry.server_for_uri(uri, server).subscribe(uri, subscribe)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None,
        *,
        timeout: float | None,
        check_permission: bool,
        validate: bool,
        approver: ApprovalCallback | CallingClient | GateApprover | None,
    ) -> types.GetPromptResult:
        """Get the prompt with public name ``name``; with ``validate``, a missing required argument raises before
        anything is sent."""
        entry = self._registry.prompt(name)
        args = {key: str(value) for key, value in (arguments or {}).items()}
        missing = [a.name for a in entry.arguments if a.required and a.name not in args] if validate else []
        if missing:
            raise InvalidArgumentsError(name, [f"{arg!r} is a required argument" for arg in missing])
        if check_permission:
            await self._calls.check_access(Access("prompt", entry.server, entry.original_name), args, approver)
        return await self._registry.get(entry.server).get_prompt(entry.original_name, args or None, timeout=timeout)

    async def complete_prompt_argument(
        self, prompt: str, argument: str, value: str, context: Mapping[str, str] | None
    ) -> types.Completion:
        """The completion the prompt's server gives for one of its arguments."""
        entry = self._registry.prompt(prompt)
        ref = types.PromptReference(type="ref/prompt", name=entry.original_name)
        return await _complete(self._registry.get(entry.server), ref, argument, value, context)

    async def complete_resource_argument(
        self, server: str, uri_template: str, argument: str, value: str, context: Mapping[str, str] | None
    ) -> types.Completion:
        """The completion ``server`` gives for a variable of one of its resource templates."""
        ref = types.ResourceTemplateReference(type="ref/resource", uri=uri_template)
        return await _complete(self._registry.get(server), ref, argument, value, context)


async def _complete(
    connection: ServerConnection,
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: str,
    value: str,
    context: Mapping[str, str] | None,
) -> types.Completion:
    result = await connection.complete(ref, {"name": argument, "value": value}, dict(context or {}))
    return result.completion  # as the server gave it: its values, and its ``total`` and ``hasMore`` when it said them
