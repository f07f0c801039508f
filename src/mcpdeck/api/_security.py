"""The guard in front of everything ``mcpdeck serve`` answers (console, API, gateway).

Adding a stdio server runs a program, so whoever reaches this port can run code as the
user. Every request passes, in this order:

1. **Host.** The ``Host`` header must name the address the process listens on
   (``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT``, or the ``--host`` given), or be one of
   the exact names given with ``--allowed-host`` (a load balancer's). A page on another site that
   rebinds its DNS name to 127.0.0.1 sends its own name: refused (403).
2. **Token.** ``Authorization: Bearer`` with the token printed at start-up (the CLI, scripts,
   MCP clients) or a console session's token (see ``_login``: a browser signs in with a
   one-time code and keeps its session token in ``sessionStorage``, never in a cookie, which
   every other port on the same address would get). Compared in constant time. None: 401.
   Served to anyone: the console's own files (``GET /`` and ``/console/...``: the package's
   code, no data), and ``POST /api/session``, where a login code is traded for a session
   (a wrong code counts as a wrong token).
3. **Rate limit.** Wrong tokens (and login codes) are counted against who sent them, not the
   address: a local user by the uid owning the connection, anything else by its address (see
   ``mcpdeck._http_faces.token_guesses``). Past ``max_failures`` within ``window`` seconds (or 100 from everyone
   together), a sender's tokens are refused (429, ``Retry-After``) before they are compared, so a
   guesser learns nothing; the user ``serve`` runs as always gets in with the right token, so no
   one else can lock them out.
4. **Origin (CSRF).** A request that can change something (any method but GET, HEAD,
   OPTIONS) must carry an ``Origin`` naming this server, or carry no ``Origin`` and
   authenticate with the ``Authorization`` header (curl, the CLI). ``Sec-Fetch-Site:
   cross-site`` is refused too.
5. **Body size.** A body over ``MAX_BODY`` (4 MiB, the bound the SDK's gateway transport keeps too)
   is refused with 413: a ``Content-Length`` over it unread, a chunked body as soon as it passes it.
   Only then does the app see the request, with the body read.

No CORS headers are ever sent, so another origin's page cannot read an answer. Every
answer gets ``Cache-Control: no-store`` (API) and headers that keep it out of frames and
stop content sniffing.
"""

from __future__ import annotations

import hmac
import json
import socket
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, cast

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpdeck._http_faces.listening import ANY_ADDRESS, check_allowed_host, names_an_address
from mcpdeck._http_faces.token_guesses import Guesses
from mcpdeck.api._login import Logins

__all__ = ["MAX_BODY", "Guard", "allowed_hosts"]

MAX_BODY = DEFAULT_MAX_REQUEST_BODY_SIZE
"""The largest request body any path takes (the SDK's bound for the gateway's own port, 4 MiB)."""

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


