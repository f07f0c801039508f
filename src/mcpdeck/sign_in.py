"""Signing in to a remote server that asks for OAuth: the one flow behind `mcpdeck auth login`
and the console's "Sign in" button.

``sign_in`` connects the server in a host of its own, apart from any running one, with an
``OAuthInteraction`` for the browser hand-off and the server's stored tokens set aside, so the
server asks again. Tokens it grants land in the token store; a running host uses them the next
time it connects the server (reconnect it). Nothing is stored when the flow fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from mcpdeck.auth import AuthorizeFunction, OAuthInteraction, StoredAuth, TokenStore, oauth_settings, token_url
from mcpdeck.config import RemoteServerConfig, StdioServerConfig
from mcpdeck.errors import ConfigError, ServerError
from mcpdeck.host import Host

__all__ = ["LOGIN_TIMEOUT", "SignedIn", "sign_in", "signable"]

LOGIN_TIMEOUT = 300.0
"""Seconds a sign-in waits for the user by default (five minutes)."""


@dataclass(frozen=True)
class SignedIn:
    """How a sign-in ended.

    Attributes:
        server: The server's name.
        authorized: True when new tokens were stored; False when the server did not ask.
        scopes: The scopes granted.
        expires_at: When the access token expires, if the server said.
        refreshable: Whether it is renewed without the user (a refresh token was granted).
        tool_count: The tools the server listed once signed in.
    """

    server: str
    authorized: bool
    scopes: tuple[str, ...]
    expires_at: datetime | None
    refreshable: bool
    tool_count: int


def signable(name: str, server: object) -> RemoteServerConfig:
    """``server`` as a remote server that can sign in.

    Raises:
        ConfigError: ``server`` is not a remote server, or its OAuth is off.
    """
    if not isinstance(server, RemoteServerConfig):
        what = "a stdio server" if isinstance(server, StdioServerConfig) else "not a remote server"
        raise ConfigError(f"{name!r} is {what}; OAuth is for remote (http/sse) servers", server=name)
    if oauth_settings(server) is None:
        raise ConfigError(
            f'OAuth is off for {name!r} ("oauth": false, or it sets its own Authorization header)', server=name
        )
    return server


async def sign_in(
    name: str,
    server: object,
    interaction: OAuthInteraction | AuthorizeFunction,
    *,
    store: TokenStore | None = None,
    log_dir: Path | None = None,
    timeout: float = LOGIN_TIMEOUT,
) -> SignedIn:
    """Run the authorization for server ``name`` through ``interaction`` and store the tokens.

    ``timeout`` bounds the whole connect, the time the user takes in the browser included.

    Raises:
        ConfigError: ``server`` cannot sign in (not remote, or OAuth off).
        ServerError: The authorization or the connect failed; the message says why.
    """
    server = signable(name, server)
    url = token_url(name, server)
    store = store or TokenStore()
    before = store.get(name, url)
    attempt = server.model_copy(update={"disabled": False, "startup_timeout": timeout + server.connect_timeout})
    async with Host({}, log_dir=log_dir, auth_store=store.for_login(name), oauth_interaction=interaction) as host:
        report = await host.test_server(attempt, name=name)
    if not report.ok:
        raise ServerError(name, report.status.error or "it did not connect")
    after = store.get(name, url)
    return _signed_in(name, before, after, len(report.tools))


def _signed_in(name: str, before: StoredAuth | None, after: StoredAuth | None, tools: int) -> SignedIn:
    fresh = after is not None and after.has_tokens and (before is None or after.updated_at != before.updated_at)
    if after is None or not fresh:
        return SignedIn(name, False, (), None, False, tools)
    return SignedIn(name, True, tuple(after.scopes), after.expires_at, after.refreshable, tools)
