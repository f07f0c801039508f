"""Request and response models of the REST API (they make its OpenAPI description).

Response shapes are those the CLI prints with ``--json`` where the two overlap (a server's
status is ``ServerStatus.to_json()``, a tool ``CatalogTool.to_json()``, a call's result
``ToolResult.to_json()``), plus what only a long-running process knows (uptime, call counts).
Keys are camelCase, as in the config file and the CLI's JSON.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CallIn",
    "CompletionIn",
    "CompletionOut",
    "ConversationOut",
    "ConversationsOut",
    "ErrorBody",
    "ErrorOut",
    "HistoryCallOut",
    "HistoryOut",
    "HostOut",
    "ImportIn",
    "ImportOut",
    "ImportPreviewOut",
    "LogOut",
    "PermissionsIn",
    "PermissionsOut",
    "ProfileIn",
    "ProfileListOut",
    "ProfileOut",
    "PromptGetIn",
    "ResourceIn",
    "ResourcesOut",
    "ServerConfigIn",
    "ServerDetailOut",
    "ServerIn",
    "ServerListOut",
    "ServerOut",
    "ServerTestIn",
    "ShownOut",
    "TestOut",
    "ToolOut",
    "ToolResultOut",
    "TrafficOut",
]


class _Out(BaseModel):
    # Keys a shape gains below (a new field of ServerStatus.to_json ...) pass through as they are.
    model_config = ConfigDict(populate_by_name=True, extra="allow")


class ErrorBody(BaseModel):
    """What went wrong."""

    code: str = Field(description="A stable word to branch on: config-error, tool-not-found, unauthorized ...")
    message: str = Field(description="What went wrong and what to do, as the CLI says it.")


class ErrorOut(BaseModel):
    """Every error answer."""

    error: ErrorBody


class ServerInfoOut(_Out):
    name: str
    version: str | None = None


class ServerOut(_Out):
    """One server's status (``mcpdeck list --json``), with its call counts and uptime."""

    name: str
    state: Literal["disabled", "connecting", "connected", "reconnecting", "failed", "stopped"]
    transport: str
    target: str = Field(description="Command line or URL, secrets masked.")
    error: str | None
    errorAt: str | None
    connectedAt: str | None
    serverInfo: ServerInfoOut | None
    protocolVersion: str | None
    instructions: str | None
    toolCount: int
    logPath: str | None
    pid: int | None
    warnings: list[str] = Field(
        default_factory=list[str],
        description="What is missing although the server is connected (e.g. a list it failed to send).",
    )
    uptime: float | None = Field(description="Seconds since the current session started (connected only).")
    calls: int = Field(description="Tool calls made through this process since it started.")
    errors: int = Field(description="Of those, the ones that failed or returned an error result.")
    lastCallAt: str | None


class ServerListOut(_Out):
    """Every configured server (``mcpdeck list --json``)."""

    config: str | None
    servers: list[ServerOut]


class ServerDetailOut(_Out):
    """One server (``mcpdeck get NAME --json``): its config with secrets masked, status and tool names."""

    config: dict[str, Any] | None
    status: ServerOut
    tools: list[str]
    disabledTools: list[str] = Field(description="Tools the config's `tools.exclude` leaves out.")


class ServerIn(BaseModel):
    """A server to add: its name and its ``mcpServers`` entry."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=48)
    config: dict[str, Any] = Field(description='The entry as in a config file: {"command": ..., "args": [...]}.')
    force: bool = Field(default=False, description="Replace a server of the same name.")
    saveAnyway: bool = Field(
        default=False,
        description="Save it whatever happens. Without it the server is tried first and saved only if it connects "
        "(502 `did-not-connect` otherwise), as `mcpdeck add` does; a disabled entry is saved without trying.",
    )


class ServerConfigIn(BaseModel):
    """A server's whole new config; masked values are kept as stored. The name cannot change."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any]
    name: str | None = Field(default=None, description="If given, must be the server's name (names are locked).")


