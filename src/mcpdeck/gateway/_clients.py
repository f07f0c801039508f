"""The gateway's clients, the calls they have running, and the way back to them.

Each connected client (one stdio peer, or one streamable HTTP session) is a ``GatewayClient``:
its name and capabilities from ``initialize``, the profile and token it came through, its
log level and resource subscriptions. While one of its requests runs on a server, that
request is an ``InFlightRequest`` entry; ``Calls`` finds the client a server's own request
(elicitation, sampling, roots) or log message belongs to:

1. the request the current task serves (servers on 2026-07-28 ask inside the call's own task);
2. otherwise the question's ``origin`` (``ElicitationRequest.origin``, ``SamplingRequest.origin``): a
   handshake-era server asks on its connection, with no link to the call, but while only one of the
   host's requests is running on that server, the question is that request's, and ``origin`` is its
   context (a call of another client still on the gate, or waiting for its server, has not reached
   the server and does not count);
3. otherwise the calls running on that server: when they all come from one client, that
   client;
4. otherwise no one: the host's own handlers answer, as for the host's own calls.

Roots are the one exception to 4: a gateway serving one client over stdio has that client
(``Calls.sole``), which answers a server's ``roots/list`` outside calls too, and whose roots make
the servers of its profile be offered the roots capability (``roots_offered``).
"""

from __future__ import annotations

import logging
import uuid
import warnings
from collections.abc import Callable
from contextvars import Context, ContextVar, Token
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.message import ServerMessageMetadata

from mcpdeck.callbacks import ElicitationRequest, ElicitationResponse, Presented, SamplingRequest

__all__ = [
    "LEVELS",
    "ROOTS_WAIT",
    "Calls",
    "ClientRouter",
    "GatewayClient",
    "InFlightRequest",
    "MultiRoundCall",
    "parked_call",
    "send_log",
    "sole_face",
]

logger = logging.getLogger(__name__)

ROOTS_WAIT = 10.0
"""Seconds a server's ``roots/list`` waits for the stdio client's answer outside a call."""

sole_face: ContextVar[bool] = ContextVar("mcpdeck_gateway_sole_face", default=False)
"""True in the tasks of a face that serves one client (``Gateway.run_stdio``)."""

LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


