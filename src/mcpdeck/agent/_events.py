"""What an agent run reports, in order, as it happens.

A run yields: ``TextChunk`` as the model writes; ``ModelTurn`` when a turn ends; for each
tool call ``ToolCallRequested`` then ``ToolProgress`` (if the tool reports any) and
``ToolCallDone`` (``denied`` tells a refused call); ``ToolsFound`` when tool search adds
tools; ``AgentError`` for anything that went wrong (a provider error, a tool that failed
to run) — never an exception —; and ``RunFinished``, always last. ``event_json`` gives each
as the API's chat stream and ``mcpdeck chat --json`` write it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from mcpdeck.providers import ToolCall, Usage
from mcpdeck.results import ToolResult

__all__ = [
    "AgentError",
    "AgentEvent",
    "ModelTurn",
    "RunFinished",
    "TextChunk",
    "ToolCallDone",
    "ToolCallRequested",
    "ToolProgress",
    "ToolsFound",
    "event_json",
]


@dataclass(frozen=True)
class TextChunk:
    """A piece of the model's text, as it streams."""

    text: str


@dataclass(frozen=True)
class ModelTurn:
    """The model finished a turn (``step`` counts from 1 within the run)."""

    step: int
    text: str
    tool_calls: list[ToolCall]
    stop_reason: str | None = None
    usage: Usage | None = None


@dataclass(frozen=True)
class ToolCallRequested:
    """The model asked for a tool call; it is about to be checked and run.

    Attributes:
        call_id: The provider's id for the call ("" when it gave none).
        name: The tool's name as the model wrote it.
        arguments: Its arguments.
        server: The server of an MCP tool; None for a native or unknown tool.
        read_only: Whether the tool says it only reads (such calls run side by side).
    """

    call_id: str
    name: str
    arguments: dict[str, Any]
    server: str | None
    read_only: bool


@dataclass(frozen=True)
class ToolProgress:
    """A running tool reported progress."""

    call_id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True)
class ToolCallDone:
    """A tool call ended; ``result`` is what the model is sent (a refusal or failure included).

    Attributes:
        call_id: The provider's id for the call.
        name: The tool's name.
        result: The result (``is_error`` for a tool failure, a refusal, or a call that could not run).
        approved_by: Who let it run or refused it (``rule``, ``user-once``, ``denied-by-user`` ...).
        denied: The permission gate refused it; nothing was sent to the tool.
        cut: Characters left out of the text sent to the model (over the result cap).
        duration: Seconds the call took.
    """

    call_id: str
    name: str
    result: ToolResult
    approved_by: str | None = None
    denied: bool = False
    cut: int = 0
    duration: float = 0.0


@dataclass(frozen=True)
class ToolsFound:
    """Tool search found tools; they are offered to the model for the rest of the run."""

    query: str
    names: list[str]


@dataclass(frozen=True)
class AgentError:
    """Something went wrong; the run reports it instead of raising.

    Attributes:
        message: What happened and, where it helps, what to do.
        kind: ``provider`` (the model's API), ``tool`` (a call that could not run) or ``internal``.
        retryable: Whether trying again later may work (rate limits, overload).
        tool: The tool's name, for a ``tool`` error.
    """

    message: str
    kind: Literal["provider", "tool", "internal"]
    retryable: bool = False
    tool: str | None = None


@dataclass(frozen=True)
class RunFinished:
    """The run ended, always the last event.

    Attributes:
        text: The model's final text (the last turn's).
        reason: ``done`` (the model answered), ``max_steps`` (the step limit was reached
            with the model still calling tools; ``text`` is the last turn's) or ``error``
            (see the ``AgentError`` before it).
        steps: Model turns taken.
        usage: Tokens used over the run, where the provider said.
    """

    text: str
    reason: Literal["done", "max_steps", "error"]
    steps: int
    usage: Usage = field(default_factory=Usage)


AgentEvent = (
    TextChunk | ModelTurn | ToolCallRequested | ToolProgress | ToolCallDone | ToolsFound | AgentError | RunFinished
)
"""Everything ``Agent.run`` yields."""


def event_json(event: AgentEvent, result_chars: int | None = None) -> tuple[str, dict[str, Any]]:
    """An event as JSON: ``(event name, data)``, with a tool result's text cut at ``result_chars`` (None: whole).

    The names: ``text``, ``turn``, ``tool-call``, ``progress``, ``tool-result``, ``tools-found``,
    ``error``, ``done``.
    """
    match event:
        case TextChunk(text=text):
            return "text", {"text": text}
        case ModelTurn():
            calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in event.tool_calls]
            return "turn", {"step": event.step, "text": event.text, "toolCalls": calls}
        case ToolCallRequested():
            data = {"id": event.call_id, "name": event.name, "server": event.server, "readOnly": event.read_only}
            return "tool-call", {**data, "arguments": event.arguments}
        case ToolProgress():
            data = {"id": event.call_id, "name": event.name, "progress": event.progress, "total": event.total}
            return "progress", {**data, "message": event.message}
        case ToolCallDone():
            result = event.result
            return "tool-result", {
                "id": event.call_id,
                "name": event.name,
                "isError": result.is_error,
                "denied": event.denied,
                "approvedBy": event.approved_by,
                "text": result.text(max_chars=result_chars),
                "cut": event.cut,
                "duration": event.duration,
            }
        case ToolsFound():
            return "tools-found", {"query": event.query, "names": event.names}
        case AgentError():
            data = {"kind": event.kind, "message": event.message, "retryable": event.retryable}
            return "error", {**data, "tool": event.tool}
        case RunFinished():
            return "done", {"reason": event.reason, "steps": event.steps, "text": event.text}
