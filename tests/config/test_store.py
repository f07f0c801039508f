"""ConfigStore: refuses broken files with a line number, changes only what it must, writes atomically."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from mcpdeck import ConfigError, ConfigStore, StdioServerConfig
from mcpdeck.config import parse_config_document, parse_server_config, resolve_config_path
from tests.config.hand_written import ADDED, NEW_SERVER, STYLES

DOCUMENT = """{
  "theme": "dark",
  "npmRegistry": "https://registry.example",
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "fs-server"], "x-owner": "ops"},
    "web": {"type": "streamableHttp", "url": "https://example.com/mcp", "status": "connected", "toolCount": 9}
  }
}
"""


@pytest.fixture
def path(tmp_path: Path) -> Path:
    file = tmp_path / "mcp.json"
    file.write_text(DOCUMENT)
    return file


def doc(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def files(path: Path) -> list[str]:
    """The folder's files: the config alone (no temp file, no lock file)."""
    return sorted(p.name for p in path.parent.iterdir())


# ----- reading ---------------------------------------------------------------------------


def test_a_file_reads_into_servers_and_settings(path: Path) -> None:
    config = ConfigStore(path).read()
    assert list(config.servers) == ["fs", "web"]
    assert config.servers["fs"].transport == "stdio"
    assert config.servers["web"].transport == "http"
    assert config.npm_registry == "https://registry.example"
    assert config.enabled
    assert config.path == path
    assert config.problems == {}


def test_an_absent_or_empty_file_reads_as_no_servers(tmp_path: Path) -> None:
    assert ConfigStore(tmp_path / "absent.json").read().servers == {}
    (tmp_path / "empty.json").write_text("  \n")
    assert ConfigStore(tmp_path / "empty.json").read().servers == {}


def test_malformed_json_is_refused_with_its_line_and_the_file_is_never_written_over(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    text = '{\n  "mcpServers": {\n    "fs": {"command": "npx" "args": []}\n  }\n}\n'
    path.write_text(text)
    store = ConfigStore(path)
    with pytest.raises(ConfigError) as caught:
        store.read()
    assert caught.value.line == 3
    assert str(caught.value).startswith(f"{path}:3: not valid JSON")
    with pytest.raises(ConfigError):
        store.put_server("new", StdioServerConfig(command="x"))
    with pytest.raises(ConfigError):
        store.set_enabled(False)
    assert path.read_text() == text
    assert files(path) == ["mcp.json"]


def test_a_server_defined_twice_is_refused_pointing_at_the_second_definition(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        '{\n  "mcpServers": {\n    "fs": {"command": "a"},\n    "git": {"command": "g"},\n'
        '    "fs": {"command": "b"}\n  }\n}\n'
    )
    with pytest.raises(ConfigError, match="'fs' is defined twice") as caught:
        ConfigStore(path).read()
    assert caught.value.line == 5


def test_a_document_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="JSON object") as caught:
        ConfigStore(path).read()
    assert caught.value.line == 1
    path.write_text('{"mcpServers": ["fs"]}')
    with pytest.raises(ConfigError, match='"mcpServers" must be an object'):
        ConfigStore(path).read()


def test_one_unusable_entry_is_reported_and_the_others_load(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"ok": {"command": "x"}, "bad name": {"command": "y"}, "no": {}}}))
    config = ConfigStore(path).read()
    assert list(config.servers) == ["ok"]
    assert set(config.problems) == {"bad name", "no"}
    assert "needs 'command'" in str(config.problems["no"])


def test_the_global_switch_is_read_from_mcp_enabled() -> None:
    assert not parse_config_document({"mcpEnabled": False}).enabled
    assert parse_config_document({"mcpEnabled": "yes"}).enabled
    assert parse_config_document({"npmRegistry": ""}).npm_registry is None


# ----- changing ----------------------------------------------------------------------------


def test_put_server_adds_an_entry_and_leaves_every_other_byte_of_meaning_alone(path: Path) -> None:
    before = doc(path)
    ConfigStore(path).put_server("git", parse_server_config("git", {"command": "uvx", "args": ["mcp-git"]}))
    after = doc(path)
    assert after["mcpServers"]["git"] == {"command": "uvx", "args": ["mcp-git"]}
    assert after["mcpServers"]["fs"] == before["mcpServers"]["fs"]
    assert after["mcpServers"]["web"] == before["mcpServers"]["web"]
    assert {k: v for k, v in after.items() if k != "mcpServers"} == {
        k: v for k, v in before.items() if k != "mcpServers"
    }
    assert list(after["mcpServers"]) == ["fs", "web", "git"]


