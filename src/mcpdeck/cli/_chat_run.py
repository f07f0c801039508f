"""What ``mcpdeck chat`` does once it runs (imported only then: the agent and provider SDKs are heavy).

The model's text goes to stdout as it streams; tool calls, their results and approvals go
to stderr, so ``mcpdeck chat -m M "question" > answer.txt`` keeps only the answer. With
``--json`` every event is one JSON line on stdout instead.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio.to_thread
import click

from mcpdeck.agent import (
    Agent,
    AgentError,
    AgentEvent,
    ModelTurn,
    RunFinished,
    TextChunk,
    ToolCallDone,
    ToolCallRequested,
    ToolProgress,
    ToolsFound,
)
from mcpdeck.cli._app import _Context  # pyright: ignore[reportPrivateUsage]
from mcpdeck.cli._render import echo_json, safe, style
from mcpdeck.errors import ProviderError
from mcpdeck.providers import chat_model, default_model, parse_provider_settings

__all__ = ["run_chat"]

_HELP = "commands: /reset (new conversation), /tools (what the model is offered), /exit"


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return safe(text if len(text) <= limit else text[: limit - 1] + "…")


class _Printer:
    """Shows a run's events: text on stdout, tool traffic on stderr."""

    def __init__(self, as_json: bool):
        self.as_json = as_json
        self.open_line = False  # text was printed without a newline yet

    def _end_text(self) -> None:
        if self.open_line:
            click.echo("")
            self.open_line = False

    def show(self, event: AgentEvent) -> None:
        if self.as_json:
            echo_json(_event_json(event), compact=True)
            return
        match event:
            case TextChunk(text=text):
                click.echo(safe(text, multiline=True), nl=False)
                self.open_line = not text.endswith("\n")
            case ModelTurn():
                self._end_text()
            case ToolCallRequested(name=name, arguments=arguments):
                click.echo(style(f"→ {name} ", fg="cyan") + _short(arguments), err=True)
            case ToolProgress(name=name, progress=progress, total=total, message=message):
                amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
                click.echo(safe(f"  … {name} {amount} {message or ''}".rstrip()), err=True)
            case ToolCallDone(name=name, result=result, denied=denied, cut=cut, duration=duration):
                if denied:
                    click.echo(style(f"✗ {name} denied: ", fg="red") + safe(result.text()), err=True)
                else:
                    mark = click.style("✗", fg="red") if result.is_error else click.style("✓", fg="green")
                    note = f" ({cut:,} characters cut for the model)" if cut else ""
                    summary = _short(result.text(), 120)
                    click.echo(f"{mark} {safe(name)} {duration * 1000:.0f} ms: {summary}{note}", err=True)
            case ToolsFound(names=names):
                click.echo(click.style("  found: ", fg="cyan") + safe(", ".join(names)), err=True)
            case AgentError(message=message, kind=kind):
                self._end_text()
                label = "error" if kind != "tool" else "tool error"
                click.echo(click.style(f"{label}: ", fg="red", bold=True) + safe(message, multiline=True), err=True)
            case RunFinished(reason=reason, steps=steps):
                self._end_text()
                if reason == "max_steps":
                    note = f"stopped after {steps} model turns (--max-steps); the model was still calling tools"
                    click.echo(click.style("note: ", fg="yellow") + note, err=True)


def _event_json(event: AgentEvent) -> dict[str, Any]:
    match event:
        case TextChunk(text=text):
            return {"event": "text", "text": text}
        case ModelTurn():
            calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in event.tool_calls]
            return {"event": "turn", "step": event.step, "text": event.text, "toolCalls": calls}
        case ToolCallRequested():
            return {"event": "tool-call", "id": event.call_id, "name": event.name, "arguments": event.arguments}
        case ToolProgress():
            return {"event": "progress", "id": event.call_id, "name": event.name, "progress": event.progress}
        case ToolCallDone():
            return {
                "event": "tool-result",
                "id": event.call_id,
                "name": event.name,
                "isError": event.result.is_error,
                "denied": event.denied,
                "approvedBy": event.approved_by,
                "text": event.result.text(),
                "cut": event.cut,
            }
        case ToolsFound():
            return {"event": "tools-found", "query": event.query, "names": event.names}
        case AgentError():
            return {"event": "error", "kind": event.kind, "message": event.message, "retryable": event.retryable}
        case RunFinished():
            return {"event": "done", "reason": event.reason, "steps": event.steps, "text": event.text}


async def _one_run(agent: Agent, prompt: str, printer: _Printer) -> RunFinished | None:
    finished: RunFinished | None = None
    async for event in agent.run(prompt):
        printer.show(event)
        if isinstance(event, RunFinished):
            finished = event
    return finished


def _read_prompt() -> str | None:
    if sys.stdin is None:  # no standard input at all: the conversation ends
        return None
    if sys.stdin.isatty():
        click.echo(click.style("you> ", bold=True), nl=False, err=True)
    line = sys.stdin.readline()
    return None if not line else line.rstrip("\n")


async def _interactive(agent: Agent, printer: _Printer) -> None:
    click.echo(f"chatting with {agent.model.name}; {len(agent.host.catalog)} MCP tools. {_HELP}", err=True)
    while True:
        prompt = await anyio.to_thread.run_sync(_read_prompt, abandon_on_cancel=True)
        if prompt is None or prompt.strip() in ("/exit", "/quit"):
            return
        if not prompt.strip():
            continue
        if prompt.strip() == "/reset":
            agent.reset()
            click.echo("(new conversation)", err=True)
            continue
        if prompt.strip() == "/tools":
            for name in [t.name for t in agent.native_tools] + agent.host.catalog.names():
                click.echo(f"  {safe(name)}", err=True)
            continue
        await _one_run(agent, prompt, printer)


async def run_chat(
    ctx: _Context,
    prompt: str | None,
    model: str | None,
    servers: tuple[str, ...],
    system: str | None,
    yes: bool,
    max_steps: int,
    tool_search: int | None,
    no_tool_search: bool,
    as_json: bool,
) -> None:
    """One answer for ``prompt``, else a conversation at the terminal (see ``mcpdeck chat --help``)."""
    for name in servers:
        ctx.server(name)  # an unknown name is an error, not a chat without tools
    raw = ctx.store.read_raw()
    spec = model or default_model(os.environ, raw)
    if spec is None:
        raise ProviderError(
            "name a model: --model openai:gpt-4.1 (or anthropic:..., gemini:..., ollama:...), "
            'or set MCPDECK_MODEL, or "model" in the config file',
            provider="",
        )
    settings = parse_provider_settings(raw, path=str(ctx.path), environ=os.environ)
    chat_with = chat_model(spec, settings=settings, environ=os.environ)  # a bad name or key fails before connecting
    search: bool | int = False if no_tool_search else (tool_search if tool_search is not None else 40)
    history = ctx.history()
    printer = _Printer(as_json)
    finished: RunFinished | None = None
    try:
        async with ctx.host(list(servers) or None, interactive=True, approve=not yes, yes=yes) as host:
            if history is not None:
                host.events.on(history.record)
            for name, status in host.servers.items():
                if status.error and not as_json:
                    click.echo(click.style(f"{name}: ", fg="yellow") + safe(status.error), err=True)
            agent = Agent(
                host, model=chat_with, system=system, max_steps=max_steps, tool_search=search, history=history
            )
            if prompt is not None:
                finished = await _one_run(agent, prompt, printer)
            else:
                await _interactive(agent, printer)
    finally:
        await chat_with.aclose()
        if history is not None:
            history.close()
    if finished is not None and finished.reason == "error":
        sys.exit(1)
