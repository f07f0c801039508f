"""The agent: a model with the host's MCP tools and native Python tools, behind the permission gate.

::

    from mcpdeck.agent import Agent, tool

    @tool(read_only=True)
    def word_count(text: str) -> int:
        'Count the words of a text.'
        return len(text.split())

    async with Host.from_file() as host:
        agent = Agent(host, model="openai:gpt-4.1", tools=[word_count])
        async for event in agent.run("How many words are in README.md?"):
            ...

Native tools are plain functions whose schema comes from their type hints and docstring;
``search_tools`` lets the model find tools in a large catalog (``ToolIndex``, BM25).
``event_json`` gives a run's events as JSON (as the API's chat stream and ``mcpdeck chat --json``).
"""

from mcpdeck.agent._builtins import resource_tools
from mcpdeck.agent._events import (
    AgentError,
    AgentEvent,
    ModelTurn,
    RunFinished,
    TextChunk,
    ToolCallDone,
    ToolCallRequested,
    ToolProgress,
    ToolsFound,
    event_json,
)
from mcpdeck.agent._index import ToolIndex
from mcpdeck.agent._loop import DEFAULT_MAX_RESULT_TOKENS, DEFAULT_MAX_STEPS, DEFAULT_TOOL_SEARCH, Agent
from mcpdeck.agent._search import search_tool
from mcpdeck.agent._tools import NativeTool, ToolError, as_tool, tool
from mcpdeck.agent._words import tokenize

__all__ = [
    "DEFAULT_MAX_RESULT_TOKENS",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_TOOL_SEARCH",
    "Agent",
    "AgentError",
    "AgentEvent",
    "ModelTurn",
    "NativeTool",
    "RunFinished",
    "TextChunk",
    "ToolCallDone",
    "ToolCallRequested",
    "ToolError",
    "ToolIndex",
    "ToolProgress",
    "ToolsFound",
    "as_tool",
    "event_json",
    "resource_tools",
    "search_tool",
    "tokenize",
    "tool",
]