def test_put_server_replaces_an_entry_in_place_dropping_runtime_keys(path: Path) -> None:
    store = ConfigStore(path)
    web = store.read().servers["web"]
    store.put_server("web", web.model_copy(update={"timeout": 90.0}))
    # The user's spelling of "type" still means the same, so it stays; the new timeout has no ".0".
    line = '    "web": {"type": "streamableHttp", "url": "https://example.com/mcp", "timeout": 90}\n'
    assert path.read_text() == DOCUMENT.replace(DOCUMENT.splitlines(keepends=True)[5], line)
    assert list(doc(path)["mcpServers"]) == ["fs", "web"]


def test_an_edit_keeps_unknown_keys_through_a_load_and_save(path: Path) -> None:
    store = ConfigStore(path)
    fs = store.read().servers["fs"]
    store.put_server("fs", fs)
    assert doc(path)["mcpServers"]["fs"] == {"command": "npx", "args": ["-y", "fs-server"], "x-owner": "ops"}
    assert doc(path)["theme"] == "dark"


def test_remove_server_deletes_only_that_entry(path: Path) -> None:
    ConfigStore(path).remove_server("fs")
    after = doc(path)
    assert list(after["mcpServers"]) == ["web"]
    assert after["theme"] == "dark"


def test_removing_an_unknown_server_is_refused_and_the_file_stays_byte_identical(path: Path) -> None:
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="no server named 'ghost'"):
        ConfigStore(path).remove_server("ghost")
    with pytest.raises(ConfigError, match="no server named 'ghost'"):
        ConfigStore(path).set_server_disabled("ghost", True)
    assert path.read_bytes() == before
    assert files(path) == ["mcp.json"]


def test_set_server_disabled_touches_only_the_disabled_key(path: Path) -> None:
    store = ConfigStore(path)
    store.set_server_disabled("web", True)
    entry = doc(path)["mcpServers"]["web"]
    assert entry["disabled"] is True
    assert entry["status"] == "connected"  # not ours to drop when only toggling
    assert store.read().servers["web"].disabled
    store.set_server_disabled("web", False)
    assert "disabled" not in doc(path)["mcpServers"]["web"]


def test_set_enabled_writes_mcp_enabled_only_when_off(path: Path) -> None:
    store = ConfigStore(path)
    store.set_enabled(False)
    assert doc(path)["mcpEnabled"] is False
    assert not store.read().enabled
    store.set_enabled(True)
    assert "mcpEnabled" not in doc(path)


def test_put_server_refuses_a_bad_name(path: Path) -> None:
    before = path.read_bytes()
    for bad in ["", "with space", "a__b"]:
        with pytest.raises(ConfigError):
            ConfigStore(path).put_server(bad, StdioServerConfig(command="x"))
    assert path.read_bytes() == before


# ----- the file's text -------------------------------------------------------------------


