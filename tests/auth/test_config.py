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


# ----- grants without a browser ----------------------------------------------------------------


def test_the_machine_grant_settings_parse_with_their_json_names() -> None:
    raw = {
        "grantType": "identity_assertion",
        "issuer": "https://login.example.com",
        "clientId": "xaa",
        "clientSecret": "${XAA_SECRET}",
        "identityProvider": {
            "issuer": "https://idp.example.com",
            "tokenEndpoint": "https://idp.example.com/oauth2/token",
            "clientId": "deck",
            "idToken": "${ID_TOKEN}",
            "audienceHint": "kept",
        },
    }
    config = remote(oauth=raw)
    assert isinstance(config.oauth, OAuthConfig) and config.oauth.identity_provider is not None
    assert config.oauth.grant_type == "identity_assertion"
    assert config.oauth.identity_provider.token_endpoint == "https://idp.example.com/oauth2/token"
    assert config.to_json()["oauth"] == raw
    keyed = remote(
        oauth={"grantType": "client_credentials", "clientId": "a", "privateKey": "PEM", "signingAlgorithm": "ES384"}
    )
    assert isinstance(keyed.oauth, OAuthConfig) and keyed.oauth.signing_algorithm == "ES384"
    assert "PEM" not in repr(keyed.oauth)  # a key (or secret) given literally is not in a repr
    with pytest.raises(ConfigError, match=r"oauth: grantType: Input should be"):
        remote(oauth={"grantType": "password"})
    with pytest.raises(ConfigError, match=r"oauth: identityProvider\.idToken: Field required"):
        remote(oauth={"identityProvider": {"issuer": "https://idp.example.com", "clientId": "deck"}})


def test_build_auth_picks_the_provider_of_the_grant(tmp_path: Path) -> None:
    from mcpdeck.auth._identity import IdentityAssertionAuth
    from mcpdeck.auth._machine import DeckClientCredentialsProvider, DeckPrivateKeyJWTProvider
    from mcpdeck.auth._provider import DeckOAuthProvider
    from tests.auth.support import ec_key_pair

    store = TokenStore(tmp_path)
    private, _ = ec_key_pair()
    cases: list[tuple[dict[str, object], type]] = [
        ({}, DeckOAuthProvider),
        ({"grantType": "client_credentials", "clientId": "a", "clientSecret": "s"}, DeckClientCredentialsProvider),
        ({"grantType": "client_credentials", "clientId": "a", "privateKey": "${KEY}"}, DeckPrivateKeyJWTProvider),
        (
            {
                "grantType": "identity_assertion",
                "clientId": "a",
                "clientSecret": "s",
                "identityProvider": {"issuer": "http://127.0.0.1:9", "clientId": "d", "idToken": "${T}"},
            },
            IdentityAssertionAuth,
        ),
    ]
    for oauth, kind in cases:
        auth = build_auth("remote", remote(oauth=oauth), store=store, environ={"KEY": private, "T": "id-token"})
        assert type(auth) is kind, oauth


def test_a_one_line_pem_from_an_environment_variable_is_read(tmp_path: Path) -> None:
    from tests.auth.support import ec_key_pair

    private, _ = ec_key_pair()
    config = remote(oauth={"grantType": "client_credentials", "clientId": "a", "privateKey": "${KEY}"})
    one_line = private.replace("\n", "\\n")
    assert build_auth("remote", config, store=TokenStore(tmp_path), environ={"KEY": one_line}) is not None


