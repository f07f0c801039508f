"""Server configs, the config file, ``${VAR}`` expansion and importers from other hosts."""

from mcpdeck.config._expand import expand_server_config, expand_vars
from mcpdeck.config._models import (
    OAuthConfig,
    RemoteServerConfig,
    ServerConfig,
    StdioServerConfig,
    ToolFilter,
    parse_server_config,
    validate_server_name,
)
from mcpdeck.config._store import (
    ConfigStore,
    McpConfig,
    default_config_path,
    parse_config_document,
    resolve_config_path,
)

__all__ = [
    "ConfigStore",
    "McpConfig",
    "OAuthConfig",
    "RemoteServerConfig",
    "ServerConfig",
    "StdioServerConfig",
    "ToolFilter",
    "default_config_path",
    "expand_server_config",
    "expand_vars",
    "parse_config_document",
    "parse_server_config",
    "resolve_config_path",
    "validate_server_name",
]
