"""``build_auth``: the ``httpx2.Auth`` a host gives one remote server's HTTP client."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

import httpx2
from mcp.shared.auth import DEFAULT_GRANT_TYPES, OAuthClientInformationFull
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter, ValidationError

from mcpdeck._util.version import __version__
from mcpdeck.auth._callback import CallbackPlan
from mcpdeck.auth._identity import IdentityAssertionAuth, IdJagExchange, secure_url
from mcpdeck.auth._interaction import AuthorizeFunction, OAuthInteraction, as_interaction
from mcpdeck.auth._machine import (
    DEFAULT_SIGNING_ALGORITHM,
    DeckClientCredentialsProvider,
    DeckPrivateKeyJWTProvider,
    check_signing_key,
    jwt_signer,
)
from mcpdeck.auth._provider import DeckClientMetadata, DeckOAuthProvider
from mcpdeck.auth._storage import ConfiguredClient
from mcpdeck.auth._store import TokenStore
from mcpdeck.config import IdentityProviderConfig, OAuthConfig, RemoteServerConfig, expand_vars
from mcpdeck.errors import ConfigError

__all__ = ["build_auth", "oauth_settings"]

_PLACEHOLDER_REDIRECT = "http://127.0.0.1/callback"
"""Stands in until a port is reserved (only an interactive flow registers or redirects)."""

_Expand = Callable[[str | None, str], str | None]
_ISSUER_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))
"""Issuer URLs as the SDK's metadata models write them (host lower-cased, no slash added)."""
_INTERACTIVE_KEYS = {
    "callback_port": "callbackPort",
    "redirect_uri": "redirectUri",
    "client_metadata_url": "clientMetadataUrl",
}
_KEY_KEYS = {"private_key": "privateKey", "private_key_file": "privateKeyFile", "signing_algorithm": "signingAlgorithm"}


def token_url(name: str, server: RemoteServerConfig) -> str:
    """The URL a server's tokens are stored under: its ``url`` with ``${VAR}`` expanded when set."""
    try:
        return expand_vars(server.url, os.environ, field="url", server=name)
    except ConfigError:
        return server.url


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

    ``oauth.grantType`` picks the flow: ``authorization_code`` (the default; a user authorizes
    in a browser), or, with no user involved, ``client_credentials`` (a client secret, or a
    private key for ``private_key_jwt``) and ``identity_assertion`` (SEP-990: the user's ID
    token from ``oauth.identityProvider`` traded for an ID-JAG). The last two never need an
    interaction.

    Args:
        server: The server's name (tokens are stored under it and a hash of the URL).
        config: Its config, with ``url`` already expanded. The ``oauth`` strings (client id and
            secret, issuer, key, identity provider...) are expanded here.
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

    grant = oauth.grant_type or "authorization_code"
    _check_keys(server, oauth, grant)
    if grant == "client_credentials":
        return _client_credentials(server, config, oauth, store, expand)
    if grant == "identity_assertion":
        return _identity_assertion(server, config, oauth, store, expand)
    return _authorization_code(server, config, oauth, store, expand, interaction)


def _authorization_code(
    server: str,
    config: RemoteServerConfig,
    oauth: OAuthConfig,
    store: TokenStore,
    expand: _Expand,
    interaction: OAuthInteraction | AuthorizeFunction | None,
) -> httpx2.Auth:
    """The default grant: a user authorizes in a browser, with a registered or a configured client."""
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


def _check_keys(server: str, oauth: OAuthConfig, grant: str) -> None:
    """Settings that belong to another grant are a mistake worth saying, not something to ignore."""

    def refuse(keys: Mapping[str, str], why: str) -> None:
        given = [name for attribute, name in keys.items() if getattr(oauth, attribute) is not None]
        if given:
            raise ConfigError(f"server {server!r}: oauth.{given[0]} {why}", server=server)

    if grant != "authorization_code":
        refuse(_INTERACTIVE_KEYS, f"is for a browser login; grantType {grant!r} has none")
    if grant != "client_credentials":
        refuse(_KEY_KEYS, 'is for grantType "client_credentials" (private_key_jwt)')
        if oauth.token_endpoint_auth_method == "private_key_jwt":
            raise ConfigError(
                f'server {server!r}: oauth.tokenEndpointAuthMethod "private_key_jwt" is for grantType '
                '"client_credentials"',
                server=server,
            )
    if grant != "identity_assertion" and oauth.identity_provider is not None:
        raise ConfigError(
            f'server {server!r}: oauth.identityProvider is for grantType "identity_assertion"', server=server
        )
    if grant == "authorization_code" and oauth.issuer is not None:
        raise ConfigError(
            f'server {server!r}: oauth.issuer is for grantType "client_credentials" or "identity_assertion"',
            server=server,
        )