@dataclass(eq=False)
class GatewayClient:
    """One client of the gateway."""

    session: ServerSession
    """The latest session object of its connection (any one reaches its standalone channel)."""
    profile: str | None
    token: str | None
    sole: bool = False
    """The one client of its face (a stdio gateway's): it answers for its roots outside calls too."""
    level: types.LoggingLevel | None = None
    """The level it asked for with ``logging/setLevel``; None: every message."""
    subscriptions: set[str] = field(default_factory=set[str])
    session_allowed: set[str] = field(default_factory=set[str])
    """What it allowed "for the rest of this session" when the gate asked it: for its own calls only."""
    approving: anyio.Lock = field(default_factory=anyio.Lock)
    """The gate's questions to it, one at a time."""
    key: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Its session, as the shared approvals know it."""
    kept: bool = False
    """Whether its session holds approvals in the shared store (to drop when it ends)."""
    _named: tuple[object, str, str] | None = field(default=None, init=False, repr=False)
    """The ``clientInfo`` its names were made from, its name and caller (asked for on every call)."""

    def names(self) -> tuple[str, str]:
        """Its ``name`` and ``caller`` at once (a call needs both: one look at its ``clientInfo``)."""
        params = self.session.client_params
        named = self._named
        if named is not None and named[0] is params:
            return named[1], named[2]
        if params is None:
            name = "unknown client"
        else:
            info = params.client_info
            name = f"{info.name} {info.version}".strip()
        via = [f"profile {self.profile}"] if self.profile else []
        via += [f"token {self.token}"] if self.token else []
        caller = f"{name} (via {', '.join(via)})" if via else name
        self._named = (params, name, caller)
        return name, caller

    @property
    def name(self) -> str:
        """``name version`` from its ``clientInfo``, or ``unknown client``."""
        return self.names()[0]

    @property
    def caller(self) -> str:
        """How the history names it: client, then the profile and token it used."""
        return self.names()[1]

    def wants(self, level: str) -> bool:
        """Whether a log message of ``level`` passes its ``logging/setLevel``."""
        if self.level is None or level not in LEVELS:
            return True
        return LEVELS.index(level) >= LEVELS.index(self.level)  # pyright: ignore[reportArgumentType]

    def _caps(self) -> types.ClientCapabilities | None:
        return self.session.client_capabilities

    def can_elicit(self, mode: str) -> bool:
        """Whether it declared elicitation in this mode (a bare ``elicitation`` means form)."""
        caps = self._caps()
        elicitation = caps.elicitation if caps else None
        if elicitation is None:
            return False
        if mode == "url":
            return elicitation.url is not None
        return elicitation.form is not None or elicitation.url is None

    @property
    def can_sample(self) -> bool:
        """Whether it declared sampling."""
        caps = self._caps()
        return caps is not None and caps.sampling is not None

    @property
    def has_roots(self) -> bool:
        """Whether it declared roots."""
        caps = self._caps()
        return caps is not None and caps.roots is not None


@dataclass(eq=False)
class InFlightRequest:
    """One client request being served by one server."""

    client: GatewayClient
    server: str
    ctx: ServerRequestContext[Any]
    pending: list[types.LoggingMessageNotificationParams] = field(
        default_factory=list[types.LoggingMessageNotificationParams]
    )
    """Log messages the server sent during the request, sent to the client before its answer."""
    parked: MultiRoundCall | None = None
    """For a 2026-07-28 client: where the server's questions wait for the client's next round."""

    @property
    def related(self) -> ServerMessageMetadata:
        """Metadata that puts a message on the request's own stream."""
        return ServerMessageMetadata(related_request_id=self.ctx.request_id)

    async def flush(self) -> None:
        """Send the log messages held for this request, on its stream, in order."""
        while self.pending:
            params = self.pending.pop(0)
            await send_log(self.ctx.session, params, self.ctx.request_id)


