"""The one guard in front of every listening HTTP face: ``serve`` (console, API and gateway on one port)
and ``gateway --port``.

Whoever reaches such a port can start programs as the user (adding a stdio server, or calling a tool
that runs one), so every request passes, in this order, before the app behind sees it:

1. **Host** (DNS rebinding). The ``Host`` header must be one of ``hosts`` (exact, or ``NAME:*`` for
   any port), or an IP address with the port the request came in on when the face listens on every
   address (``any_address``: an address cannot be a rebinding, which needs a name the attacker's DNS
   answers for). Otherwise **421 Misdirected Request**: the request names an authority this server
   does not answer for (RFC 9110, section 15.5.20; the SDK's own transport answers 421 too).
2. **Origin** (a browser page of another site). An ``Origin`` that is present must be one of
   ``origins`` (by default ``http://`` and ``https://`` with each of ``hosts``), on every method, as
   the MCP transport asks ("If the Origin header is present and invalid, servers MUST respond with
   HTTP 403 Forbidden"); a request that can change something (any method but GET, HEAD, OPTIONS)
   with ``Sec-Fetch-Site: cross-site`` is refused too. Otherwise **403**. Checked before the token,
   so another site's page cannot spend anyone's allowance of wrong tokens.
3. **Token**, when the face has ``credentials``: ``Authorization: Bearer``, compared in constant
   time by ``credentials`` (which names it). None: **401**. Wrong tokens are counted against who sent
   them (``Guesses``: a local user by the uid owning the connection, whatever loopback address it
   used); past the limit a sender gets **429** with ``Retry-After`` before its token is compared. The
   paths ``public`` names (the console's own files) and the ``sign_in`` exchange need none.
4. **Body size.** A body over ``max_body`` (4 MiB, the SDK's bound) is **413**: a ``Content-Length``
   over it unread, a chunked body as soon as it passes it (and the connection is closed).

Then the app gets the request, its body already read, the credential's name in
``scope["state"][CREDENTIAL]``. A refusal is JSON: under ``mcp_prefix`` (the MCP endpoint) a JSON-RPC
error without an id, as the MCP transport allows; elsewhere ``{"error": {"code", "message"}}``, the
API's shape. Every answer, refusals included, gets headers that keep it out of frames and caches and
stop content sniffing; no CORS header is ever sent, so another origin's page cannot read an answer.
"""

from __future__ import annotations

import hmac
import json
import socket
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpdeck._http_faces.listening import ANY_ADDRESS, check_allowed_host, names_an_address
from mcpdeck._http_faces.token_guesses import Guesses

__all__ = [
    "CREDENTIAL",
    "LOOPBACK_HOSTS",
    "MAX_BODY",
    "Guard",
    "Refusal",
    "SignIn",
    "allowed_hosts",
    "bounded",
    "same_secret",
]

