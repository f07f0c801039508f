"""Running one model turn in a test: the text deltas and the one ``Turn``, bounded in time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from mcpdeck.providers import ChatModel, TextDelta, ToolCall, ToolDefinition, Turn
from mcpdeck.results import ToolResult
from tests.helpers import WAIT
from tests.providers.support import result, text

__all__ = ["ADD", "ECHO", "SPECS", "answer", "take_turn"]

ECHO = ToolDefinition(
    "mcp__everything__echo",
    "Echoes back the input",
    {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
)
ADD = ToolDefinition(
    "mcp__everything__add",
    "Adds two numbers",
    {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
)
SPECS = [ECHO, ADD]


async def take_turn(
    model: ChatModel,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] = (),
    system: str | None = None,
) -> tuple[list[str], Turn]:
    """The text deltas of one turn and its ``Turn``, checking the Turn comes once, last."""
    deltas: list[str] = []
    turns: list[Turn] = []
    with anyio.fail_after(WAIT):
        async for item in model.stream(messages, tools=tools, system=system):
            assert not turns, f"{item!r} came after the Turn"
            if isinstance(item, TextDelta):
                deltas.append(item.text)
            else:
                turns.append(item)
    assert len(turns) == 1
    return deltas, turns[0]


def answer(calls: Sequence[ToolCall]) -> list[tuple[ToolCall, ToolResult]]:
    """What the tools would say: ``Echo: <message>`` for echo, the sum for add."""
    results: list[tuple[ToolCall, ToolResult]] = []
    for call in calls:
        if call.name == ECHO.name:
            results.append((call, result(text(f"Echo: {call.arguments['message']}"), name=call.name)))
        else:
            total = call.arguments["a"] + call.arguments["b"]
            results.append((call, result(text(f"{total:g}"), name=call.name)))
    return results