class ServerTestIn(BaseModel):
    """A config to try without saving it."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any]
    name: str = Field(default="test", min_length=1, max_length=48)


class TestOut(ServerOut):
    """What a test found (``mcpdeck test NAME --json``)."""

    ok: bool
    duration: float
    tools: list[str]


class ToolOut(_Out):
    """A tool in the catalog (``mcpdeck tools --json``)."""

    name: str
    server: str
    tool: str
    title: str | None
    description: str
    inputSchema: dict[str, Any]
    outputSchema: dict[str, Any] | None
    annotations: dict[str, Any] | None


class CallIn(BaseModel):
    """A tool call."""

    model_config = ConfigDict(extra="forbid")

    arguments: dict[str, Any] = Field(default_factory=dict[str, Any])
    timeout: float | None = Field(default=None, gt=0, description="Seconds without an answer or progress.")
    callId: str | None = Field(
        default=None,
        max_length=100,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="Your id for the call: events about it carry it as `requestId`; cancel it by it.",
    )
    cut: int | None = Field(
        default=None,
        ge=1000,
        description="Answer with each text block cut to this many characters and the structured content "
        "pruned when its JSON is longer (`shown` says what was cut); the whole result is then kept "
        "for `GET /api/calls/{callId}/result` (default: the whole result in the answer).",
    )


class ShownOut(BaseModel):
    """What a call answered with ``cut`` shows of its result."""

    limit: int = Field(description="The `cut` asked for.")
    content: dict[str, dict[str, int]] = Field(
        description="The text blocks cut, by index: their whole `characters` and `lines`."
    )
    structuredContent: dict[str, Any] | None = Field(
        description="When the structured content was pruned: the `characters` of its whole JSON, and `cuts`, "
        "by JSON pointer, the `entries` of each object or array cut and the `characters` of each string cut."
    )
    repeats: dict[str, Any] | None = Field(
        description="The text block that only repeats the structured content: `block` (its index) and `as`: "
        "`json` (the text is that JSON) or `wrapped` (the structured content is `{key: the text}`)."
    )
    kept: bool = Field(description="Whether the whole result is kept for `GET /api/calls/{callId}/result`.")


class ToolResultOut(_Out):
    """A call's result (``mcpdeck call --json``)."""

    name: str
    server: str
    tool: str
    isError: bool
    content: list[dict[str, Any]]
    structuredContent: Any = None
    duration: float
    callId: str
    shown: ShownOut | None = Field(default=None, description="With `cut`: what the answer shows of the result.")


class ResourcesOut(_Out):
    """Resources and templates (``mcpdeck resources --json``)."""

    resources: list[dict[str, Any]]
    templates: list[dict[str, Any]]


class ResourceIn(BaseModel):
    """A resource, by URI (and server, when several offer it)."""

    model_config = ConfigDict(extra="forbid")

    uri: str = Field(min_length=1)
    server: str | None = None


class PromptGetIn(BaseModel):
    """A prompt's arguments."""

    model_config = ConfigDict(extra="forbid")

    arguments: dict[str, str] = Field(default_factory=dict[str, str])


class CompletionIn(BaseModel):
    """Completions of an argument: of a prompt (``prompt``), or of a resource template (``server``, ``uriTemplate``)."""

    model_config = ConfigDict(extra="forbid")

    prompt: str | None = None
    server: str | None = None
    uriTemplate: str | None = None
    argument: str = Field(min_length=1)
    value: str = ""
    context: dict[str, str] = Field(default_factory=dict[str, str])


class CompletionOut(_Out):
    """A server's completion, as it gave it."""

    values: list[str]
    total: int | None = Field(default=None, description="How many values there are in all, when the server says.")
    hasMore: bool | None = Field(default=None, description="Whether there are more values than these, when it says.")


class LogOut(_Out):
    """The end of a server's log (``mcpdeck logs NAME``)."""

    server: str
    path: str | None
    lines: list[str]


class TrafficOut(_Out):
    """JSON-RPC messages between the host and its servers, oldest first."""

    limit: int = Field(description="Messages kept per server.")
    maxBody: int = Field(description="Characters of a message kept; longer bodies are cut (`truncated`).")
    messages: list[dict[str, Any]]


