"""The client-credentials grant (SEP-1046): a machine authorizes itself, no user, no browser.

On the SDK's ``ClientCredentialsOAuthProvider`` (``client_secret_basic`` / ``client_secret_post``)
and ``PrivateKeyJWTOAuthProvider`` (``private_key_jwt``, RFC 7523 §2.2: an assertion signed with
the client's key, ``iss`` = ``sub`` = the client id, ``aud`` = the authorization server's issuer),
each with mcpdeck's ``DeckFlow`` around it. The client is configured, never registered, and
never written to the token store; the private key stays in memory, in the signer only.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from typing import Literal

import jwt
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared.exceptions import MCPDeprecationWarning

from mcpdeck.auth._flow import DeckFlow
from mcpdeck.auth._provider import DeckClientMetadata
from mcpdeck.auth._storage import ConfiguredClient

__all__ = [
    "DEFAULT_SIGNING_ALGORITHM",
    "DeckClientCredentialsProvider",
    "DeckPrivateKeyJWTProvider",
    "check_signing_key",
    "jwt_signer",
]

DEFAULT_SIGNING_ALGORITHM = "ES256"
ASSERTION_LIFETIME = 300
"""Seconds a client assertion is good for (one is signed for each token request)."""


@contextmanager
def _issuer_optional(issuer: str | None) -> Generator[None]:
    """Without ``oauth.issuer`` the authorization server the metadata names is used, as documented
    for the config; the SDK's deprecation warning about that is for code that calls it, not for users."""
    with warnings.catch_warnings():
        if issuer is None:
            warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


def _metadata(
    method: Literal["client_secret_basic", "client_secret_post", "private_key_jwt"], scopes: list[str]
) -> DeckClientMetadata:
    return DeckClientMetadata(
        redirect_uris=None,
        grant_types=["client_credentials"],
        token_endpoint_auth_method=method,
        scope=" ".join(scopes) or None,
        extra_scopes=scopes,
    )


class DeckClientCredentialsProvider(DeckFlow, ClientCredentialsOAuthProvider):
    """``client_credentials`` with a client secret (``client_secret_basic`` or ``client_secret_post``)."""

    def __init__(
        self, client: ConfiguredClient, *, secret: str, method: Literal["client_secret_basic", "client_secret_post"]
    ):
        with _issuer_optional(client.issuer):
            super().__init__(
                client.url,
                client.storage,
                client.client_id,
                secret,
                token_endpoint_auth_method=method,
                scope=client.scope,
                issuer=client.issuer,
            )
        self._deck_setup(client.server, client.storage)
        self.context.client_metadata = _metadata(method, client.scopes)


class DeckPrivateKeyJWTProvider(DeckFlow, PrivateKeyJWTOAuthProvider):
    """``client_credentials`` authenticated with a signed client assertion (``private_key_jwt``)."""

    def __init__(self, client: ConfiguredClient, *, assertion_provider: Callable[[str], Awaitable[str]]):
        with _issuer_optional(client.issuer):
            super().__init__(
                client.url,
                client.storage,
                client.client_id,
                assertion_provider,
                scope=client.scope,
                issuer=client.issuer,
            )
        self._deck_setup(client.server, client.storage)
        self.context.client_metadata = _metadata("private_key_jwt", client.scopes)


def check_signing_key(key: str, algorithm: str) -> str | None:
    """Why ``key`` cannot sign ``algorithm`` assertions (None when it can). Never quotes the key."""
    try:
        jwt.encode({"check": True}, key, algorithm=algorithm)
    except (jwt.PyJWTError, ValueError, TypeError) as error:
        return f"it is not a PEM private key usable with {algorithm} ({type(error).__name__})"
    return None


def jwt_signer(client_id: str, key: str, algorithm: str) -> Callable[[str], Awaitable[str]]:
    """The SDK's signer of RFC 7523 client assertions: ``iss`` = ``sub`` = the client id, ``aud`` given per request."""
    parameters = SignedJWTParameters(
        issuer=client_id,
        subject=client_id,
        signing_key=key,
        signing_algorithm=algorithm,
        lifetime_seconds=ASSERTION_LIFETIME,
    )
    return parameters.create_assertion_provider()
