"""The long-running ``mcpdeck serve`` process: one host, one port, a state file, a followed config.

Above ``host`` and ``api``; nothing in the library imports it. ``read_state(config)`` is
how another process (the CLI) finds a running ``serve`` for a config file; it is imported
without the host or the SDK, so a CLI that only attaches starts fast. The follower and the
process (``run_serve``), and with them the host, are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpdeck.server._state import (
    ServeState,
    login_page_path,
    read_state,
    remove_state,
    state_dir,
    state_path,
    write_login_page,
    write_state,
)

if TYPE_CHECKING:
    from mcpdeck.server._follow import ConfigFollower
    from mcpdeck.server._process import ServeOptions, run_serve

__all__ = [
    "ConfigFollower",
    "ServeOptions",
    "ServeState",
    "login_page_path",
    "read_state",
    "remove_state",
    "run_serve",
    "state_dir",
    "state_path",
    "write_login_page",
    "write_state",
]

_LAZY = frozenset({"ConfigFollower"})
_LAZY_PROCESS = frozenset({"ServeOptions", "run_serve"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from mcpdeck.server import _follow

        return getattr(_follow, name)
    if name in _LAZY_PROCESS:
        from mcpdeck.server import _process

        return getattr(_process, name)
    raise AttributeError(f"module 'mcpdeck.server' has no attribute {name!r}")
