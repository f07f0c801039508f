"""mcpdeck: an MCP host for Python. Many servers, one catalog, any LLM.

The names below are imported when first used, so ``import mcpdeck.cli`` (and
``mcpdeck --help``) does not pay for the MCP SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mcpdeck._version import __version__

if TYPE_CHECKING:
    from mcpdeck.callbacks import (
        ElicitationHandler,
        ElicitationRequest,
        ElicitationResponse,
        SamplingHandler,
        SamplingRequest,
    )
    from mcpdeck.catalog import Catalog, CatalogTool
    from mcpdeck.config import ConfigStore, McpConfig, RemoteServerConfig, ServerConfig, StdioServerConfig, ToolFilter
    from mcpdeck.errors import (
        ConfigError,
        InvalidArgumentsError,
        MCPDeckError,
        PermissionDeniedError,
        PromptNotFoundError,
        ProviderError,
        ResourceNotFoundError,
        ServerCrashedError,
        ServerError,
        ServerTimeoutError,
        ServerUnavailableError,
        ToolNotFoundError,
        UnsetVariableError,
    )
    from mcpdeck.events import (
        ConfigChanged,
        Event,
        EventBus,
        PromptsChanged,
        ResourcesChanged,
        ResourceUpdated,
        ServerLog,
        ServerRequestHandled,
        ServerStatusChanged,
        ToolCallFinished,
        ToolCallProgress,
        ToolCallStarted,
        ToolsChanged,
    )
    from mcpdeck.history import History
    from mcpdeck.host import Host, ServerTest
    from mcpdeck.permissions import Approval, ApprovalRequest, Decision, PermissionGate, PermissionRules
    from mcpdeck.resources import PromptEntry, ResourceEntry, TemplateEntry
    from mcpdeck.results import ToolResult
    from mcpdeck.status import RetryPolicy, ServerState, ServerStatus

_WHERE: dict[str, str] = {
    "ElicitationHandler": "mcpdeck.callbacks",
    "ElicitationRequest": "mcpdeck.callbacks",
    "ElicitationResponse": "mcpdeck.callbacks",
    "SamplingHandler": "mcpdeck.callbacks",
    "SamplingRequest": "mcpdeck.callbacks",
    "Catalog": "mcpdeck.catalog",
    "CatalogTool": "mcpdeck.catalog",
    "ConfigStore": "mcpdeck.config",
    "McpConfig": "mcpdeck.config",
    "RemoteServerConfig": "mcpdeck.config",
    "ServerConfig": "mcpdeck.config",
    "StdioServerConfig": "mcpdeck.config",
    "ToolFilter": "mcpdeck.config",
    "ConfigError": "mcpdeck.errors",
    "InvalidArgumentsError": "mcpdeck.errors",
    "MCPDeckError": "mcpdeck.errors",
    "PermissionDeniedError": "mcpdeck.errors",
    "PromptNotFoundError": "mcpdeck.errors",
    "ProviderError": "mcpdeck.errors",
    "ResourceNotFoundError": "mcpdeck.errors",
    "ServerCrashedError": "mcpdeck.errors",
    "ServerError": "mcpdeck.errors",
    "ServerTimeoutError": "mcpdeck.errors",
    "ServerUnavailableError": "mcpdeck.errors",
    "ToolNotFoundError": "mcpdeck.errors",
    "UnsetVariableError": "mcpdeck.errors",
    "ConfigChanged": "mcpdeck.events",
    "Event": "mcpdeck.events",
    "EventBus": "mcpdeck.events",
    "PromptsChanged": "mcpdeck.events",
    "ResourcesChanged": "mcpdeck.events",
    "ResourceUpdated": "mcpdeck.events",
    "ServerLog": "mcpdeck.events",
    "ServerRequestHandled": "mcpdeck.events",
    "ServerStatusChanged": "mcpdeck.events",
    "ToolCallFinished": "mcpdeck.events",
    "ToolCallProgress": "mcpdeck.events",
    "ToolCallStarted": "mcpdeck.events",
    "ToolsChanged": "mcpdeck.events",
    "History": "mcpdeck.history",
    "Host": "mcpdeck.host",
    "ServerTest": "mcpdeck.host",
    "Approval": "mcpdeck.permissions",
    "ApprovalRequest": "mcpdeck.permissions",
    "Decision": "mcpdeck.permissions",
    "PermissionGate": "mcpdeck.permissions",
    "PermissionRules": "mcpdeck.permissions",
    "PromptEntry": "mcpdeck.resources",
    "ResourceEntry": "mcpdeck.resources",
    "TemplateEntry": "mcpdeck.resources",
    "ToolResult": "mcpdeck.results",
    "RetryPolicy": "mcpdeck.status",
    "ServerState": "mcpdeck.status",
    "ServerStatus": "mcpdeck.status",
}

__all__ = [
    "Approval",
    "ApprovalRequest",
    "Catalog",
    "CatalogTool",
    "ConfigChanged",
    "ConfigError",
    "ConfigStore",
    "Decision",
    "ElicitationHandler",
    "ElicitationRequest",
    "ElicitationResponse",
    "Event",
    "EventBus",
    "History",
    "Host",
    "InvalidArgumentsError",
    "MCPDeckError",
    "McpConfig",
    "PermissionDeniedError",
    "PermissionGate",
    "PermissionRules",
    "PromptEntry",
    "PromptNotFoundError",
    "PromptsChanged",
    "ProviderError",
    "RemoteServerConfig",
    "ResourceEntry",
    "ResourceNotFoundError",
    "ResourceUpdated",
    "ResourcesChanged",
    "RetryPolicy",
    "SamplingHandler",
    "SamplingRequest",
    "ServerConfig",
    "ServerCrashedError",
    "ServerError",
    "ServerLog",
    "ServerRequestHandled",
    "ServerState",
    "ServerStatus",
    "ServerStatusChanged",
    "ServerTest",
    "ServerTimeoutError",
    "ServerUnavailableError",
    "StdioServerConfig",
    "TemplateEntry",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
    "ToolFilter",
    "ToolNotFoundError",
    "ToolResult",
    "ToolsChanged",
    "UnsetVariableError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpdeck' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