@pytest.mark.parametrize(
    ("oauth", "message"),
    [
        ({"grantType": "client_credentials", "clientSecret": "s"}, r'"client_credentials" needs oauth\.clientId'),
        ({"grantType": "client_credentials", "clientId": "a"}, r"needs oauth\.clientSecret \(or privateKey\)"),
        (
            {
                "grantType": "client_credentials",
                "clientId": "a",
                "clientSecret": "s",
                "tokenEndpointAuthMethod": "none",
            },
            r'needs client authentication, not "none"',
        ),
        (
            {"grantType": "client_credentials", "clientId": "a", "clientSecret": "s", "privateKey": "k"},
            r"oauth\.clientSecret or a private key, not both",
        ),
        (
            {"grantType": "client_credentials", "clientId": "a", "privateKey": "k", "privateKeyFile": "/k.pem"},
            r"oauth\.privateKey or oauth\.privateKeyFile, not both",
        ),
        (
            {"grantType": "client_credentials", "clientId": "a", "privateKeyFile": "/nonexistent/k.pem"},
            r"cannot read oauth\.privateKeyFile /nonexistent/k\.pem: No such file",
        ),
        (
            {"grantType": "client_credentials", "clientId": "a", "tokenEndpointAuthMethod": "private_key_jwt"},
            r"private_key_jwt needs oauth\.privateKey or oauth\.privateKeyFile",
        ),
        (
            {"grantType": "client_credentials", "clientId": "a", "clientSecret": "s", "callbackPort": 8765},
            r"oauth\.callbackPort is for a browser login",
        ),
        (
            {"grantType": "client_credentials", "clientId": "a", "clientSecret": "s", "issuer": "ftp://x"},
            r"http\(s\) URL",
        ),
        ({"privateKey": "k"}, r'oauth\.privateKey is for grantType "client_credentials"'),
        ({"tokenEndpointAuthMethod": "private_key_jwt"}, r'"private_key_jwt" is for grantType "client_credentials"'),
        ({"issuer": "https://login.example.com"}, r'oauth\.issuer is for grantType "client_credentials" or'),
        (
            {"identityProvider": {"issuer": "https://idp.example.com", "clientId": "d", "idToken": "t"}},
            r'oauth\.identityProvider is for grantType "identity_assertion"',
        ),
        ({"grantType": "identity_assertion", "clientId": "a"}, r'"identity_assertion" needs oauth\.clientSecret'),
        (
            {"grantType": "identity_assertion", "clientId": "a", "clientSecret": "s"},
            r'"identity_assertion" needs oauth\.identityProvider',
        ),
        (
            {
                "grantType": "identity_assertion",
                "clientId": "a",
                "clientSecret": "s",
                "identityProvider": {"issuer": "http://idp.example.com", "clientId": "d", "idToken": "t"},
            },
            r"oauth\.identityProvider\.issuer must be https",
        ),
        (
            {
                "grantType": "identity_assertion",
                "clientId": "a",
                "clientSecret": "s",
                "identityProvider": {
                    "issuer": "https://idp.example.com",
                    "clientId": "d",
                    "idToken": "t",
                    "tokenEndpointAuthMethod": "client_secret_post",
                },
            },
            r"oauth\.identityProvider\.client_secret_post needs a clientSecret",
        ),
    ],
)
def test_machine_grant_settings_that_cannot_work_are_config_errors(
    tmp_path: Path, oauth: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        build_auth("remote", remote(oauth=oauth), store=TokenStore(tmp_path), environ={})


def test_an_unusable_private_key_is_reported_without_quoting_it(tmp_path: Path) -> None:
    from tests.auth.support import ec_key_pair

    private, _ = ec_key_pair()
    store = TokenStore(tmp_path)
    not_a_key = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWJ1dC1ub3QtYS1rZXk=\n-----END PRIVATE KEY-----\n"
    for key, algorithm in ((not_a_key, "ES256"), (private, "RS256")):
        config = remote(
            oauth={"grantType": "client_credentials", "clientId": "a", "privateKey": key, "signingAlgorithm": algorithm}
        )
        with pytest.raises(ConfigError, match=f"not a PEM private key usable with {algorithm}") as caught:
            build_auth("remote", config, store=store)
        assert "c2VjcmV0" not in str(caught.value) and private.splitlines()[1] not in str(caught.value)