class MetricsSeriesOut(_Out):
    """One server's last hour, one value a minute (oldest first, as ``minutes``)."""

    server: str
    replica: str | None = Field(description="The replica that counted these calls (null: a lone serve).")
    calls: list[int] = Field(description="Calls that ended in the minute.")
    errors: list[int] = Field(description="Of those, the ones not ok: tool errors, failures, refusals.")
    p50: list[float | None] = Field(description="Median duration (seconds) of the calls sent that minute; null: none.")
    p99: list[float | None] = Field(description="99th percentile duration (seconds); null: none.")


class MetricsOut(_Out):
    """Per-minute rollups of the tool calls of this process, the last hour (the console's Metrics page)."""

    minutes: list[int] = Field(description="Each minute's start, seconds since the epoch, oldest first.")
    series: list[MetricsSeriesOut] = Field(description="One per server that had calls in the hour.")


class HistoryOut(_Out):
    """Tool calls, newest first (``mcpdeck history --json``)."""

    path: str = Field(description="The store: the SQLite file, or the PostgreSQL URL without its password.")
    total: int = Field(description="How many calls match the filters; `toolCalls` holds the newest `limit` of them.")
    toolCalls: list[dict[str, Any]]


class HistoryCallOut(_Out):
    """One tool call, with the start of its result as text."""

    path: str
    toolCall: dict[str, Any]


class ConversationsOut(_Out):
    path: str
    conversations: list[dict[str, Any]]


class ConversationOut(_Out):
    path: str
    id: int
    messages: list[dict[str, Any]]


class PermissionsOut(_Out):
    """The ``permissions`` rules of the config file, and why they cannot be used, if so."""

    allow: list[str]
    ask: list[str]
    deny: list[str]
    problem: str | None


class PermissionsIn(BaseModel):
    """New rules (they replace the old ones)."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list[str])
    ask: list[str] = Field(default_factory=list[str])
    deny: list[str] = Field(default_factory=list[str])


class ImportIn(BaseModel):
    """Import from another host's config file."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["claude-desktop", "claude-code", "cursor", "vscode", "goose"]
    path: str | None = Field(default=None, description="The file (default: where that host keeps it).")
    names: list[str] | None = Field(default=None, description="Only these servers (default: all).")
    force: bool = Field(default=False, description="Replace servers of the same name.")


class ImportCandidate(_Out):
    name: str
    transport: str
    target: str
    config: dict[str, Any]
    exists: bool


class ImportPreviewOut(_Out):
    """What an import would add; nothing is changed."""

    source: str
    path: str
    servers: list[ImportCandidate]
    skipped: dict[str, str]
    notes: list[str]


class ImportOut(_Out):
    """What an import added."""

    imported: list[str]
    skipped: dict[str, str]
    servers: list[ServerOut]


class HostOut(_Out):
    """The process: what it serves and how the config file fares."""

    version: str
    pid: int
    config: str | None
    startedAt: str
    enabled: bool
    problems: dict[str, str] = Field(description='What the last config edit could not apply ("" = the whole file).')
    replica: str | None = Field(default=None, description="This process's replica id (`serve --replica-id`).")


class ProfileIn(BaseModel):
    """A gateway profile as the config file keeps it (``"profiles": {NAME: ...}``)."""

    model_config = ConfigDict(extra="forbid")

    servers: list[str] | None = Field(default=None, description="The servers it serves; absent: all of them.")
    tools: dict[str, Any] | list[str] | None = Field(
        default=None,
        description='{"include": [...], "exclude": [...]}: patterns on catalog names or the servers\' own names.',
    )
    prefix: bool = Field(default=True, description="False: one server's tools under their own names.")
    description: str | None = Field(default=None, description="Added to the instructions its clients get.")


class ProfileOut(_Out):
    """One profile: its entry in the config file, where the gateway serves it, and what it serves now."""

    name: str
    config: dict[str, Any] = Field(description="The entry as the file keeps it.")
    path: str = Field(description="Its MCP endpoint on this process: /mcp/<name>.")
    servers: list[str] = Field(description="The configured servers it serves now.")
    unknownServers: list[str] = Field(description="Servers it names that are not configured (they serve nothing).")
    tools: list[str] = Field(description="The tools it serves now, under the names its clients see.")


class ProfileListOut(_Out):
    """Every profile in the config file."""

    config: str | None
    profiles: list[ProfileOut]
