"""The console's chats: one ``Agent`` per chat, its runs, and the server requests that borrow its model.

A ``ChatSession`` is one conversation with one model; ``run(prompt)`` streams the run's
events (``run_events``) to one reader and can be stopped from another request. The
conversation and its tool calls go to the history, as ``mcpdeck chat`` records them.
``ChatRoom.sample`` answers a server's sampling request once the user approves it: with the
model of the chat that is running, or for a call made outside a chat (the Tools page) with
the default model of the config (``MCPDECK_MODEL`` or ``"model"``), if one is set up.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp import types

from mcpdeck.agent import Agent, RunFinished, event_json
from mcpdeck.api._asks import Asker, Asks, asker_of, current_asker
from mcpdeck.callbacks import SamplingRequest
from mcpdeck.errors import ConfigError, ProviderError
from mcpdeck.history import History
from mcpdeck.providers import ChatModel, Turn, chat_model, parse_provider_settings

__all__ = ["NO_MODEL", "SHOWN_RESULT", "ChatRoom", "ChatSession", "model_from_config"]

NO_MODEL = (
    'no model is set up to answer it: set MCPDECK_MODEL or "model" in the config file '
    "(or call the tool from a chat, whose model then answers)"
)
"""Why a server's sampling request outside a chat is refused when the config names no model."""


def model_from_config(raw: Mapping[str, Any], path: str | None, spec: str, environ: Mapping[str, str]) -> ChatModel:
    """The model ``spec`` names, with the config's provider settings (``raw`` is the config document).

    Raises:
        ProviderError: The model cannot be made (unknown provider, no key ...).
        ConfigError: The config's ``providers`` are malformed, or name an unset variable.
    """
    settings = parse_provider_settings(raw, path=path, environ=environ)
    return chat_model(spec, settings=settings, environ=environ)


SHOWN_RESULT = 20_000
"""Characters of a tool result sent to the page by default (the model gets its own cap)."""

RunItem = tuple[str, dict[str, Any]]


@dataclass
class ChatSession:
    """One conversation in the console.

    Attributes:
        id: Its id in the API (``/api/chats/{id}``).
        agent: The agent that holds the conversation.
        title: The first prompt (cut), once there is one.
        resumed: The history conversation it continues, if any.
        result_chars: Characters of a tool result its stream carries (None: whole).
    """

    id: str
    agent: Agent
    history: History | None = None
    title: str = ""
    resumed: int | None = None
    result_chars: int | None = SHOWN_RESULT
    _scope: anyio.CancelScope | None = None
    _stopped: bool = False
    _lock: anyio.Lock = field(default_factory=anyio.Lock)

    @property
    def model(self) -> ChatModel:
        return self.agent.model

    @property
    def running(self) -> bool:
        return self._scope is not None

    def conversation(self) -> int | None:
        """Its conversation's id in the history (once it has run), else the one it resumed."""
        key = self.agent.conversation
        if key is not None and self.history is not None:
            return self.history.conversation_id(key)
        return self.resumed

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "model": self.model.name,
            "title": self.title,
            "running": self.running,
            "conversation": self.conversation(),
            "messages": len(self.agent.messages),
        }

    def stop(self) -> bool:
        """Cancel the run in progress; False if none runs."""
        if self._scope is None:
            return False
        self._stopped = True
        self._scope.cancel()
        return True

    async def run(self, prompt: str, send: MemoryObjectSendStream[RunItem], asks: Asks) -> None:
        """Run ``prompt`` and send its events, the questions asked meanwhile, and ``done`` last.

        A reader that leaves (``send`` broken) stops the run.
        """
        self.title = self.title or " ".join(prompt.split())[:80]
        watcher = send.clone()

        asker = Asker("chat", self.id)

        def show(kind: str, data: dict[str, Any]) -> bool:
            if not asker.owns(data):
                return False
            try:
                watcher.send_nowait((kind, data))
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return False
            return True

        token = current_asker.set(asker)
        off = asks.watch(show)
        finished = False
        try:
            async with send:
                with anyio.CancelScope() as scope:
                    self._scope, self._stopped = scope, False
                    async for event in self.agent.run(prompt):
                        await send.send(event_json(event, self.result_chars))
                        finished = finished or isinstance(event, RunFinished)
                if not finished and self._stopped:
                    text = ""
                    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                        await send.send(("done", {"reason": "stopped", "steps": 0, "text": text}))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the reader left: the run was cancelled by leaving the loop
        finally:
            self._scope = None
            off()
            watcher.close()
            current_asker.reset(token)


