"""What servers may ask of the host, and the callbacks an embedding app answers with.

A server can ask the user for input (elicitation, in form or URL mode) and ask the host's model for
a completion (sampling). The app supplies one async callback for each to ``Host``; without one the
host declines cleanly and says so. Both callbacks get the name of the server that asked, and the
``origin`` of the question: the context (``contextvars``) of the host's request it belongs to. A
2026-07-28 server asks inside the request, so the callback already runs in its context; a handshake-
era server asks on its connection, outside any request, and its question belongs to the one request
running on that server, if only one runs (``origin`` is then that request's context; None when several
run, or none: the callback's own context is the question's). An app that marks its requests with a context
variable (which chat, which call) reads it from ``origin``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import Context
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import mcp_types as types

__all__ = [
    "ElicitationHandler",
    "ElicitationRequest",
    "ElicitationResponse",
    "Presented",
    "SamplingHandler",
    "SamplingRequest",
    "ServerRequestRouter",
]


@dataclass(frozen=True)
class ElicitationRequest:
    """A server asks the user something.

    Attributes:
        server: The server that asks.
        mode: ``form`` (answer the fields of ``schema``) or ``url`` (open ``url``, then say whether).
        message: What the server says to the user.
        schema: For ``form``: the JSON Schema of the answer (a flat object of simple fields).
        url: For ``url``: the page the user should open.
        elicitation_id: For ``url``: the server's id of this request.
        origin: The context of the host's request this question belongs to (see the module);
            None: the context the callback runs in.
    """

    server: str
    mode: Literal["form", "url"]
    message: str
    schema: dict[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None
    origin: Context | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ElicitationResponse:
    """The user's answer: ``accept`` (with ``content`` for a form), ``decline`` or ``cancel``.

    Fields of the form that the user left out are filled with the schema's defaults
    before the answer goes back to the server.
    """

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


ElicitationHandler = Callable[[ElicitationRequest], Awaitable[ElicitationResponse]]
"""``async def handler(request) -> ElicitationResponse``."""


@dataclass(frozen=True)
class SamplingRequest:
    """A server asks the host's model for a completion.

    Attributes:
        server: The server that asks.
        params: The request as the protocol gives it (messages, system prompt, max tokens, preferences ...).
        origin: The context of the host's request this one belongs to (see the module); None: the
            context the callback runs in.
    """

    server: str
    params: types.CreateMessageRequestParams
    origin: Context | None = field(default=None, compare=False, repr=False)


SamplingHandler = Callable[[SamplingRequest], Awaitable[types.CreateMessageResult]]
"""``async def handler(request) -> CreateMessageResult``; raise to refuse (the server gets an error)."""


@dataclass(frozen=True)
class Presented:
    """The client a connection presents itself as, to a server that relays for it (``forwardCaller``: another
    mcpdeck gateway): its ``clientInfo``, and whether it offers elicitation and sampling (what it cannot
    answer is not offered, so the server knows it cannot be asked)."""

    client_info: types.Implementation
    elicitation: bool
    sampling: bool


class ServerRequestRouter(Protocol):
    """Someone who answers some of the servers' requests in the host's place: a face that serves other
    clients (the gateway sends a server's question to the client whose call is running). Given to a host
    with ``Host.route_server_requests(router)``, which returns the function that takes it away again.

    The contract: each method answers for the requests that are its own and says None ("not mine", or
    False for ``roots_offered``) for the others, which go to the router given before it, and in the end to
    the host's own handlers (``Host(elicitation=..., sampling=..., roots=...)``). A method that raises fails
    that request (the server gets the error); the host goes on.
    """

    async def elicitation(self, request: ElicitationRequest) -> ElicitationResponse | None:
        """The answer to a server's request for user input, or None."""
        ...

    async def sampling(self, request: SamplingRequest) -> types.CreateMessageResult | None:
        """The answer to a server's request for a model completion, or None."""
        ...

    async def roots_for(self, server: str) -> list[types.Root] | None:
        """The roots for a server that has none of its own in its config, or None."""
        ...

    def roots_offered(self, server: str) -> bool:
        """Whether this router has roots to give the server now: a server is offered the roots capability
        only where someone has roots to give (capabilities are fixed when a server connects)."""
        ...

    def presented(self, server: str) -> Presented | None:
        """Who a connection to a ``forwardCaller`` server presents itself as, or None (mcpdeck itself)."""
        ...
