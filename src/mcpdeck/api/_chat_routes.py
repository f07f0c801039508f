"""``/api/chat``: models, chats with the agent (streamed runs, stop); ``/api/asks``: questions for the user.

A chat is made with ``POST /api/chats`` (a model, a system prompt, or a past conversation
to go on with); ``POST /api/chats/{id}/messages`` sends a prompt and answers with the
run as server-sent events: ``text``, ``turn``, ``tool-call``, ``progress``,
``tool-result``, ``tools-found``, ``error``, ``ask`` / ``ask-closed`` (questions for the
user, answered with ``POST /api/asks/{id}``) and ``done`` last (``reason``: ``done``,
``max_steps``, ``error`` or ``stopped``). ``POST /api/chats/{id}/stop`` stops it; so does
closing the stream. Conversations are recorded in the history as ``mcpdeck chat``
records them; ``/api/history/conversations`` lists them.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import asdict
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
from fastapi import APIRouter
from pydantic import BaseModel, Field
from starlette.responses import StreamingResponse

from mcpdeck.agent import Agent
from mcpdeck.api._common import ApiContextDep, require_server
from mcpdeck.api._context import ApiContext
from mcpdeck.api._errors import ApiError
from mcpdeck.api._events import HEARTBEAT, sse, stream_response
from mcpdeck.api._sessions import SHOWN_RESULT, ChatSession, RunItem, model_from_config
from mcpdeck.errors import ConfigError, ProviderError
from mcpdeck.providers import default_model, parse_provider_settings, provider_readiness

__all__ = ["router"]

router = APIRouter(tags=["chat"])


class ProviderOut(BaseModel):
    name: str
    api: str = Field(description="The wire format it speaks.")
    ready: bool = Field(
        description="Whether a model of it can be used now: a key is set where one is needed, and a local "
        "provider (on localhost) takes a connection."
    )
    note: str = Field(description="What is missing, or where its key comes from.")


class ModelsOut(BaseModel):
    default: str | None = Field(description="$MCPDECK_MODEL, else the config's top-level `model`.")
    models: list[str] = Field(description="Models to offer: the default, then the ones used in past conversations.")
    providers: list[ProviderOut]


class ChatIn(BaseModel):
    model: str | None = Field(default=None, description="provider:model (default: the default model).")
    system: str | None = None
    conversation: int | None = Field(default=None, description="A past conversation (history id) to go on with.")
    maxSteps: int = Field(default=25, ge=1, le=200)
    servers: list[str] | None = Field(
        default=None, description="Offer only these servers' tools and resources (default: every server's)."
    )
    toolSearch: bool | Annotated[int, Field(ge=0)] = Field(
        default=40,
        description="Let the model search for tools when there are more than N (0 or true: always; false: never).",
    )
    resultChars: Annotated[int, Field(ge=0)] | None = Field(
        default=SHOWN_RESULT, description="Characters of a tool result the stream carries (null: all of it)."
    )
    environment: dict[str, str] | None = Field(
        default=None,
        description="The variables the model is made from (its key, its URL, the config's ${VAR}s) instead of "
        "serve's own environment: kept only in the chat's model, never stored, logged or sent back.",
    )


class ChatOut(BaseModel):
    id: str
    model: str
    title: str
    running: bool
    conversation: int | None
    messages: int


class PromptIn(BaseModel):
    prompt: str = Field(min_length=1)


class AnswerIn(BaseModel):
    """An answer: ``answer`` for an approval (once, session, always, deny) or sampling (approve, deny);
    ``action`` (accept, decline, cancel) and ``content`` for an elicitation."""

    answer: Literal["once", "session", "always", "deny", "approve"] | None = None
    action: Literal["accept", "decline", "cancel"] | None = None
    content: dict[str, Any] | None = None
    reason: str | None = None


async def _config(ctx: ApiContext) -> Mapping[str, Any]:
    if ctx.store is None:
        return {}
    return (await anyio.to_thread.run_sync(ctx.store.document)).raw


@router.get("/chat/models", response_model=ModelsOut, summary="Models the chat can use")
async def models(ctx: ApiContextDep) -> dict[str, Any]:
    """The default model, models used before, and every provider with whether it is ready (a key where one is
    needed; a local provider, such as Ollama, answering: a TCP connect of at most a second)."""
    raw = await _config(ctx)
    path = str(ctx.store.path) if ctx.store is not None else None
    try:
        settings = parse_provider_settings(raw, path=path, environ=os.environ)
    except ConfigError as error:
        raise ApiError(400, "config-error", str(error)) from None
    providers = [asdict(p) for p in await provider_readiness(settings, os.environ)]
    default = default_model(os.environ, raw)
    offered = [default] if default else []
    if ctx.history is not None:
        db = ctx.history
        past = await anyio.to_thread.run_sync(lambda: db.conversations(limit=50))
        offered += [c["model"] for c in past if c.get("model")]
    offered += [s.model.name for s in ctx.chats.chats.values()]
    return {"default": default, "models": list(dict.fromkeys(offered)), "providers": providers}


def _session(ctx: ApiContext, chat_id: str) -> ChatSession:
    session = ctx.chats.chats.get(chat_id)
    if session is None:
        raise ApiError(404, "chat-not-found", f"no chat {chat_id!r}; start one with POST /api/chats")
    return session


@router.get("/chats", response_model=list[ChatOut], summary="Open chats")
async def list_chats(ctx: ApiContextDep) -> list[dict[str, Any]]:
    """The chats open in this process (past conversations: ``/api/history/conversations``)."""
    return [s.to_json() for s in ctx.chats.chats.values()]


@router.post("/chats", response_model=ChatOut, status_code=201, summary="Start a chat")
async def start_chat(ctx: ApiContextDep, body: ChatIn) -> dict[str, Any]:
    """A new chat with a model; with ``conversation``, one that goes on from a past conversation."""
    raw = await _config(ctx)
    past: list[dict[str, Any]] = []
    title = ""
    spec = body.model
    if body.conversation is not None:
        db = ctx.history
        if db is None:
            raise ApiError(400, "no-history", "the history is off, so there is no past conversation to go on with")
        conversation = body.conversation
        past = await anyio.to_thread.run_sync(lambda: db.messages(conversation))
        found = [
            c for c in await anyio.to_thread.run_sync(lambda: db.conversations(limit=10_000)) if c["id"] == conversation
        ]
        if not found:
            raise ApiError(404, "conversation-not-found", f"no conversation {conversation} in {db.where}")
        spec = spec or found[0].get("model")
        title = found[0].get("title") or ""
    environ: Mapping[str, str] = os.environ if body.environment is None else body.environment
    for name in body.servers or ():
        require_server(ctx, name)
    spec = spec or default_model(environ, raw)
    if not spec:
        raise ApiError(
            400,
            "no-model",
            'name a model (provider:model, e.g. openai:gpt-4.1), or set MCPDECK_MODEL or "model" in the config file',
        )
    try:
        model = model_from_config(raw, str(ctx.store.path) if ctx.store is not None else None, spec, environ)
    except (ProviderError, ConfigError) as error:
        raise ApiError(400, "provider-error", str(error)) from None
    agent = Agent(
        ctx.host,
        model=model,
        system=body.system,
        max_steps=body.maxSteps,
        history=ctx.history,
        servers=body.servers,
        tool_search=body.toolSearch,
    )
    for message in past:
        if message["role"] == "error":  # why a run failed: for the reader, not the model
            continue
        content = message["content"]
        if isinstance(content, list):
            agent.messages.extend(content)  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(content, dict):
            agent.messages.append(content)  # pyright: ignore[reportUnknownArgumentType]
    session = ctx.chats.open(agent, ctx.history, resumed=body.conversation, title=title)
    session.result_chars = body.resultChars
    return session.to_json()


class ChatToolsOut(BaseModel):
    native: list[str] = Field(description="The native tools (and search_tools, when the model searches).")
    mcp: list[str] = Field(description="The servers' tools the chat can use (found by search or not yet).")


@router.get("/chats/{chat_id}/tools", response_model=ChatToolsOut, summary="What a chat offers the model")
async def chat_tools(ctx: ApiContextDep, chat_id: str) -> dict[str, list[str]]:
    """The names of the tools the chat's model can use now (``mcpdeck chat``'s ``/tools``)."""
    agent = _session(ctx, chat_id).agent
    return {"native": [t.name for t in agent.native_tools], "mcp": agent.catalog.names()}


@router.delete("/chats/{chat_id}", status_code=204, summary="Close a chat")
async def close_chat(ctx: ApiContextDep, chat_id: str) -> None:
    """Stop its run, close its model; the history keeps the conversation."""
    _session(ctx, chat_id)
    await ctx.chats.close(chat_id)


@router.post(
    "/chats/{chat_id}/messages",
    summary="Send a prompt; the run streams back (SSE)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "The run's events."}},
)
async def send_prompt(ctx: ApiContextDep, chat_id: str, body: PromptIn) -> StreamingResponse:
    """Run the prompt; events as they happen, ``done`` last. Closing the stream stops the run."""
    session = _session(ctx, chat_id)
    if session.running:
        raise ApiError(409, "chat-busy", "this chat is still answering; stop it first (POST .../stop)")
    send, receive = anyio.create_memory_object_stream[RunItem](256)
    ctx.host.start_task(session.run, body.prompt, send, ctx.chats.asks, name=f"mcpdeck chat {chat_id}")

    async def stream() -> AsyncIterator[bytes]:
        with receive:
            yield b": connected\n\n"
            while True:
                item: RunItem | None = None
                with anyio.move_on_after(HEARTBEAT):
                    try:
                        item = await receive.receive()
                    except anyio.EndOfStream:
                        return
                if item is None:
                    yield b": keep-alive\n\n"
                    continue
                kind, data = item
                yield sse(kind, data)

    return stream_response(stream())


@router.post("/chats/{chat_id}/stop", summary="Stop the running answer")
async def stop_chat(ctx: ApiContextDep, chat_id: str) -> dict[str, bool]:
    """Cancel the run in progress (its stream ends with ``done``, reason ``stopped``)."""
    return {"stopped": _session(ctx, chat_id).stop()}


@router.get("/asks", summary="Open questions for the user")
async def list_asks(ctx: ApiContextDep) -> list[dict[str, Any]]:
    """Approvals, elicitations and sampling requests waiting for an answer."""
    return [ask.to_json() for ask in ctx.chats.asks.pending()]


@router.post("/asks/{ask_id}", summary="Answer a question")
async def answer_ask(ctx: ApiContextDep, ask_id: str, body: AnswerIn) -> dict[str, bool]:
    """Answer an approval (``answer``: once, session, always, deny), an elicitation (``action``,
    ``content``) or a sampling request (``answer``: approve, deny)."""
    ask = ctx.chats.asks.get(ask_id)
    if ask is None:
        raise ApiError(404, "ask-not-found", f"no open question {ask_id!r}; it was answered or withdrawn")
    if ask.kind == "approval" and body.answer not in ("once", "session", "always", "deny"):
        raise ApiError(422, "invalid-request", "answer an approval with once, session, always or deny")
    if ask.kind == "sampling" and body.answer not in ("approve", "deny"):
        raise ApiError(422, "invalid-request", "answer a sampling request with approve or deny")
    if ask.kind == "elicitation" and body.action is None:
        raise ApiError(422, "invalid-request", "answer an elicitation with action accept, decline or cancel")
    answered = ctx.chats.asks.answer(ask_id, body.model_dump(exclude_none=True))
    return {"answered": answered}
