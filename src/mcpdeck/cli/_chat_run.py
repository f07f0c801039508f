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
from mcpdeck.cli._app import CliContext
from mcpdeck.cli._chat import ChatOptions, chat_start
from mcpdeck.cli._chat_print import HELP, Printer, answer_command, read_turn
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

    def tools() -> list[str]:
        return [t.name for t in agent.native_tools] + agent.catalog.names()

    while (line := await anyio.to_thread.run_sync(read_turn, abandon_on_cancel=True)) is not None:
        if not answer_command(line, agent.reset, tools):
            await _one_run(agent, line, printer)


async def run_chat(ctx: CliContext, options: ChatOptions) -> None:
    """One answer for the prompt, else a conversation at the terminal (see ``mcpdeck chat --help``)."""
    raw, spec, search = chat_start(ctx, options)
    settings = parse_provider_settings(raw, path=str(ctx.path), environ=os.environ)
    chat_with = chat_model(spec, settings=settings, environ=os.environ)  # a bad name or key fails before connecting
    history = ctx.history()
    printer = Printer(options.as_json)
    finished: RunFinished | None = None
    yes = options.yes
    try:
        host = ctx.host(list(options.servers) or None, interactive=True, approve=not yes, yes=yes, history=history)
        async with host:
            for name, status in host.servers.items():
                if status.error and not options.as_json:
                    click.echo(click.style(f"{name}: ", fg="yellow") + safe(status.error), err=True)
            agent = Agent(
                host,
                model=chat_with,
                system=options.system,
                max_steps=options.max_steps,
                tool_search=search,
                history=history,
            )
            if options.prompt is not None:
                finished = await _one_run(agent, options.prompt, printer)
            else:
                await _interactive(agent, printer)
    finally:
        await chat_with.aclose()
        if history is not None:
            history.close()
    if finished is not None and finished.reason == "error":
        sys.exit(1)
