"""The ``oauth`` object of a remote server's config: how mcpdeck authorizes to it.

Every key is optional (by default: discovery, dynamic registration, a browser at a local
listener). A pre-registered client, a grant without a browser (client credentials,
``private_key_jwt``, SEP-990 identity assertion) and the callback listener are set here.
Keys these models do not know are kept, like a server config's.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["IdentityProviderConfig", "OAuthConfig"]


class IdentityProviderConfig(BaseModel):
    """The enterprise identity provider of ``oauth.grantType: "identity_assertion"`` (SEP-990).

    mcpdeck trades the user's ID token there (RFC 8693 token exchange) for an ID-JAG, which it
    presents to the MCP server's authorization server. ``${VAR}`` references are expanded at
    connect time; give ``idToken`` (and ``clientSecret``) that way.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True)

    issuer: str = Field(min_length=1)
    """The identity provider's issuer URL (https, or http on a loopback address)."""
    token_endpoint: str | None = Field(default=None, alias="tokenEndpoint")
    """Its token endpoint (default: discovered from the issuer's metadata)."""
    client_id: str = Field(alias="clientId", min_length=1)
    """mcpdeck's client id at the identity provider."""
    client_secret: str | None = Field(default=None, alias="clientSecret", repr=False)
    """Its secret there, if it is a confidential client."""
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post", "none"] | None = Field(
        default=None, alias="tokenEndpointAuthMethod"
    )
    """How to authenticate there (default: ``client_secret_basic`` with a secret, else ``none``)."""
    id_token: str = Field(alias="idToken", min_length=1, repr=False)
    """The user's ID token from that identity provider; best given as ``${VAR}``."""


class OAuthConfig(BaseModel):
    """How mcpdeck authorizes to a remote server with OAuth (the ``oauth`` object of its config).

    Everything is optional: by default mcpdeck discovers the authorization server, registers
    itself dynamically, and listens for the browser's answer on an ephemeral port of 127.0.0.1.
    ``clientId`` / ``clientSecret`` (``${VAR}`` references are expanded at connect time) name a
    client registered beforehand, and skip dynamic registration. ``grantType`` picks a flow
    without a user at a browser: ``client_credentials`` (with ``clientSecret``, or
    ``privateKey`` / ``privateKeyFile`` for ``private_key_jwt``) or ``identity_assertion``
    (with ``identityProvider``). Keys this model does not know are kept.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True)

    grant_type: Literal["authorization_code", "client_credentials", "identity_assertion"] | None = Field(
        default=None, alias="grantType"
    )
    """How tokens are obtained (default ``authorization_code``: the user authorizes in a browser)."""
    issuer: str | None = None
    """The issuer URL of the authorization server the client credentials belong to; when set, they
    are only ever sent there (default: the one the server's metadata names)."""
    client_id: str | None = Field(default=None, alias="clientId", min_length=1)
    """A pre-registered client's id (skips dynamic client registration)."""
    client_secret: str | None = Field(default=None, alias="clientSecret", repr=False)
    """That client's secret; best given as ``${VAR}``."""
    token_endpoint_auth_method: (
        Literal["client_secret_basic", "client_secret_post", "none", "private_key_jwt"] | None
    ) = Field(default=None, alias="tokenEndpointAuthMethod")
    """How a pre-registered client authenticates (default: ``client_secret_basic`` with a secret,
    ``private_key_jwt`` with a private key, else ``none``)."""
    private_key: str | None = Field(default=None, alias="privateKey", repr=False)
    """``client_credentials`` with ``private_key_jwt``: the client's private key (PEM); best given as ``${VAR}``."""
    private_key_file: str | None = Field(default=None, alias="privateKeyFile")
    """Or the path of a file holding it."""
    signing_algorithm: (
        Literal["ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"] | None
    ) = Field(default=None, alias="signingAlgorithm")
    """The JWS algorithm of the client assertion (default ``ES256``)."""
    identity_provider: IdentityProviderConfig | None = Field(default=None, alias="identityProvider")
    """``identity_assertion``: the identity provider whose ID token is traded for an ID-JAG."""
    scopes: list[str] | None = None
    """Scopes to ask for, besides those the server asks for."""
    callback_port: int | None = Field(default=None, alias="callbackPort", ge=1, le=65535)
    """The port of the local callback listener (default: an ephemeral port)."""
    client_metadata_url: str | None = Field(default=None, alias="clientMetadataUrl")
    """An https URL of a Client ID Metadata Document, used as the client id where the server supports it."""
    redirect_uri: str | None = Field(default=None, alias="redirectUri")
    """The full loopback redirect URI to use (e.g. one registered with a pre-registered client)."""

    @field_validator("scopes", mode="before")
    @classmethod
    def _scope_string_means_list(cls, value: object) -> object:
        # OAuth writes scopes as one space-separated string; accept that form too.
        if isinstance(value, str):
            return value.split()
        return value