def _issuer(server: str, expand: _Expand, oauth: OAuthConfig) -> str | None:
    """The configured authorization server issuer, written the way its metadata's ``issuer`` reads."""
    issuer = expand(oauth.issuer, "issuer") or None
    if issuer is None:
        return None
    try:
        url = _ISSUER_URL.validate_python(issuer)
    except ValidationError:
        raise ConfigError(f"server {server!r}: oauth.issuer must be an http(s) URL", server=server) from None
    if url.query or url.fragment:
        raise ConfigError(f"server {server!r}: oauth.issuer must have no query or fragment", server=server)
    return str(url)


def _required(server: str, value: str | None, key: str, grant: str) -> str:
    if not value:
        raise ConfigError(f'server {server!r}: grantType "{grant}" needs oauth.{key}', server=server)
    return value


def _private_key(server: str, oauth: OAuthConfig, expand: _Expand) -> str | None:
    """The PEM text of ``oauth.privateKey`` or ``oauth.privateKeyFile`` (None when neither is set)."""
    if oauth.private_key is not None and oauth.private_key_file is not None:
        raise ConfigError(f"server {server!r}: give oauth.privateKey or oauth.privateKeyFile, not both", server=server)
    key = expand(oauth.private_key, "privateKey")
    path = expand(oauth.private_key_file, "privateKeyFile")
    if path:
        try:
            key = Path(path).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            why = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
            raise ConfigError(
                f"server {server!r}: cannot read oauth.privateKeyFile {path}: {why}", server=server
            ) from None
    if key and "-----BEGIN" in key and "\n" not in key and "\\n" in key:
        key = key.replace("\\n", "\n")  # a PEM kept in one line of an environment variable
    return key or None


def _client_credentials(
    server: str, config: RemoteServerConfig, oauth: OAuthConfig, store: TokenStore, expand: _Expand
) -> httpx2.Auth:
    """SEP-1046: the client authorizes itself, with its secret or a signed assertion."""
    grant = "client_credentials"
    client_id = _required(server, expand(oauth.client_id, "clientId"), "clientId", grant)
    secret = expand(oauth.client_secret, "clientSecret") or None
    key = _private_key(server, oauth, expand)
    issuer = _issuer(server, expand, oauth)
    method = oauth.token_endpoint_auth_method
    if key is not None:
        if secret is not None:
            raise ConfigError(f"server {server!r}: give oauth.clientSecret or a private key, not both", server=server)
        return _private_key_jwt(server, config, oauth, store, client_id, key, issuer)
    if method == "private_key_jwt":
        raise ConfigError(
            f"server {server!r}: private_key_jwt needs oauth.privateKey or oauth.privateKeyFile", server=server
        )
    if oauth.signing_algorithm is not None:
        raise ConfigError(f"server {server!r}: oauth.signingAlgorithm needs a private key", server=server)
    if method == "none":
        raise ConfigError(
            f'server {server!r}: grantType "client_credentials" needs client authentication, not "none"', server=server
        )
    secret = _required(server, secret, "clientSecret (or privateKey)", grant)
    secret_method: Literal["client_secret_basic", "client_secret_post"] = method or "client_secret_basic"
    configured = OAuthClientInformationFull(
        client_id=client_id,
        client_secret=secret,
        redirect_uris=None,
        grant_types=[grant],
        token_endpoint_auth_method=secret_method,
    )
    storage = store.storage(server, config.url, configured_client=configured)
    client = ConfiguredClient(storage, client_id, oauth.scopes or [], issuer)
    return DeckClientCredentialsProvider(client, secret=secret, method=secret_method)


