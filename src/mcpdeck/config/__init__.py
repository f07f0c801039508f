"""Server configs (with their OAuth settings), the config file and its one typed model (``ConfigDocument``: servers,
permissions, profiles, gateway settings), ``${VAR}`` expansion and importers from other hosts.

The importers (``import_servers`` and its types) are imported on first use: reading other hosts'
files needs ``yaml``, which every command's start would pay otherwise (bench/RESULTS.md).
"""

from typing import TYPE_CHECKING, Any

from mcpdeck.config._document import ConfigDocument, ConfigSection, parse_document
from mcpdeck.config._expand import expand_server_config, expand_vars, referenced_values
from mcpdeck.config._gateway import (
    DEFAULT_APPROVAL,
    GatewayApproval,
    GatewaySettings,
    GatewayTokenSetting,
    parse_gateway_settings,
)
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
from mcpdeck.config._permissions import PermissionRules, RuleKind, parse_permissions
from mcpdeck.config._profiles import ProfileConfig, parse_profiles, validate_profile_name
from mcpdeck.config._secrets import secrets_of
from mcpdeck.config._store import (
    ConfigStore,
    McpConfig,
    default_config_path,
    parse_config_document,
    put_profile,
    remove_profile,
    resolve_config_path,
)

if TYPE_CHECKING:
    from mcpdeck.config._importers import ImportResult, ImportSource, default_import_path, import_servers

__all__ = [
    "DEFAULT_APPROVAL",
    "AnyServerConfig",
    "ConfigDocument",
    "ConfigSection",
    "ConfigStore",
    "GatewayApproval",
    "GatewaySettings",
    "GatewayTokenSetting",
    "IdentityProviderConfig",
    "ImportResult",
    "ImportSource",
    "InProcessServer",
    "InProcessServerConfig",
    "McpConfig",
    "OAuthConfig",
    "PermissionRules",
    "ProfileConfig",
    "RemoteServerConfig",
    "RuleKind",
    "ServerConfig",
    "StdioServerConfig",
    "ToolFilter",
    "as_server_config",
    "default_config_path",
    "default_import_path",
    "expand_server_config",
    "expand_vars",
    "import_servers",
    "parse_config_document",
    "parse_document",
    "parse_gateway_settings",
    "parse_permissions",
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

_LAZY = frozenset({"ImportResult", "ImportSource", "default_import_path", "import_servers"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from mcpdeck.config import _importers

        return getattr(_importers, name)
    raise AttributeError(f"module 'mcpdeck.config' has no attribute {name!r}")