@pytest.fixture(params=list(STYLES))
def hand_written(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    """A config file in one of the hand-written styles (written as bytes: its line breaks are its own)."""
    style: str = request.param
    file = tmp_path / "mcp.json"
    file.write_bytes(STYLES[style].encode())
    return style, file


def test_saving_a_server_as_it_was_read_leaves_the_file_byte_identical(hand_written: tuple[str, Path]) -> None:
    _, path = hand_written
    before = path.read_bytes()
    store = ConfigStore(path)
    for name, server in store.read().servers.items():  # as the console saves an edited server: all of it
        store.put_server(name, parse_server_config(name, server.to_json()))
    assert path.read_bytes() == before  # 30 stays 30, 2.5 stays 2.5, every space and comment stays


def test_each_store_change_touches_only_its_own_bytes(hand_written: tuple[str, Path]) -> None:
    style, path = hand_written
    text = STYLES[style]
    store = ConfigStore(path)
    store.put_server("git", parse_server_config("git", NEW_SERVER))
    assert path.read_bytes() == text.replace(*ADDED[style]).encode()
    store.remove_server("git")
    assert path.read_bytes() == text.encode()
    fs = store.read().servers["fs"]
    store.put_server("fs", fs.model_copy(update={"timeout": 45.0}))
    assert path.read_bytes() == text.replace('"timeout": 30', '"timeout": 45').encode()
    store.put_server("fs", fs)
    store.set_enabled(False)
    store.set_enabled(True)
    store.set_server_disabled("api", True)
    store.set_server_disabled("api", False)
    assert path.read_bytes() == text.encode()


def test_put_server_keeps_the_users_spelling_of_what_still_means_the_same(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    entry = (
        '{"type": "streamable-http", "url": "https://example.com/mcp", "tools": ["search"], '
        '"disabled": false, "timeout": 30.0, "status": "connected"}'
    )
    path.write_text(f'{{"mcpServers": {{"web": {entry}}}}}\n')
    store = ConfigStore(path)
    web = store.read().servers["web"]
    store.put_server("web", web)
    # Only the key some hosts write at run time goes; "30.0" was the user's own spelling.
    kept = entry.replace(', "status": "connected"', "")
    assert path.read_text() == '{"mcpServers": {"web": ' + kept + "}}\n"
    store.put_server("web", web.model_copy(update={"disabled": True}))
    assert '"tools": ["search"], "disabled": true, "timeout": 30.0}' in path.read_text()
    store.put_server("web", web.model_copy(update={"type": "sse"}))
    assert '"type": "sse"' in path.read_text()
    legacy = tmp_path / "legacy.json"
    legacy.write_text(
        '{"mcpServers": {"old": {"transport": "sse", "url": "https://example.com/sse", "disabled": false, '
        '"auto_approve": ["read"]}}}'
    )
    old = ConfigStore(legacy).read().servers["old"]
    ConfigStore(legacy).put_server("old", old.model_copy(update={"timeout": 5.0, "auto_approve": ["list"]}))
    # A field's Python name is not how the file spells it: the new list goes under "autoApprove" alone.
    assert json.loads(legacy.read_text())["mcpServers"]["old"] == {
        "transport": "sse",
        "url": "https://example.com/sse",
        "disabled": False,
        "autoApprove": ["list"],
        "timeout": 5,
    }


# ----- writing atomically ---------------------------------------------------------------


def test_a_write_leaves_no_temporary_file_behind(path: Path) -> None:
    store = ConfigStore(path)
    for n in range(3):
        store.put_server(f"s{n}", StdioServerConfig(command="x"))
    assert files(path) == ["mcp.json"]
    assert path.read_text().endswith("}\n")


def test_a_failing_edit_leaves_the_file_byte_identical(path: Path) -> None:
    before = path.read_bytes()
    store = ConfigStore(path)

    def refuse(document: dict[str, Any]) -> None:
        document["mcpServers"].clear()
        raise ConfigError("changed my mind")

    def unserialisable(document: dict[str, Any]) -> None:
        document["mcpServers"]["fs"]["when"] = object()

    with pytest.raises(ConfigError, match="changed my mind"):
        store.edit(refuse)
    with pytest.raises(TypeError):
        store.edit(unserialisable)
    assert path.read_bytes() == before
    assert files(path) == ["mcp.json"]


def test_a_new_file_is_private_in_a_private_folder_and_a_loose_file_becomes_private(tmp_path: Path) -> None:
    new = tmp_path / "sub" / "mcp.json"
    ConfigStore(new).put_server("s", StdioServerConfig(command="x"))
    assert stat.S_IMODE(new.stat().st_mode) == 0o600
    assert stat.S_IMODE(new.parent.stat().st_mode) == 0o700
    shared = tmp_path / "shared.json"
    shared.write_text("{}")
    shared.chmod(0o644)
    ConfigStore(shared).put_server("s", StdioServerConfig(command="x"))
    assert stat.S_IMODE(shared.stat().st_mode) == 0o600


def test_an_edit_returns_the_config_as_written(path: Path) -> None:
    config = ConfigStore(path).put_server("git", StdioServerConfig(command="git-mcp"))
    assert list(config.servers) == ["fs", "web", "git"]
    assert config == ConfigStore(path).read()


# ----- where the file is ------------------------------------------------------------------


def test_the_config_path_is_explicit_then_the_environment_then_the_user_dir(tmp_path: Path) -> None:
    environ = {"MCPDECK_CONFIG": "/elsewhere.json"}
    assert resolve_config_path(tmp_path / "a.json", environ=environ) == tmp_path / "a.json"
    assert resolve_config_path(None, environ=environ) == Path("/elsewhere.json")
    default = resolve_config_path(None, environ={})
    assert default.name == "mcp.json" and default.parent.name == "mcpdeck"
