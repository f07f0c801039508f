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
import glob
import json
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path

from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from mcpdeck._util.paths import data_dir
from mcpdeck.auth._files import write_private
from mcpdeck.auth._keyring import SERVICE, KeyringModule, keyring_wanted, load_keyring
from mcpdeck.auth._records import Backend, Record, Secrets, StoredAuth, record_key
from mcpdeck.auth._storage import ServerTokenStorage
from mcpdeck.config import validate_server_name

__all__ = ["TokenStore", "default_auth_dir"]

logger = logging.getLogger(__name__)


def default_auth_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where token records go: ``<data dir>/auth`` (``$MCPDECK_DATA_DIR``, ``$MCPDECK_HOME``; see ``_paths``)."""
    return data_dir(environ) / "auth"


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
        self.directory = Path(directory) if directory is not None else default_auth_dir(environ)
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
        return StoredAuth.from_record(record, path) if record is not None else None

    def records(self, server: str | None = None) -> list[StoredAuth]:
        """Everything stored (for one server, or all), sorted by server name."""
        if not self.directory.is_dir():
            return []
        pattern = f"{glob.escape(server)}.*.json" if server is not None else "*.json"
        found: list[StoredAuth] = []
        for path in sorted(self.directory.glob(pattern)):
            record = self._read_summary(path)
            if record is not None and (server is None or record.server == server):
                found.append(StoredAuth.from_record(record, path))
        return sorted(found, key=lambda item: (item.server, item.url))

    def clear(self, server: str, url: str | None = None) -> int:
        """Delete the tokens and the client registration of ``server`` (at ``url``, or at every URL).

        Returns:
            How many records were deleted.
        """
        validate_server_name(server)
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

    # ----- records (blocking: ServerTokenStorage calls these in a worker thread) ---------

    def _read_summary(self, path: Path) -> Record | None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return Record.model_validate_json(text)
        except ValidationError:
            logger.warning("ignoring the unreadable token record %s", path)
            return None

    def read_record(self, server: str, url: str) -> Record | None:
        """The record of ``server`` at ``url``, secrets included (blocking; for ``ServerTokenStorage``)."""
        path = self.path(server, url)
        record = self._read_summary(path)
        if record is None or record.server != server or record.url != url:
            return None
        if record.backend == "keyring":
            record.secrets = self._read_secret(path.stem)
        return record

    def write_record(self, record: Record) -> None:
        """Replace a record; its summary is recomputed (blocking; for ``ServerTokenStorage``)."""
        key = record_key(record.server, record.url)
        secrets = record.secrets or Secrets()
        tokens, client = secrets.tokens, secrets.client
        record.updated_at = time.time()
        record.has_tokens = tokens is not None
        record.scope = tokens.scope if tokens else None
        record.refreshable = bool(tokens and tokens.refresh_token)
        record.client_id = client.client_id if client else None
        if client is None:
            record.client_source = None
        if not record.has_tokens:
            record.expires_at = None
        summary: Record | None = None
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

    def _read_secret(self, key: str) -> Secrets | None:
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
            return Secrets.model_validate(json.loads(text))
        except (ValueError, ValidationError):
            logger.warning("ignoring the unreadable keyring entry %s", key)
            return None

    def _delete_secret(self, key: str) -> None:
        keyring = self._keyring or load_keyring()
        if keyring is None:
            return
        with contextlib.suppress(Exception):  # keyring raises PasswordDeleteError when there is none
            keyring.delete_password(SERVICE, key)
