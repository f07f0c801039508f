"""OAuth 2.1 for remote servers, on the SDK's OAuth client.

The SDK discovers the authorization server, registers the client, runs PKCE and refreshes
tokens; this package supplies the rest:

- ``TokenStore``: tokens and client registrations kept between runs (files ``0600``, or the
  OS keyring with ``MCPDECK_KEYRING=1``), per server name and URL.
- ``OAuthInteraction``: the browser hand-off. ``BrowserInteraction`` opens the browser (and
  prints the URL) and waits on a local listener on 127.0.0.1; tests and headless apps bring
  their own, or a plain ``async (server, url) -> (code, state)`` function.
- ``build_auth``: the ``httpx2.Auth`` of one server. Without an interaction it never starts
  a login: a server that needs one fails with ``needs authorization: run `mcpdeck auth login NAME```.
  ``oauth.grantType`` picks a grant that needs no user at all: ``client_credentials`` (SEP-1046;
  ``clientSecret``, or ``privateKey`` / ``privateKeyFile`` for ``private_key_jwt``) or
  ``identity_assertion`` (SEP-990; ``identityProvider``: the user's ID token is exchanged for an
  ID-JAG, presented to the server's authorization server). ``oauth.issuer`` pins the
  authorization server those credentials may go to.
- MCP 2025-03-26 servers (no protected resource metadata) work too, including an authorization
  server on a path of the server's own origin; an issuer on another origin is refused (see
  ``mcpdeck.auth._legacy`` for the rule and why it keeps RFC 8414 §3.3's guarantee).

::

    store = TokenStore()
    async with Host.from_file(auth_store=store, oauth_interaction=BrowserInteraction()) as host:
        ...
"""

from mcpdeck.auth._build import build_auth, oauth_settings, token_url
from mcpdeck.auth._callback import CallbackListener, parse_callback
from mcpdeck.auth._errors import (
    AuthorizationDeniedError,
    AuthorizationError,
    AuthorizationRequiredError,
    AuthorizationTimeoutError,
    is_auth_error,
)
from mcpdeck.auth._interaction import (
    AuthorizeFunction,
    BrowserInteraction,
    FunctionInteraction,
    OAuthInteraction,
    as_interaction,
)
from mcpdeck.auth._keyring import KEYRING_ENV, KeyringModule
from mcpdeck.auth._records import StoredAuth
from mcpdeck.auth._storage import ServerTokenStorage
from mcpdeck.auth._store import TokenStore, default_auth_dir
from mcpdeck.config import IdentityProviderConfig, OAuthConfig

__all__ = [
    "KEYRING_ENV",
    "AuthorizationDeniedError",
    "AuthorizationError",
    "AuthorizationRequiredError",
    "AuthorizationTimeoutError",
    "AuthorizeFunction",
    "BrowserInteraction",
    "CallbackListener",
    "FunctionInteraction",
    "IdentityProviderConfig",
    "KeyringModule",
    "OAuthConfig",
    "OAuthInteraction",
    "ServerTokenStorage",
    "StoredAuth",
    "TokenStore",
    "as_interaction",
    "build_auth",
    "default_auth_dir",
    "is_auth_error",
    "oauth_settings",
    "parse_callback",
    "token_url",
]
