"""An enterprise identity provider on 127.0.0.1, for the SEP-990 tests.

It issues ID tokens (ES256) to hand to mcpdeck, and at its token endpoint does the RFC 8693
token exchange of SEP-990 leg 1: a valid ID token of one of its clients, for an ID-JAG
(``typ: oauth-id-jag+jwt``) with the requested audience (an authorization server's issuer) and
resource, and the ``client_id`` its policy maps that client to at that authorization server.
It publishes OpenID Connect discovery metadata.
"""

from __future__ import annotations

import base64
import secrets
import time
import uuid
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.auth.oauth_server import IdJagTrust, bind_local, serve_app

__all__ = ["ID_JAG", "IdentityProvider", "IdpClient", "identity_provider"]

ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


@dataclass
class IdpClient:
    """A client of the identity provider, and what its policy lets it get ID-JAGs for.

    Attributes:
        client_id: Its id at the identity provider.
        secret: Its secret (checked with client_secret_basic when set).
        audiences: The authorization servers (issuers) it may get ID-JAGs for, each with the
            client id it has there.
    """

    client_id: str
    secret: str | None = None
    audiences: dict[str, str] = field(default_factory=dict[str, str])


@dataclass
class IdentityProvider:
    """The running identity provider.

    Attributes:
        issuer: Its URL.
        clients: Its clients, by id.
        exchanges: The form of every token exchange it was sent (the subject token left out).
        refused: Why it refused each request it refused.
    """

    issuer: str
    key: ec.EllipticCurvePrivateKey
    clients: dict[str, IdpClient] = field(default_factory=dict[str, IdpClient])
    exchanges: list[dict[str, str]] = field(default_factory=list[dict[str, str]])
    refused: list[str] = field(default_factory=list[str])

    @property
    def trust(self) -> IdJagTrust:
        """What an authorization server needs to check this identity provider's ID-JAGs."""
        public = self.key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return IdJagTrust(issuer=self.issuer, public_key=public.decode())

    def id_token(self, client_id: str, subject: str = "alice@example.com", lifetime: int = 600) -> str:
        """An ID token for ``subject``, issued to ``client_id``."""
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": subject, "aud": client_id, "iat": now, "exp": now + lifetime}
        return jwt.encode(claims, self.key, algorithm="ES256")

    async def token(self, request: Request) -> Response:
        form = {key: value for key, value in (await request.form()).items() if isinstance(value, str)}
        self.exchanges.append({key: value for key, value in form.items() if key != "subject_token"})
        client = self._client(request, form)
        if client is None:
            return self._refuse("invalid_client", "client authentication failed", 401)
        if form.get("grant_type") != TOKEN_EXCHANGE:
            return self._refuse("unsupported_grant_type", "token exchange only")
        if form.get("subject_token_type") != ID_TOKEN or form.get("requested_token_type") != ID_JAG:
            return self._refuse("invalid_request", "an ID token for an ID-JAG only")
        audience, resource = form.get("audience"), form.get("resource")
        if not audience or not resource:
            return self._refuse("invalid_request", "audience and resource are required")
        if audience not in client.audiences:
            return self._refuse("invalid_target", f"no ID-JAG for {audience}")
        try:
            identity: dict[str, Any] = jwt.decode(
                form.get("subject_token", ""),
                self.key.public_key(),
                algorithms=["ES256"],
                audience=client.client_id,
                issuer=self.issuer,
            )
        except jwt.PyJWTError as error:
            return self._refuse("invalid_grant", f"bad ID token: {error}")
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": identity["sub"],
            "aud": audience,
            "resource": resource,
            "client_id": client.audiences[audience],
            "iat": now,
            "exp": now + 300,
            "jti": str(uuid.uuid4()),
        }
        if form.get("scope"):
            claims["scope"] = form["scope"]
        grant = jwt.encode(claims, self.key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"})
        return JSONResponse(
            {"access_token": grant, "issued_token_type": ID_JAG, "token_type": "N_A", "expires_in": 300},
            headers={"Cache-Control": "no-store"},
        )

    def _client(self, request: Request, form: dict[str, str]) -> IdpClient | None:
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
            client = self.clients.get(unquote(client_id))
            if client is None or client.secret is None:
                return None
            return client if secrets.compare_digest(unquote(secret), client.secret) else None
        client = self.clients.get(form.get("client_id", ""))
        return client if client is not None and client.secret is None else None

    def _refuse(self, error: str, description: str, status: int = 400) -> Response:
        self.refused.append(f"{error}: {description}")
        return JSONResponse({"error": error, "error_description": description}, status_code=status)

    async def configuration(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "jwks_uri": f"{self.issuer}/jwks",
                "grant_types_supported": [TOKEN_EXCHANGE],
            }
        )


@asynccontextmanager
async def identity_provider() -> AsyncGenerator[IdentityProvider]:
    """A fresh identity provider with its own ES256 key, on its own port."""
    sock, url = bind_local()
    idp = IdentityProvider(issuer=url, key=ec.generate_private_key(ec.SECP256R1()))
    app = Starlette(
        routes=[
            Route("/.well-known/openid-configuration", idp.configuration, methods=["GET"]),
            Route("/token", idp.token, methods=["POST"]),
        ]
    )
    async with serve_app(sock, app):
        yield idp
