"""mcpdeck: an MCP host for Python. Many servers, one catalog, any LLM.

The names here are the ones a program needs first. The rest live in their modules:
events in ``mcpdeck.events``, every exception in ``mcpdeck.errors``, the callback types
in ``mcpdeck.callbacks``, the catalog in ``mcpdeck.catalog``, resources and prompts in
``mcpdeck.resources``, the permission rules in ``mcpdeck.permissions``, the agent in
``mcpdeck.agent``, OAuth in ``mcpdeck.auth``, the providers in ``mcpdeck.providers``.

The names are imported when first used, so ``import mcpdeck.cli`` (and ``mcpdeck --help``)
does not pay for the MCP SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mcpdeck._util.version import __version__

if TYPE_CHECKING:
    from mcpdeck.catalog import CatalogTool
    from mcpdeck.config import ConfigStore, McpConfig, RemoteServerConfig, ServerConfig, StdioServerConfig
    from mcpdeck.errors import ConfigError, MCPDeckError, PermissionDeniedError, ServerError, ToolNotFoundError
    from mcpdeck.history import History
    from mcpdeck.host import Host
    from mcpdeck.permissions import Approval, ApprovalRequest, PermissionGate
    from mcpdeck.results import ToolResult
    from mcpdeck.status import RetryPolicy, ServerState, ServerStatus

_WHERE: dict[str, str] = {
    "CatalogTool": "mcpdeck.catalog",
    "ConfigStore": "mcpdeck.config",
    "McpConfig": "mcpdeck.config",
    "RemoteServerConfig": "mcpdeck.config",
    "ServerConfig": "mcpdeck.config",
    "StdioServerConfig": "mcpdeck.config",
    "ConfigError": "mcpdeck.errors",
    "MCPDeckError": "mcpdeck.errors",
    "PermissionDeniedError": "mcpdeck.errors",
    "ServerError": "mcpdeck.errors",
    "ToolNotFoundError": "mcpdeck.errors",
    "History": "mcpdeck.history",
    "Host": "mcpdeck.host",
    "Approval": "mcpdeck.permissions",
    "ApprovalRequest": "mcpdeck.permissions",
    "PermissionGate": "mcpdeck.permissions",
    "ToolResult": "mcpdeck.results",
    "RetryPolicy": "mcpdeck.status",
    "ServerState": "mcpdeck.status",
    "ServerStatus": "mcpdeck.status",
}

# Where a name that is not exported here lives, for the error that says so.
_ELSEWHERE = (
    "mcpdeck.events",
    "mcpdeck.errors",
    "mcpdeck.callbacks",
    "mcpdeck.catalog",
    "mcpdeck.config",
    "mcpdeck.resources",
    "mcpdeck.permissions",
    "mcpdeck.host",
)

__all__ = [
    "Approval",
    "ApprovalRequest",
    "CatalogTool",
    "ConfigError",
    "ConfigStore",
    "History",
    "Host",
    "MCPDeckError",
    "McpConfig",
    "PermissionDeniedError",
    "PermissionGate",
    "RemoteServerConfig",
    "RetryPolicy",
    "ServerConfig",
    "ServerError",
    "ServerState",
    "ServerStatus",
    "StdioServerConfig",
    "ToolNotFoundError",
    "ToolResult",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        if not name.startswith("_"):
            for other in _ELSEWHERE:
                if name in getattr(importlib.import_module(other), "__all__", ()):
                    raise AttributeError(f"module 'mcpdeck' has no attribute {name!r}; import it from {other}")
        raise AttributeError(f"module 'mcpdeck' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
