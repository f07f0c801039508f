"""Server config models, as users write them in the ``mcpServers`` object.

Two shapes in a file: a stdio server (``command``) and a remote server (``url``, with
``type`` ``http``, ``sse`` or absent for "try streamable HTTP, then SSE"). Keys this module
does not know are kept (``extra="allow"``) so that a load/save round trip loses nothing.
A remote server's ``oauth`` object has models of its own (``_oauth``).
A third shape exists only in code: an in-process server (an SDK server object), with the
same settings (timeouts, tool filter, roots ...) and never written to a file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from mcpdeck._util.masking import mask_command_line, mask_url
from mcpdeck.config._oauth import OAuthConfig
from mcpdeck.errors import ConfigError

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    InProcessServer: TypeAlias = Server[Any] | MCPServer[Any]
else:
    # The SDK's server side takes a second or more to import; the config file's commands
    # need none of it. The validator of ``InProcessServerConfig.server`` checks the type.
    InProcessServer = object

__all__ = [
    "RUNTIME_KEYS",
    "AnyServerConfig",
    "InProcessServer",
    "InProcessServerConfig",
    "RemoteServerConfig",
    "ServerConfig",
    "StdioServerConfig",
    "ToolFilter",
    "as_server_config",
    "parse_server_config",
    "validate_server_name",
]

DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_REQUEST_TIMEOUT = 60.0
DEFAULT_MAX_MESSAGE_SIZE = 128 * 1024 * 1024
MAX_SERVER_NAME = 48

# Keys some hosts write into their files at run time; they describe a moment, not a
# config, so they are dropped on save.
RUNTIME_KEYS = frozenset({"status", "connected", "toolCount", "lastConnected", "lastError", "error"})

# Every spelling of "streamable HTTP" other hosts write.
_HTTP_TYPES = frozenset({"http", "streamable-http", "streamablehttp", "streamable_http", "streamable"})

_LEADING_KEYS = ("type", "command", "args", "env", "cwd", "url", "headers")
_NAME_RE = re.compile(r"[A-Za-z0-9_-]+")


def validate_server_name(name: object) -> str:
    """Check that ``name`` can stand in a tool name; return it, or raise ConfigError saying why."""
    if not isinstance(name, str) or not name:
        raise ConfigError("a server needs a non-empty name")
    if not _NAME_RE.fullmatch(name):
        bad = sorted({c for c in name if not _NAME_RE.fullmatch(c)})
        raise ConfigError(
            f"server name {name!r} has characters that cannot go in a tool name ({' '.join(map(repr, bad))}); "
            "use only letters, digits, '_' and '-'",
            server=name,
        )
    if "__" in name:
        raise ConfigError(
            f"server name {name!r} contains '__', which separates the parts of tool names "
            "(mcp__<server>__<tool>); use a single '_' or '-'",
            server=name,
        )
    if len(name) > MAX_SERVER_NAME:
        raise ConfigError(f"server name {name!r} is longer than {MAX_SERVER_NAME} characters", server=name)
    return name


class ToolFilter(BaseModel):
    """Which of a server's tools join the catalog.

    ``include`` (when given) and ``exclude`` hold original tool names or shell-style
    patterns (``read_*``). Exclude wins over include.
    """

    model_config = ConfigDict(extra="forbid")

    include: list[str] | None = None
    exclude: list[str] = Field(default_factory=list[str])

    @model_validator(mode="before")
    @classmethod
    def _list_means_include(cls, value: object) -> object:
        # `"tools": ["a", "b"]` is the short form of `{"include": ["a", "b"]}`, wherever a filter is given.
        if isinstance(value, list):
            return {"include": cast(list[object], value)}
        return value

    def allows(self, tool_name: str) -> bool:
        """Whether a tool of this original name passes the filter."""
        if any(fnmatchcase(tool_name, pattern) for pattern in self.exclude):
            return False
        return self.include is None or any(fnmatchcase(tool_name, pattern) for pattern in self.include)


class _ServerBase(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True)

    disabled: bool = False
    """Keep the config, but do not connect."""
    auto_approve: list[str] = Field(default_factory=list[str], alias="autoApprove")
    """Tool names (original or namespaced, patterns allowed) that need no approval."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds a request may take (default 60); progress from the server resets it."""
    startup_timeout: float | None = Field(default=None, gt=0, alias="startupTimeout")
    """Seconds to connect and list tools (default 30)."""
    max_message_size: int | None = Field(default=None, gt=0, alias="maxMessageSize")
    """The largest message (bytes) read from the server (default 128 MiB)."""
    tools: ToolFilter | None = None
    """Include/exclude filter on the server's tools."""
    roots: list[str] | bool | None = None
    """Roots offered to this server: a list of folders, ``false`` to offer none (the server
    then keeps its own idea of where it may work), absent for the host's roots."""
    forward_caller: bool = Field(default=False, alias="forwardCaller")
    """Tell this server which client of this host's gateway each tool call is made for (its
    ``clientInfo`` name, in the call's ``_meta`` as ``io.mcpdeck/client``): for a server that is
    itself an mcpdeck gateway, whose history then names that client instead of this host."""
    protocol: Literal["auto", "handshake", "modern"] = "auto"
    """How to open a session: ``auto`` opens with the ``initialize`` handshake (the era in which a
    server can ask the host in the middle of a call) and goes on with ``server/discover``
    (2026-07-28) for a server that refuses it naming only 2026-07-28 versions; ``handshake`` and
    ``modern`` force one."""

    @property
    def request_timeout(self) -> float:
        """The per-request timeout in seconds, default applied."""
        return self.timeout if self.timeout is not None else DEFAULT_REQUEST_TIMEOUT

    @property
    def connect_timeout(self) -> float:
        """The startup timeout in seconds, default applied."""
        return self.startup_timeout if self.startup_timeout is not None else DEFAULT_STARTUP_TIMEOUT

    @property
    def message_limit(self) -> int:
        """The largest message in bytes, default applied."""
        return self.max_message_size if self.max_message_size is not None else DEFAULT_MAX_MESSAGE_SIZE

    def allows_tool(self, tool_name: str) -> bool:
        """Whether the tool filter lets this original tool name through."""
        return self.tools is None or self.tools.allows(tool_name)

    def to_json(self) -> dict[str, Any]:
        """The config as it is written to the file: aliases, no defaults, unknown keys kept."""
        data = self.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        # What a server is comes first (command/url), then how it behaves.
        first = [key for key in _LEADING_KEYS if key in data]
        rest = [key for key in data if key not in _LEADING_KEYS and key not in RUNTIME_KEYS]
        return {key: data[key] for key in [*first, *rest]}