MAX_BODY = DEFAULT_MAX_REQUEST_BODY_SIZE
"""The largest request body a face takes (the SDK's bound for its own transports, 4 MiB)."""
CREDENTIAL = "mcpdeck.credential"
"""The key in ``scope["state"]`` of the name ``credentials`` gave the request's token (None: no token needed)."""
LOOPBACK_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")
"""The loopback names with any port: what a guard admits when it is told nothing (a gateway mounted by a program)."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> set[str]:
    """The ``Host`` header values that name a server listening on ``host:port``, and the ``extra`` names
    it is reached by (a load balancer's: ``check_allowed_host``)."""
    names = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    if host in ANY_ADDRESS:  # every address: the machine's names stand for it (and its addresses: Guard)
        names |= {f"{socket.gethostname()}:{port}", f"{socket.getfqdn()}:{port}"}
    elif host not in ("127.0.0.1", "localhost", "::1"):
        names.add(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    names |= {check_allowed_host(name) for name in extra}
    return {name.lower() for name in names}


def _matches(value: str, allowed: frozenset[str]) -> bool:
    """``value`` is one of ``allowed``, where ``NAME:*`` stands for the name with any port."""
    return value in allowed or any(a.endswith(":*") and value.startswith(a[:-1]) for a in allowed)


def same_secret(given: str, secret: str) -> bool:
    """Whether a presented token is ``secret``, compared in constant time."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), secret.encode("utf-8", "surrogatepass"))


class Refusal(NamedTuple):
    """A request turned away: its status, a short code and a message saying what to do, extra headers."""

    status: int
    code: str
    message: str
    headers: Iterable[tuple[bytes, bytes]] = ()

    async def send(self, send: Send, *, jsonrpc: bool) -> None:
        """Answer with it: a JSON-RPC error without an id (``jsonrpc``: the MCP endpoint) or the API's error."""
        error: dict[str, Any] = (
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": self.message}}
            if jsonrpc
            else {"error": {"code": self.code, "message": self.message}}
        )
        await answer_json(send, self.status, error, self.headers)


async def answer_json(send: Send, status: int, content: object, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """An answer of ``content`` as JSON, with the guard's headers."""
    body = json.dumps(content).encode()
    start: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        *_SECURITY_HEADERS,
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


class SignIn(NamedTuple):
    """A path where something else than a token is traded for one (the console's login code): answered by
    ``answer`` after the Host and Origin checks, from a page of this server only (its ``Origin`` present)."""

    path: str
    answer: Callable[[Scope, Receive, Send, Guard], Awaitable[Refusal | None]]


class Guard:
    """ASGI middleware: Host, Origin, token (and wrong-token limit) and body size before ``app`` sees a request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: Iterable[str],
        origins: Iterable[str] | None = None,
        any_address: bool = False,
        credentials: Callable[[str], str | None] | None = None,
        public: Callable[[str, str], bool] | None = None,
        sign_in: SignIn | None = None,
        guesses: Guesses | None = None,
        max_body: int = MAX_BODY,
        mcp_prefix: str | None = None,
        token_hint: str = "",
        host_hint: str = "",
    ):
        """Guard ``app``.

        Args:
            app: What the requests that pass go to.
            hosts: The ``Host`` values that name this server (``allowed_hosts``; ``NAME:*``: any port).
            origins: The ``Origin`` values of its own pages; default ``http://`` and ``https://`` with each host.
            any_address: It listens on every address: an IP-address ``Host`` with its port is let in, and its
                own ``Origin``.
            credentials: The name of a right bearer token, or None for a wrong one; no ``credentials``: no
                token is needed.
            public: ``(method, path)`` served without a token (files with no data in them).
            sign_in: The one path where a login is traded for a token.
            guesses: The count of wrong tokens (default: 10 a minute per sender, 100 from all).
            max_body: The largest request body taken.
            mcp_prefix: The MCP endpoint's path (``""``: every path): refusals there are JSON-RPC errors.
            token_hint: Where the face's token is found, said when none or a wrong one comes.
            host_hint: How this face admits another name (a load balancer's), said with a 421.
        """
        self._app = app
        self._hosts = frozenset(h.lower() for h in hosts)
        chosen = origins if origins is not None else (f"{s}://{h}" for h in self._hosts for s in ("http", "https"))
        self._origins = frozenset(o.lower() for o in chosen)
        self._any_address = any_address
        self._credentials = credentials
        self._public = public
        self._sign_in = sign_in
        self.guesses = guesses or Guesses()
        self._max_body = max_body
        self._mcp_prefix = mcp_prefix
        self._host_hint = host_hint
        self._unauthorized = Refusal(
            401,
            "unauthorized",
            f"a token is needed: send `Authorization: Bearer TOKEN`{token_hint}",
            [(b"www-authenticate", b'Bearer realm="mcpdeck"')],
        )

    def _jsonrpc(self, path: str) -> bool:
        prefix = self._mcp_prefix
        return prefix is not None and (prefix == "" or path == prefix or path.startswith(prefix + "/"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # nothing is served over one: closed unless it passes every check
            if self._host_refusal(scope) or self._origin_refusal(scope) or self._token_refusal(scope, count=False):
                await send({"type": "websocket.close", "code": 1008})
                return
        if scope["type"] != "http":
            await self._app(scope, receive, send)  # lifespan, or a websocket that passed
            return
        path: str = scope.get("path", "")
        refusal = self._host_refusal(scope) or self._origin_refusal(scope)
        if refusal is None and self._sign_in is not None and path == self._sign_in.path:
            refusal = await self._sign_in.answer(scope, receive, send, self)
            if refusal is None:  # answered
                return
        if refusal is None and not (self._public is not None and self._public(scope.get("method", "GET"), path)):
            refusal = self._token_refusal(scope, count=True)
        if refusal is None:
            bounded_receive = await bounded(scope, receive, self._max_body)
            if isinstance(bounded_receive, Refusal):
                refusal = bounded_receive
            else:
                await self._app(scope, bounded_receive, _with_headers(send))
                return
        await refusal.send(send, jsonrpc=self._jsonrpc(path))

    def _host_refusal(self, scope: Scope) -> Refusal | None:
        """1. The ``Host`` header names this server."""
        host = _header(scope, b"host").lower()
        if self._names_us(scope, host):
            return None
        return Refusal(
            421,
            "bad-host",
            f"the Host header {host!r} does not name this server (a page whose DNS name was rebound to it?); "
            f"use {min(h for h in self._hosts if not h.endswith(':*')) if self._hosts else 'its address'}"
            f"{self._host_hint}",
        )

    def _names_us(self, scope: Scope, host: str) -> bool:
        if _matches(host, self._hosts):
            return True
        server = scope.get("server")
        return self._any_address and server is not None and names_an_address(host, server[1])

    def _origin_refusal(self, scope: Scope) -> Refusal | None:
        """2. A present ``Origin`` is a page of this server; nothing that changes anything comes cross-site."""
        origin = _header(scope, b"origin", None)
        foreign = origin is not None and not self._own_origin(scope, origin.lower())
        unsafe = scope.get("method", "GET") not in _SAFE_METHODS
        if foreign or (unsafe and _header(scope, b"sec-fetch-site") == "cross-site"):
            return Refusal(403, "bad-origin", f"requests from another site's page are refused (Origin {origin!r})")
        return None

    def _own_origin(self, scope: Scope, origin: str) -> bool:
        if _matches(origin, self._origins):
            return True
        host = _header(scope, b"host").lower()
        return origin == f"http://{host}" and self._names_us(scope, host)

    def judged(self, scope: Scope, right: Callable[[], bool], wrong: Refusal) -> Refusal | None:
        """3. ``right()`` compares what the request carries, unless its sender must wait first (429)."""
        ok, wait = self.guesses.judge(scope.get("client"), scope.get("server"), right)
        if ok:
            return None
        if wait:
            return Refusal(
                429,
                "too-many-attempts",
                f"too many wrong tokens; try again in {wait:.0f} s",
                [(b"retry-after", str(int(wait) + 1).encode())],
            )
        return wrong

    def _token_refusal(self, scope: Scope, *, count: bool) -> Refusal | None:
        """3. The right bearer token (a wrong one counts against its sender; none is simply 401)."""
        state: dict[str, Any] = dict(scope.get("state") or {})
        state[CREDENTIAL] = None
        scope["state"] = state
        if self._credentials is None:
            return None
        unauthorized = self._unauthorized
        authorization = _header(scope, b"authorization", None)
        if authorization is None:
            return unauthorized
        scheme, _, value = authorization.partition(" ")
        given = value.strip() if scheme.lower() == "bearer" else ""
        check = self._credentials

        def right() -> bool:
            name = check(given) if given else None
            state[CREDENTIAL] = name
            return name is not None

        if not count:
            return None if right() else unauthorized
        return self.judged(scope, right, unauthorized)


def _too_large(limit: int, *, close: bool) -> Refusal:
    return Refusal(
        413,
        "too-large",
        f"the request body is over {limit // (1024 * 1024)} MiB, the most mcpdeck takes; send less "
        "(for a large tool argument, a path or a URL the server can read instead)",
        [(b"connection", b"close")] if close else [],
    )


async def bounded(scope: Scope, receive: Receive, limit: int) -> Receive | Refusal:
    """4. Read the request's body up to ``limit`` bytes: a ``receive`` that hands it on, or the refusal.

    A ``Content-Length`` over the limit is refused before anything is read (the HTTP server throws
    away what the client still sends, so the client reads its 413). A body sent in chunks is read
    until it ends or passes the limit, and then the connection is closed: no more than ``limit``
    bytes are ever held, and no more are taken in.
    """
    length = _header(scope, b"content-length")
    if length.strip().isdigit() and int(length) > limit:
        return _too_large(limit, close=False)
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: hand that on
            held: list[Message] = [message]
            break
        body += message.get("body", b"")
        if len(body) > limit:
            return _too_large(limit, close=True)
        if not message.get("more_body", False):
            held = [{"type": "http.request", "body": bytes(body), "more_body": False}]
            break

    async def replay() -> Message:
        return held.pop(0) if held else await receive()

    return replay


def _header(scope: Scope, name: bytes, default: Any = "") -> Any:
    """The value of the request's header ``name`` (lower-case), or ``default``."""
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return default


def _with_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {name.lower() for name, _ in headers}
            headers.extend(h for h in _SECURITY_HEADERS if h[0] not in names)
            if b"cache-control" not in names:
                headers.append((b"cache-control", b"no-store"))
            message = {**message, "headers": headers}
        await send(message)

    return wrapped
