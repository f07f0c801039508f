"""Where OAuth tokens and client registrations live between runs.

One record per server and URL: the key is the server's name plus a hash of its URL, so a
server whose URL changed starts afresh instead of presenting another server's registration.
The file backend keeps each record in ``<user data dir>/mcpdeck/auth/<server>.<hash>.json``
(folder ``0700``, files ``0600``, replaced atomically). The keyring backend keeps the secret
part (tokens, client secret) in the OS keyring and only a summary (expiry, scopes, client id,
discovered endpoints) in that file, so ``mcpdeck auth status`` never touches the keyring.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio
import platformdirs
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata
from pydantic import BaseModel, ValidationError

from mcpdeck.auth._files import write_private
from mcpdeck.auth._keyring import SERVICE, KeyringModule, keyring_wanted, load_keyring

__all__ = ["ServerTokenStorage", "StoredAuth", "TokenStore", "default_auth_dir"]

logger = logging.getLogger(__name__)

Backend = Literal["file", "keyring"]
ClientSource = Literal["registered", "metadata-url", "configured"]


def default_auth_dir() -> Path:
    """Where token records go: ``<user data dir>/mcpdeck/auth``."""
    return platformdirs.user_data_path("mcpdeck", appauthor=False) / "auth"


def record_key(server: str, url: str) -> str:
    """The record's name: the server's name and a hash of its URL (names never hold a '.')."""
    return f"{server}.{hashlib.sha256(url.encode()).hexdigest()[:16]}"


class _Secrets(BaseModel):
    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None


class _Record(BaseModel):
    """What is kept for one server and URL (the file's JSON)."""

    version: int = 1
    server: str
    url: str
    backend: Backend = "file"
    updated_at: float = 0.0
    tokens_saved_at: float | None = None
    expires_at: float | None = None
    scope: str | None = None
    has_tokens: bool = False
    refreshable: bool = False
    client_id: str | None = None
    client_source: ClientSource | None = None
    authorization_server: OAuthMetadata | None = None
    protected_resource: ProtectedResourceMetadata | None = None
    secrets: _Secrets | None = None
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


class TokenStore:
    """The persistent store of OAuth tokens and client registrations, for every server.

    Args:
        directory: Where the records go (default: ``<user data dir>/mcpdeck/auth``).
        keyring: Keep secrets in the OS keyring. Default: only when ``MCPDECK_KEYRING=1`` is set
            and the ``keyring`` package is installed; otherwise (or when it is not installed) files.
        environ: The environment read for ``MCPDECK_KEYRING`` (default: ``os.environ``).
        keyring_module: The keyring to use instead of the ``keyring`` package (anything with its
            ``get_password`` / ``set_password`` / ``delete_password``).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        keyring: bool | None = None,
        environ: Mapping[str, str] | None = None,
        keyring_module: KeyringModule | None = None,
    ):
        self.directory = Path(directory) if directory is not None else default_auth_dir()
        self._fresh: frozenset[str] = frozenset()
        wanted = keyring if keyring is not None else keyring_wanted(os.environ if environ is None else environ)
        self._keyring: KeyringModule | None = None
        if wanted:
            self._keyring = keyring_module if keyring_module is not None else load_keyring()
            if self._keyring is None:
                logger.warning("keyring requested but the keyring package is not installed; tokens go to files")

    @property
    def backend(self) -> Backend:
        """Where secrets go: ``keyring`` or ``file``."""
        return "keyring" if self._keyring is not None else "file"

    def for_login(self, server: str) -> TokenStore:
        """This store, except that ``server``'s stored tokens are not used (a login asks again).

        Tokens obtained are stored as usual; the old ones stay until new ones replace them.
        """
        view = copy.copy(self)
        view._fresh = self._fresh | {server}
        return view

    def path(self, server: str, url: str) -> Path:
        """The record file of ``server`` at ``url``."""
        return self.directory / f"{record_key(server, url)}.json"

    def storage(
        self,
        server: str,
        url: str,
        *,
        configured_client: OAuthClientInformationFull | None = None,
        client_metadata_url: str | None = None,
        hide_tokens: bool = False,
    ) -> ServerTokenStorage:
        """The SDK ``TokenStorage`` of one server at one URL.

        Args:
            server: The server's name.
            url: Its URL (expanded).
            configured_client: A pre-registered client from the config; it is served instead of a
                stored registration and is never written down.
            client_metadata_url: The configured client ID metadata document URL, if any.
            hide_tokens: Start as if no token were stored (a fresh login); tokens obtained are stored.
        """
        return ServerTokenStorage(
            self,
            server,
            url,
            configured_client=configured_client,
            client_metadata_url=client_metadata_url,
            hide_tokens=hide_tokens or server in self._fresh,
        )

    def get(self, server: str, url: str) -> StoredAuth | None:
        """What is stored for ``server`` at ``url`` (no secrets), or None."""
        path = self.path(server, url)
        record = self._read_summary(path)
        return self._summary(record, path) if record is not None else None

    def records(self, server: str | None = None) -> list[StoredAuth]:
        """Everything stored (for one server, or all), sorted by server name."""
        if not self.directory.is_dir():
            return []
        pattern = f"{server}.*.json" if server is not None else "*.json"
        found: list[StoredAuth] = []
        for path in sorted(self.directory.glob(pattern)):
            record = self._read_summary(path)
            if record is not None and (server is None or record.server == server):
                found.append(self._summary(record, path))
        return sorted(found, key=lambda item: (item.server, item.url))

    def clear(self, server: str, url: str | None = None) -> int:
        """Delete the tokens and the client registration of ``server`` (at ``url``, or at every URL).

        Returns:
            How many records were deleted.
        """
        paths = [self.path(server, url)] if url is not None else list(self.directory.glob(f"{server}.*.json"))
        removed = 0
        for path in paths:
            record = self._read_summary(path)
            if url is None and record is not None and record.server != server:
                continue
            self._delete_secret(path.stem)
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            removed += 1
        return removed

    # ----- records (blocking; ServerTokenStorage calls these in a worker thread) ---------

    def _read_summary(self, path: Path) -> _Record | None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return _Record.model_validate_json(text)
        except ValidationError:
            logger.warning("ignoring the unreadable token record %s", path)
            return None

    def _read(self, server: str, url: str) -> _Record | None:
        path = self.path(server, url)
        record = self._read_summary(path)
        if record is None or record.server != server or record.url != url:
            return None
        if record.backend == "keyring":
            record.secrets = self._read_secret(path.stem)
        return record

    def _write(self, record: _Record) -> None:
        key = record_key(record.server, record.url)
        secrets = record.secrets or _Secrets()
        tokens, client = secrets.tokens, secrets.client
        record.updated_at = time.time()
        record.has_tokens = tokens is not None
        record.scope = tokens.scope if tokens else None
        record.refreshable = bool(tokens and tokens.refresh_token)
        record.client_id = client.client_id if client else None
        if client is None:
            record.client_source = None
        if not record.has_tokens:
            record.expires_at = record.tokens_saved_at = None
        summary: _Record | None = None
        if self._keyring is not None:
            try:
                self._keyring.set_password(SERVICE, key, secrets.model_dump_json(exclude_none=True))
                summary = record.model_copy(update={"backend": "keyring", "secrets": None})
            except Exception as error:  # no usable keyring backend, locked, refused...
                logger.warning("cannot write to the keyring (%s); keeping %s in a private file", error, key)
        if summary is None:
            if record.backend == "keyring":
                self._delete_secret(key)
            summary = record.model_copy(update={"backend": "file"})
        write_private(self.path(record.server, record.url), summary.model_dump_json(indent=2, exclude_none=True))

    def _read_secret(self, key: str) -> _Secrets | None:
        keyring = self._keyring or load_keyring()
        if keyring is None:
            logger.warning("the token record %s is in the keyring, but the keyring package is not installed", key)
            return None
        try:
            text = keyring.get_password(SERVICE, key)
        except Exception as error:
            logger.warning("cannot read the keyring entry %s: %s", key, error)
            return None
        if text is None:
            return None
        try:
            return _Secrets.model_validate(json.loads(text))
        except (ValueError, ValidationError):
            logger.warning("ignoring the unreadable keyring entry %s", key)
            return None

    def _delete_secret(self, key: str) -> None:
        keyring = self._keyring or load_keyring()
        if keyring is None:
            return
        with contextlib.suppress(Exception):  # keyring raises PasswordDeleteError when there is none
            keyring.delete_password(SERVICE, key)

    def _summary(self, record: _Record, path: Path) -> StoredAuth:
        return StoredAuth(
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


class ServerTokenStorage:
    """The SDK's ``TokenStorage`` for one server at one URL, backed by a ``TokenStore``.

    Besides the four methods the SDK calls, it keeps what the SDK forgets between runs: when
    the access token expires (so an expired one is refreshed before it is sent) and the
    authorization server's metadata (so a refresh goes to the right token endpoint).
    """

    def __init__(
        self,
        store: TokenStore,
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

    async def _load(self) -> _Record | None:
        return await anyio.to_thread.run_sync(self.store._read, self.server, self.url)  # pyright: ignore[reportPrivateUsage]

    async def _update(self, change: Callable[[_Record], None]) -> None:
        def update() -> None:
            record = self.store._read(self.server, self.url) or _Record(server=self.server, url=self.url)  # pyright: ignore[reportPrivateUsage]
            record.secrets = record.secrets or _Secrets()
            change(record)
            self.store._write(record)  # pyright: ignore[reportPrivateUsage]

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

        def change(record: _Record) -> None:
            assert record.secrets is not None
            record.secrets.tokens = tokens
            record.tokens_saved_at = now
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

        def change(record: _Record) -> None:
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

        def change(record: _Record) -> None:
            record.authorization_server = metadata
            record.protected_resource = resource

        await self._update(change)

    async def forget_tokens(self) -> None:
        """Delete the stored tokens (a refresh was refused); the registration stays."""

        def change(record: _Record) -> None:
            assert record.secrets is not None
            record.secrets.tokens = None

        await self._update(change)

    async def forget_client(self) -> None:
        """Delete the stored registration and tokens (the authorization server no longer knows the client)."""

        def change(record: _Record) -> None:
            record.secrets = _Secrets()

        await self._update(change)
