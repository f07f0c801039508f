"""Where mcpdeck keeps its files: one module decides, for the library and the CLI alike."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from mcpdeck import History, Host, ServerState
from mcpdeck._util.paths import config_path, data_dir, history_path, log_dir
from mcpdeck.auth import TokenStore
from mcpdeck.config import resolve_config_path
from tests.helpers import WAIT, stdio_server

pytestmark = pytest.mark.anyio


def test_mcpdeck_home_puts_everything_in_one_folder(tmp_path: Path) -> None:
    env = {"MCPDECK_HOME": str(tmp_path)}
    assert config_path(env) == tmp_path / "mcp.json"
    assert log_dir(env) == tmp_path / "logs"
    assert data_dir(env) == tmp_path
    assert history_path(env) == tmp_path / "history.sqlite3"
    assert resolve_config_path(environ=env) == tmp_path / "mcp.json"


def test_the_specific_variables_win_over_home(tmp_path: Path) -> None:
    env = {
        "MCPDECK_HOME": str(tmp_path / "home"),
        "MCPDECK_CONFIG": str(tmp_path / "c.json"),
        "MCPDECK_LOG_DIR": str(tmp_path / "l"),
        "MCPDECK_DATA_DIR": str(tmp_path / "d"),
    }
    assert (config_path(env), log_dir(env), data_dir(env)) == (tmp_path / "c.json", tmp_path / "l", tmp_path / "d")
    assert history_path(env) == tmp_path / "d" / "history.sqlite3"
    assert history_path({**env, "MCPDECK_HISTORY": "off"}) is None
    assert history_path({**env, "MCPDECK_HISTORY": str(tmp_path / "h.db")}) == tmp_path / "h.db"


def test_without_variables_the_user_folders_are_used() -> None:
    assert config_path({}).name == "mcp.json" and config_path({}).parent.name == "mcpdeck"
    assert log_dir({}).name == "servers"
    assert data_dir({}).name == "mcpdeck"


async def test_the_library_host_writes_logs_where_mcpdeck_log_dir_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPDECK_LOG_DIR", str(tmp_path / "from-env"))
    with anyio.fail_after(WAIT):
        async with Host({"basic": stdio_server("basic")}) as host:
            status = host.servers["basic"]
    assert status.state is ServerState.CONNECTED, status.error
    assert status.log_path == tmp_path / "from-env" / "basic.log"
    assert (tmp_path / "from-env" / "basic.log").exists()


async def test_a_host_given_an_environment_reads_the_locations_from_it(tmp_path: Path) -> None:
    environ = {**os.environ, "MCPDECK_HOME": str(tmp_path / "home")}
    environ.pop("MCPDECK_LOG_DIR", None)
    with anyio.fail_after(WAIT):
        async with Host({"basic": stdio_server("basic")}, environ=environ) as host:
            status = host.servers["basic"]
    assert status.log_path == tmp_path / "home" / "logs" / "basic.log"
    assert TokenStore(environ=environ).directory == tmp_path / "home" / "auth"


def test_history_and_tokens_follow_the_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPDECK_HISTORY", raising=False)
    monkeypatch.setenv("MCPDECK_DATA_DIR", str(tmp_path / "data"))
    with History() as history:
        assert history.path == tmp_path / "data" / "history.sqlite3"
    assert TokenStore().directory == tmp_path / "data" / "auth"
