"""Secrets going out masked, and coming back masked meaning "keep the stored one"."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.types import Receive, Scope, Send

from mcpdeck._util.masking import mask_url
from mcpdeck.api._secrets import mask_config, restore_masked
from mcpdeck.config import parse_server_config
from mcpdeck.errors import ConfigError
from tests.api.conftest import running_api
from tests.helpers import serve_asgi, stdio_server

STORED = {
    "url": "https://api.example.com/mcp?key=abcdef123456&team=x",
    "headers": {"Authorization": "Bearer abcdef123456", "X-Trace": "on"},
    "oauth": {"clientId": "me", "clientSecret": "shhh-very-secret"},
}


def test_a_config_goes_out_with_its_secrets_masked() -> None:
    shown = mask_config(parse_server_config("remote", STORED))
    assert shown["url"] == "https://api.example.com/mcp?key=****&team=****"
    assert shown["headers"] == {"Authorization": "Bea…****", "X-Trace": "****"}
    assert shown["oauth"] == {"clientId": "me", "clientSecret": "shh…****"}
    assert mask_url("http://127.0.0.1:9/mcp") == "http://127.0.0.1:9/mcp"


def test_what_went_out_comes_back_as_the_stored_values() -> None:
    shown = mask_config(parse_server_config("remote", STORED))
    shown["headers"]["X-Trace"] = "off"
    restored = restore_masked(shown, STORED)
    assert restored["url"] == STORED["url"]
    assert restored["headers"] == {"Authorization": "Bearer abcdef123456", "X-Trace": "off"}
    assert restored["oauth"]["clientSecret"] == "shhh-very-secret"


def test_a_new_real_value_replaces_the_stored_one() -> None:
    restored = restore_masked({"headers": {"Authorization": "Bearer new-token"}}, STORED)
    assert restored["headers"]["Authorization"] == "Bearer new-token"


@pytest.mark.parametrize(
    ("sent", "message"),
    [
        ({"headers": {"X-New": "****"}}, "headers.X-New holds a masked value"),
        ({"env": {"TOKEN": "abc…****"}}, "env.TOKEN holds a masked value"),
        ({"url": "https://other.example.com/mcp?key=****"}, "url holds masked query values"),
    ],
)
def test_a_mask_with_nothing_stored_behind_it_is_refused(sent: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        restore_masked(sent, STORED)


def test_masked_arguments_come_back_as_the_stored_ones() -> None:
    stored = {"command": "server", "args": ["--api-key", "sk-live-abcdefghijklmnop", "--port=1", "--token=abcdefghijk"]}
    shown = mask_config(parse_server_config("s", stored))
    assert shown["args"][1] != stored["args"][1]
    assert shown["args"][3].startswith("--token=")
    assert shown["args"][3] != stored["args"][3]
    restored = restore_masked(shown, stored)
    assert restored["args"] == stored["args"]
    with pytest.raises(ConfigError, match="args holds masked values"):
        restore_masked({"args": shown["args"][:2]}, stored)


@pytest.mark.anyio
async def test_a_secret_a_variable_brings_in_is_hidden_in_answers_and_the_traffic_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API's redactor knew the literal secrets only: a tool that echoed ``${VAR}``'s value showed it."""
    value = "from-the-environment-9b7c"
    monkeypatch.setenv("DECK_API_TEST_SECRET", value)
    servers = {"basic": stdio_server("basic", env={"FROM_VAR": "${DECK_API_TEST_SECRET}"})}
    async with running_api(tmp_path, servers, in_process=False) as api:
        echoed = await api.client.post("/api/tools/mcp__basic__env/call", json={"arguments": {"name": "FROM_VAR"}})
        assert echoed.status_code == 200
        assert echoed.json()["content"][0]["text"] == "****"
        answers = [echoed, await api.client.get("/api/traffic"), await api.client.get("/api/servers/basic/traffic")]
        for answer in answers:
            assert answer.status_code == 200
            assert value not in answer.text
        assert "****" in answers[1].text


class Recorder:
    """An HTTP listener on another loopback port that keeps the headers of every request it gets."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        self.headers.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    def saw(self, text: str) -> bool:
        return any(text in value for headers in self.headers for value in headers.values())


@pytest.mark.anyio
async def test_a_new_url_does_not_take_the_stored_secrets_to_another_host_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Editing only the URL sent the stored Authorization and ${VAR} headers to the new host."""
    from_var = "header-from-variable-5e6f"
    monkeypatch.setenv("DECK_HEADER_SECRET", from_var)
    secret = "stored-bearer-secret-1a2b3c"
    headers = {"Authorization": f"Bearer {secret}", "X-Key": "${DECK_HEADER_SECRET}"}
    servers = {"remote": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": headers}}
    recorder = Recorder()
    async with serve_asgi(recorder) as elsewhere, running_api(tmp_path, servers, in_process=False) as api:
        new_url = f"{elsewhere}/mcp"
        shown = (await api.client.get("/api/servers/remote")).json()["config"]
        attempts = [
            ("PATCH", "/api/servers/remote", {"url": new_url}),
            ("PUT", "/api/servers/remote", {"config": {**shown, "url": new_url}}),
            ("POST", "/api/test", {"name": "remote", "config": {**shown, "url": new_url}}),
            ("POST", "/api/servers", {"name": "remote", "config": {**shown, "url": new_url}, "force": True}),
        ]
        for method, path, body in attempts:
            refused = await api.client.request(method, path, json=body)
            assert refused.status_code == 409, (method, path, refused.text)
            error = refused.json()["error"]
            assert error["code"] == "secrets-for-new-host"
            assert "headers.Authorization" in error["message"]
            assert "headers.X-Key" in error["message"]
            assert "keepSecrets" in error["message"]
        assert recorder.headers == []
        assert api.file()["mcpServers"]["remote"]["url"] == "http://127.0.0.1:9/mcp"

        # Given again: the new values go, and only they.
        again = {"url": new_url, "headers": {"Authorization": "Bearer for-the-new-host"}}
        tested = await api.client.post("/api/test", json={"name": "remote", "config": again})
        assert tested.status_code == 200
        assert recorder.saw("Bearer for-the-new-host")
        # Dropped on request: nothing of them goes.
        dropped = await api.client.patch("/api/servers/remote", params={"keepSecrets": "false"}, json={"url": new_url})
        assert dropped.status_code == 200, dropped.text
        assert "headers" not in api.file()["mcpServers"]["remote"] or not api.file()["mcpServers"]["remote"]["headers"]
        assert not recorder.saw(secret)
        assert not recorder.saw(from_var)

    # Confirmed: the stored values go to the new host, as the user asked.
    recorder = Recorder()
    (tmp_path / "again").mkdir()
    async with serve_asgi(recorder) as elsewhere, running_api(tmp_path / "again", servers, in_process=False) as api:
        kept = await api.client.patch(
            "/api/servers/remote", params={"keepSecrets": "true"}, json={"url": f"{elsewhere}/mcp"}
        )
        assert kept.status_code == 200
        assert api.file()["mcpServers"]["remote"]["headers"] == headers
        assert recorder.saw(secret)
        assert recorder.saw(from_var)