async def send_log(
    session: ServerSession, params: types.LoggingMessageNotificationParams, related: types.RequestId | None
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # logging is deprecated as of 2026-07-28; older clients use it
        await session.send_log_message(  # pyright: ignore[reportDeprecated]
            params.level, params.data, params.logger, related_request_id=related
        )


class MultiRoundCall:
    """A call of a 2026-07-28 client, kept running between the rounds of its request.

    That protocol has no requests from server to client: a question comes back to the client
    as an ``InputRequiredResult`` and the client sends the request again with the answers.
    The server's call keeps running here meanwhile, its questions waiting for those answers.
    """

    def __init__(self, key: str, owner: str | None = None):
        self.key = key
        self.owner = owner
        """The name of the token the call was made with: its ``requestState`` means nothing with another."""
        self.questions: dict[str, types.InputRequest] = {}
        self._answers: dict[str, types.InputResponse] = {}
        self._arrived: dict[str, anyio.Event] = {}
        self._step = anyio.Event()
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None

    async def ask(self, request: types.InputRequest) -> types.InputResponse:
        """Put a question to the client's next round and wait for its answer."""
        key = f"q{len(self._arrived) + 1}"
        self.questions[key] = request
        arrived = self._arrived[key] = anyio.Event()
        self._step.set()
        await arrived.wait()
        return self._answers.pop(key)

    def answer(self, responses: dict[str, types.InputResponse]) -> None:
        """The client's answers from a new round."""
        for key, response in responses.items():
            if key in self.questions and key in self._arrived:
                del self.questions[key]
                self._answers[key] = response
                self._arrived[key].set()

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        """The call ended."""
        self.done, self.result, self.error = True, result, error
        self._step.set()

    async def next_step(self) -> None:
        """Wait until the call ends or asks something the client has not been asked."""
        while not self.done and not self.questions:
            self._step = anyio.Event()
            await self._step.wait()

    async def round(self, parked: dict[str, MultiRoundCall]) -> Any:
        """The outcome of the client's round: once the call ends, its result (or its error, raised), and it is
        taken out of ``parked``; until then, an ``InputRequiredResult`` with the questions it waits for."""
        await self.next_step()
        if self.done:
            parked.pop(self.key, None)
            if self.error is not None:
                raise self.error
            return self.result
        return types.InputRequiredResult(input_requests=dict(self.questions), request_state=self.key)


_current: ContextVar[InFlightRequest | None] = ContextVar("mcpdeck_gateway_request", default=None)


def parked_call() -> MultiRoundCall | None:
    """The 2026-07-28 call the current task runs in rounds, if it does: its questions go to the client's
    next round (the gate's approval questions as well as the servers')."""
    running = _current.get()
    return running.parked if running is not None else None


class Calls:
    """The requests running now, by server."""

    def __init__(self) -> None:
        self._by_server: dict[str, list[InFlightRequest]] = {}
        self.sole: GatewayClient | None = None
        """The one client of a stdio face, once it has initialized."""

    def start(self, running: InFlightRequest) -> Token[InFlightRequest | None]:
        """Note a request as running (also for the current task); ``end`` it with what this returns."""
        self._by_server.setdefault(running.server, []).append(running)
        return _current.set(running)

    def end(self, running: InFlightRequest, token: Token[InFlightRequest | None]) -> None:
        """The request ``start`` noted ended."""
        _current.reset(token)
        entries = self._by_server.get(running.server)
        if entries and running in entries:
            entries.remove(running)

    def owner(self, server: str, origin: Context | None = None) -> InFlightRequest | None:
        """The running request a server's request or message belongs to, if it can be told (see the module);
        ``origin``: the context of the host's request the question came in for, if the host could tell."""
        running = _current.get()
        if running is not None and running.server == server:
            return running
        if origin is not None:
            running = origin.get(_current)
            if running is not None and running.server == server:
                return running
        entries = self._by_server.get(server) or []
        clients = {id(entry.client) for entry in entries}
        return entries[-1] if len(clients) == 1 else None

    def running_on(self, server: str) -> list[InFlightRequest]:
        """The requests running on a server now, oldest first."""
        return list(self._by_server.get(server) or [])

    def servers_of(self, client: GatewayClient) -> list[str]:
        """The servers running a request of ``client`` now."""
        return [server for server, entries in self._by_server.items() if any(e.client is client for e in entries)]


def _form_answer(result: types.ElicitResult) -> ElicitationResponse:
    content = result.content if result.action == "accept" else None
    return ElicitationResponse(action=result.action, content=dict(content) if content is not None else None)


class ClientRouter:
    """Servers' requests (elicitation, sampling, roots) sent to the gateway client whose call is
    running, where it can answer: in the call's next round for a 2026-07-28 client, on the call's
    stream for the others. The gateway gives it to its host (``Host.route_server_requests``): what it
    says None to, the host's own handlers answer (``mcpdeck.callbacks.ServerRequestRouter``)."""

    def __init__(
        self,
        calls: Calls,
        serves: Callable[[str | None, str], bool],
        denied: Callable[[str], bool] = lambda server: False,
    ) -> None:
        self._calls = calls
        self._serves = serves  # (profile, server) -> whether the profile has the server
        self._denied = denied  # server -> whether a deny rule covers all of it: it learns nothing of the clients

    async def elicitation(self, request: ElicitationRequest) -> ElicitationResponse | None:
        running = self._calls.owner(request.server, request.origin)
        if running is not None and running.client.can_elicit(request.mode):
            if running.parked is not None:
                return await _elicit_in_round(running.parked, request)
            try:
                return await _elicit_on_stream(running, request)
            except NoBackChannelError:
                pass  # a 2026-07-28 client cannot be asked mid-call: the host answers
        return None

    async def sampling(self, request: SamplingRequest) -> types.CreateMessageResult | None:
        running = self._calls.owner(request.server, request.origin)
        if running is not None and running.client.can_sample:
            if running.parked is not None:
                response = await running.parked.ask(types.CreateMessageRequest(params=request.params))
                if isinstance(response, types.CreateMessageResult | types.CreateMessageResultWithTools):
                    return cast(types.CreateMessageResult, response)  # with tools when the server offered tools
                raise RuntimeError("the client answered a sampling request with something else")
            params = request.params
            wanted: Any = (
                types.CreateMessageResultWithTools if params.tools or params.tool_choice else types.CreateMessageResult
            )
            try:
                result: types.CreateMessageResult = await running.ctx.session.send_request(
                    types.CreateMessageRequest(params=params), wanted, metadata=running.related
                )
                return result
            except NoBackChannelError:
                pass
        return None

    def _sole_with_roots(self, server: str) -> GatewayClient | None:
        """The stdio face's client, if it declared roots and its profile has the server."""
        sole = self._calls.sole
        if sole is None or not sole.has_roots or self._denied(server):
            return None
        return sole if self._serves(sole.profile, server) else None

    def presented(self, server: str) -> Presented | None:
        """The stdio face's client, to a server that relays for it (``forwardCaller``) and its profile has: its
        ``clientInfo``, and elicitation and sampling only if it offers them (the server then knows it cannot
        ask it, instead of a decline answered here for it)."""
        sole = self._calls.sole
        if sole is None or self._denied(server) or not self._serves(sole.profile, server):
            return None
        params = sole.session.client_params
        info = params.client_info if params is not None else types.Implementation(name="unknown client", version="")
        return Presented(info, elicitation=sole.can_elicit("form"), sampling=sole.can_sample)

    def roots_offered(self, server: str) -> bool:
        return self._sole_with_roots(server) is not None

    async def roots_for(self, server: str) -> list[types.Root] | None:
        if self._denied(server):  # a server the user denied learns nothing of a client's folders
            return None
        running = self._calls.owner(server)
        if running is not None and running.client.has_roots:
            if running.parked is not None:
                response = await running.parked.ask(types.ListRootsRequest())
                return list(response.roots) if isinstance(response, types.ListRootsResult) else None
            try:
                result = await running.ctx.session.send_request(
                    types.ListRootsRequest(), types.ListRootsResult, metadata=running.related
                )
                return list(result.roots)
            except NoBackChannelError:
                pass
        sole = self._sole_with_roots(server)
        if sole is not None:  # outside a call: a stdio gateway's one client answers for its roots
            with anyio.move_on_after(ROOTS_WAIT):
                result = await sole.session.send_request(types.ListRootsRequest(), types.ListRootsResult)
                return list(result.roots)
            raise RuntimeError(f"{sole.name} did not answer within {ROOTS_WAIT:g} s")
        return None


async def _elicit_in_round(parked: MultiRoundCall, request: ElicitationRequest) -> ElicitationResponse:
    """Put a server's elicitation to a 2026-07-28 client's next round."""
    params: types.ElicitRequestParams = (
        types.ElicitRequestURLParams(
            message=request.message, url=request.url or "", elicitation_id=request.elicitation_id or ""
        )
        if request.mode == "url"
        else types.ElicitRequestFormParams.model_validate(
            {"message": request.message, "requestedSchema": request.schema or {"type": "object"}}
        )
    )
    response = await parked.ask(types.ElicitRequest(params=params))
    if isinstance(response, types.ElicitResult):
        return _form_answer(response)
    raise RuntimeError("the client answered an elicitation with something else")


async def _elicit_on_stream(running: InFlightRequest, request: ElicitationRequest) -> ElicitationResponse:
    """Ask a server's elicitation of the client on its call's stream (NoBackChannelError: it cannot be)."""
    session = running.ctx.session
    if request.mode == "url":
        result = await session.elicit_url(
            request.message,
            request.url or "",
            request.elicitation_id or "",
            related_request_id=running.ctx.request_id,
        )
    else:
        schema: Any = request.schema or {"type": "object", "properties": {}}
        result = await session.elicit_form(request.message, schema, related_request_id=running.ctx.request_id)
    return _form_answer(result)
