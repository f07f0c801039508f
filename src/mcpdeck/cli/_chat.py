"""``mcpdeck chat``: a model with every connected server's tools, at the terminal.

The model's text goes to stdout as it streams; tool calls, their results and approvals go
to stderr, so ``mcpdeck chat -m M "question" > answer.txt`` keeps only the answer. With
``--json`` every event is one JSON line on stdout instead. The work is in ``_chat_run``,
imported when the command runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import click

from mcpdeck.cli._app import CliContext, pass_ctx, run_async

__all__ = ["ChatOptions", "chat_start", "register_chat_command"]


@dataclass(frozen=True)
class ChatOptions:
    """What ``mcpdeck chat`` was given, as click passes it (``ChatOptions(**params)``), alone or through ``serve``."""

    prompt: str | None
    model: str | None
    servers: tuple[str, ...]
    system: str | None
    yes: bool
    max_steps: int
    tool_search: int | None
    no_tool_search: bool
    as_json: bool


def chat_start(ctx: CliContext, options: ChatOptions) -> tuple[dict[str, Any], str, bool | int]:
    """What a chat settles before it runs, alone or through ``serve``: the config's data, the model's
    name, and the tool search threshold (``False``: never). A server named that the config lacks,
    or no model named anywhere, is an error before anything starts."""
    from mcpdeck.cli._chat_print import NO_MODEL
    from mcpdeck.errors import ProviderError
    from mcpdeck.providers import default_model

    for name in options.servers:
        ctx.server(name)  # an unknown name is an error, not a chat without tools
    raw = ctx.store.read_raw()
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
    @run_async
    async def chat(ctx: CliContext, **options: Any) -> None:
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
        from mcpdeck.cli._chat_run import run_chat

        await run_chat(ctx, ChatOptions(**options))
