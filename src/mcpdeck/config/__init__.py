"""Server configs (with their OAuth settings), the config file, ``${VAR}`` expansion and importers from other hosts."""

from mcpdeck.config._expand import expand_server_config, expand_vars, referenced_values
from mcpdeck.config._models import (
    AnyServerConfig,
    InProcessServer,
    InProcessServerConfig,
    RemoteServerConfig,
    ServerConfig,
    StdioServerConfig,
    ToolFilter,
    as_server_config,
    parse_server_config,
    validate_server_name,
)
from mcpdeck.config._oauth import IdentityProviderConfig, OAuthConfig
from mcpdeck.config._profiles import ProfileConfig, parse_profiles, put_profile, remove_profile, validate_profile_name
from mcpdeck.config._secrets import secrets_of
from mcpdeck.config._store import (
    ConfigStore,
    McpConfig,
    default_config_path,
    parse_config_document,
    resolve_config_path,
)

__all__ = [
    "AnyServerConfig",
    "ConfigStore",
    "IdentityProviderConfig",
    "InProcessServer",
    "InProcessServerConfig",
    "McpConfig",
    "OAuthConfig",
    "ProfileConfig",
    "RemoteServerConfig",
    "ServerConfig",
    "StdioServerConfig",
    "ToolFilter",
    "as_server_config",
    "default_config_path",
    "expand_server_config",
    "expand_vars",
    "parse_config_document",
    "parse_profiles",
    "parse_server_config",
    "put_profile",
    "referenced_values",
    "remove_profile",
    "resolve_config_path",
    "secrets_of",
    "validate_profile_name",
    "validate_server_name",
]
