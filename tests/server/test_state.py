"""The state file: where a running ``serve`` listens and with which token, private, and gone when it is."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mcpdeck.server import ServeState, read_state, remove_state, state_path, write_state


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("MCPDECK_STATE_DIR", str(folder))
    return folder


def state_for(
    config: Path, pid: int, replica: str | None = None, started_at: str = "2026-01-01T00:00:00+00:00"
) -> ServeState:
    return ServeState(
        pid=pid,
        url="http://127.0.0.1:8765",
        host="127.0.0.1",
        port=8765,
        token="t0ken",
        config=str(config),
        started_at=started_at,
        version="0",
        replica=replica,
    )


def test_the_file_is_private_and_keyed_by_the_config_s_resolved_path(tmp_path: Path, state_dir: Path) -> None:
    config = tmp_path / "mcp.json"
    path = write_state(state_for(config, os.getpid()))
    assert path == state_path(config) == state_path(tmp_path / "." / "mcp.json")
    assert path != state_path(tmp_path / "other.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    assert read_state(config) == state_for(config, os.getpid())


def test_a_state_whose_process_is_gone_is_ignored_and_removed(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    path = write_state(state_for(config, gone.pid))
    assert read_state(config) is None
    assert not path.exists()


def test_remove_only_removes_the_state_of_the_given_process(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    path = write_state(state_for(config, os.getpid()))
    remove_state(config, pid=os.getpid() + 1)
    assert path.exists()
    remove_state(config, pid=os.getpid())
    assert not path.exists()
    assert read_state(config) is None


def test_each_replica_has_a_file_of_its_own_and_a_reader_finds_one_that_lives(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    first = state_for(config, gone.pid, "r1", started_at="2026-01-01T00:00:00+00:00")  # started first, now dead
    second = state_for(config, os.getpid(), "r2", started_at="2026-01-02T00:00:00+00:00")
    third = state_for(config, os.getpid(), "r3", started_at="2026-01-03T00:00:00+00:00")
    paths = [write_state(state) for state in (first, second, third)]
    assert [path.name.split(".")[1:] for path in paths] == [["r1", "json"], ["r2", "json"], ["r3", "json"]]
    assert read_state(config, "r3") == third
    assert read_state(config) == second  # the live one that started first; the dead one's file is removed
    assert not paths[0].exists()
    assert read_state(config, "r1") is None
    remove_state(config, replica="r2", pid=os.getpid())
    assert read_state(config) == third
