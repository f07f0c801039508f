"""The request handlers of a gateway profile, grouped by what they serve: each turns a client's
request into a ``Host`` call under the profile's names, and the answer, or the error, back
into what the server behind it said.

- ``ToolRequests``: ``tools/list``, ``tools/call``;
- ``ResourceRequests``: ``resources/list``, ``resources/templates/list``, ``resources/read``,
  ``resources/subscribe``, ``resources/unsubscribe``;
- ``ListenRequests``: a 2026-07-28 client's ``subscriptions/listen`` stream;
- ``PromptRequests``: ``prompts/list``, ``prompts/get``, ``completion/complete``;
- ``LoggingRequests``: ``logging/setLevel``;
- ``RootsRequests``: ``notifications/initialized`` and ``notifications/roots/list_changed``, which
  decide and change the roots the servers see.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import mcp_types as types
from mcp import MCPError
from mcp.server.subscriptions import ListenHandler
from mcp_types.jsonrpc import INVALID_PARAMS

from mcpdeck._observability.tracing import call_attributes
from mcpdeck._util.masking import mask_urls
from mcpdeck.catalog import CatalogTool
from mcpdeck.errors import MCPDeckError, PermissionDeniedError, ServerError
from mcpdeck.events import current_caller, current_client
from mcpdeck.gateway._requests import (
    RESOURCE_NOT_FOUND,
    RequestContext,
    Requests,
    RunningRequests,
    ServedProfile,
    mcp_error,
    relayed_client,
    servers_answer,
)
from mcpdeck.permissions import Access
from mcpdeck.status import ServerState, ServerStatus

if TYPE_CHECKING:
    from mcpdeck.gateway._approval import GatewayGate
    from mcpdeck.gateway._clients import Calls
    from mcpdeck.gateway._connected_clients import ConnectedClients

__all__ = ["ListenRequests", "LoggingRequests", "PromptRequests", "ResourceRequests", "RootsRequests", "ToolRequests"]

logger = logging.getLogger(__name__)

CONNECTING, CONNECTED = ServerState.CONNECTING, ServerState.CONNECTED


COMPLETION_VALUES = 100
"""The most values one completion may carry (the protocol's limit)."""


def _at_most(completion: types.Completion, limit: int) -> types.Completion:
    """The server's completion as it gave it; one with more values than the protocol allows is cut, and then
    says there are more (and how many, if the server did not)."""
    if len(completion.values) <= limit:
        return completion
    total = completion.total if completion.total is not None else len(completion.values)
    return types.Completion(values=completion.values[:limit], total=total, has_more=True)


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


class ToolRequests(RunningRequests):
    """The profile's tools: listed under its names, called on the host."""

    async def list_tools(
        self, ctx: RequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self.client(ctx)
        await self.started()
        v = self.view()
        return types.ListToolsResult(tools=[v.listed_tool(served, entry) for served, entry in v.tools()])

    async def call_tool(self, ctx: RequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        who = self.client(ctx)
        name, caller = who.names()
        relayed = relayed_client(params)
        if relayed and relayed != name:  # (a relaying gateway that presents its client as itself: named once)
            name, caller = relayed, f"{relayed} (via {caller})"
        entry = self.view().tool(params.name)  # from the catalog now
        unlisted: str | None = None
        if entry is None:
            entry = await self._once_started(params.name)
            if isinstance(entry, str):  # its server did not start
                return _error_result(entry)
            unlisted = entry.server if self.host.catalog.get(entry.name) is None else None
        host, check_permission = self.host, self.gate.check
        attributes = {"mcpdeck.profile": who.profile or "", "mcpdeck.token": who.token or ""}

        async def progress(value: float, total: float | None, message: str | None) -> None:
            try:
                await ctx.session.report_progress(value, total, message)  # under the client's own token, if any
            except Exception as error:  # the client's stream is gone (a 2026-07-28 round ended): the call goes on
                logger.debug("gateway: progress not delivered: %s", error)

        async def call() -> types.CallToolResult:
            caller_set, client_set = current_caller.set(caller), current_client.set(name)
            attributes_set = call_attributes.set(attributes)
            try:
                result = await host.call_tool(
                    entry if unlisted is None else entry.original_name,
                    params.arguments,
                    server=unlisted,
                    progress=progress,
                    check_permission=check_permission,
                    validate=False,  # the server judges its arguments: the client gets its own answer, as directly
                    approver=self.gate.approver(ctx, who),
                )
            except PermissionDeniedError as error:
                return _error_result(str(error))
            except ServerError as error:
                if servers_answer(error) is not None:  # the server answered with a protocol error: passed on
                    raise mcp_error(error) from None
                return _error_result(str(error))  # it crashed, timed out or is down: said as the host says it
            except MCPDeckError as error:  # anything else the host could not do, said as it says it
                return _error_result(str(error))
            finally:
                current_caller.reset(caller_set)
                current_client.reset(client_set)
                call_attributes.reset(attributes_set)
            return types.CallToolResult(
                content=result.content, structured_content=result.structured_content, is_error=result.is_error
            )

        return await self.running_on(ctx, who, entry.server, call)

    async def _once_started(self, name: str) -> CatalogTool | str:
        """The tool ``name`` stands for, once the servers it could belong to have started (a client that knows
        the tool may call it while the gateway's servers still start); or why its server cannot be called.

        The wait is the servers' own: a connection gives up after its startup timeout.

        Raises:
            MCPError: The name is no tool of the profile's servers (``Unknown tool``).
        """
        candidates = self.named_by(name)
        if await self.once_started(candidates) and (entry := self.view().tool(name)) is not None:
            return entry
        statuses = [status for s, status in self.host.servers.items() if s in candidates]
        if statuses and all(status.state is not CONNECTED for status in statuses):  # none is up to have it
            return "; ".join(_not_started(status) for status in statuses)
        relay = self._relay()
        if relay is not None:  # another gateway: it says why it has no such tool (its server failed ...)
            return self.host.tool_of(relay, name)
        raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")

    def _relay(self) -> str | None:
        """The one server of a profile that serves it under its own names, when that server relays for this
        gateway's clients (``forwardCaller``: another mcpdeck gateway, as for an attached ``serve --stdio``)."""
        profile = self.view().profile
        servers = profile.servers or []
        status = self.host.servers.get(servers[0]) if len(servers) == 1 and not profile.prefix else None
        if status is None or status.state is not CONNECTED or not self.host.config_of(status.name).forward_caller:
            return None
        return status.name


def _not_started(status: ServerStatus) -> str:
    why = f": {mask_urls(status.error)}" if status.error else ""
    if status.state is ServerState.FAILED:
        return f"server {status.name!r} failed to start{why}"
    return f"server {status.name!r} is {status.state.value}{why}"


class ResourceRequests(RunningRequests):
    """The profile's resources and templates: listed, read on the server that offers them, subscribed."""

    async def list_resources(
        self, ctx: RequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        self.client(ctx)
        await self.started()
        return types.ListResourcesResult(resources=self.view().resources())

    async def list_templates(
        self, ctx: RequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        self.client(ctx)
        await self.started()
        return types.ListResourceTemplatesResult(resource_templates=self.view().templates())

    async def server_for(self, uri: str) -> str:
        """The server to ask for ``uri`` (once the profile's servers still starting have started, if it takes that).

        Raises:
            MCPError: No server of the profile can be told to be the one (``-32002``).
        """
        if self.view().claiming(uri) is None:  # no server lists it (yet): those still starting may
            await self.once_started(self.view().servers())
        server = self.view().server_for_uri(uri)
        if server is None:
            raise MCPError(
                code=RESOURCE_NOT_FOUND, message=f"no server of this gateway offers {uri!r}", data={"uri": uri}
            )
        return server

    async def read_resource(
        self, ctx: RequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        who = self.client(ctx)
        uri = str(params.uri)
        server = await self.server_for(uri)
        host, check_permission = self.host, self.gate.check

        async def read() -> types.ReadResourceResult:
            try:
                return await host.read_resource(
                    uri, server=server, check_permission=check_permission, approver=self.gate.approver(ctx, who)
                )
            except MCPDeckError as error:
                raise mcp_error(error, who) from None

        return await self.running_on(ctx, who, server, read)

    async def subscribe(self, ctx: RequestContext, params: types.SubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        server = await self.server_for(uri)
        self.gate.refuse_denied(Access("resource", server, uri))
        try:
            await self.clients.subscribe(self.client(ctx), uri, server)
        except MCPDeckError as error:
            raise mcp_error(error) from None
        return types.EmptyResult()

    async def unsubscribe(self, ctx: RequestContext, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        try:
            await self.clients.unsubscribe(self.client(ctx), uri)
        except MCPDeckError as error:
            raise mcp_error(error) from None
        return types.EmptyResult()


class ListenRequests(Requests):
    """``subscriptions/listen`` for 2026-07-28 clients, on the profile's subscription bus."""

    def __init__(
        self, profile: ServedProfile, clients: ConnectedClients, gate: GatewayGate, listen: ListenHandler
    ) -> None:
        super().__init__(profile, clients, gate)
        self._listen = listen

    async def subscriptions_listen(
        self, ctx: RequestContext, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """A 2026-07-28 client's stream of list changes and resource updates: its resource URIs are
        subscribed upstream for as long as the stream is open."""
        clients = self.clients
        self.client(ctx)  # seen (``seen_recently``)
        stream, subscribed = object(), list[str]()
        clients.listening[self.profile] = clients.listening.get(self.profile, 0) + 1
        try:
            for uri in params.notifications.resource_subscriptions or ():
                server = self.view().server_for_uri(uri)
                if server is not None:  # (a URI no server offers is honoured and never fires, as the SDK does)
                    self.gate.refuse_denied(Access("resource", server, uri))
                    try:
                        await clients.subscribe(stream, uri, server)
                    except MCPDeckError as error:
                        raise mcp_error(error) from None
                    subscribed.append(uri)
            return await self._listen(ctx, params)
        finally:
            clients.listening[self.profile] -= 1
            await clients.unsubscribe_all(stream, subscribed)


class PromptRequests(RunningRequests):
    """The profile's prompts, and completions of prompt and resource-template arguments."""

    async def list_prompts(
        self, ctx: RequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        self.client(ctx)
        await self.started()
        return types.ListPromptsResult(prompts=self.view().prompts())

    async def get_prompt(self, ctx: RequestContext, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        who = self.client(ctx)
        entry = self.view().prompt(params.name)
        if entry is None and await self.once_started(self.named_by(params.name)):  # its server may still start
            entry = self.view().prompt(params.name)
        if entry is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        host, check_permission = self.host, self.gate.check

        async def get() -> types.GetPromptResult:
            try:
                return await host.get_prompt(
                    entry.name,
                    params.arguments,
                    check_permission=check_permission,
                    validate=False,  # the server judges its arguments, as for tools
                    approver=self.gate.approver(ctx, who),
                )
            except MCPDeckError as error:
                raise mcp_error(error, who) from None

        return await self.running_on(ctx, who, entry.server, get)

    async def complete(self, ctx: RequestContext, params: types.CompleteRequestParams) -> types.CompleteResult:
        self.client(ctx)
        ref, argument = params.ref, params.argument
        context = dict(params.context.arguments or {}) if params.context else None
        try:
            if isinstance(ref, types.PromptReference):
                entry = self.view().prompt(ref.name)
                if entry is None:
                    raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {ref.name}")
                self.gate.refuse_denied(Access("prompt", entry.server, entry.original_name))
                completion = await self.host.complete_prompt_argument(
                    entry.name, argument.name, argument.value, context
                )
            else:
                server = self.view().server_for_template(ref.uri)
                if server is None:
                    raise MCPError(code=INVALID_PARAMS, message=f"no resource template {ref.uri!r}")
                self.gate.refuse_denied(Access("resource", server, ref.uri))
                completion = await self.host.complete_resource_argument(
                    server, ref.uri, argument.name, argument.value, context
                )
        except MCPDeckError as error:
            raise mcp_error(error) from None
        return types.CompleteResult(completion=_at_most(completion, COMPLETION_VALUES))


class LoggingRequests(Requests):
    """``logging/setLevel``: the client's own level, and the servers' lowered to the lowest any client wants."""

    async def set_level(self, ctx: RequestContext, params: types.SetLevelRequestParams) -> types.EmptyResult:
        who = self.client(ctx)
        who.level = params.level
        servers = [s for s in self.view().servers() if not self.gate.denied_server(s)]
        await self.clients.lower_server_level(params.level, servers)
        return types.EmptyResult()


class RootsRequests(Requests):
    """A client's roots, as the servers see them (docs/gateway.md, "Roots").

    The one client of a stdio face, once initialized, answers for the roots of its profile's servers:
    those that connected without being offered roots connect again, offering them, and the others are
    told their roots changed. A client's ``notifications/roots/list_changed`` is passed on to the servers
    that see its roots: every server of the profile for that one client, the servers running one of its
    calls for a client of a face with several. A server a ``deny`` covers as a whole is in neither: it
    learns nothing of a client's folders.
    """

    def __init__(self, profile: ServedProfile, clients: ConnectedClients, gate: GatewayGate, calls: Calls) -> None:
        super().__init__(profile, clients, gate)
        self.calls = calls

    async def initialized(self, ctx: RequestContext, params: types.NotificationParams) -> None:
        who = self.client(ctx)
        calls = self.calls
        if not who.sole or calls.sole is who:
            return
        calls.sole = who
        servers = self._seeing_roots(self.view().servers())
        if who.has_roots:
            await self.host.roots_changed(servers, offer=True)
        else:  # servers that relay for it (forwardCaller) are shown who it is and what it can answer
            relaying = [s for s in servers if self.host.config_of(s).forward_caller]
            if relaying:
                await self.host.roots_changed(relaying, offer=True)

    async def roots_list_changed(self, ctx: RequestContext, params: types.NotificationParams) -> None:
        who = self.client(ctx)
        calls = self.calls
        servers = self.view().servers() if who is calls.sole else calls.servers_of(who)
        await self.host.roots_changed(self._seeing_roots(servers))

    def _seeing_roots(self, servers: list[str]) -> list[str]:
        """Those of ``servers`` that may see a client's roots: not one a ``deny`` covers as a whole."""
        return [server for server in servers if not self.gate.denied_server(server)]