def _private_key_jwt(
    server: str,
    config: RemoteServerConfig,
    oauth: OAuthConfig,
    store: TokenStore,
    client_id: str,
    key: str,
    issuer: str | None,
) -> httpx2.Auth:
    """Client credentials with ``private_key_jwt``: the client signs an assertion with its private key."""
    method = oauth.token_endpoint_auth_method
    if method not in (None, "private_key_jwt"):
        raise ConfigError(
            f"server {server!r}: with a private key, oauth.tokenEndpointAuthMethod is private_key_jwt, not {method}",
            server=server,
        )
    algorithm = oauth.signing_algorithm or DEFAULT_SIGNING_ALGORITHM
    problem = check_signing_key(key, algorithm)
    if problem is not None:
        raise ConfigError(f"server {server!r}: oauth private key: {problem}", server=server)
    configured = OAuthClientInformationFull(
        client_id=client_id,
        redirect_uris=None,
        grant_types=["client_credentials"],
        token_endpoint_auth_method="private_key_jwt",
    )
    storage = store.storage(server, config.url, configured_client=configured)
    client = ConfiguredClient(storage, client_id, oauth.scopes or [], issuer)
    return DeckPrivateKeyJWTProvider(client, assertion_provider=jwt_signer(client_id, key, algorithm))


def _identity_assertion(
    server: str, config: RemoteServerConfig, oauth: OAuthConfig, store: TokenStore, expand: _Expand
) -> httpx2.Auth:
    """SEP-990: the user's ID token from the identity provider, traded for an ID-JAG, then for a token."""
    grant = "identity_assertion"
    client_id = _required(server, expand(oauth.client_id, "clientId"), "clientId", grant)
    secret = _required(server, expand(oauth.client_secret, "clientSecret") or None, "clientSecret", grant)
    method = oauth.token_endpoint_auth_method or "client_secret_basic"
    if method not in ("client_secret_basic", "client_secret_post"):
        raise ConfigError(
            f'server {server!r}: grantType "identity_assertion" authenticates with client_secret_basic or '
            f"client_secret_post, not {method}",
            server=server,
        )
    idp = oauth.identity_provider
    if idp is None:
        raise ConfigError(
            f'server {server!r}: grantType "identity_assertion" needs oauth.identityProvider', server=server
        )
    exchange = _exchange(server, idp, expand, " ".join(oauth.scopes or []) or None)
    client = ConfiguredClient(
        store.storage(server, config.url), client_id, oauth.scopes or [], _issuer(server, expand, oauth)
    )
    return IdentityAssertionAuth(client, secret=secret, method=method, exchange=exchange)


def _exchange(server: str, idp: IdentityProviderConfig, expand: _Expand, scope: str | None) -> IdJagExchange:
    def value(text: str | None, key: str) -> str | None:
        return expand(text, f"identityProvider.{key}") or None

    issuer = value(idp.issuer, "issuer")
    endpoint = value(idp.token_endpoint, "tokenEndpoint")
    for key, url in (("issuer", issuer), ("tokenEndpoint", endpoint)):
        if url is not None and not secure_url(url):
            raise ConfigError(
                f"server {server!r}: oauth.identityProvider.{key} must be https (or http on a loopback address)",
                server=server,
            )
    client_id = value(idp.client_id, "clientId")
    id_token = value(idp.id_token, "idToken")
    if issuer is None or client_id is None or id_token is None:
        empty = "issuer" if issuer is None else "clientId" if client_id is None else "idToken"
        raise ConfigError(f"server {server!r}: oauth.identityProvider.{empty} is empty", server=server)
    secret = value(idp.client_secret, "clientSecret")
    method = idp.token_endpoint_auth_method or ("client_secret_basic" if secret else "none")
    if method != "none" and secret is None:
        raise ConfigError(f"server {server!r}: oauth.identityProvider.{method} needs a clientSecret", server=server)
    return IdJagExchange(
        server,
        issuer,
        client_id,
        id_token=id_token,
        client_secret=secret,
        method=method,
        token_endpoint=endpoint,
        scope=scope,
    )
