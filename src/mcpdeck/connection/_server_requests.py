"""Answers to what one server asks of the host: elicitation, sampling, roots; and its log messages.

The host-wide handlers (``ClientHandlers``) come from the embedding app through ``Host``;
``ServerRequests`` adapts them to the SDK's per-connection callbacks for one server, fills
elicitation defaults, declines or refuses clearly when no handler is set, and reports
every request as an event.
"""

from __future__ import annotations

import contextvars
import logging
import os
from collections.abc import Awaitable, Callable, Generator, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import mcp_types as types
from mcp.client.session import ClientRequestContext
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST

from mcpdeck.callbacks import (
    ElicitationHandler,
    ElicitationRequest,
    Presented,
    SamplingHandler,
    SamplingRequest,
    ServerRequestRouter,
)
from mcpdeck.events import Event, ServerLog, ServerRequestHandled, ServerRequestKind, ServerRequestOutcome

__all__ = ["ClientHandlers", "ServerRequests", "as_roots", "fill_defaults"]

_A = TypeVar("_A")

logger = logging.getLogger(__name__)


@dataclass
class ClientHandlers:
    """The host-wide answers to server requests (shared by every connection)."""

    elicitation: ElicitationHandler | None = None
    sampling: SamplingHandler | None = None
    roots: list[types.Root] | None = None
    """The host's roots; None when nobody asked for any (then none are offered)."""
    routers: list[ServerRequestRouter] = field(default_factory=list["ServerRequestRouter"])
    """Who answers servers' requests in the host's place, newest first asked (``Host.route_server_requests``)."""

    def route(self, router: ServerRequestRouter) -> Callable[[], None]:
        """Add a router (asked before the others and the host's own handlers); returns what removes it."""
        self.routers.append(router)

        def remove() -> None:
            if router in self.routers:
                self.routers.remove(router)

        return remove

    def asked(self) -> list[ServerRequestRouter]:
        """The routers in the order they are asked: the newest first."""
        return self.routers[::-1]


def as_roots(roots: Iterable[str | os.PathLike[str]] | None) -> list[types.Root] | None:
    """Roots as the protocol gives them: ``file://`` URIs of absolute folders, named after the folder.

    None (nobody asked for roots) stays None: the host then offers no roots at all.
    """
    if roots is None:
        return None
    result: list[types.Root] = []
    for root in roots:
        text = os.fspath(root)
        if text.startswith("file://"):
            result.append(types.Root.model_validate({"uri": text, "name": Path(text[7:]).name or text}))
        else:
            path = Path(text).expanduser().resolve()
            result.append(types.Root.model_validate({"uri": path.as_uri(), "name": path.name or str(path)}))
    return result


def fill_defaults(schema: dict[str, Any] | None, content: dict[str, Any] | None) -> dict[str, Any]:
    """``content`` with each field the user left empty (absent or None) set to the schema's default."""
    filled = {key: value for key, value in (content or {}).items() if value is not None}
    properties: dict[str, Any] = (schema or {}).get("properties") or {}
    for key, spec in properties.items():
        if key not in filled and isinstance(spec, dict) and "default" in spec:
            filled[key] = spec["default"]
    return filled