class StdioServerConfig(_ServerBase):
    """A server the host starts as a child process and talks to over stdin/stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list[str])
    env: dict[str, str] = Field(default_factory=dict[str, str])
    cwd: str | None = None
    npm_registry: str | None = Field(default=None, alias="npmRegistry")
    """Passed to the child as ``npm_config_registry`` (overrides the file-wide setting)."""

    @property
    def transport(self) -> str:
        """``stdio``."""
        return "stdio"

    @property
    def target(self) -> str:
        """The command line, for display: secret-looking arguments masked (``--api-key ****``)."""
        return mask_command_line(self.command, self.args)


class RemoteServerConfig(_ServerBase):
    """A server reached over the network: streamable HTTP, SSE, or either (``type`` absent)."""

    type: Literal["http", "sse"] | None = None
    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    oauth: OAuthConfig | bool | None = None
    """OAuth settings; ``false`` turns OAuth off for this server (absent or ``true``: on, defaults)."""

    @field_validator("oauth", mode="before")
    @classmethod
    def _oauth_object_or_switch(cls, value: object) -> object:
        # Checked here so a mistake is reported once, by its key, not once per member of the union.
        if value is None or isinstance(value, bool | OAuthConfig):
            return value
        if not isinstance(value, dict):
            raise PydanticCustomError("oauth_type", "must be an object, true or false")
        try:
            return OAuthConfig.model_validate(value)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}" for item in error.errors()
            )
            raise PydanticCustomError("oauth", "{problems}", {"problems": problems}) from None

    @property
    def transport(self) -> str:
        """``http``, ``sse``, or ``http|sse`` when the host tries one then the other."""
        return self.type or "http|sse"

    @property
    def target(self) -> str:
        """The URL, for display: its query values and password masked."""
        return mask_url(self.url)


def _is_sdk_server(value: object) -> bool:
    # Imported here, not at the top (see ``InProcessServer``); loaded already by whoever made the server.
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    return isinstance(value, Server | MCPServer)


class InProcessServerConfig(_ServerBase):
    """A server object of the SDK run inside this process (tests, embedded tools), with the settings
    every server has. Made in code only: a config file never holds one (``to_json`` gives its
    settings, never the server)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)

    type: Literal["in-process"] = "in-process"
    server: InProcessServer = Field(exclude=True)
    """The ``mcp.server.Server`` or ``MCPServer`` to run."""

    @field_validator("server")
    @classmethod
    def _an_sdk_server(cls, value: object) -> object:
        if not _is_sdk_server(value):
            raise PydanticCustomError(
                "in_process_server",
                "must be an SDK server object (mcp.server.Server or MCPServer), not {kind}",
                {"kind": type(value).__name__},
            )
        return value

    @property
    def transport(self) -> str:
        """``in-process``."""
        return "in-process"

    @property
    def target(self) -> str:
        """The class of the server object."""
        return type(self.server).__name__


