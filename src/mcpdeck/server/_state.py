"""The state file of a running ``mcpdeck serve``: where it listens and with which token.

One file per config file, in the user runtime dir (``$XDG_RUNTIME_DIR/mcpdeck/serve`` on
Linux), named after a hash of the config file's resolved path, so a CLI that reads the same
config finds the process that serves it. The file is 0600 in a 0700 folder: the token in it
is the key to the API. It is written when the process listens and removed when it exits; a
file whose process is gone (a crash, SIGKILL) is stale and is ignored and removed by readers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

import platformdirs

__all__ = [
    "ServeState",
    "login_page_path",
    "read_state",
    "remove_state",
    "state_dir",
    "state_path",
    "write_login_page",
    "write_state",
]

STATE_DIR_ENV = "MCPDECK_STATE_DIR"


def state_dir() -> Path:
    """Where state files live: ``$MCPDECK_STATE_DIR``, else ``<user runtime dir>/mcpdeck/serve``."""
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    with warnings.catch_warnings():  # no $XDG_RUNTIME_DIR (a bare session): the per-user /tmp fallback is fine
        warnings.simplefilter("ignore")
        return platformdirs.user_runtime_path("mcpdeck", appauthor=False) / "serve"


def state_path(config: str | os.PathLike[str]) -> Path:
    """The state file of the ``serve`` process for a config file (keyed by its resolved path)."""
    key = hashlib.sha256(os.fsencode(Path(config).expanduser().resolve())).hexdigest()[:24]
    return state_dir() / f"{key}.json"


def login_page_path(config: str | os.PathLike[str]) -> Path:
    """The page ``mcpdeck ui`` hands the browser for the ``serve`` of a config file (beside its state file)."""
    return state_path(config).with_suffix(".login.html")


def write_login_page(config: str | os.PathLike[str], url: str) -> Path:
    """Write the page that sends a browser to ``url`` (a console link with a login code); returns its path.

    The browser is given this file's path, not the URL: a command line is readable by every
    local user (``/proc/PID/cmdline``), the file only by its owner (0600 in a 0700 folder).
    """
    import html

    from mcpdeck._files import atomic_write

    path = login_page_path(config)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(path.parent, 0o700)
    target = html.escape(url, quote=True)
    page = (
        '<!doctype html>\n<meta charset="utf-8">\n<meta name="referrer" content="no-referrer">\n'
        f'<meta http-equiv="refresh" content="0;url={target}">\n<title>mcpdeck</title>\n'
        f'<p>Opening the mcpdeck console… If nothing happens, <a href="{target}">open it</a>.</p>\n'
    )
    atomic_write(path, page, mode=0o600)
    return path


@dataclass(frozen=True)
class ServeState:
    """What a running ``serve`` tells other processes.

    Attributes:
        pid: The process id of ``mcpdeck serve``.
        url: Its base URL (``http://127.0.0.1:PORT``).
        host: The address it listens on.
        port: The port it listens on.
        token: The API token (``Authorization: Bearer TOKEN``).
        config: The config file it serves (resolved path).
        started_at: When it started (ISO 8601, UTC).
        version: The mcpdeck version it runs.
    """

    pid: int
    url: str
    host: str
    port: int
    token: str
    config: str
    started_at: str
    version: str

    def to_json(self) -> dict[str, Any]:
        """The file's JSON form (camelCase keys)."""
        data = asdict(self)
        data["startedAt"] = data.pop("started_at")
        return data


def write_state(state: ServeState) -> Path:
    """Write the state file for ``state.config`` (0600, in a 0700 folder); returns its path."""
    from mcpdeck._files import atomic_write  # here: the CLI reads the file on every command, and writes none

    path = state_path(state.config)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):  # an existing folder keeps the mode it has unless we own it
        os.chmod(path.parent, 0o700)
    atomic_write(path, json.dumps(state.to_json(), indent=2) + "\n", mode=0o600)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process holds that pid now: not ours
        return False
    return True


def read_state(config: str | os.PathLike[str]) -> ServeState | None:
    """The state of the ``serve`` running for ``config``, or None (none, stale or unreadable).

    A file whose process no longer runs is removed.
    """
    path = state_path(config)
    try:
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    raw = cast(dict[str, Any], data)
    try:
        state = ServeState(
            pid=int(raw["pid"]),
            url=str(raw["url"]),
            host=str(raw["host"]),
            port=int(raw["port"]),
            token=str(raw["token"]),
            config=str(raw["config"]),
            started_at=str(raw["startedAt"]),
            version=str(raw["version"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
    if not _alive(state.pid):
        remove_state(config, pid=state.pid)
        return None
    return state


def remove_state(config: str | os.PathLike[str], *, pid: int | None = None) -> None:
    """Remove the state file of ``config`` (only if it names ``pid``, when given)."""
    path = state_path(config)
    if pid is not None:
        try:
            data: object = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or cast(dict[str, Any], data).get("pid") != pid:
            return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    with contextlib.suppress(FileNotFoundError):
        login_page_path(config).unlink()
