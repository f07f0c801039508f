"""How a browser signs in to ``mcpdeck serve`` without its key ever being where others can read it.

The token printed at start (and kept in the 0600 state file) is for the CLI, scripts and MCP
clients, sent as ``Authorization: Bearer``. A browser never gets it. Instead:

1. Whoever has the token asks for a **login code** (``POST /api/login``; ``mcpdeck ui`` and
   ``mcpdeck serve`` do it themselves). The code is good for one use within ``CODE_TTL``
   seconds. It travels in a URL's fragment (``http://127.0.0.1:PORT/#code=CODE``), which the
   browser never sends to any server; ``mcpdeck ui`` puts that URL in a 0600 file that
   redirects to it and gives the browser only the file's path, so no command line holds it.
2. The console's page (served to anyone: it is the package's own files, no data) reads the
   code, trades it for a **session token** (``POST /api/session``, spent at once), removes it
   from the address bar, and keeps the session token in ``sessionStorage``: that tab, that
   origin (scheme, host and port) only, sent as an ``Authorization`` header. No cookie: a
   cookie for 127.0.0.1 is sent to every port on it, so any local listener would get it.

A URL the browser keeps in its history holds a spent code: replayed, it signs nothing in.
Codes and sessions are kept as SHA-256 digests, in memory: they end with the process.

``serve_credentials`` and ``sign_in`` are what ``serve``'s guard (``mcpdeck._http_faces.guard``) is given: which
bearer tokens are right (the state file's, a session's), and the trade of a code for a session, where
a wrong code counts as a wrong token.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, cast

from starlette.types import Receive, Scope, Send

from mcpdeck._http_faces.guard import Guard, Refusal, SignIn, answer_json, bounded, same_secret

__all__ = ["CODE_TTL", "SIGN_IN_PATH", "Logins", "serve_credentials", "sign_in"]

SIGN_IN_PATH = "/api/session"
"""Where a browser trades a login code for a session (``POST``, ``{"code": CODE}``)."""

CODE_TTL = 600.0
"""Seconds a login code is good for (once)."""
_MAX_CODES = 100
_MAX_SESSIONS = 1000


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


class Logins:
    """The login codes not yet spent and the browser sessions they opened."""

    def __init__(self, ttl: float = CODE_TTL):
        self.ttl = ttl
        self._codes: OrderedDict[bytes, float] = OrderedDict()  # digest -> when it expires
        self._sessions: OrderedDict[bytes, None] = OrderedDict()

    def code(self) -> str:
        """A new login code: one use, within ``ttl`` seconds."""
        now = time.monotonic()
        for digest, expires in list(self._codes.items()):
            if expires <= now:
                del self._codes[digest]
        while len(self._codes) >= _MAX_CODES:
            self._codes.popitem(last=False)
        code = secrets.token_urlsafe(32)
        self._codes[_digest(code)] = now + self.ttl
        return code

    def redeem(self, code: str) -> str | None:
        """Spend ``code``: a new session token, or None when it is unknown, spent or expired."""
        expires = self._codes.pop(_digest(code), None)
        if expires is None or expires <= time.monotonic():
            return None
        while len(self._sessions) >= _MAX_SESSIONS:
            self._sessions.popitem(last=False)
        token = secrets.token_urlsafe(32)
        self._sessions[_digest(token)] = None
        return token

    def session(self, token: str) -> bool:
        """Whether ``token`` is a session a login code opened."""
        return _digest(token) in self._sessions


def serve_credentials(token: str, logins: Logins) -> Callable[[str], str | None]:
    """Which bearer tokens ``serve`` takes: its own (``"token"``) and a console session's (``"session"``)."""

    def named(given: str) -> str | None:
        if same_secret(given, token):
            return "token"
        return "session" if logins.session(given) else None

    return named


def sign_in(logins: Logins) -> SignIn:
    """``POST /api/session`` with ``{"code": CODE}``, from a page of this server: the code spent, ``{"token":
    SESSION}`` answered. A wrong code counts as a wrong token."""

    async def answer(scope: Scope, receive: Receive, send: Send, guard: Guard) -> Refusal | None:
        if scope.get("method") != "POST":
            return Refusal(405, "method-not-allowed", f'sign in with POST {SIGN_IN_PATH} and {{"code": CODE}}')
        if not any(key.lower() == b"origin" for key, _ in scope.get("headers", [])):
            return Refusal(403, "bad-origin", "a login code is traded from the console's page (its Origin) only")
        read = await bounded(scope, receive, 4096)
        if isinstance(read, Refusal):
            return read
        message = await read()
        try:
            data: object = json.loads(message.get("body", b"") or b"null")
        except ValueError:
            data = None
        code = cast(dict[str, Any], data).get("code") if isinstance(data, dict) else None
        if not isinstance(code, str):
            return Refusal(400, "invalid-request", 'send {"code": CODE}, the login code of a console link')
        opened: list[str] = []

        def redeem() -> bool:
            session = logins.redeem(code)
            opened.extend([session] if session else [])
            return session is not None

        spent = Refusal(
            401,
            "unauthorized",
            "that login code is unknown, spent or expired: each opens one tab, once; run `mcpdeck ui` for a new one",
        )
        refusal = guard.judged(scope, redeem, spent)
        if refusal is not None:
            return refusal
        await answer_json(send, 200, {"token": opened[0]})
        return None

    return SignIn(SIGN_IN_PATH, answer)