class ChatRoom:
    """The open chats of one API.

    Attributes:
        asks: The questions for the user.
        default_model: Makes the config's default model (None: it names none), for a server's
            sampling request outside a chat; set by ``ApiContext``.
    """

    def __init__(self, asks: Asks | None = None):
        self.asks = asks or Asks()
        self.chats: dict[str, ChatSession] = {}
        self.default_model: Callable[[], Awaitable[ChatModel | None]] | None = None
        self._order = itertools.count(1)

    def open(
        self, agent: Agent, history: History | None, *, resumed: int | None = None, title: str = ""
    ) -> ChatSession:
        session = ChatSession(f"chat-{next(self._order)}-{secrets.token_hex(3)}", agent, history, title, resumed)
        self.chats[session.id] = session
        return session

    async def close(self, chat_id: str) -> bool:
        session = self.chats.pop(chat_id, None)
        if session is None:
            return False
        session.stop()
        await session.agent.model.aclose()
        return True

    async def aclose(self) -> None:
        for chat_id in list(self.chats):
            await self.close(chat_id)

    # ----- sampling --------------------------------------------------------------------------

    def _session_for(self, asker: Asker | None) -> ChatSession | None:
        """The chat whose model answers: the asking chat's, or for a request no one can be told
        of (a handshake-era server), the chat that runs; none for a call outside a chat."""
        if asker is not None:
            return self.chats.get(asker.id) if asker.kind == "chat" else None
        running = [s for s in self.chats.values() if s.running]
        return running[-1] if running else None

    async def _lend(self) -> ChatModel:
        """The config's default model, made for one request (the caller closes it).

        Raises:
            RuntimeError: There is none, or it cannot be made (the server gets the reason).
        """
        made = self.default_model
        try:
            model = await made() if made is not None else None
        except (ProviderError, ConfigError) as error:
            raise RuntimeError(f"the default model cannot be used: {error}") from None
        if model is None:
            raise RuntimeError(NO_MODEL)
        return model

    async def sample(self, request: SamplingRequest) -> types.CreateMessageResult:
        """The host's sampling handler: a model answers, if the user approves.

        The model is the asking chat's (or the running chat's); for a tool call made outside a
        chat, the config's default model.

        Raises:
            RuntimeError: No model can answer, or the user refused (the server gets the reason).
        """
        asker = asker_of(request.origin)
        session = self._session_for(asker)
        model = session.model if session is not None else await self._lend()
        try:
            params = request.params
            messages = [{"role": m.role, "text": _text_of(m.content)} for m in params.messages]
            data = {
                "server": request.server,
                "model": model.name,
                "messages": messages,
                "systemPrompt": params.system_prompt,
                "maxTokens": params.max_tokens,
            }
            answer = await self.asks.ask("sampling", data, Asker("chat", session.id) if session is not None else asker)
            if answer is None or answer.get("answer") != "approve":
                raise RuntimeError(
                    "the user did not allow it" if answer is not None else "no one was in the console to allow it"
                )
            prompt = "\n\n".join(f"{m['role']}: {m['text']}" if len(messages) > 1 else m["text"] for m in messages)
            text = await _complete(model, prompt, params.system_prompt)
        finally:
            if session is None:
                await model.aclose()
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=text), model=model.name, stop_reason="endTurn"
        )


def _text_of(content: Any) -> str:
    blocks: list[Any] = cast(list[Any], content) if isinstance(content, list) else [content]
    parts = [getattr(block, "text", None) or f"[{getattr(block, 'type', 'content')}]" for block in blocks]
    return "\n".join(parts)


async def _complete(model: ChatModel, prompt: str, system: str | None) -> str:
    text = ""
    async for item in model.stream([model.user_message(prompt)], system=system):
        if isinstance(item, Turn):
            text = item.text
    return text
