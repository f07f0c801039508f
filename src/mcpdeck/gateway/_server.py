"""One profile of the gateway as an SDK low-level ``Server``: each request handled by the host.

The SDK does the protocol (JSON-RPC, the handshake, both eras, cancellation, ping); the
handlers here turn each request into a ``Host`` call under the profile's names and turn
the answer, or the error, back into what the server behind it said.
"""

from __future__ import annotations

import json
import logging
import uuid
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request

from mcpdeck._version import __version__
from mcpdeck.errors import (
    MCPDeckError,
    PermissionDeniedError,
    PromptNotFoundError,
    ResourceNotFoundError,
    ServerError,
    ToolNotFoundError,
)
from mcpdeck.events import current_caller
from mcpdeck.gateway._clients import Downstream, Parked, Running
from mcpdeck.gateway._view import ProfileView
from mcpdeck.permissions import Approval, ApprovalCallback, ApprovalRequest

if TYPE_CHECKING:
    from mcpdeck.gateway._gateway import Gateway

__all__ = ["TOKEN_STATE", "build_server"]

Ctx = ServerRequestContext[Any]
logger = logging.getLogger(__name__)

RESOURCE_NOT_FOUND = -32002
"""The MCP error code for an unknown resource."""
_HANDSHAKE_ONLY = (
    "this gateway speaks the initialize handshake (protocol 2025-11-25 and earlier), where servers can ask "
    "the client questions in the middle of a call; connect with initialize"
)
TOKEN_STATE = "mcpdeck_gateway_token"
PARKED_TIMEOUT = 300.0
"""Seconds a 2026-07-28 call that asked its client something waits for the client's next round."""
APPROVAL_TIMEOUT = 120.0
"""Seconds a client has to answer the gate's question before the call is refused."""
"""Where the HTTP layer leaves the name of the token a request used (``scope["state"]``)."""


def _mcp_error(error: MCPDeckError, client: Downstream | None = None) -> MCPError:
    """The protocol error a client should see for a host error: the server's own, when it sent one."""
    cause = error.__cause__
    if isinstance(error, ServerError) and isinstance(cause, MCPError):
        return MCPError(code=cause.code, message=cause.message, data=cause.data)
    if isinstance(error, PermissionDeniedError):
        return MCPError(code=INVALID_REQUEST, message=_refusal(error, client))
    if isinstance(error, ToolNotFoundError | PromptNotFoundError):
        return MCPError(code=INVALID_PARAMS, message=str(error))
    if isinstance(error, ResourceNotFoundError):
        return MCPError(code=RESOURCE_NOT_FOUND, message=str(error), data={"uri": error.uri})
    return MCPError(code=INTERNAL_ERROR, message=str(error))


def _responses(raw: object) -> dict[str, types.InputResponse]:
    """The client's answers of a 2026-07-28 round, each read as the kind of answer it is."""
    if not isinstance(raw, dict):
        return {}
    kinds: tuple[type[Any], ...] = (
        types.ElicitResult,
        types.ListRootsResult,
        types.CreateMessageResultWithTools,
        types.CreateMessageResult,
    )
    answers: dict[str, types.InputResponse] = {}
    for key, value in cast(dict[str, object], raw).items():
        for kind in kinds:
            try:
                answers[key] = kind.model_validate(value)
                break
            except ValueError:
                continue
    return answers


def _refusal(error: PermissionDeniedError, client: Downstream | None) -> str:
    """The gate's refusal, saying why the client was not asked when it could not be."""
    text = str(error)
    if error.approved_by == "no-approver" and client is not None:
        text += f" ({client.name} cannot be asked: it does not offer elicitation)"
    return text


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _approval_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Allow this call?",
                "oneOf": [
                    {"const": "once", "title": "Allow once"},
                    {"const": "session", "title": "Allow this tool until the gateway restarts"},
                    {"const": "deny", "title": "Deny"},
                ],
                "default": "once",
            }
        },
        "required": ["decision"],
    }


def _asker(ctx: Ctx, client: Downstream) -> ApprovalCallback | None:
    """The approval callback for a call from ``client``: an elicitation to it, if it takes them."""
    if not client.can_elicit("form"):
        return None

    async def ask(request: ApprovalRequest) -> Approval:
        arguments = json.dumps(dict(request.arguments), ensure_ascii=False)[:2000]
        if request.original_name.startswith(("resource:", "prompt:")):  # a read or a prompt, not a tool call
            message = f"mcpdeck: allow this? {request.description}"
        else:
            message = (
                f"mcpdeck: allow {request.original_name!r} of server {request.server!r} to run "
                f"with arguments {arguments}?"
            )
        schema: Any = _approval_schema()
        with anyio.move_on_after(APPROVAL_TIMEOUT):  # the gate asks one client at a time: never wait forever
            answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
            decision = (answer.content or {}).get("decision") if answer.action == "accept" else None
            if decision == "session":
                return Approval.session()
            if decision == "once":
                return Approval.once()
            return Approval.deny(f"{client.name} answered {answer.action}" + (f" ({decision})" if decision else ""))
        return Approval.deny(f"{client.name} did not answer within {APPROVAL_TIMEOUT:g} s")

    return ask