ServerConfig = StdioServerConfig | RemoteServerConfig
"""A server as a config file holds it."""

AnyServerConfig = StdioServerConfig | RemoteServerConfig | InProcessServerConfig
"""What a connection runs: a config file's entry, or an in-process server."""


def _format_validation_error(error: ValidationError) -> str:
    parts: list[str] = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "config"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def parse_server_config(name: str, raw: object) -> ServerConfig:
    """Build a server config from what a user wrote under ``mcpServers.<name>``.

    Raises:
        ConfigError: The name or the config is not usable; the message says which key and why.
    """
    validate_server_name(name)
    if not isinstance(raw, dict):
        raise ConfigError(f"server {name!r}: expected an object, got {type(raw).__name__}", server=name)
    entry = cast(dict[object, Any], raw)
    data: dict[str, Any] = {str(k): v for k, v in entry.items() if k not in RUNTIME_KEYS}
    kind = data.get("type", data.get("transport"))
    if "transport" in data and "type" not in data:
        data["type"] = data.pop("transport")
    if isinstance(kind, str):
        folded = kind.strip().lower()
        if folded in _HTTP_TYPES:
            data["type"] = "http"
        elif folded in ("sse", "stdio"):
            data["type"] = folded
        else:
            raise ConfigError(
                f"server {name!r}: unknown type {kind!r}; use 'stdio', 'http' (streamable HTTP) or 'sse'", server=name
            )
    has_command, has_url = "command" in data, "url" in data
    if has_command and has_url:
        raise ConfigError(f"server {name!r}: give either 'command' (stdio) or 'url' (remote), not both", server=name)
    if not has_command and not has_url:
        raise ConfigError(
            f"server {name!r}: needs 'command' (a program to start) or 'url' (a remote server)", server=name
        )
    if has_command and data.get("type") not in (None, "stdio"):
        raise ConfigError(f"server {name!r}: type {kind!r} needs a 'url', not a 'command'", server=name)
    if has_url and data.get("type") == "stdio":
        raise ConfigError(f"server {name!r}: type 'stdio' needs a 'command', not a 'url'", server=name)
    model: type[ServerConfig] = StdioServerConfig if has_command else RemoteServerConfig
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"server {name!r}: {_format_validation_error(error)}", server=name) from None


def as_server_config(name: str, spec: AnyServerConfig | InProcessServer | Mapping[str, Any]) -> AnyServerConfig:
    """A server given in code as a config model, its JSON form (checked as a file's entry is) or an SDK server object.

    Raises:
        ConfigError: The JSON form is not usable, or ``spec`` is none of these.
    """
    if isinstance(spec, _ServerBase):
        return spec
    if isinstance(spec, Mapping):
        return parse_server_config(name, dict(spec))
    try:
        return InProcessServerConfig(server=spec)
    except ValidationError as error:
        raise ConfigError(f"server {name!r}: {_format_validation_error(error)}", server=name) from None
