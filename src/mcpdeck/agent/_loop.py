"""The agent loop: a model, the host's MCP tools and native Python tools, behind the permission gate.

::

    async with Host.from_file() as host:
        agent = Agent(host, model="anthropic:claude-sonnet-4-5", tools=[my_function])
        async for event in agent.run("Which files changed today?"):
            ...

Each run rebuilds the tool list from the host's catalog as it is then, so servers that came,
went or changed their tools are seen. A turn's tool calls run side by side when every tool in
a stretch of them says ``readOnlyHint``, one after another otherwise, and their results go back
in the order the model asked. Calls the model makes always pass the host's permission gate.

With many tools (more than ``tool_search``, 40 by default) the model is first sent only the
native tools and ``search_tools``; what it finds joins the list for the rest of the
conversation. ``servers`` keeps the model to some servers' tools and resources. The calls of a
turn are run by ``_dispatch``.

The conversation (``messages``, in the provider's format) carries over from run to run.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import Any, Self

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from mcpdeck.agent._builtins import resource_tools as _resource_tools
from mcpdeck.agent._dispatch import Dispatch, Resolved
from mcpdeck.agent._events import AgentError, AgentEvent, ModelTurn, RunFinished, TextChunk
from mcpdeck.agent._search import ToolIndex, search_tool
from mcpdeck.agent._tools import NativeTool, as_tool
from mcpdeck.catalog import Catalog
from mcpdeck.errors import MCPDeckError, ProviderError
from mcpdeck.events import current_conversation
from mcpdeck.history import History
from mcpdeck.host import Host
from mcpdeck.providers import ChatModel, TextDelta, ToolSpec, Usage, chat_model

__all__ = ["DEFAULT_MAX_RESULT_TOKENS", "DEFAULT_MAX_STEPS", "DEFAULT_TOOL_SEARCH", "Agent"]

DEFAULT_MAX_STEPS = 25
"""Model turns one run may take."""
DEFAULT_MAX_RESULT_TOKENS = 25_000
"""The cap on one tool result sent to the model, in tokens (counted as 4 characters each)."""
DEFAULT_TOOL_SEARCH = 40
"""With more tools than this, the model finds them with ``search_tools``."""
_CHARS_PER_TOKEN = 4


class Agent:
    """Runs a model with the host's tools and native Python tools.

    Attributes:
        host: The open host whose tools the model gets.
        model: The chat model.
        messages: The conversation so far, in the model provider's format.
        found: Names of the tools tool search has offered, kept for the conversation.
    """

    def __init__(
        self,
        host: Host,
        *,
        model: str | ChatModel,
        tools: Sequence[Callable[..., Any] | NativeTool] = (),
        system: str | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_result_tokens: int | None = DEFAULT_MAX_RESULT_TOKENS,
        tool_search: bool | int = DEFAULT_TOOL_SEARCH,
        resource_tools: bool = True,
        history: History | None = None,
        servers: Iterable[str] | None = None,
        **model_options: Any,
    ):
        """Create an agent (nothing is sent until ``run``).

        Args:
            host: An open ``Host``.
            model: ``provider:model`` (``openai:gpt-4.1``, ``anthropic:claude-sonnet-4-5``,
                ``gemini:gemini-2.5-flash``, ``ollama:llama3.2``) or a ``ChatModel``.
            tools: Native tools: functions (plain or ``@tool``-decorated) or ``NativeTool``\\ s.
            system: The system prompt.
            max_steps: Model turns one run may take.
            max_result_tokens: The cap on one tool result's text (about 4 characters a token;
                None: no cap). What is cut is said in the result.
            tool_search: The tool count above which the model searches for tools instead of
                being sent them all; True always searches, False never does.
            resource_tools: Offer ``list_mcp_resources`` and ``read_mcp_resource``.
            history: Where the conversation and its tool calls are recorded.
            servers: Offer only these servers' tools and resources (default: every server's).
            **model_options: Passed to ``chat_model`` when ``model`` is a name (``api_key``,
                ``base_url`` ...).

        Raises:
            ProviderError: The model cannot be used (unknown provider, SDK missing, no key).
            ValueError: Two native tools share a name, or one is named ``mcp__...``.
        """
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.host = host
        self._owns_model = not isinstance(model, ChatModel)
        self.model = model if isinstance(model, ChatModel) else chat_model(model, **model_options)
        self.model.converter.max_chars = max_result_tokens * _CHARS_PER_TOKEN if max_result_tokens is not None else None
        self.system = system
        self.max_steps = max_steps
        self.history = history
        self.messages: list[dict[str, Any]] = []
        self.found: list[str] = []
        self.servers = frozenset(servers) if servers is not None else None
        self._view: tuple[Catalog, Catalog] | None = None
        self._threshold = 0 if tool_search is True else (math.inf if tool_search is False else tool_search)
        self._native = [as_tool(t) for t in tools]
        if resource_tools:
            taken = {t.name for t in self._native}
            self._native += [t for t in _resource_tools(host, servers=self.servers) if t.name not in taken]
        self._search = search_tool(self._find, self._on_found)
        self._check_names()
        self._conversation: str | None = None

    def _check_names(self) -> None:
        seen: set[str] = set()
        for native in self._native:
            if native.name in seen:
                raise ValueError(f"two native tools are named {native.name!r}; give one another name")
            seen.add(native.name)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the model's connections, if the agent made the model (from a name)."""
        if self._owns_model:
            await self.model.aclose()

    @property
    def native_tools(self) -> list[NativeTool]:
        """The native tools the model is offered (``search_tools`` joins them in search mode)."""
        return list(self._native)

    @property
    def conversation(self) -> str | None:
        """The key this conversation is recorded under (``current_conversation``); None before its first run."""
        return self._conversation

    def reset(self) -> None:
        """Forget the conversation (the next run starts a new one)."""
        self.messages = []
        self.found = []
        self._conversation = None

    # ----- the tool list ------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        """The host's tools this agent offers: the whole catalog, or the part of ``servers``.

        The part is made once per catalog version, so conversions and the search index are
        cached for it as for the whole catalog.
        """
        whole = self.host.catalog
        if self.servers is None:
            return whole
        if self._view is None or self._view[0] is not whole:
            part = Catalog((tool for tool in whole if tool.server in self.servers), version=whole.version)
            self._view = (whole, part)
        return self._view[1]

    def searching(self) -> bool:
        """Whether this run's tools are found by search (the catalog is over the threshold)."""
        return len(self.catalog) + len(self._native) > self._threshold

    def _find(self, query: str, limit: int) -> list[ToolSpec]:
        index = ToolIndex.for_tools(self.catalog, self._native)
        return [spec for spec, _ in index.search(query, limit)]

    def _on_found(self, specs: list[ToolSpec]) -> None:
        self.found.extend(spec.name for spec in specs if spec.name not in self.found)

    def _offered(self, searching: bool) -> tuple[Any, list[ToolSpec]]:
        """The catalog part and the native part of what the model is sent."""
        if not searching:
            return self.catalog, list(self._native)
        catalog = self.catalog
        found = [tool for name in self.found if (tool := catalog.get(name)) is not None]
        return found, [*self._native, self._search]

    def _resolve(self, name: str, searching: bool) -> Resolved:
        for native in self._native:
            if native.name == name:
                return native
        if searching and name == self._search.name:
            return self._search
        return self.catalog.get(name)

    # ----- running ------------------------------------------------------------------------

    async def run(self, prompt: str) -> AsyncGenerator[AgentEvent]:
        """Send ``prompt`` and run until the model answers without calling tools.

        Yields every ``AgentEvent`` as it happens; ``RunFinished`` is always last. Errors are
        reported as ``AgentError`` events, not raised. Leaving the loop early cancels the run
        (the turn in progress is dropped from the conversation).
        """
        send, receive = anyio.create_memory_object_stream[AgentEvent](64)
        scope = anyio.CancelScope()
        self.host.start_task(self._run_task, prompt, send, scope, name="mcpdeck agent run")
        try:
            async with receive:
                async for event in receive:
                    yield event
        finally:
            scope.cancel()

    async def ask(self, prompt: str) -> str:
        """Run ``prompt`` and return the final text.

        Raises:
            ProviderError: The provider failed the run.
            MCPDeckError: The run ended in another error.
        """
        failure: AgentError | None = None
        text = ""
        async for event in self.run(prompt):
            if isinstance(event, AgentError) and event.kind != "tool":
                failure = event
            elif isinstance(event, RunFinished):
                text = event.text
        if failure is not None:
            if failure.kind == "provider":
                raise ProviderError(failure.message, provider=self.model.provider, retryable=failure.retryable)
            raise MCPDeckError(failure.message)
        return text

    async def _run_task(self, prompt: str, send: MemoryObjectSendStream[AgentEvent], scope: anyio.CancelScope) -> None:
        async with send:
            with scope:
                token = current_conversation.set(self._conversation_key(prompt))
                try:
                    await self._run(prompt, send)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass  # the reader has gone: there is no one left to tell
                except Exception as error:  # never into the host's task group: report it
                    message = f"the agent loop failed: {error!r}"
                    self._record("error", {"kind": "internal", "message": message})
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                        await send.send(AgentError(message, kind="internal"))
                        await send.send(RunFinished(text="", reason="error", steps=0))
                finally:
                    current_conversation.reset(token)

    def _conversation_key(self, prompt: str) -> str:
        """The conversation's key; its first run opens it in the history, whether the model answers or not
        (a conversation that failed is listed with the error that ended it)."""
        if self._conversation is None:
            self._conversation = uuid.uuid4().hex
            if self.history is not None:
                self.history.open_conversation(self._conversation, model=self.model.name, title=prompt[:80])
        return self._conversation

    def _record(self, role: str, content: Any) -> None:
        """Add a message to the conversation in the history (queued: never waits on the disk).

        Besides the provider's messages, ``error`` (``{"kind", "message"}``) records why a run
        failed; it is never sent to a model again.
        """
        if self.history is None or self._conversation is None:
            return
        self.history.add_message(self._conversation, role, content)

    async def _run(self, prompt: str, send: MemoryObjectSendStream[AgentEvent]) -> None:
        user = self.model.user_message(prompt)
        self.messages.append(user)
        self._record("user", user)
        converter = self.model.converter
        usage_in = usage_out = 0
        steps = 0
        text = ""
        while True:
            searching = self.searching()
            catalog_part, native_part = self._offered(searching)
            tools = converter.tools(catalog_part, native_part)
            steps += 1
            turn = None
            try:
                async for item in self.model.stream(self.messages, tools=tools, system=self.system):
                    if isinstance(item, TextDelta):
                        await send.send(TextChunk(item.text))
                    else:
                        turn = item
            except ProviderError as error:
                self._record("error", {"kind": "provider", "message": str(error)})
                await send.send(AgentError(str(error), kind="provider", retryable=error.retryable))
                await send.send(RunFinished(text=text, reason="error", steps=steps, usage=Usage(usage_in, usage_out)))
                return
            if turn is None:  # pragma: no cover - every adapter ends with a Turn
                raise RuntimeError("the model's stream ended without a turn")
            if turn.usage is not None:
                usage_in += turn.usage.input_tokens or 0
                usage_out += turn.usage.output_tokens or 0
            text = turn.text
            await send.send(ModelTurn(steps, turn.text, turn.tool_calls, turn.stop_reason, turn.usage))
            if not turn.tool_calls:
                self.messages.extend(turn.messages)
                self._record("assistant", turn.messages)
                await send.send(RunFinished(text=text, reason="done", steps=steps, usage=Usage(usage_in, usage_out)))
                return
            dispatch = Dispatch(self.host, send, self._search, self.found, searching, converter.max_chars)
            resolved = [self._resolve(call.name, searching) for call in turn.tool_calls]
            results = await dispatch.run(turn.tool_calls, resolved)
            answers = converter.tool_results(list(zip(turn.tool_calls, results, strict=True)))
            # the turn and its answers join the conversation together, or not at all
            self.messages.extend(turn.messages)
            self.messages.extend(answers)
            self._record("assistant", turn.messages)
            self._record("tool", answers)
            if steps >= self.max_steps:
                await send.send(
                    RunFinished(text=text, reason="max_steps", steps=steps, usage=Usage(usage_in, usage_out))
                )
                return
