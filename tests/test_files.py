"""Atomic writes through symlinks, owners kept, and the inter-process lock of read-modify-write."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from mcpdeck import ConfigError, ConfigStore, StdioServerConfig
from mcpdeck._util.files import atomic_write, locked
from mcpdeck.auth._files import write_private


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_symlinked_config_is_written_through_to_its_target_and_made_private(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "mcp.json"
    target.write_text('{"mcpServers": {}, "theme": "dark"}')
    target.chmod(0o644)
    config = tmp_path / "config" / "mcp.json"
    config.parent.mkdir()
    config.symlink_to(os.path.relpath(target, config.parent))  # a relative link, as dotfile managers make
    hop = tmp_path / "hop.json"
    hop.symlink_to(config)  # and a link to the link
    ConfigStore(hop).put_server("fs", StdioServerConfig(command="fs-server"))
    assert hop.is_symlink() and config.is_symlink()
    assert list(ConfigStore(target).read().servers) == ["fs"]
    assert ConfigStore(target).document().raw["theme"] == "dark"
    assert mode(target) == 0o600
    assert sorted(p.name for p in config.parent.iterdir()) == ["mcp.json"]  # no temp or lock beside the link
    assert sorted(p.name for p in dotfiles.iterdir()) == ["mcp.json"]  # nor beside the target


def test_a_symlinked_token_file_is_written_through_too(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "token.json"
    target.parent.mkdir()
    target.write_text("{}")
    link = tmp_path / "auth" / "token.json"
    link.parent.mkdir()
    link.symlink_to(target)
    write_private(link, '{"access_token": "t"}')
    assert link.is_symlink() and target.read_text() == '{"access_token": "t"}' and mode(target) == 0o600


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file to another user")
def test_the_owner_of_the_replaced_file_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "mcp.json"
    target.write_text("{}")
    os.chown(target, 4321, 4322)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    ConfigStore(link).put_server("fs", StdioServerConfig(command="x"))
    owner = target.stat()
    assert (owner.st_uid, owner.st_gid, mode(target)) == (4321, 4322, 0o600)


def test_a_write_that_fails_leaves_the_target_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "t.json"
    target.write_text("old")
    link = tmp_path / "l.json"
    link.symlink_to(target)
    with pytest.raises(UnicodeEncodeError):
        atomic_write(link, "a lone surrogate: \udc80")
    assert target.read_text() == "old" and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.json", "t.json"]


def test_the_lock_excludes_other_holders_until_released(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    with locked(path), pytest.raises(TimeoutError, match="another process has been changing"):
        with locked(path, timeout=0.05):
            pass
    with locked(path), locked(tmp_path / "other.json", timeout=0.05):
        pass  # another file's lock is another lock
    assert list(tmp_path.iterdir()) == []  # a file made only to be locked goes again


def test_the_lock_is_on_the_file_itself_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("{}")
    old_lock = tmp_path / ".mcp.json.lock"
    old_lock.touch()  # what earlier versions left beside the config
    with locked(path):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcp.json"]
    path.chmod(0o400)  # a read-only file can be locked (and replaced: the folder is writable)
    with locked(path), pytest.raises(TimeoutError):
        with locked(path, timeout=0.05):
            pass


def test_a_failed_edit_of_a_missing_config_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    with pytest.raises(ConfigError, match="no server named 'x'"):
        ConfigStore(path).remove_server("x")
    assert list(tmp_path.iterdir()) == []


def test_threads_adding_at_once_keep_every_server_and_one_of_two_same_names_fails(tmp_path: Path) -> None:
    store = ConfigStore(tmp_path / "mcp.json")
    failures: list[str] = []

    def add(name: str) -> None:
        try:
            ConfigStore(store.path).put_server(name, StdioServerConfig(command=name), replace=False)
        except ConfigError as error:
            failures.append(str(error))

    # Each write replaces the file, so a thread that waited on the old one must lock the new one:
    # without that check (``_util.files._names``) servers go missing here, and in the CLI's twenty adds.
    names = [f"s{i}" for i in range(16)] + ["same", "same"]
    threads = [threading.Thread(target=add, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(store.read().servers) == sorted(set(names))
    assert len(failures) == 1 and "server 'same' already exists" in failures[0]
    assert [p.name for p in tmp_path.iterdir()] == ["mcp.json"]
