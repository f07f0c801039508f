"""What is kept for one server and URL: the record (secrets included) and its summary (none)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata
from pydantic import BaseModel

from mcpdeck.config import validate_server_name

__all__ = ["Backend", "ClientSource", "Record", "Secrets", "StoredAuth", "record_key"]

Backend = Literal["file", "keyring"]
ClientSource = Literal["registered", "metadata-url", "configured"]


def record_key(server: str, url: str) -> str:
    """The record's name: the server's name and a hash of its URL (names never hold a '.').

    Raises:
        ConfigError: ``server`` is not a valid server name.
    """
    return f"{validate_server_name(server)}.{hashlib.sha256(url.encode()).hexdigest()[:16]}"


class Secrets(BaseModel):
    """The secret part of a record: tokens and the client registration."""

    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None


class Record(BaseModel):
    """What is kept for one server and URL (the file's JSON)."""

    version: int = 1
    server: str
    url: str
    backend: Backend = "file"
    updated_at: float = 0.0
    expires_at: float | None = None
    scope: str | None = None
    has_tokens: bool = False
    refreshable: bool = False
    client_id: str | None = None
    client_source: ClientSource | None = None
    authorization_server: OAuthMetadata | None = None
    protected_resource: ProtectedResourceMetadata | None = None
    secrets: Secrets | None = None
    """Tokens and client registration; kept in the keyring instead with that backend."""


@dataclass(frozen=True)
class StoredAuth:
    """What is stored for one server, without a single secret (for status displays).

    Attributes:
        server: The server's name.
        url: The URL the authorization belongs to.
        backend: ``file`` or ``keyring``.
        has_tokens: Whether an access token is stored.
        expires_at: When the access token expires, if the server said.
        scopes: The scopes granted.
        refreshable: Whether a refresh token is stored (an expired access token is renewed with it).
        client_id: The client id mcpdeck is registered under, if registered.
        client_source: ``registered`` (dynamic registration) or ``metadata-url`` (a client ID metadata document).
        updated_at: When the record last changed.
        path: The record's file.
    """

    server: str
    url: str
    backend: Backend
    has_tokens: bool
    expires_at: datetime | None
    scopes: list[str]
    refreshable: bool
    client_id: str | None
    client_source: ClientSource | None
    updated_at: datetime
    path: Path

    @property
    def expired(self) -> bool:
        """Whether the access token's expiry has passed."""
        return self.expires_at is not None and self.expires_at <= datetime.now(UTC)

    @classmethod
    def from_record(cls, record: Record, path: Path) -> StoredAuth:
        """The summary of ``record``, stored at ``path``."""
        return cls(
            server=record.server,
            url=record.url,
            backend=record.backend,
            has_tokens=record.has_tokens,
            expires_at=_stamp(record.expires_at),
            scopes=record.scope.split() if record.scope else [],
            refreshable=record.refreshable,
            client_id=record.client_id,
            client_source=record.client_source,
            updated_at=_stamp(record.updated_at) or datetime.now(UTC),
            path=path,
        )

    def to_json(self) -> dict[str, Any]:
        """A stable JSON shape (``mcpdeck auth status --json``)."""
        return {
            "server": self.server,
            "url": self.url,
            "backend": self.backend,
            "hasTokens": self.has_tokens,
            "expiresAt": self.expires_at.isoformat() if self.expires_at else None,
            "expired": self.expired,
            "scopes": self.scopes,
            "refreshable": self.refreshable,
            "clientId": self.client_id,
            "clientSource": self.client_source,
            "updatedAt": self.updated_at.isoformat(),
            "path": str(self.path),
        }


def _stamp(seconds: float | None) -> datetime | None:
    return datetime.fromtimestamp(seconds, UTC) if seconds is not None else None
