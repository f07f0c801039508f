"""Strict config JSON: a key given twice anywhere, or nesting past the limit, is an error that says where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpdeck import ConfigError, ConfigStore, Host
from mcpdeck.config._json import MAX_DEPTH, load_json
from mcpdeck.permissions import PermissionGate


def store_with(tmp_path: Path, text: str) -> ConfigStore:
    path = tmp_path / "mcp.json"
    path.write_text(text)
    return ConfigStore(path)


@pytest.mark.parametrize(
    ("text", "where", "line"),
    [
        (
            '{\n "permissions": {"deny": ["mcp__fs"]},\n "mcpServers": {},\n "permissions": {"allow": ["mcp__*"]}\n}',
            'the key "permissions" is given twice (at the top level)',
            4,
        ),
        (
            '{"permissions": {\n  "deny": ["mcp__fs"],\n  "deny": []\n}}',
            'the key "deny" is given twice (in permissions)',
            3,
        ),
        (
            '{"mcpServers": {"fs": {"command": "x",\n "env": {"A": "1", "A": "2"}}}}',
            'the key "A" is given twice (in mcpServers.fs.env)',
            2,
        ),
        ('{"x": [{}, {"a": 1,\n\n "a": 2}]}', 'the key "a" is given twice (in x[1])', 3),
        ('{"a\\u0062": 1, "ab": 2}', 'the key "ab" is given twice (at the top level)', 1),
        ('{"s": "{[\\"a\\": ,", "t": {"s": 1}, "s": 2}', 'the key "s" is given twice (at the top level)', 1),
    ],
)
def test_a_key_given_twice_anywhere_is_refused_with_its_path_and_line(
    tmp_path: Path, text: str, where: str, line: int
) -> None:
    store = store_with(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        store.document()
    assert str(caught.value) == (
        f"{store.path}:{line}: {where}; JSON keeps only the last one, so remove or merge one of them"
    )
    assert caught.value.line == line
    with pytest.raises(ConfigError, match="given twice"):
        PermissionGate.from_store(store)


def test_equal_keys_in_different_objects_are_fine() -> None:
    text = '{"mcpServers": {"a": {"env": {"K": "1"}}, "b": {"env": {"K": "2"}}}, "x": [{"K": 1}, {"K": 2}]}'
    assert load_json(text, "f.json") == json.loads(text)


@pytest.mark.anyio
async def test_a_host_refuses_a_config_whose_deny_would_be_dropped(tmp_path: Path) -> None:
    store = store_with(tmp_path, '{"mcpServers": {}, "permissions": {"deny": ["mcp__fs"], "deny": []}}')
    with pytest.raises(ConfigError, match='"deny" is given twice'):
        async with Host(store=store, log_dir=tmp_path / "logs"):
            pass


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 100_000])
def test_nesting_past_the_limit_is_a_clear_error_not_a_recursion_error(tmp_path: Path, depth: int) -> None:
    store = store_with(tmp_path, '{"mcpServers": {}, "x":\n' + "[" * depth + "]" * depth + "}")
    with pytest.raises(ConfigError) as caught:  # a RecursionError (or a MemoryError) if the walk recursed
        store.read()
    assert str(caught.value).startswith(f"{store.path}:2: nested more than {MAX_DEPTH} levels deep")


def test_nesting_up_to_the_limit_loads_and_saves(tmp_path: Path) -> None:
    inner = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    store = store_with(tmp_path, '{"x": ' + inner + "}")
    store.set_enabled(False)
    assert store.document().raw["mcpEnabled"] is False


def test_a_deep_unterminated_file_is_refused_the_same_way(tmp_path: Path) -> None:
    store = store_with(tmp_path, '{"x": ' + '[{"a":' * 50_000)
    with pytest.raises(ConfigError, match="nested more than"):
        store.read()
