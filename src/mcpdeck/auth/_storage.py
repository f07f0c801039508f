"""The SDK's ``TokenStorage`` for one server at one URL, on a ``TokenStore``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import anyio
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata

from mcpdeck.auth._records import ClientSource, Record, Secrets

__all__ = ["ConfiguredClient", "RecordStore", "ServerTokenStorage"]


class RecordStore(Protocol):
    """Where records are read and written (``TokenStore``); blocking calls, run in a worker thread."""

    def read_record(self, server: str, url: str) -> Record | None:
        """The record of ``server`` at ``url``, secrets included, or None."""
        ...

    def write_record(self, record: Record) -> None:
        """Replace the record (its summary fields are recomputed)."""
        ...


class ServerTokenStorage:
    """The SDK's ``TokenStorage`` for one server at one URL, backed by a ``TokenStore``.

    Besides the four methods the SDK calls, it keeps what the SDK forgets between runs: when
    the access token expires (so an expired one is refreshed before it is sent) and the
    authorization server's metadata (so a refresh goes to the right token endpoint).
    """

    def __init__(
        self,
        store: RecordStore,
        server: str,
        url: str,
        *,
        configured_client: OAuthClientInformationFull | None,
        client_metadata_url: str | None,
        hide_tokens: bool,
    ):
        self.store = store
        self.server = server
        self.url = url
        self.configured_client = configured_client
        self._client_metadata_url = client_metadata_url
        self._hide_tokens = hide_tokens
        self.tokens_saved = False
        """Whether tokens were saved through this object (a login that needed no authorization saves none)."""

    async def _load(self) -> Record | None:
        return await anyio.to_thread.run_sync(self.store.read_record, self.server, self.url)

    async def _update(self, change: Callable[[Record], None]) -> None:
        def update() -> None:
            record = self.store.read_record(self.server, self.url) or Record(server=self.server, url=self.url)
            record.secrets = record.secrets or Secrets()
            change(record)
            self.store.write_record(record)

        await anyio.to_thread.run_sync(update)

    # ----- the SDK's TokenStorage ----------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens (None during a fresh login until new ones are saved)."""
        if self._hide_tokens:
            return None
        record = await self._load()
        return record.secrets.tokens if record and record.secrets else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Store new tokens, with the time they expire."""
        now = time.time()

        def change(record: Record) -> None:
            assert record.secrets is not None
            record.secrets.tokens = tokens
            record.expires_at = now + tokens.expires_in if tokens.expires_in is not None else None

        await self._update(change)
        self._hide_tokens = False
        self.tokens_saved = True

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The configured client, else the stored registration."""
        if self.configured_client is not None:
            return self.configured_client
        record = await self._load()
        return record.secrets.client if record and record.secrets else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Store a new registration (a configured client is never written down)."""
        if self.configured_client is not None and client_info.client_id == self.configured_client.client_id:
            return
        source: ClientSource = (
            "metadata-url"
            if self._client_metadata_url and client_info.client_id == self._client_metadata_url
            else "registered"
        )

        def change(record: Record) -> None:
            assert record.secrets is not None
            record.secrets.client = client_info
            record.client_source = source

        await self._update(change)

    # ----- what mcpdeck adds ---------------------------------------------------------------

    async def expires_at(self) -> float | None:
        """When the stored access token expires (epoch seconds), if known."""
        if self._hide_tokens:
            return None
        record = await self._load()
        return record.expires_at if record else None

    async def discovery(self) -> tuple[OAuthMetadata | None, ProtectedResourceMetadata | None]:
        """The authorization server and protected resource metadata found last time."""
        record = await self._load()
        return (record.authorization_server, record.protected_resource) if record else (None, None)

    async def save_discovery(self, metadata: OAuthMetadata, resource: ProtectedResourceMetadata | None) -> None:
        """Remember the authorization server's metadata, so a later run refreshes at its token endpoint."""

        def change(record: Record) -> None:
            record.authorization_server = metadata
            record.protected_resource = resource

        await self._update(change)

    async def forget_tokens(self) -> None:
        """Delete the stored tokens (a refresh was refused); the registration stays."""

        def change(record: Record) -> None:
            assert record.secrets is not None
            record.secrets.tokens = None

        await self._update(change)

    async def forget_client(self) -> None:
        """Delete the stored registration and tokens (the authorization server no longer knows the client)."""

        def change(record: Record) -> None:
            record.secrets = Secrets()

        await self._update(change)


@dataclass(frozen=True)
class ConfiguredClient:
    """A client given in the config (``oauth.clientId``, never registered), where its tokens are kept and
    what it asks for: what the grants without a browser (client credentials, identity assertion) start from."""

    storage: ServerTokenStorage
    client_id: str
    scopes: list[str]
    issuer: str | None
    """``oauth.issuer``; None: the authorization server the MCP server's metadata names."""

    @property
    def server(self) -> str:
        return self.storage.server

    @property
    def url(self) -> str:
        return self.storage.url

    @property
    def scope(self) -> str | None:
        """The scopes as a token request's ``scope`` (None: none asked for)."""
        return " ".join(self.scopes) or None
