"""A chat in this process (``_backend.ChatSession``): a host for the servers, an agent, the terminal's answers.

Imported only when such a chat runs: the agent and the provider SDKs are heavy.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread

from mcpdeck.agent import Agent, event_json
from mcpdeck.cli._app import CliContext
from mcpdeck.cli._backend import ChatOptions
from mcpdeck.cli._chat_print import read_turn
from mcpdeck.providers import chat_model, parse_provider_settings

__all__ = ["HostChat", "host_chat"]


class HostChat:
    """An agent over a host of this process."""

    def __init__(self, agent: Agent, errors: dict[str, str]):
        self.agent = agent
        self.model = agent.model.name
        self.errors = errors

    def tool_count(self) -> int:
        return len(self.agent.catalog)

    def tool_names(self) -> list[str]:
        return [t.name for t in self.agent.native_tools] + self.agent.catalog.names()

    def reset(self) -> None:
        self.agent.reset()

    async def read_turn(self) -> str | None:
        return await anyio.to_thread.run_sync(read_turn, abandon_on_cancel=True)  # the servers run meanwhile

    async def run(self, prompt: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        async for event in self.agent.run(prompt):
            yield event_json(event)


@asynccontextmanager
async def host_chat(
    ctx: CliContext, options: ChatOptions, spec: str, search: bool | int, raw: dict[str, Any]
) -> AsyncGenerator[HostChat]:
    """The chat of ``mcpdeck chat`` alone: the model made here (a bad name or key fails before any server starts)."""
    settings = parse_provider_settings(raw, path=str(ctx.path), environ=os.environ)
    chat_with = chat_model(spec, settings=settings, environ=os.environ)
    history = ctx.history()
    yes = options.yes
    try:
        host = ctx.host(list(options.servers) or None, interactive=True, approve=not yes, yes=yes, history=history)
        async with host:
            errors = {name: status.error for name, status in host.servers.items() if status.error}
            agent = Agent(
                host,
                model=chat_with,
                system=options.system,
                max_steps=options.max_steps,
                tool_search=search,
                history=history,
            )
            yield HostChat(agent, errors)
    finally:
        await chat_with.aclose()
        if history is not None:
            history.close()
