"""What ``mcpdeck chat`` does once it runs on its own (imported only then: the agent and provider SDKs are
heavy): a host for the servers, an agent, the terminal's answers. ``_chat_print`` shows the runs;
``_chat_attached`` is the same command through a running ``serve``.
"""

from __future__ import annotations

import os
import sys

import anyio.to_thread
import click

from mcpdeck.agent import Agent, RunFinished, event_json
from mcpdeck.cli._app import _Context  # pyright: ignore[reportPrivateUsage]
from mcpdeck.cli._chat import chat_start
from mcpdeck.cli._chat_print import HELP, Printer, read_prompt
from mcpdeck.cli._render import safe
from mcpdeck.providers import chat_model, parse_provider_settings

__all__ = ["run_chat"]


async def _one_run(agent: Agent, prompt: str, printer: Printer) -> RunFinished | None:
    finished: RunFinished | None = None
    async for event in agent.run(prompt):
        printer.show(*event_json(event))
        if isinstance(event, RunFinished):
            finished = event
    return finished


async def _interactive(agent: Agent, printer: Printer) -> None:
    click.echo(f"chatting with {agent.model.name}; {len(agent.catalog)} MCP tools. {HELP}", err=True)
    while True:
        prompt = await anyio.to_thread.run_sync(read_prompt, abandon_on_cancel=True)
        if prompt is None or prompt.strip() in ("/exit", "/quit"):
            return
        if not prompt.strip():
            continue
        if prompt.strip() == "/reset":
            agent.reset()
            click.echo("(new conversation)", err=True)
            continue
        if prompt.strip() == "/tools":
            for name in [t.name for t in agent.native_tools] + agent.catalog.names():
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
    raw, spec, search = chat_start(ctx, model, servers, tool_search, no_tool_search)
    settings = parse_provider_settings(raw, path=str(ctx.path), environ=os.environ)
    chat_with = chat_model(spec, settings=settings, environ=os.environ)  # a bad name or key fails before connecting
    history = ctx.history()
    printer = Printer(as_json)
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
