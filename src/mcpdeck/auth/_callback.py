"""The local listener the browser comes back to after the user authorized (or refused).

It serves ``GET <path>?code=…&state=…`` on 127.0.0.1 (uvicorn, which the SDK brings, on
the socket ``reserve_port`` holds), checks ``state`` against the authorization request
under way, answers with a small "you can close this tab" page, and hands the result to
whoever waits. A request with the wrong state is answered with an error page and ignored:
it cannot end the flow, so a stray or forged request can't hijack or break a login.

``CallbackPlan`` says where the listener listens: the configured redirect URI (or the
defaults), and which of a stored registration's redirect URIs it can listen for again.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import secrets
import socket
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import anyio
from mcp.shared.auth import AuthorizationCodeResult

from mcpdeck.auth._errors import AuthorizationDeniedError, AuthorizationError, AuthorizationTimeoutError, login_hint

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import Receive, Scope, Send

__all__ = ["CallbackListener", "CallbackPlan", "parse_callback", "reserve_port"]

_MAX_DESCRIPTION = 300
_LOOPBACK_HOSTS = {"127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1", "::1": "::1"}


@dataclass(frozen=True)
class CallbackPlan:
    """Where the local callback listener listens.

    Attributes:
        bind_host: The address to bind (``127.0.0.1`` or ``::1``).
        uri_host: The host as written in the redirect URI (``127.0.0.1``, ``localhost``, ``[::1]``).
        port: The port; None for "any free one" (or the one the stored registration uses).
        path: The callback path.
    """

    bind_host: str = "127.0.0.1"
    uri_host: str = "127.0.0.1"
    port: int | None = None
    path: str = "/callback"

    def uri(self, port: int) -> str:
        """The redirect URI for a listener on ``port``."""
        return f"http://{self.uri_host}:{port}{self.path}"

    def matches(self, uri: str) -> int | None:
        """The port of ``uri`` if it is a redirect URI this plan could listen for, else None."""
        parts = urlsplit(uri)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            return None
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        if host != self.uri_host or (parts.path or "/") != self.path:
            return None
        if self.port is not None and parts.port != self.port:
            return None
        return parts.port

    @classmethod
    def parse(cls, redirect_uri: str) -> CallbackPlan:
        """The plan for a configured loopback redirect URI.

        Raises:
            ValueError: It is not ``http://`` on 127.0.0.1, localhost or [::1] with a port.
        """
        parts = urlsplit(redirect_uri)
        host = parts.hostname or ""
        if parts.scheme != "http" or host not in _LOOPBACK_HOSTS or parts.port is None:
            raise ValueError("must be http:// on 127.0.0.1, localhost or [::1] with a port")
        uri_host = f"[{host}]" if ":" in host else host
        return cls(_LOOPBACK_HOSTS[host], uri_host, parts.port, parts.path or "/")


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (0: any free port), not yet listening.

    Holding it from before client registration until the browser comes back keeps the
    port, and so the registered redirect URI, ours.

    Raises:
        OSError: The port is taken.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if os.name == "posix":  # the same port next time, though the last login's connections are in TIME_WAIT
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _first(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def _clean(text: str) -> str:
    printable = "".join(ch if ch.isprintable() else " " for ch in text)
    return printable[:_MAX_DESCRIPTION]


def parse_callback(server: str, url: str, expected_state: str | None = None) -> AuthorizationCodeResult:
    """Read the authorization response from the redirect URL (or just its query string).

    Args:
        server: The server being authorized (for error messages).
        url: Where the authorization server redirected the browser to.
        expected_state: The ``state`` of the request; checked when given.

    Raises:
        AuthorizationDeniedError: The user refused (``error=access_denied``).
        AuthorizationError: Another error, no code, or the wrong state.
    """
    query = parse_qs(urlsplit(url).query if "?" in url or "://" in url else url)
    state = _first(query, "state")
    if expected_state is not None and (state is None or not secrets.compare_digest(state, expected_state)):
        raise AuthorizationError(server, "the authorization response does not belong to this login (state mismatch)")
    error = _first(query, "error")
    if error is not None:
        description = _first(query, "error_description")
        detail = _clean(f"{error}: {description}" if description else error)
        if error == "access_denied":
            raise AuthorizationDeniedError(
                server, f"authorization was refused ({detail}); {login_hint(server)} to retry"
            )
        raise AuthorizationError(server, f"the authorization server refused the request ({detail})")
    code = _first(query, "code")
    if not code:
        raise AuthorizationError(server, "the authorization response carries no code")
    return AuthorizationCodeResult(code=code, state=state, iss=_first(query, "iss"))


_CLOSE = "window.close()"
"""On success the tab closes itself when a page opened it (the console's Sign in); a tab the
system browser opened (``mcpdeck auth login``) ignores it and shows the message."""


def _page(title: str, message: str, *, close: bool = False) -> str:
    script = f"<script>{_CLOSE}</script>" if close else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>mcpdeck</title></head>'
        '<body style="font-family:system-ui,sans-serif;max-width:36em;margin:4em auto;line-height:1.5">'
        f"<h1>{html.escape(title)}</h1><p>{html.escape(message)}</p>{script}</body></html>"
    )


_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "Connection": "close",
    # Nothing loads, and the one script that may run is the one above (by its hash).
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{base64.b64encode(hashlib.sha256(_CLOSE.encode()).digest()).decode()}'"
    ),
}


class CallbackListener:
    """Receives the browser's redirect after authorization. Open it with ``CallbackListener.serve``."""

    def __init__(self, server: str, redirect_uri: str):
        self.server = server
        self.redirect_uri = redirect_uri
        """The redirect URI the authorization server sends the browser to."""
        self._path = urlsplit(redirect_uri).path or "/"
        self._state: str | None = None
        self._done = anyio.Event()
        self._result: AuthorizationCodeResult | None = None
        self._error: AuthorizationError | None = None

    @classmethod
    @asynccontextmanager
    async def serve(cls, server: str, sock: socket.socket, redirect_uri: str) -> AsyncGenerator[CallbackListener]:
        """Listen on ``sock`` (bound, see ``reserve_port``) until the block ends; the socket is closed then."""
        # uvicorn is slower to start and stop than the hand-written anyio listener it replaced
        # (its stop waits for its 0.1 s tick; bench/RESULTS.md), and already imported with the
        # SDK. Paid once per interactive login, beside a browser round trip: the library wins.
        import uvicorn

        with sock:
            sock.listen(16)
            callback = cls(server, redirect_uri)
            config = uvicorn.Config(
                callback._app,
                interface="asgi3",
                proxy_headers=False,
                log_config=None,
                log_level="warning",
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=1,
            )
            web = _quiet_server(config)

            async def run() -> None:
                # Shielded, and stopped by ``should_exit`` only: a cancelled uvicorn leaves its
                # asyncio server watching the socket's file descriptor, which the next login's
                # socket may reuse.
                with anyio.CancelScope(shield=True):
                    await web.serve([sock])

            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                try:
                    yield callback
                finally:
                    web.should_exit = True

    def expect(self, state: str | None) -> None:
        """The ``state`` of the authorization request now under way; answers must carry it."""
        self._state = state

    async def wait(self, timeout: float) -> AuthorizationCodeResult:
        """Wait for the browser's answer.

        Raises:
            AuthorizationTimeoutError: No answer within ``timeout`` seconds.
            AuthorizationDeniedError: The user refused.
            AuthorizationError: The authorization server answered with another error.
        """
        with anyio.move_on_after(timeout):
            await self._done.wait()
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise AuthorizationTimeoutError(
                self.server, f"no answer from the browser within {timeout:g} s; {login_hint(self.server)} to try again"
            )
        return self._result

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: one page, whatever the request."""
        from starlette.requests import Request
        from starlette.responses import HTMLResponse

        request = Request(scope, receive)
        status, page = self._answer(request.method, request.url.path, request.url.query)
        await HTMLResponse(page, status, headers=_HEADERS)(scope, receive, send)

    def _answer(self, method: str, path: str, query: str) -> tuple[int, str]:
        if method not in ("GET", "HEAD"):
            return 405, _page("Method not allowed", "Only GET is served here.")
        if path != self._path:
            return 404, _page("Not found", "This is mcpdeck's sign-in listener.")
        if self._done.is_set():
            return 200, self._final_page()
        state = _first(parse_qs(query), "state")
        if self._state is None or state is None or not secrets.compare_digest(state, self._state):
            message = "This answer does not belong to the sign-in under way; it was ignored."
            return 400, _page("Not the current sign-in", message)
        try:
            self._result = parse_callback(self.server, query)
        except AuthorizationError as error:
            self._error = error
        self._done.set()
        return 200, self._final_page()

    def _final_page(self) -> str:
        if self._error is not None:
            return _page("Authorization failed", f"{self._error.reason}. You can close this tab.")
        return _page("Authorized", f"mcpdeck may now use {self.server}. You can close this tab.", close=True)


def _quiet_server(config: uvicorn.Config) -> uvicorn.Server:
    """A uvicorn server without its signal handlers: Ctrl-C during a login must reach the login itself."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Generator[None]:
            yield

    return Server(config)
