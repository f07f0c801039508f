"""mcpdeck: an MCP host for Python. Many servers, one catalog, any LLM."""

from mcpdeck._version import __version__
from mcpdeck.catalog import Catalog, CatalogTool
from mcpdeck.config import ConfigStore, McpConfig, RemoteServerConfig, ServerConfig, StdioServerConfig, ToolFilter
from mcpdeck.connection import RetryPolicy, ServerState, ServerStatus
from mcpdeck.errors import (
    ConfigError,
    InvalidArgumentsError,
    MCPDeckError,
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
    ServerStatusChanged,
    ToolCallFinished,
    ToolCallStarted,
    ToolsChanged,
)
from mcpdeck.host import Host, ServerTest
from mcpdeck.results import ToolResult

__all__ = [
    "Catalog",
    "CatalogTool",
    "ConfigChanged",
    "ConfigError",
    "ConfigStore",
    "Event",
    "EventBus",
    "Host",
    "InvalidArgumentsError",
    "MCPDeckError",
    "McpConfig",
    "RemoteServerConfig",
    "RetryPolicy",
    "ServerConfig",
    "ServerCrashedError",
    "ServerError",
    "ServerState",
    "ServerStatus",
    "ServerStatusChanged",
    "ServerTest",
    "ServerTimeoutError",
    "ServerUnavailableError",
    "StdioServerConfig",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolFilter",
    "ToolNotFoundError",
    "ToolResult",
    "ToolsChanged",
    "UnsetVariableError",
    "__version__",
]
