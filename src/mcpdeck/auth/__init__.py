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

::

    store = TokenStore()
    async with Host.from_file(auth_store=store, oauth_interaction=BrowserInteraction()) as host:
        ...
"""

from mcpdeck.auth._build import build_auth, oauth_settings
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
from mcpdeck.config._models import OAuthConfig

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
]
