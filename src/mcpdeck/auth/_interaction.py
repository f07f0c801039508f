"""How the user authorizes: bring them to the authorization URL, bring the answer back.

``Host`` only authorizes interactively when it is given an ``OAuthInteraction``; without
one, a server that needs a login fails with a message saying to run ``mcpdeck auth login``.
``BrowserInteraction`` is the one people use (``mcpdeck auth login`` uses it); tests and
headless apps plug in their own, or just a function ``async (server, url) -> (code, state)``.
"""

from __future__ import annotations

import sys
import webbrowser
from collections.abc import Awaitable, Callable
from typing import Protocol, TextIO, runtime_checkable

import anyio
from mcp.shared.auth import AuthorizationCodeResult

from mcpdeck._util.safe_text import safe_text
from mcpdeck.auth._callback import CallbackListener

__all__ = [
    "AuthorizeFunction",
    "BrowserInteraction",
    "FunctionInteraction",
    "OAuthInteraction",
    "as_interaction",
]

DEFAULT_LOGIN_TIMEOUT = 300.0
"""Seconds to wait for the browser to come back (five minutes)."""

AuthorizeFunction = Callable[[str, str], Awaitable[AuthorizationCodeResult | tuple[str, str | None]]]
"""``async (server, authorization_url) -> (code, state)``: the whole hand-off as one function."""


@runtime_checkable
class OAuthInteraction(Protocol):
    """The two steps of the hand-off. Both are awaited, in order, once per authorization."""

    async def redirect(self, server: str, authorization_url: str) -> None:
        """Bring the user to ``authorization_url`` (open a browser, print it, or fetch it)."""
        ...

    async def callback(self, server: str, listener: CallbackListener) -> AuthorizationCodeResult:
        """Return the authorization response; ``listener`` is the local redirect target, already listening.

        Raises:
            AuthorizationError: Refused, timed out, or otherwise failed (see ``mcpdeck.auth``).
        """
        ...


class BrowserInteraction:
    """Open the system browser and wait on the local listener for it to come back.

    The URL is always printed too (to stderr by default), for machines without a browser:
    open it anywhere that can reach this machine's 127.0.0.1 port, e.g. over an SSH tunnel.

    Args:
        open_browser: Try ``webbrowser.open`` (the URL is printed either way).
        timeout: Seconds to wait for the browser's answer.
        stream: Where the URL is printed (default: stderr).
    """

    def __init__(
        self, *, open_browser: bool = True, timeout: float = DEFAULT_LOGIN_TIMEOUT, stream: TextIO | None = None
    ):
        self.open_browser = open_browser
        self.timeout = timeout
        self._stream = stream

    async def redirect(self, server: str, authorization_url: str) -> None:
        """Print the URL, then try to open it in a browser."""
        out = self._stream or sys.stderr
        shown = safe_text(authorization_url)  # it comes from the server's metadata
        print(f"To authorize mcpdeck for {server!r}, open this URL in a browser:\n\n  {shown}\n", file=out)
        opened = False
        if self.open_browser:
            opened = await anyio.to_thread.run_sync(webbrowser.open, authorization_url)
        if not opened:
            print("(No browser was opened: open the URL yourself.)", file=out)
        print(f"Waiting up to {self.timeout:g} s for the browser to come back…", file=out, flush=True)

    async def callback(self, server: str, listener: CallbackListener) -> AuthorizationCodeResult:
        """Wait for the listener (bounded by ``timeout``)."""
        return await listener.wait(self.timeout)


class FunctionInteraction:
    """An interaction made of one function that does the whole hand-off and returns the answer.

    For headless apps and tests, e.g. one that GETs the authorization URL without following
    the redirect and reads ``code`` and ``state`` from ``Location`` (``parse_callback`` helps).
    """

    def __init__(self, authorize: AuthorizeFunction):
        self._authorize = authorize
        self._answers: dict[str, AuthorizationCodeResult] = {}

    async def redirect(self, server: str, authorization_url: str) -> None:
        """Run the function; keep its answer for ``callback``."""
        answer = await self._authorize(server, authorization_url)
        if isinstance(answer, tuple):
            answer = AuthorizationCodeResult(code=answer[0], state=answer[1])
        self._answers[server] = answer

    async def callback(self, server: str, listener: CallbackListener) -> AuthorizationCodeResult:
        """The function's answer."""
        return self._answers.pop(server)


def as_interaction(value: OAuthInteraction | AuthorizeFunction) -> OAuthInteraction:
    """``value`` as an ``OAuthInteraction`` (a function is wrapped in ``FunctionInteraction``)."""
    if isinstance(value, OAuthInteraction):
        return value
    return FunctionInteraction(value)
