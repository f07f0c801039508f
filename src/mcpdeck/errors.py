"""The exceptions mcpdeck raises.

Every error carries a message that says what went wrong and what to do about it.
The tree::

    MCPDeckError
    ├── ConfigError                 a config file or server config is unusable
    │   └── UnsetVariableError      ${VAR} with no value and no default
    ├── ServerError                 something about one server (has .server)
    │   ├── ServerUnavailableError  not connected: disabled, failed, stopped, starting
    │   ├── ServerTimeoutError      a request took longer than its timeout
    │   ├── ServerCrashedError      the connection was lost while a request was open
    │   ├── NotOfferedError         the server does not offer that (a capability it did not declare)
    │   └── AuthorizationError      OAuth to the server failed
    │       ├── AuthorizationRequiredError  no usable token and no one to ask
    │       ├── AuthorizationDeniedError    the user or the authorization server said no
    │       └── AuthorizationTimeoutError   no answer from the browser in time
    ├── ToolNotFoundError           no tool by that name in the catalog
    ├── PromptNotFoundError         no prompt by that name
    ├── ResourceNotFoundError       no server offers that URI (or more than one does)
    ├── InvalidArgumentsError       arguments do not match the tool's input schema
    ├── PermissionDeniedError       the permission gate refused a tool call
    ├── ProviderError               an LLM provider refused or failed a request (has .provider)
    └── ToolCallError               a model's tool call cannot be read (no name, bad arguments)

A tool that runs and fails is not an exception: it is a ``ToolResult`` with
``is_error=True``, because that failure is information for the model. The SDK's
``MCPError`` is kept as ``__cause__`` where one was the reason.

Every class is defined here; ``mcpdeck.auth`` and ``mcpdeck.providers`` also export the ones
of their domain under the same names.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = [
    "AuthorizationDeniedError",
    "AuthorizationError",
    "AuthorizationRequiredError",
    "AuthorizationTimeoutError",
    "ConfigError",
    "InvalidArgumentsError",
    "MCPDeckError",
    "NotOfferedError",
    "PermissionDeniedError",
    "PromptNotFoundError",
    "ProviderError",
    "ResourceNotFoundError",
    "ServerCrashedError",
    "ServerError",
    "ServerTimeoutError",
    "ServerUnavailableError",
    "ToolCallError",
    "ToolNotFoundError",
    "UnsetVariableError",
    "leaf_errors",
    "login_hint",
]


class MCPDeckError(Exception):
    """Base class of every error mcpdeck raises on purpose."""


class ConfigError(MCPDeckError):
    """A config file or a server's config cannot be used.

    Attributes:
        path: The file concerned, when there is one.
        line: The 1-based line of the problem, when known.
        server: The server concerned, when there is one.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None, server: str | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line
        self.server = server


class UnsetVariableError(ConfigError):
    """A ``${VAR}`` reference names an unset variable and gives no ``:-default``."""

    def __init__(self, variable: str, *, field: str, server: str | None = None):
        super().__init__(
            f"environment variable {variable} is not set (used in {field}); "
            f"set it, or give a default with ${{{variable}:-default}}",
            server=server,
        )
        self.variable = variable
        self.field = field


class ServerError(MCPDeckError):
    """Something went wrong with one server.

    Attributes:
        server: The server's name.
    """

    def __init__(self, server: str, message: str):
        super().__init__(f"server {server!r}: {message}")
        self.server = server
        self.reason = message


class ServerUnavailableError(ServerError):
    """The server is not connected (disabled, failed, stopped or still starting)."""


class ServerTimeoutError(ServerError):
    """A request to the server did not finish within its timeout."""


class NotOfferedError(ServerError):
    """The server does not offer what was asked: a capability it did not declare (e.g. resource subscriptions)."""


class ServerCrashedError(ServerError):
    """The connection to the server was lost while a request was in flight."""


def login_hint(server: str) -> str:
    """The command that authorizes ``server``."""
    return f"run `mcpdeck auth login {server}`"


class AuthorizationError(ServerError):
    """Authorizing to a server failed: refused, timed out, or the authorization server said no."""


