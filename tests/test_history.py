"""The history file: what is not a database, results kept, secrets never stored (the store's own tests:
tests/store)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcpdeck import Host
from mcpdeck.config import parse_config_document
from mcpdeck.errors import ConfigError, ServerTimeoutError
from mcpdeck.history import RESULT_CHARS, History, Redactor, secrets_of
from tests.servers import basic

pytestmark = pytest.mark.anyio


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    path.write_text("this is not sqlite, it is a note\n" * 200)
    with pytest.raises(ConfigError, match="cannot open the history database"):
        History(path)


def test_config_secrets_are_found_and_never_stored(tmp_path: Path) -> None:
    config = parse_config_document(
        {
            "mcpServers": {
                "gh": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ghp_secret_token_1"}},
                "db": {"command": "x", "env": {"PASSWORD": "hunter2-long", "REF": "${FROM_ENV}", "N": "1"}},
            }
        }
    )
    secrets = secrets_of(config)
    assert secrets >= {"Bearer ghp_secret_token_1", "ghp_secret_token_1", "hunter2-long"}
    assert "${FROM_ENV}" not in secrets and "1" not in secrets
    with History(tmp_path / "h.sqlite3", redactor=Redactor(secrets)) as history:
        conversation = history.start_conversation(title="uses ghp_secret_token_1")
        history.add_message(conversation, "tool", {"output": "password is hunter2-long"})
        assert history.messages(conversation)[0]["content"] == {"output": "password is ****"}
        assert history.conversations()[0]["title"] == "uses ****"
    raw = b"".join(path.read_bytes() for path in tmp_path.glob("h.sqlite3*"))  # the database and any WAL left
    assert b"hunter2-long" not in raw and b"ghp_secret_token_1" not in raw


async def test_a_call_s_result_is_kept_as_text_its_start_only_and_redacted(tmp_path: Path) -> None:
    long = "x" * (RESULT_CHARS + 500)
    with History(tmp_path / "h.sqlite3", redactor=Redactor({"top-secret-value"})) as history:
        async with Host({"basic": basic.build_server()}, log_dir=tmp_path / "logs", history=history) as host:
            with anyio.fail_after(10):
                await host.call_tool("mcp__basic__echo", {"text": "said top-secret-value"})
                await host.call_tool("mcp__basic__structured", {"city": "Bergen"})
                await host.call_tool("mcp__basic__echo", {"text": long})
                await host.call_tool("mcp__basic__fail", {"message": "it broke"})
                with pytest.raises(ServerTimeoutError):
                    await host.call_tool("mcp__basic__sleep", {"seconds": 1}, timeout=0.05)
        slept, failed, cut, structured, echoed = history.tool_calls()
        assert all(call.result is None for call in history.tool_calls())  # the list reads no results
        assert (found := history.tool_call(echoed.call_id)) is not None and found.result == "said ****"
        assert found.to_json()["result"] == "said ****"
        assert (found := history.tool_call(structured.call_id)) is not None and found.result is not None
        assert '"city": "Bergen"' in found.result
        assert (found := history.tool_call(cut.call_id)) is not None and found.result is not None
        assert found.result.startswith("x" * RESULT_CHARS) and "500 of" in found.result
        assert (found := history.tool_call(failed.call_id)) is not None and found.result is not None
        assert found.result.endswith("it broke")  # a tool error is a result too
        assert (found := history.tool_call(slept.call_id)) is not None and found.result is None
        assert "result" not in found.to_json()
        assert history.tool_call("nope") is None
    assert b"top-secret-value" not in stored(tmp_path)


def stored(folder: Path) -> bytes:
    """The bytes of the history database and any WAL left beside it."""
    return b"".join(path.read_bytes() for path in folder.glob("h.sqlite3*"))


def test_oauth_secrets_of_every_grant_are_found() -> None:
    config = parse_config_document(
        {
            "mcpServers": {
                "m2m": {
                    "url": "https://mcp.example.com/mcp",
                    "oauth": {
                        "grantType": "identity_assertion",
                        "clientId": "deck",
                        "clientSecret": "client-secret-123",
                        "identityProvider": {
                            "issuer": "https://idp.example.com",
                            "clientId": "idp-client",
                            "clientSecret": "idp-secret-456",
                            "idToken": "eyJhbGciOi.id.token",
                        },
                    },
                },
            }
        }
    )
    assert not config.problems, config.problems
    assert {"client-secret-123", "idp-secret-456", "eyJhbGciOi.id.token"} <= secrets_of(config)
