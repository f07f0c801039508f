"""The state file of a running ``mcpdeck serve``: where it listens and with which token.

One file per config file and replica id, in the user runtime dir (``$XDG_RUNTIME_DIR/mcpdeck/serve``
on Linux, or ``$MCPDECK_STATE_DIR``), named after a hash of the config file's resolved path and the
replica id (``<hash>.<replica>.json``), so a CLI that reads the same config finds a process that
serves it, and several replicas of one config share the folder, each with its own file. The file is
0600 in a 0700 folder: the token in it is the key to the API. It is written when the process listens
and removed when it exits; a file whose process is gone (a crash, SIGKILL) is stale and is ignored
and removed by readers. The process check is this machine's: the folder is one machine's, never shared
over a network file system.
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


def _key(config: str | os.PathLike[str]) -> str:
    return hashlib.sha256(os.fsencode(Path(config).expanduser().resolve())).hexdigest()[:24]


def state_path(config: str | os.PathLike[str], replica: str | None = None) -> Path:
    """The state file of the ``serve`` process for a config file (keyed by its resolved path) and replica id
    (``<hash>.<replica>.json``; without one, ``<hash>.json``: a state written by a version without replicas)."""
    key = _key(config)
    return state_dir() / (f"{key}.{replica}.json" if replica else f"{key}.json")


def login_page_path(config: str | os.PathLike[str], replica: str | None = None) -> Path:
    """The page ``mcpdeck ui`` hands the browser for the ``serve`` of a config file (beside its state file)."""
    return state_path(config, replica).with_suffix(".login.html")


def write_login_page(config: str | os.PathLike[str], url: str, replica: str | None = None) -> Path:
    """Write the page that sends a browser to ``url`` (a console link with a login code); returns its path.

    The browser is given this file's path, not the URL: a command line is readable by every
    local user (``/proc/PID/cmdline``), the file only by its owner (0600 in a 0700 folder).
    """
    import html

    from mcpdeck._util.files import atomic_write

    path = login_page_path(config, replica)
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
        replica: Its replica id (``--replica-id``; None: a state written by a version without replicas).
    """

    pid: int
    url: str
    host: str
    port: int
    token: str
    config: str
    started_at: str
    version: str
    replica: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The file's JSON form (camelCase keys)."""
        data = asdict(self)
        data["startedAt"] = data.pop("started_at")
        return data


def write_state(state: ServeState) -> Path:
    """Write the state file for ``state.config`` and ``state.replica`` (0600, in a 0700 folder); returns its path."""
    from mcpdeck._util.files import atomic_write  # here: the CLI reads the file on every command, and writes none

    path = state_path(state.config, state.replica)
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


def _load(path: Path) -> ServeState | None:
    """The state a file holds, or None (gone, unreadable, not a state)."""
    try:
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    raw = cast(dict[str, Any], data)
    replica = raw.get("replica")
    try:
        return ServeState(
            pid=int(raw["pid"]),
            url=str(raw["url"]),
            host=str(raw["host"]),
            port=int(raw["port"]),
            token=str(raw["token"]),
            config=str(raw["config"]),
            started_at=str(raw["startedAt"]),
            version=str(raw["version"]),
            replica=replica if isinstance(replica, str) and replica else None,
        )
    except (KeyError, TypeError, ValueError):
        return None


def read_state(config: str | os.PathLike[str], replica: str | None = None) -> ServeState | None:
    """The state of a ``serve`` running for ``config``, or None (none, stale or unreadable).

    With ``replica``, that replica's only; without, any replica's (the one that started first). A file
    whose process no longer runs is removed.
    """
    key = _key(config)
    if replica is not None:
        paths = [state_path(config, replica)]
    else:
        paths = sorted({state_dir() / f"{key}.json", *state_dir().glob(f"{key}.*.json")})
    live: list[ServeState] = []
    for path in paths:
        state = _load(path)
        if state is None:
            continue
        if _alive(state.pid):
            live.append(state)
        else:
            remove_state(config, replica=state.replica, pid=state.pid)
    return min(live, key=lambda state: state.started_at, default=None)


def remove_state(config: str | os.PathLike[str], *, replica: str | None = None, pid: int | None = None) -> None:
    """Remove the state file of ``config`` and ``replica`` (only if it names ``pid``, when given)."""
    path = state_path(config, replica)
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
        login_page_path(config, replica).unlink()
