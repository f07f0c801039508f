"""The config document: the whole file as one typed model, parsed once per change of the file, a broken edit
keeping the last good one (and saying where and what to do)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpdeck.config import ConfigStore, GatewayTokenSetting, PermissionRules, ProfileConfig, parse_server_config
from mcpdeck.errors import ConfigError


def _write(path: Path, **doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=2))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    _write(
        path,
        mcpServers={"fs": {"command": "fs-server", "env": {"KEY": "${FS_KEY}"}}},
        permissions={"deny": ["mcp__fs__delete_*"]},
        profiles={"coding": {"servers": ["fs"]}},
        gateway={"approval": "ask", "tokens": {"laptop": {"token": "${LAPTOP_TOKEN}", "profile": "coding"}}},
        providers={"openai": {"apiKey": "${OPENAI_KEY}"}},
        theme="dark",
    )
    return path


def test_every_part_of_the_file_is_in_one_model_with_variables_as_written(path: Path) -> None:
    document = ConfigStore(path).document()
    assert list(document.config.servers) == ["fs"]
    assert document.config.servers["fs"].to_json()["env"] == {"KEY": "${FS_KEY}"}  # expanded when it connects
    assert document.permissions == PermissionRules(deny=("mcp__fs__delete_*",))
    assert document.profiles == {"coding": ProfileConfig(servers=["fs"])}
    assert document.gateway.approval == "ask"
    assert document.gateway.tokens == {"laptop": GatewayTokenSetting("${LAPTOP_TOKEN}", "coding")}
    assert document.raw["providers"] == {"openai": {"apiKey": "${OPENAI_KEY}"}}  # read by providers, with its env
    assert document.raw["theme"] == "dark"
    assert document.problems == {}


def test_the_file_is_parsed_once_per_change_however_often_it_is_read(path: Path) -> None:
    store = ConfigStore(path)
    first = store.document()
    assert all(store.document() is first for _ in range(50))
    assert (store.reads, store.parses) == (1, 1)
    path.touch()  # a new mtime, the same text: read again, not parsed
    assert store.document() is first
    assert (store.reads, store.parses) == (2, 1)
    doc = json.loads(path.read_text())
    doc["profiles"]["review"] = {"servers": ["fs"], "prefix": False}
    path.write_text(json.dumps(doc))  # an edit, as a text editor makes it
    second = store.document()
    assert second is not first and set(second.profiles) == {"coding", "review"}
    assert all(store.document() is second for _ in range(50))
    assert store.parses == 2


def test_a_change_the_store_writes_is_its_document_at_once(path: Path) -> None:
    store = ConfigStore(path)
    store.document()
    store.put_server("git", parse_server_config("git", {"command": "git-server"}))
    assert store.parses == 2  # the write's own document, parsed once
    reads = store.reads
    assert list(store.document().config.servers) == ["fs", "git"]
    assert (store.reads, store.parses) == (reads, 2)  # not read back: the stamp is the one it wrote
    assert json.loads(path.read_text())["theme"] == "dark"  # the write changed only the new server


def test_a_broken_file_keeps_the_last_good_document_and_says_where(path: Path) -> None:
    store = ConfigStore(path)
    good = store.document()
    text = path.read_text()
    path.write_text(text.replace('"theme": "dark"', '"theme": "dark",\n  "theme": "light"'))
    assert store.document() is good
    assert store.problem is not None
    assert str(store.problem).startswith(f"{path}:")  # the file and its line
    assert "remove or merge one of them" in str(store.problem)  # what to do
    with pytest.raises(ConfigError, match="remove or merge"):
        store.read()  # a reader about to start refuses it
    path.write_text(text)  # fixed: the same text as the good document
    assert store.document() is good and store.problem is None


def test_a_broken_part_keeps_its_last_good_value_and_the_others_follow(path: Path) -> None:
    store = ConfigStore(path)
    store.document()
    doc = json.loads(path.read_text())
    doc["profiles"]["bad name!"] = {}
    doc["gateway"]["approval"] = "sometimes"
    doc["permissions"] = {"deny": ["mcp__fs"]}
    path.write_text(json.dumps(doc))
    document = store.document()
    assert store.problem is None  # the file reads; two of its parts do not
    assert set(document.problems) == {"profiles", "gateway"}
    assert "profile name 'bad name!'" in str(document.problems["profiles"])
    assert 'write "client"' in str(document.problems["gateway"])
    assert set(document.profiles) == {"coding"} and document.gateway.approval == "ask"  # as they were
    assert document.permissions.deny == ("mcp__fs",)  # the edit of a good part applies
    with pytest.raises(ConfigError, match=r"gateway\.approval"):
        document.check("permissions", "gateway")


def test_a_first_reading_of_a_broken_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"fs": ')
    with pytest.raises(ConfigError, match="not valid JSON"):
        ConfigStore(path).document()
    path.write_bytes(b'{"mcpServers": {}, "note": "\xff"}')
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        ConfigStore(path).document()


def test_an_absent_file_is_an_empty_document(tmp_path: Path) -> None:
    store = ConfigStore(tmp_path / "none.json")
    document = store.document()
    assert document.config.servers == {} and document.profiles == {} and document.gateway.tokens == {}
    assert store.document() is document
