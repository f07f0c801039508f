"""Profiles in the config file: parsing, the checks they get, and saving them without losing anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpdeck.config import ConfigStore, ProfileConfig, parse_profiles, put_profile, remove_profile
from mcpdeck.errors import ConfigError


def test_profiles_are_read_with_their_filters() -> None:
    doc = {
        "profiles": {
            "coding": {"servers": ["fs", "github"], "tools": {"exclude": ["mcp__github__delete_*"]}},
            "fs-only": {"servers": ["fs"], "prefix": False, "tools": ["read_*"]},
        }
    }
    profiles = parse_profiles(doc)
    coding, fs_only = profiles["coding"], profiles["fs-only"]
    assert coding.serves("github") and not coding.serves("slack")
    assert coding.allows_tool("github", "mcp__github__create_issue", "create_issue")
    assert not coding.allows_tool("github", "mcp__github__delete_repo", "delete_repo")
    assert fs_only.allows_tool("fs", "mcp__fs__read_file", "read_file")  # patterns match the server's own name too
    assert not fs_only.allows_tool("fs", "mcp__fs__write_file", "write_file")
    assert ProfileConfig().prefix is True and ProfileConfig().serves("anything")


def test_no_prefix_needs_exactly_one_server() -> None:
    with pytest.raises(ConfigError, match=r"profile 'mixed'.*exactly one server"):
        parse_profiles({"profiles": {"mixed": {"servers": ["a", "b"], "prefix": False}}})


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"profiles": []}, '"profiles" must be an object'),
        ({"profiles": {"a/b": {}}}, "profile name 'a/b'"),
        ({"profiles": {"p": {"servers": "fs"}}}, "profile 'p': servers"),
    ],
)
def test_a_bad_profile_says_what_is_wrong(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_profiles(doc)


def test_saving_a_profile_keeps_everything_else_and_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    original = {"mcpServers": {"fs": {"command": "x"}}, "custom": 1, "profiles": {"old": {"servers": ["fs"], "x": 2}}}
    path.write_text(json.dumps(original))
    store = ConfigStore(path)
    put_profile(store, "new", {"servers": ["fs"], "prefix": False, "note": "kept"})
    saved = json.loads(path.read_text())
    assert saved["custom"] == 1 and saved["mcpServers"] == original["mcpServers"]
    assert saved["profiles"]["old"] == {"servers": ["fs"], "x": 2}
    assert saved["profiles"]["new"] == {"servers": ["fs"], "prefix": False, "note": "kept"}
    remove_profile(store, "old")
    assert set(json.loads(path.read_text())["profiles"]) == {"new"}
    with pytest.raises(ConfigError, match="no profile named 'old'"):
        remove_profile(store, "old")


def test_the_sse_path_names_cannot_be_profiles() -> None:
    with pytest.raises(ConfigError, match="taken by the gateway's SSE paths"):
        parse_profiles({"profiles": {"sse": {}}})