class ServerRequests:
    """The SDK callbacks for one server."""

    def __init__(
        self,
        server: str,
        handlers: ClientHandlers,
        publish: Callable[[Event], None],
        write_log: Callable[[str], None],
        roots: list[types.Root] | None = None,
    ):
        self._server = server
        self._handlers = handlers
        self._roots = roots
        self._publish = publish
        self._write_log = write_log
        self._running: dict[int, contextvars.Context] = {}

    @contextmanager
    def running(self) -> Generator[None]:
        """Around one request the host sends this server: what the server asks meanwhile, outside
        any request (a handshake-era server asks on its connection), belongs to it if it runs alone."""
        context = contextvars.copy_context()
        self._running[id(context)] = context
        try:
            yield
        finally:
            del self._running[id(context)]

    def _origin(self) -> contextvars.Context | None:
        """The context of the one request running on this server, which a question belongs to; None when
        several run, or none (the question is then of the context it came in)."""
        if len(self._running) == 1:
            return next(iter(self._running.values()))
        return None

    def set_roots(self, roots: list[types.Root] | None) -> None:
        """This server's own roots (None: the host's)."""
        self._roots = roots

    def _report(self, kind: ServerRequestKind, outcome: ServerRequestOutcome, detail: str | None = None) -> None:
        self._publish(ServerRequestHandled(server=self._server, kind=kind, outcome=outcome, detail=detail))

    async def elicitation(
        self, context: ClientRequestContext | None, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """A server asks the user for input."""
        handler = self._handlers.elicitation
        if isinstance(params, types.ElicitRequestURLParams):
            request = ElicitationRequest(
                server=self._server,
                mode="url",
                message=params.message,
                url=params.url,
                elicitation_id=params.elicitation_id,
                origin=self._origin(),
            )
        else:
            request = ElicitationRequest(
                server=self._server,
                mode="form",
                message=params.message,
                schema=params.requested_schema,
                origin=self._origin(),
            )
        try:
            answer = await self._routed(lambda router: router.elicitation(request))
            if answer is None:
                if handler is None:
                    detail = "no elicitation handler is configured for this host, so it declined"
                    logger.warning("server %r asked for user input (%s): %s", self._server, request.mode, detail)
                    self._report("elicitation", "decline", detail)
                    return types.ElicitResult(action="decline")
                answer = await handler(request)
        except Exception as error:  # the app's handler failed: the server gets an error, the host goes on
            logger.exception("the elicitation handler failed for server %r", self._server)
            self._report("elicitation", "error", str(error))
            return types.ErrorData(code=INTERNAL_ERROR, message=f"the client could not ask the user: {error}")
        content: dict[str, Any] | None = None
        if answer.action == "accept" and request.mode == "form":
            content = fill_defaults(request.schema, answer.content)
        self._report("elicitation", answer.action)
        return types.ElicitResult(action=answer.action, content=content)

    async def _routed(self, ask: Callable[[ServerRequestRouter], Awaitable[_A | None]]) -> _A | None:
        """The first answer a router gives (the newest first: the gateway's clients), None if none answers."""
        for router in self._handlers.asked():
            answer = await ask(router)
            if answer is not None:
                return answer
        return None

    async def url_elicitations(self, data: object) -> bool:
        """A tool call answered "open these pages first": ask the user; True if they accepted every one."""
        raw = cast(dict[str, object], data).get("elicitations") if isinstance(data, dict) else None
        if not isinstance(raw, list) or not raw:
            return False
        for item in cast(list[object], raw):
            try:
                params = types.ElicitRequestURLParams.model_validate(item)
            except ValueError:
                logger.warning("server %r sent an unreadable URL elicitation: %r", self._server, item)
                return False
            answer = await self.elicitation(None, params)
            if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
                return False
        return True

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """A server asks the host's model for a completion."""
        handler = self._handlers.sampling
        request = SamplingRequest(server=self._server, params=params, origin=self._origin())
        try:
            result = await self._routed(lambda router: router.sampling(request))
            if result is None:
                if handler is None:
                    detail = "sampling is not available: no model is configured for this host"
                    self._report("sampling", "refused", detail)
                    return types.ErrorData(code=INVALID_REQUEST, message=detail)
                result = await handler(request)
        except Exception as error:  # a refusal or a provider failure: the server gets the reason
            self._report("sampling", "refused", str(error))
            return types.ErrorData(code=INTERNAL_ERROR, message=f"sampling failed: {error}")
        self._report("sampling", "answered")
        return result

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        """The folders the host offers the server."""
        roots = self._roots
        if roots is None:
            try:
                for router in self._handlers.asked():
                    roots = await router.roots_for(self._server)
                    if roots is not None:
                        break
            except Exception as error:  # the other side failed: the server gets an error, the host goes on
                self._report("roots", "error", str(error))
                return types.ErrorData(code=INTERNAL_ERROR, message=f"the client could not list its roots: {error}")
        self._report("roots", "answered")
        return types.ListRootsResult(roots=list(roots if roots is not None else self._handlers.roots or []))

    @property
    def presented(self) -> Presented | None:
        """Who to present this server as the client (a router's ``presented``); None: mcpdeck itself."""
        for router in self._handlers.asked():
            presented = router.presented(self._server)
            if presented is not None:
                return presented
        return None

    @property
    def answers_questions(self) -> bool:
        """Whether anyone could answer this server's request for user input or a model's completion: the
        host's elicitation or sampling handler, or a router (a gateway's clients). Where nobody could, and
        no roots are offered either, a session needs no back-channel (see ``_protocol``)."""
        handlers = self._handlers
        return handlers.elicitation is not None or handlers.sampling is not None or bool(handlers.routers)

    def back_channel_wanted(self, roots_allowed: bool) -> bool:
        """Whether a session of this server wants a back-channel: someone answers its questions, or it is
        offered roots (``roots_allowed``: its config does not turn roots off)."""
        return self.answers_questions or (roots_allowed and self.offers_roots)

    @property
    def offers_roots(self) -> bool:
        """Whether this server is offered roots at all: its own ``roots`` list, the host's, or those of
        someone who has some for it now (a router's ``roots_offered``)."""
        handlers = self._handlers
        if self._roots is not None or handlers.roots is not None:
            return True
        return any(router.roots_offered(self._server) for router in handlers.asked())

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        """A log message from the server: to its log file and to the event bus."""
        data = params.data
        text = data if isinstance(data, str) else repr(data)
        source = f" {params.logger}" if params.logger else ""
        self._write_log(f"[{params.level}{source}] {text}")
        self._publish(ServerLog(server=self._server, level=params.level, logger=params.logger, data=data))