class AuthorizationRequiredError(AuthorizationError):
    """The server needs authorization and there is no usable token, and no one to ask.

    Raised when a host runs without an interaction (the default): it never opens a browser
    by itself.
    """

    def __init__(self, server: str, why: str = "needs authorization"):
        super().__init__(server, f"{why}: {login_hint(server)}")


class AuthorizationDeniedError(AuthorizationError):
    """The user (or the authorization server) refused the authorization request."""


class AuthorizationTimeoutError(AuthorizationError):
    """No answer came back from the browser in time."""


class ToolNotFoundError(MCPDeckError):
    """No tool of that name is in the catalog."""

    def __init__(self, name: str, *, suggestions: list[str] | None = None):
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else "; run `mcpdeck tools` to see the names"
        super().__init__(f"no tool named {name!r}{hint}")
        self.name = name
        self.suggestions = suggestions or []


class PromptNotFoundError(MCPDeckError):
    """No prompt of that name is offered by a connected server."""

    def __init__(self, name: str, *, suggestions: list[str] | None = None):
        hint = (
            f"; did you mean {', '.join(suggestions)}?" if suggestions else "; run `mcpdeck prompts` to see the names"
        )
        super().__init__(f"no prompt named {name!r}{hint}")
        self.name = name


class ResourceNotFoundError(MCPDeckError):
    """No connected server offers the URI, or several do and none was named."""

    def __init__(self, uri: str, *, servers: list[str] | None = None):
        if servers:
            message = f"{len(servers)} servers offer {uri!r} ({', '.join(servers)}); name one with --server"
        else:
            message = f"no connected server offers {uri!r}; run `mcpdeck resources` to see what there is"
        super().__init__(message)
        self.uri = uri
        self.servers = servers or []


class InvalidArgumentsError(MCPDeckError):
    """The arguments given to a tool do not match its input schema; nothing was sent."""

    def __init__(self, tool: str, problems: list[str]):
        super().__init__(f"invalid arguments for {tool}: " + "; ".join(problems))
        self.tool = tool
        self.problems = problems


class PermissionDeniedError(MCPDeckError):
    """The permission gate refused a tool call; nothing was sent.

    Attributes:
        tool: The tool's catalog (or native) name.
        approved_by: How it was refused: ``denied-by-rule``, ``denied-by-user`` or ``no-approver``.
    """

    def __init__(self, message: str, *, tool: str, approved_by: str):
        super().__init__(message)
        self.tool = tool
        self.approved_by = approved_by


class ProviderError(MCPDeckError):
    """An LLM provider refused or failed a request, or cannot be used (SDK missing, no key).

    Attributes:
        provider: The provider's name (``openai``, ``anthropic``, ``gemini`` ...).
        status: The HTTP status, when the provider answered with one.
        retryable: Whether the same request may succeed later (rate limit, overload, network).
    """

    def __init__(self, message: str, *, provider: str, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.retryable = retryable


class ToolCallError(MCPDeckError):
    """A tool call from the model could not be read: no name, or arguments that are not a JSON object.

    Attributes:
        name: The tool's name, if the call had one.
        call_id: The call's id, if it had one.
        raw: The arguments as they came.
    """

    def __init__(self, message: str, *, name: str = "", call_id: str | None = None, raw: Any = None):
        super().__init__(message)
        self.name = name
        self.call_id = call_id
        self.raw = raw


def leaf_errors(error: BaseException) -> Iterator[BaseException]:
    """The exceptions inside ``error``, with exception groups (task groups' wrapping) taken apart."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]
            yield from leaf_errors(inner)  # pyright: ignore[reportUnknownArgumentType]
    else:
        yield error


_METHOD_NOT_FOUND = -32601


def protocol_error_text(code: int, message: str, method: str | None = None) -> str:
    """A server's JSON-RPC error in words, its code said once.

    Some servers (the TypeScript SDK's) already begin their message with ``MCP error <code>:``;
    that prefix is dropped rather than repeated. For -32601 (method not found) ``method``
    says which method the server did not know.
    """
    prefix = f"MCP error {code}:"
    text = message.strip()
    if text.startswith(prefix):
        text = text[len(prefix) :].strip()
    if code == _METHOD_NOT_FOUND and method:
        return f"the server does not know the method {method} (MCP error {code}: {text or 'Method not found'})"
    return f"{text} (MCP error {code})" if text else f"MCP error {code}"
