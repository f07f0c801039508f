"""The long-running ``mcpdeck serve`` process: one host, one port, a state file, a followed config.

Above ``host`` and ``api``; nothing in the library imports it. ``read_state(config)`` is
how another process (the CLI) finds a running ``serve`` for a config file.
"""

from mcpdeck.server._follow import ConfigFollower, ConfigReloaded, ConfigReloadFailed
from mcpdeck.server._state import ServeState, read_state, remove_state, state_dir, state_path, write_state

__all__ = [
    "ConfigFollower",
    "ConfigReloadFailed",
    "ConfigReloaded",
    "ServeState",
    "read_state",
    "remove_state",
    "state_dir",
    "state_path",
    "write_state",
]
