"""``build_auth``: the ``httpx2.Auth`` a host gives one remote server's HTTP client."""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx2
from mcp.shared.auth import DEFAULT_GRANT_TYPES, OAuthClientInformationFull

from mcpdeck._version import __version__
from mcpdeck.auth._interaction import AuthorizeFunction, OAuthInteraction, as_interaction
from mcpdeck.auth._provider import CallbackPlan, DeckClientMetadata, DeckOAuthProvider
from mcpdeck.auth._store import TokenStore
from mcpdeck.config import RemoteServerConfig, expand_vars
from mcpdeck.config._models import OAuthConfig
from mcpdeck.errors import ConfigError

__all__ = ["build_auth", "oauth_settings"]

_PLACEHOLDER_REDIRECT = "http://127.0.0.1/callback"
"""Stands in until a port is reserved (only an interactive flow registers or redirects)."""


def oauth_settings(config: RemoteServerConfig) -> OAuthConfig | None:
    """The server's OAuth settings; None when OAuth is off for it.

    OAuth is off with ``"oauth": false``, and when the config sets an ``Authorization``
    header itself (the user manages that server's credentials).
    """
    if config.oauth is False or any(key.lower() == "authorization" for key in config.headers):
        return None
    return config.oauth if isinstance(config.oauth, OAuthConfig) else OAuthConfig()


def _callback_plan(server: str, oauth: OAuthConfig, redirect_uri: str | None) -> CallbackPlan:
    if redirect_uri is None:
        return CallbackPlan(port=oauth.callback_port)
    try:
        plan = CallbackPlan.parse(redirect_uri)
    except ValueError as error:
        raise ConfigError(f"server {server!r}: oauth.redirectUri {error}", server=server) from None
    if oauth.callback_port is not None and oauth.callback_port != plan.port:
        raise ConfigError(
            f"server {server!r}: oauth.callbackPort {oauth.callback_port} differs from the port of oauth.redirectUri",
            server=server,
        )
    return plan


def build_auth(
    server: str,
    config: RemoteServerConfig,
    *,
    store: TokenStore,
    interaction: OAuthInteraction | AuthorizeFunction | None = None,
    environ: Mapping[str, str] | None = None,
) -> httpx2.Auth | None:
    """The OAuth handler for one remote server, or None when OAuth is off for it.

    A server that never asks for authorization is not affected: requests go out as they
    are until it answers 401.

    Args:
        server: The server's name (tokens are stored under it and a hash of the URL).
        config: Its config, with ``url`` already expanded. ``oauth.clientId``,
            ``clientSecret``, ``clientMetadataUrl`` and ``redirectUri`` are expanded here.
        store: Where tokens and client registrations are kept.
        interaction: How to get the user's authorization. None (the default) never asks:
            a server that needs a login fails with ``AuthorizationRequiredError``.
        environ: For ``${VAR}`` expansion (default: ``os.environ``).

    Raises:
        ConfigError: The ``oauth`` settings are not usable.
        UnsetVariableError: A ``${VAR}`` in them is not set.
    """
    oauth = oauth_settings(config)
    if oauth is None:
        return None
    env = os.environ if environ is None else environ

    def expand(value: str | None, key: str) -> str | None:
        return expand_vars(value, env, field=f"oauth.{key}", server=server) if value is not None else None

    client_id = expand(oauth.client_id, "clientId")
    client_secret = expand(oauth.client_secret, "clientSecret") or None
    metadata_url = expand(oauth.client_metadata_url, "clientMetadataUrl") or None
    plan = _callback_plan(server, oauth, expand(oauth.redirect_uri, "redirectUri"))
    fixed_redirect = plan.uri(plan.port) if plan.port is not None else None
    configured: OAuthClientInformationFull | None = None
    if client_id:
        method = oauth.token_endpoint_auth_method or ("client_secret_basic" if client_secret else "none")
        configured = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=client_secret,
            token_endpoint_auth_method=method,
            redirect_uris=[fixed_redirect] if fixed_redirect else None,  # pyright: ignore[reportArgumentType]
            grant_types=list(DEFAULT_GRANT_TYPES),
        )
    elif client_secret:
        raise ConfigError(f"server {server!r}: oauth.clientSecret needs an oauth.clientId", server=server)
    scopes = oauth.scopes or []
    metadata = DeckClientMetadata(
        redirect_uris=[fixed_redirect or _PLACEHOLDER_REDIRECT],  # pyright: ignore[reportArgumentType]
        client_name="mcpdeck",
        software_id="mcpdeck",
        software_version=__version__,
        grant_types=list(DEFAULT_GRANT_TYPES),
        scope=" ".join(scopes) or None,
        extra_scopes=scopes,
    )
    storage = store.storage(server, config.url, configured_client=configured, client_metadata_url=metadata_url)
    try:
        return DeckOAuthProvider(
            server,
            config.url,
            storage=storage,
            client_metadata=metadata,
            interaction=as_interaction(interaction) if interaction is not None else None,
            callback=plan,
            client_metadata_url=metadata_url,
        )
    except ValueError as error:  # the SDK refuses a client metadata URL that is not https with a path
        raise ConfigError(f"server {server!r}: oauth.clientMetadataUrl: {error}", server=server) from None
