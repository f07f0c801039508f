"""``mcpdeck chat``: a model with every connected server's tools, at the terminal.

The model's text goes to stdout as it streams; tool calls, their results and approvals go
to stderr, so ``mcpdeck chat -m M "question" > answer.txt`` keeps only the answer. With
``--json`` every event is one JSON line on stdout instead. The chat runs on the backend
that answers the command (``Backend.chat``: an agent here, ``_chat_host``, or a chat in a
running ``serve``, ``_chat_serve``); what it shows is the same either way (``_chat_print``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from mcpdeck.cli._app import CliContext, pass_ctx
from mcpdeck.cli._backend import ChatOptions
from mcpdeck.cli._switch import on_backend

if TYPE_CHECKING:
    from mcpdeck.cli._backend import Backend, ChatSession
    from mcpdeck.cli._chat_print import Printer

__all__ = ["chat_start", "register_chat_command"]


def chat_start(ctx: CliContext, options: ChatOptions) -> tuple[dict[str, Any], str, bool | int]:
    """What a chat settles before it runs, alone or through ``serve``: the config's data, the model's
    name, and the tool search threshold (``False``: never). A server named that the config lacks,
    or no model named anywhere, is an error before anything starts."""
    from mcpdeck.cli._chat_print import NO_MODEL
    from mcpdeck.errors import ProviderError
    from mcpdeck.providers import default_model

    for name in options.servers:
        ctx.server(name)  # an unknown name is an error, not a chat without tools
    raw = dict(ctx.store.document().raw)  # (a copy of its top level: the backends take a dict)
    spec = options.model or default_model(os.environ, raw)
    if spec is None:
        raise ProviderError(NO_MODEL, provider="")
    if options.no_tool_search:
        return raw, spec, False
    return raw, spec, options.tool_search if options.tool_search is not None else 40


def register_chat_command(cli: click.Group) -> None:
    """Add ``chat`` to the CLI."""

    @cli.command(short_help="Talk to a model that can use the servers' tools.")
    @click.argument("prompt", required=False)
    @click.option(
        "-m", "--model", metavar="PROVIDER:MODEL", help="e.g. openai:gpt-4.1 (default: $MCPDECK_MODEL or config)."
    )
    @click.option("-s", "--server", "servers", multiple=True, metavar="NAME", help="Only these servers (repeatable).")
    @click.option("--system", metavar="INSTRUCTIONS", help="The system prompt.")
    @click.option("-y", "--yes", is_flag=True, help="Approve every tool call the rules leave to ask (deny still wins).")
    @click.option("--max-steps", type=click.IntRange(min=1), default=25, show_default=True, help="Model turns per run.")
    @click.option(
        "--tool-search",
        type=click.IntRange(min=0),
        metavar="N",
        help="Search for tools when there are more than N (default 40; 0: always).",
    )
    @click.option("--no-tool-search", is_flag=True, help="Always send the model every tool.")
    @click.option("--json", "as_json", is_flag=True, help="Every event as one JSON line on stdout.")
    @pass_ctx
    @on_backend("chat")
    async def chat(ctx: CliContext, backend: Backend, **options: Any) -> None:
        """Talk to a model that can use the servers' tools: one answer, or a conversation.

        With PROMPT, one answer; without, a conversation at the terminal. The model is
        named provider:model: openai, openai-responses, anthropic, gemini, ollama, or a
        provider from the config's "providers". Keys come from OPENAI_API_KEY,
        ANTHROPIC_API_KEY, GEMINI_API_KEY (or GOOGLE_API_KEY); endpoints from
        OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GEMINI_BASE_URL, and OLLAMA_HOST or
        OLLAMA_BASE_URL for ollama. Tool calls the permission rules leave to "ask" are
        asked at the terminal unless --yes.

        \b
        Examples:
          mcpdeck chat -m openai:gpt-4.1 "What is in README.md?"
          mcpdeck chat -m ollama:llama3.2 --server fs
        """
        await run_chat(ctx, backend, ChatOptions(**options))


async def run_chat(ctx: CliContext, backend: Backend, options: ChatOptions) -> None:
    """One answer for the prompt, else a conversation at the terminal (see ``mcpdeck chat --help``)."""
    from mcpdeck.cli._chat_print import Printer
    from mcpdeck.cli._output import safe

    raw, spec, search = chat_start(ctx, options)
    printer = Printer(options.as_json)
    finished: dict[str, Any] | None = None
    async with backend.chat(options, spec, search, raw) as session:
        if not options.as_json:
            for name, error in session.errors.items():
                click.echo(click.style(f"{name}: ", fg="yellow") + safe(error), err=True)
        if options.prompt is not None:
            finished = await _one_run(session, options.prompt, printer)
        else:
            await _interactive(session, printer)
    if finished is not None and finished.get("reason") == "error":
        sys.exit(1)


async def _one_run(session: ChatSession, prompt: str, printer: Printer) -> dict[str, Any] | None:
    """Show one prompt's run; the data of its ``done`` event."""
    finished: dict[str, Any] | None = None
    async for kind, data in session.run(prompt):
        printer.show(kind, data)
        finished = data if kind == "done" else finished
    return finished


async def _interactive(session: ChatSession, printer: Printer) -> None:
    from mcpdeck.cli._chat_print import HELP, answer_command

    click.echo(f"chatting with {session.model}; {session.tool_count()} MCP tools. {HELP}", err=True)
    while (line := await session.read_turn()) is not None:
        if not answer_command(line, session.reset, session.tool_names):
            await _one_run(session, line, printer)
