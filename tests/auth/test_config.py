"""The ``oauth`` key of a remote server's config, and how it becomes an auth handler."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpdeck.auth import OAuthConfig, TokenStore, build_auth, oauth_settings
from mcpdeck.config import RemoteServerConfig, parse_server_config
from mcpdeck.errors import ConfigError, UnsetVariableError

URL = "https://mcp.example.com/mcp"


def remote(**extra: object) -> RemoteServerConfig:
    config = parse_server_config("remote", {"url": URL, **extra})
    assert isinstance(config, RemoteServerConfig)
    return config


def test_oauth_settings_parse_with_their_json_names_and_keep_unknown_keys() -> None:
    raw = {
        "clientId": "id",
        "clientSecret": "${SECRET}",
        "scopes": "read write",
        "callbackPort": 8765,
        "clientMetadataUrl": "https://app.example.com/client.json",
        "audience": "kept",
    }
    config = remote(oauth=raw)
    assert isinstance(config.oauth, OAuthConfig)
    assert config.oauth.client_id == "id" and config.oauth.scopes == ["read", "write"]
    assert config.oauth.callback_port == 8765
    assert config.to_json()["oauth"] == {**raw, "scopes": ["read", "write"]}
    assert remote(oauth=False).to_json() == {"url": URL, "oauth": False}
    assert "oauth" not in remote().to_json()


def test_bad_oauth_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"oauth: callbackPort: Input should be less than or equal to 65535$"):
        remote(oauth={"callbackPort": 70000})
    with pytest.raises(ConfigError, match=r"oauth: must be an object, true or false$"):
        remote(oauth="yes please")


def test_oauth_is_off_with_false_or_an_own_authorization_header() -> None:
    assert oauth_settings(remote()) == OAuthConfig()
    assert oauth_settings(remote(oauth=True)) == OAuthConfig()
    assert oauth_settings(remote(oauth=False)) is None
    assert oauth_settings(remote(headers={"authorization": "Bearer mine"})) is None
    store = TokenStore(Path("/nonexistent"))
    assert build_auth("remote", remote(oauth=False), store=store) is None
    assert build_auth("remote", remote(), store=store) is not None


def test_build_auth_checks_and_expands_the_settings(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    with pytest.raises(UnsetVariableError, match=r"DECK_TEST_UNSET.*oauth\.clientSecret"):
        build_auth(
            "remote", remote(oauth={"clientId": "a", "clientSecret": "${DECK_TEST_UNSET}"}), store=store, environ={}
        )
    with pytest.raises(ConfigError, match=r"needs an oauth\.clientId"):
        build_auth("remote", remote(oauth={"clientSecret": "s"}), store=store)
    with pytest.raises(ConfigError, match=r"oauth\.redirectUri must be http:// on 127\.0\.0\.1"):
        build_auth("remote", remote(oauth={"redirectUri": "https://example.com/cb"}), store=store)
    with pytest.raises(ConfigError, match="differs from the port"):
        build_auth("remote", remote(oauth={"redirectUri": "http://localhost:1234/cb", "callbackPort": 99}), store=store)
    with pytest.raises(ConfigError, match="clientMetadataUrl"):
        build_auth("remote", remote(oauth={"clientMetadataUrl": "http://app.example.com/"}), store=store)
    assert build_auth("remote", remote(oauth={"redirectUri": "http://localhost:1234/cb"}), store=store) is not None
