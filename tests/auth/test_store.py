"""The token store: private files, atomic writes, one record per server and URL, the keyring backend."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from mcpdeck.auth import KEYRING_ENV, TokenStore
from mcpdeck.auth import _store as store_module

pytestmark = pytest.mark.anyio

URL = "https://mcp.example.com/mcp"
TOKEN = OAuthToken(access_token="access-secret", expires_in=3600, scope="read write", refresh_token="refresh-secret")
CLIENT = OAuthClientInformationFull(client_id="client-1", client_secret="client-secret")


class MemoryKeyring:
    """A keyring in memory, with the three functions of the ``keyring`` package."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service_name: str, username: str) -> str | None:
        return self.entries.get((service_name, username))

    def set_password(self, service_name: str, username: str, password: str) -> None:
        self.entries[(service_name, username)] = password

    def delete_password(self, service_name: str, username: str) -> None:
        del self.entries[(service_name, username)]


async def test_tokens_and_registration_round_trip_in_a_private_file(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "auth")
    storage = store.storage("remote", URL)
    assert await storage.get_tokens() is None and await storage.get_client_info() is None
    await storage.set_client_info(CLIENT)
    await storage.set_tokens(TOKEN)

    again = TokenStore(tmp_path / "auth").storage("remote", URL)
    assert await again.get_tokens() == TOKEN
    assert await again.get_client_info() == CLIENT
    path = store.path("remote", URL)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left behind

    (record,) = store.records()
    assert (record.server, record.url, record.backend) == ("remote", URL, "file")
    assert record.has_tokens and record.refreshable and record.scopes == ["read", "write"]
    assert record.client_id == "client-1" and record.client_source == "registered" and not record.expired
    shown = json.dumps(record.to_json())
    assert "secret" not in shown  # a summary never carries a token or a client secret


async def test_an_existing_folder_is_made_private(tmp_path: Path) -> None:
    folder = tmp_path / "auth"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    await TokenStore(folder).storage("remote", URL).set_tokens(TOKEN)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


async def test_records_are_keyed_by_server_and_url(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    await store.storage("a", URL).set_tokens(TOKEN)
    await store.storage("a", URL + "/v2").set_tokens(TOKEN)
    await store.storage("a-b", URL).set_tokens(TOKEN)
    assert await store.storage("a", "https://elsewhere.example.com/mcp").get_tokens() is None
    assert [r.server for r in store.records()] == ["a", "a", "a-b"]
    assert [r.url for r in store.records("a")] == [URL, URL + "/v2"]

    assert store.clear("a") == 2  # every URL of "a", nothing of "a-b"
    assert [r.server for r in store.records()] == ["a-b"]
    assert store.clear("a") == 0
    assert store.get("a-b", URL) is not None


async def test_login_view_hides_old_tokens_until_new_ones_arrive(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    await store.storage("remote", URL).set_tokens(TOKEN)
    fresh = store.for_login("remote").storage("remote", URL)
    assert await fresh.get_tokens() is None
    assert await store.for_login("other").storage("remote", URL).get_tokens() == TOKEN
    newer = TOKEN.model_copy(update={"access_token": "newer"})
    await fresh.set_tokens(newer)
    assert await fresh.get_tokens() == newer and fresh.tokens_saved


async def test_a_configured_client_is_served_but_never_written(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    configured = OAuthClientInformationFull(client_id="mine", client_secret="configured-secret")
    storage = store.storage("remote", URL, configured_client=configured)
    await storage.set_tokens(TOKEN)
    await storage.set_client_info(configured)
    assert await storage.get_client_info() == configured
    assert "configured-secret" not in store.path("remote", URL).read_text()
    assert await store.storage("remote", URL).get_client_info() is None


async def test_forgetting_tokens_keeps_the_registration_and_forgetting_the_client_drops_both(tmp_path: Path) -> None:
    storage = TokenStore(tmp_path).storage("remote", URL)
    await storage.set_client_info(CLIENT)
    await storage.set_tokens(TOKEN)
    await storage.forget_tokens()
    assert await storage.get_tokens() is None and await storage.get_client_info() == CLIENT
    await storage.set_tokens(TOKEN)
    await storage.forget_client()
    assert await storage.get_tokens() is None and await storage.get_client_info() is None


async def test_an_unreadable_record_counts_as_none(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    path = store.path("remote", URL)
    path.write_text("{not json")
    assert await store.storage("remote", URL).get_tokens() is None
    assert store.records() == []
    await store.storage("remote", URL).set_tokens(TOKEN)  # and is replaced by the next write
    assert store.get("remote", URL) is not None


async def test_keyring_backend_keeps_secrets_out_of_the_file(tmp_path: Path) -> None:
    keyring = MemoryKeyring()
    store = TokenStore(tmp_path, keyring=True, keyring_module=keyring)
    assert store.backend == "keyring"
    storage = store.storage("remote", URL)
    await storage.set_client_info(CLIENT)
    await storage.set_tokens(TOKEN)

    text = store.path("remote", URL).read_text()
    assert "access-secret" not in text and "refresh-secret" not in text and "client-secret" not in text
    ((service, _),) = keyring.entries
    assert service == "mcpdeck"
    assert await TokenStore(tmp_path, keyring=True, keyring_module=keyring).storage("remote", URL).get_tokens() == TOKEN
    (record,) = store.records()  # the summary needs no keyring
    assert record.backend == "keyring" and record.has_tokens and record.scopes == ["read", "write"]

    assert store.clear("remote") == 1
    assert keyring.entries == {}


async def test_keyring_is_opt_in_and_falls_back_to_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert TokenStore(tmp_path, environ={}).backend == "file"
    assert TokenStore(tmp_path, environ={KEYRING_ENV: "1"}, keyring_module=MemoryKeyring()).backend == "keyring"
    monkeypatch.setattr(store_module, "load_keyring", lambda: None)  # the keyring package is not installed
    assert TokenStore(tmp_path, environ={KEYRING_ENV: "1"}).backend == "file"


async def test_a_keyring_that_refuses_writes_leaves_the_secrets_in_a_private_file(tmp_path: Path) -> None:
    class LockedKeyring(MemoryKeyring):
        def set_password(self, service_name: str, username: str, password: str) -> None:
            raise RuntimeError("the keyring is locked")

    store = TokenStore(tmp_path, keyring=True, keyring_module=LockedKeyring())
    await store.storage("remote", URL).set_tokens(TOKEN)
    assert await store.storage("remote", URL).get_tokens() == TOKEN
    assert store.records()[0].backend == "file"
    assert stat.S_IMODE(store.path("remote", URL).stat().st_mode) == 0o600


def test_only_server_names_make_record_names(tmp_path: Path) -> None:
    from mcpdeck.errors import ConfigError

    store = TokenStore(tmp_path)
    with pytest.raises(ConfigError):
        store.path("../escape", URL)
    with pytest.raises(ConfigError):
        store.clear("*")
    assert store.records("*") == []
