"""mcpdeck: an MCP host for Python. Many servers, one catalog, any LLM."""

from mcpdeck._version import __version__
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
    PromptNotFoundError,
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
from mcpdeck.host import Host, ServerTest
from mcpdeck.resources import PromptEntry, ResourceEntry, TemplateEntry
from mcpdeck.results import ToolResult
from mcpdeck.status import RetryPolicy, ServerState, ServerStatus

__all__ = [
    "Catalog",
    "CatalogTool",
    "ConfigChanged",
    "ConfigError",
    "ConfigStore",
    "ElicitationHandler",
    "ElicitationRequest",
    "ElicitationResponse",
    "Event",
    "EventBus",
    "Host",
    "InvalidArgumentsError",
    "MCPDeckError",
    "McpConfig",
    "PromptEntry",
    "PromptNotFoundError",
    "PromptsChanged",
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