class _GatewayServer(Server[Any]):
    """Announces every list change: the catalog changes whenever a server does."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        every = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
        return super().create_initialization_options(
            notification_options or every, experimental_capabilities, extensions
        )


def _tracing() -> bool:
    """Whether a program set an OpenTelemetry tracer provider (without one, every span is a no-op)."""
    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _token_of(ctx: Ctx) -> str | None:
    request = ctx.request
    if isinstance(request, Request):
        state: object = request.scope.get("state")
        if isinstance(state, dict):
            token: object = cast(dict[str, object], state).get(TOKEN_STATE)
            return token if isinstance(token, str) else None
    return None


def build_server(gateway: Gateway, profile: str | None) -> Server[Any]:
    """The MCP server for one profile (None: the whole catalog)."""
    host = gateway.host

    def view() -> ProfileView:
        return gateway.view(profile)

    def client(ctx: Ctx) -> Downstream:
        return gateway.clients.get(ctx, profile, _token_of(ctx))

    async def running_on(ctx: Ctx, server: str, work: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``work`` as the client's request on ``server``: its log messages and questions come back here."""
        if gateway.modern and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await in_rounds(ctx, server, work)
        running = Running(client(ctx), server, ctx)
        end = gateway.calls.start(running)
        try:
            return await work()
        finally:
            end()
            await running.flush()

    async def in_rounds(ctx: Ctx, server: str, work: Callable[[], Awaitable[Any]]) -> Any:
        """A 2026-07-28 request: the call runs in the gateway's task group, and each question the
        server asks ends this round with an ``InputRequiredResult``; the client's next round answers."""
        params: Mapping[str, Any] = ctx.params or {}
        state: object = params.get("requestState")
        parked = gateway.parked.get(state) if isinstance(state, str) else None
        if parked is None:
            parked = Parked(uuid.uuid4().hex)
            gateway.parked[parked.key] = parked
            running = Running(client(ctx), server, ctx, parked=parked)

            async def run() -> None:
                end = gateway.calls.start(running)
                try:
                    parked.finish(await work())
                except Exception as error:  # handed to the round that collects the result
                    parked.finish(error=error)
                finally:
                    end()
                with anyio.move_on_after(PARKED_TIMEOUT):  # a client that never comes back
                    await anyio.sleep_forever()
                gateway.parked.pop(parked.key, None)

            gateway.task_group.start_soon(run)
        else:
            parked.answer(_responses(params.get("inputResponses")))
        await parked.next_step()
        if parked.done:
            gateway.parked.pop(parked.key, None)
            if parked.error is not None:
                raise parked.error
            return parked.result
        return types.InputRequiredResult(input_requests=dict(parked.questions), request_state=parked.key)

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        client(ctx)
        v = view()
        return types.ListToolsResult(tools=[v.listed_tool(served, entry) for served, entry in v.tools()])

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        who = client(ctx)
        entry = view().tool(params.name)
        if entry is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name}")

        async def progress(value: float, total: float | None, message: str | None) -> None:
            try:
                await ctx.session.report_progress(value, total, message)  # under the client's own token, if any
            except Exception as error:  # the client's stream is gone (a 2026-07-28 round ended): the call goes on
                logger.debug("gateway: progress not delivered: %s", error)

        async def call() -> types.CallToolResult:
            caller = current_caller.set(who.caller)
            try:
                result = await host.call_tool(
                    entry.name,
                    params.arguments,
                    progress=progress,
                    check_permission=gateway.check_permission,
                    approver=_asker(ctx, who),
                )
            except PermissionDeniedError as error:
                return _error_result(_refusal(error, who))
            except ServerError as error:
                if isinstance(error.__cause__, MCPError):
                    raise _mcp_error(error) from None
                return _error_result(str(error))
            except MCPDeckError as error:  # arguments that do not fit, a server that is down ...
                return _error_result(str(error))
            finally:
                current_caller.reset(caller)
            return types.CallToolResult(
                content=result.content, structured_content=result.structured_content, is_error=result.is_error
            )

        return await running_on(ctx, entry.server, call)

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        client(ctx)
        return types.ListResourcesResult(resources=view().resources())

    async def list_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        client(ctx)
        return types.ListResourceTemplatesResult(resource_templates=view().templates())

    def server_for(uri: str) -> str:
        server = view().server_for_uri(uri)
        if server is None:
            raise MCPError(
                code=RESOURCE_NOT_FOUND, message=f"no server of this gateway offers {uri!r}", data={"uri": uri}
            )
        return server

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        who = client(ctx)
        uri = str(params.uri)
        server = server_for(uri)

        async def read() -> types.ReadResourceResult:
            try:
                return await host.read_resource(
                    uri, server=server, check_permission=gateway.check_permission, approver=_asker(ctx, who)
                )
            except MCPDeckError as error:
                raise _mcp_error(error, who) from None

        return await running_on(ctx, server, read)

    async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        try:
            await gateway.clients.subscribe(client(ctx), uri, server_for(uri))
        except MCPDeckError as error:
            raise _mcp_error(error) from None
        return types.EmptyResult()

    async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        try:
            await gateway.clients.unsubscribe(client(ctx), uri)
        except MCPDeckError as error:
            raise _mcp_error(error) from None
        return types.EmptyResult()

    async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        client(ctx)
        return types.ListPromptsResult(prompts=view().prompts())

    async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        who = client(ctx)
        entry = view().prompt(params.name)
        if entry is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {params.name}")

        async def get() -> types.GetPromptResult:
            try:
                return await host.get_prompt(
                    entry.name, params.arguments, check_permission=gateway.check_permission, approver=_asker(ctx, who)
                )
            except MCPDeckError as error:
                raise _mcp_error(error, who) from None

        return await running_on(ctx, entry.server, get)

    async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        client(ctx)
        ref, argument = params.ref, params.argument
        context = dict(params.context.arguments or {}) if params.context else None
        try:
            if isinstance(ref, types.PromptReference):
                entry = view().prompt(ref.name)
                if entry is None:
                    raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {ref.name}")
                values = await host.complete_prompt_argument(entry.name, argument.name, argument.value, context)
            else:
                server = view().server_for_template(ref.uri)
                if server is None:
                    raise MCPError(code=INVALID_PARAMS, message=f"no resource template {ref.uri!r}")
                values = await host.complete_resource_argument(server, ref.uri, argument.name, argument.value, context)
        except MCPDeckError as error:
            raise _mcp_error(error) from None
        return types.CompleteResult(completion=types.Completion(values=values[:100]))

    async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        who = client(ctx)
        who.level = params.level
        await gateway.clients.lower_server_level(params.level, view().servers())
        return types.EmptyResult()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # on_set_logging_level is deprecated as of 2026-07-28; older clients use it
        server = _GatewayServer(  # pyright: ignore[reportDeprecated]
            "mcpdeck" if profile is None else f"mcpdeck/{profile}",
            version=__version__,
            instructions=gateway.instructions(profile),
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=complete,
            on_set_logging_level=set_level,
        )
    if not _tracing():  # the SDK's span middleware costs ~5% of a call even when the spans go nowhere
        server.middleware = [m for m in server.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]
    if gateway.modern:
        bus = gateway.clients.buses[profile] = InMemorySubscriptionBus()
        listen = ListenHandler(bus)

        async def subscriptions_listen(
            ctx: Ctx, params: types.SubscriptionsListenRequestParams
        ) -> types.SubscriptionsListenResult:
            """A 2026-07-28 client's stream of list changes and resource updates: its resource URIs are
            subscribed upstream for as long as the stream is open."""
            stream, subscribed = object(), list[str]()
            try:
                for uri in params.notifications.resource_subscriptions or ():
                    server = view().server_for_uri(uri)
                    if server is not None:  # (a URI no server offers is honoured and never fires, as the SDK does)
                        try:
                            await gateway.clients.subscribe(stream, uri, server)
                        except MCPDeckError as error:
                            raise _mcp_error(error) from None
                        subscribed.append(uri)
                return await listen(ctx, params)
            finally:
                with anyio.CancelScope(shield=True):
                    for uri in subscribed:
                        await gateway.clients.unsubscribe(stream, uri)

        server.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, subscriptions_listen)
    else:

        async def no_discover(ctx: Ctx, params: types.RequestParams) -> types.EmptyResult:
            raise MCPError(code=METHOD_NOT_FOUND, message=_HANDSHAKE_ONLY)

        server.add_request_handler("server/discover", types.RequestParams, no_discover)
    return server
