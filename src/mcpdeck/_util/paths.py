"""Where mcpdeck keeps its files. This module alone decides, for the library and the CLI alike.

| What | Variable | Default |
|---|---|---|
| the config file | ``MCPDECK_CONFIG`` | ``$MCPDECK_HOME/mcp.json``, else ``<user config dir>/mcpdeck/mcp.json`` |
| server logs | ``MCPDECK_LOG_DIR`` | ``$MCPDECK_HOME/logs``, else ``<user log dir>/mcpdeck/servers`` |
| data (history, OAuth tokens) | ``MCPDECK_DATA_DIR`` | ``$MCPDECK_HOME``, else ``<user data dir>/mcpdeck`` |
| the history database | ``MCPDECK_HISTORY`` (``off`` for none) | ``<data>/history.sqlite3`` |
| the store (the history of a fleet) | ``MCPDECK_STORE`` (a path or a URL) | the history database |

``MCPDECK_HOME`` puts everything in one folder (a demo, a test, a sandbox); the more
specific variables still win. ``platformdirs`` is imported only when a default is needed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "CONFIG_ENV",
    "DATA_ENV",
    "HISTORY_ENV",
    "HOME_ENV",
    "LOG_ENV",
    "STORE_ENV",
    "config_path",
    "data_dir",
    "history_path",
    "log_dir",
    "store_location",
]

HOME_ENV = "MCPDECK_HOME"
CONFIG_ENV = "MCPDECK_CONFIG"
LOG_ENV = "MCPDECK_LOG_DIR"
DATA_ENV = "MCPDECK_DATA_DIR"
HISTORY_ENV = "MCPDECK_HISTORY"
STORE_ENV = "MCPDECK_STORE"
_OFF = ("off", "0", "false", "no")


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _home(env: Mapping[str, str]) -> Path | None:
    value = env.get(HOME_ENV, "")
    return Path(value).expanduser() if value else None


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The config file: ``$MCPDECK_CONFIG``, else ``$MCPDECK_HOME/mcp.json``, else the user config dir's."""
    env = _env(environ)
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser()
    home = _home(env)
    if home is not None:
        return home / "mcp.json"
    import platformdirs

    return platformdirs.user_config_path("mcpdeck", appauthor=False) / "mcp.json"


def log_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where server logs go: ``$MCPDECK_LOG_DIR``, else ``$MCPDECK_HOME/logs``, else the user log dir."""
    env = _env(environ)
    if env.get(LOG_ENV):
        return Path(env[LOG_ENV]).expanduser()
    home = _home(env)
    if home is not None:
        return home / "logs"
    import platformdirs

    return platformdirs.user_log_path("mcpdeck", appauthor=False) / "servers"


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where history and OAuth tokens go: ``$MCPDECK_DATA_DIR``, else ``$MCPDECK_HOME``, else the user data dir."""
    env = _env(environ)
    if env.get(DATA_ENV):
        return Path(env[DATA_ENV]).expanduser()
    home = _home(env)
    if home is not None:
        return home
    import platformdirs

    return platformdirs.user_data_path("mcpdeck", appauthor=False)


def history_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """The history database: ``$MCPDECK_HISTORY`` (None when it is ``off``), else ``<data>/history.sqlite3``."""
    env = _env(environ)
    value = env.get(HISTORY_ENV, "")
    if value.lower() in _OFF:
        return None
    return Path(value).expanduser() if value else data_dir(env) / "history.sqlite3"


def store_location(environ: Mapping[str, str] | None = None) -> str | Path | None:
    """The store the history goes to: ``$MCPDECK_STORE`` (a path or URL), else ``history_path()`` (None: off)."""
    env = _env(environ)
    return env.get(STORE_ENV, "").strip() or history_path(env)