class _Refusal(NamedTuple):
    """A request turned away: the status, the error code and message of the JSON body, extra headers."""

    status: int
    code: str
    message: str
    headers: Iterable[tuple[bytes, bytes]] = ()

    async def send(self, send: Send) -> None:
        body = json.dumps({"error": {"code": self.code, "message": self.message}}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": self.status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-store"),
                    *_SECURITY_HEADERS,
                    *self.headers,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware: Host, token, rate limit and Origin checks before ``app`` sees a request."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        hosts: set[str],
        port: int,
        any_address: bool = False,
        max_failures: int = 10,
        window: float = 60.0,
        max_body: int = MAX_BODY,
        logins: Logins | None = None,
    ):
        self._app = app
        self._token = token.encode()
        self._port = port
        self._any_address = any_address  # listening on every address: IP-address Hosts are let in too
        self._hosts = {h.lower() for h in hosts}
        # A page of this server, over HTTP or behind a balancer that ends TLS
        self._origins = {f"{scheme}://{h}" for h in self._hosts for scheme in ("http", "https")}
        self.logins = logins or Logins()
        self._guesses = Guesses(per_sender=max_failures, window=window)
        self._max_body = max_body

    def _presented(self, scope: Scope) -> tuple[str | None, str]:
        """The token the request carries and how: ``bearer`` or ``none`` (no cookie, no query: see ``_login``)."""
        auth = dict(_decoded(scope)).get("authorization", "")
        if auth:
            scheme, _, value = auth.partition(" ")
            return (value.strip() if scheme.lower() == "bearer" else ""), "bearer"
        return None, "none"

    def _valid(self, token: str | None) -> bool:
        if token is None:
            return False
        right = hmac.compare_digest(token.encode("utf-8", "surrogatepass"), self._token)
        return right or self.logins.session(token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)  # lifespan
            return
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        headers = dict(_decoded(scope))
        path, method = scope.get("path", ""), scope.get("method", "GET")
        refusal = self._host_refusal(headers)
        if refusal is None and method in ("GET", "HEAD") and (path == "/" or path.startswith("/console/")):
            await self._app(scope, receive, _with_headers(send, api=False))  # the console's files: no data in them
            return
        if refusal is None and path == "/api/session":
            refusal = self._origin_refusal(scope, headers, "none") or await self._sign_in(scope, receive, send)
            if refusal is None:  # signed in: answered
                return
        if refusal is not None:
            await refusal.send(send)
            return
        token, how = self._presented(scope)
        refusal = self._token_refusal(scope, token) or self._origin_refusal(scope, headers, how)
        if refusal is not None:
            await refusal.send(send)
        elif isinstance(bounded := await _bounded(scope, receive, self._max_body), _Refusal):
            await bounded.send(send)
        else:
            await self._app(scope, bounded, _with_headers(send, api=scope.get("path", "").startswith("/api")))

    def _host_refusal(self, headers: dict[str, str]) -> _Refusal | None:
        """1. The Host header must name this server (DNS rebinding)."""
        host = headers.get("host", "").lower()
        if self._names_us(host):
            return None
        return _Refusal(
            403, "bad-host", f"the Host header {host!r} does not name this server; use {sorted(self._hosts)[0]}"
        )

    def _names_us(self, host: str) -> bool:
        return host in self._hosts or (self._any_address and names_an_address(host, self._port))

    def _foreign(self, origin: str | None, headers: dict[str, str]) -> bool:
        """Whether an ``Origin`` is another site's: not this server's names, nor the address the request names."""
        if origin is None:
            return False
        origin = origin.lower()
        if origin in self._origins:
            return False
        host = headers.get("host", "").lower()
        return not (origin == f"http://{host}" and self._names_us(host))

    def _judged(self, scope: Scope, right: Callable[[], bool], wrong: _Refusal) -> _Refusal | None:
        """2 and 3. ``right()`` compares what the request carries, unless its sender must wait first."""
        ok, wait = self._guesses.judge(scope.get("client"), scope.get("server"), right)
        if ok:
            return None
        if wait:
            return _Refusal(
                429,
                "too-many-attempts",
                f"too many wrong tokens; try again in {wait:.0f} s",
                [(b"retry-after", str(int(wait) + 1).encode())],
            )
        return wrong

    def _token_refusal(self, scope: Scope, token: str | None) -> _Refusal | None:
        """2. The right token (a wrong one counts against its sender; none is simply 401)."""
        unauthorized = _Refusal(
            401,
            "unauthorized",
            "a token is needed: send `Authorization: Bearer TOKEN` (the token is in the state file); "
            "for the console, run `mcpdeck ui`, which opens a signed-in tab",
            [(b"www-authenticate", b'Bearer realm="mcpdeck"')],
        )
        if token is None:
            return unauthorized
        return self._judged(scope, lambda: self._valid(token), unauthorized)

    def _origin_refusal(self, scope: Scope, headers: dict[str, str], how: str) -> _Refusal | None:
        """4. A request that can change something comes from this server's pages, or with a bearer token."""
        if scope.get("method", "GET") in _SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if headers.get("sec-fetch-site") == "cross-site" or self._foreign(origin, headers):
            return _Refusal(403, "bad-origin", f"cross-origin requests are refused (Origin {origin!r})")
        if origin is None and how != "bearer":
            return _Refusal(
                403,
                "bad-origin",
                "a request that changes something needs an Origin header naming this server, "
                "or an `Authorization: Bearer` token",
            )
        return None

    async def _sign_in(self, scope: Scope, receive: Receive, send: Send) -> _Refusal | None:
        """``POST /api/session`` with ``{"code": CODE}``: spend a login code, answer ``{"token": SESSION}``."""
        if scope.get("method") != "POST":
            return _Refusal(405, "method-not-allowed", 'sign in with POST /api/session and {"code": CODE}')
        bounded = await _bounded(scope, receive, 4096)
        if isinstance(bounded, _Refusal):
            return bounded
        message = await bounded()
        try:
            data: object = json.loads(message.get("body", b"") or b"null")
        except ValueError:
            data = None
        code = cast(dict[str, Any], data).get("code") if isinstance(data, dict) else None
        if not isinstance(code, str):
            return _Refusal(400, "invalid-request", 'send {"code": CODE}, the login code of a console link')
        opened: list[str] = []

        def redeem() -> bool:
            session = self.logins.redeem(code)
            opened.extend([session] if session else [])
            return session is not None

        spent = _Refusal(
            401,
            "unauthorized",
            "that login code is unknown, spent or expired: each opens one tab, once; run `mcpdeck ui` for a new one",
        )
        refusal = self._judged(scope, redeem, spent)
        if refusal is not None:
            return refusal
        session = opened[0]
        body = json.dumps({"token": session}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-store"),
                    *_SECURITY_HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
        return None

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(_decoded(scope))
        origin = headers.get("origin")
        token, _ = self._presented(scope)
        named = self._names_us(headers.get("host", "").lower())
        if not named or self._foreign(origin, headers) or not self._valid(token):
            await send({"type": "websocket.close", "code": 1008})
            return
        await self._app(scope, receive, send)


def _too_large(limit: int, *, close: bool) -> _Refusal:
    return _Refusal(
        413,
        "too-large",
        f"the request body is over {limit // (1024 * 1024)} MiB, the most mcpdeck takes; send less "
        "(for a large tool argument, a path or a URL the server can read instead)",
        [(b"connection", b"close")] if close else [],
    )


async def _bounded(scope: Scope, receive: Receive, limit: int) -> Receive | _Refusal:
    """Read the request's body up to ``limit`` bytes: a ``receive`` that hands it on, or the refusal.

    A ``Content-Length`` over the limit is refused before anything is read (the HTTP server throws
    away what the client still sends, so the client reads its 413). A body sent in chunks is read
    until it ends or passes the limit, and then the connection is closed: no more than ``limit``
    bytes are ever held, and no more are taken in.
    """
    length = dict(_decoded(scope)).get("content-length", "")
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


def _decoded(scope: Scope) -> Iterable[tuple[str, str]]:
    for name, value in scope.get("headers", []):
        yield name.decode("latin-1").lower(), value.decode("latin-1")


def _with_headers(send: Send, *, api: bool) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {name.lower() for name, _ in headers}
            headers.extend(h for h in _SECURITY_HEADERS if h[0] not in names)
            if api and b"cache-control" not in names:
                headers.append((b"cache-control", b"no-store"))
            message = {**message, "headers": headers}
        await send(message)

    return wrapped
