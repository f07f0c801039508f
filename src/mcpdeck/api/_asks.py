"""Questions the host needs a person to answer, asked through the console.

Three kinds, each sent as an ``ask`` event to whoever watches (a chat's run stream, or the
stream of a tool call made with ``Accept: text/event-stream``, as the Tools page makes them):

- ``approval``: the permission gate leaves a model's tool call to the user (the answer is
  ``once``, ``session``, ``always`` or ``deny``);
- ``elicitation``: a server asks the user to fill a form or to open a page (``accept`` with
  the form's content, ``decline`` or ``cancel``); for a page, ``host`` names where it leads;
- ``sampling``: a server asks for a model completion (``approve`` or ``deny``).

``Asks`` hands each question to the watchers and waits for ``POST /api/asks/{id}``. A question
belongs to the chat or the call whose request it came in (``current_asker``, read from the
question's ``origin``: a 2026-07-28 server asks inside the call; a handshake-era server asks on its
connection, and its question belongs to the one request running on that server); one that cannot be
told (several requests run on that server) is shown to every watcher, and the first answer counts.
With no one watching, nobody can answer: an approval is denied, an elicitation declined, a sampling
request refused, at once, saying why. A question whose asker gives up (a stopped run, a closed call)
is withdrawn (``ask-closed``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from contextvars import Context, ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import anyio

from mcpdeck.callbacks import ElicitationRequest, ElicitationResponse
from mcpdeck.permissions import Approval, ApprovalRequest

__all__ = ["Ask", "AskKind", "Asker", "Asks", "asker_of", "current_asker"]

AskKind = Literal["approval", "elicitation", "sampling"]


@dataclass(frozen=True)
class Asker:
    """Who a question is for: a console chat's run, or a tool call made through the API."""

    kind: Literal["chat", "call"]
    id: str

    def owns(self, data: dict[str, Any]) -> bool:
        """Whether an ``ask`` / ``ask-closed`` event is for this asker: its own, or one of no one's."""
        if data.get("chat") is None and data.get("call") is None:
            return True
        return data.get(self.kind) == self.id


current_asker: ContextVar[Asker | None] = ContextVar("mcpdeck_api_asker", default=None)
"""The chat or call whose task is asking (set by the chat's runner and the streamed call; tasks they
start inherit it)."""


def asker_of(origin: Context | None) -> Asker | None:
    """Who asks: the chat or call of the host request a server's question belongs to (``origin``),
    else of the task asking."""
    return (origin.get(current_asker) if origin is not None else None) or current_asker.get()


Watcher = Callable[[str, dict[str, Any]], bool]
"""``watcher(event, data)``: take an ``ask`` or ``ask-closed`` event; True if it will show it."""


def _owner(asker: Asker | None) -> dict[str, str | None]:
    return {
        "chat": asker.id if asker is not None and asker.kind == "chat" else None,
        "call": asker.id if asker is not None and asker.kind == "call" else None,
    }


@dataclass
class Ask:
    """One open question."""

    id: str
    kind: AskKind
    asker: Asker | None
    data: dict[str, Any]
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, **_owner(self.asker), **self.data}


class Asks:
    """Open questions, and the watchers they are shown to."""

    def __init__(self) -> None:
        self._pending: dict[str, Ask] = {}
        self._watchers: dict[int, Watcher] = {}
        self._ids = itertools.count(1)

    def watch(self, watcher: Watcher) -> Callable[[], None]:
        """Show every new question to ``watcher`` (the open ones first); returns how to stop."""
        key = next(self._ids)
        self._watchers[key] = watcher
        for ask in list(self._pending.values()):
            watcher("ask", ask.to_json())
        return lambda: self._watchers.pop(key, None) and None

    def pending(self) -> list[Ask]:
        """The questions waiting for an answer, oldest first."""
        return list(self._pending.values())

    def get(self, ask_id: str) -> Ask | None:
        return self._pending.get(ask_id)

    async def ask(self, kind: AskKind, data: dict[str, Any], asker: Asker | None = None) -> dict[str, Any] | None:
        """Ask, and wait for the answer; None if nobody watches (nobody could answer)."""
        ask = Ask(id=f"ask-{next(self._ids)}", kind=kind, asker=asker, data=data)
        shown = ask.to_json()
        self._pending[ask.id] = ask
        try:
            if not [watcher for watcher in list(self._watchers.values()) if watcher("ask", shown)]:
                return None
            await ask.answered.wait()
            return ask.answer
        finally:
            del self._pending[ask.id]
            for watcher in list(self._watchers.values()):
                watcher("ask-closed", {"id": ask.id, **_owner(asker)})

    def answer(self, ask_id: str, answer: dict[str, Any]) -> bool:
        """Answer an open question; False if there is none by that id (answered, withdrawn or unknown)."""
        ask = self._pending.get(ask_id)
        if ask is None or ask.answered.is_set():
            return False
        ask.answer = answer
        ask.answered.set()
        return True

    # ----- the host's callbacks ------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> Approval:
        """The permission gate's approver: the user answers in the console."""
        annotations = request.annotations.model_dump(by_alias=True, exclude_none=True) if request.annotations else {}
        data = {
            "tool": request.name,
            "server": request.server,
            "originalName": request.original_name,
            "arguments": dict(request.arguments),
            "annotations": annotations,
            "description": request.description,
        }
        answer = await self.ask("approval", data, current_asker.get())
        if answer is None:
            return Approval.deny("no one was in the console to approve it")
        kind = answer.get("answer")
        if kind == "once":
            return Approval.once()
        if kind == "session":
            return Approval.session()
        if kind == "always":
            return Approval.always()
        reason = answer.get("reason")
        return Approval.deny(reason if isinstance(reason, str) and reason else None)

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        """The host's elicitation handler: a form or a page, shown in the console."""
        data: dict[str, Any] = {"server": request.server, "mode": request.mode, "message": request.message}
        if request.mode == "form":
            data["schema"] = request.schema or {}
        else:
            data["url"] = request.url
            data["host"] = urlsplit(request.url or "").hostname or ""
        answer = await self.ask("elicitation", data, asker_of(request.origin))
        if answer is None:
            return ElicitationResponse("decline")
        action = answer.get("action")
        if action == "accept":
            content: Any = answer.get("content")
            return ElicitationResponse("accept", cast(dict[str, Any], content) if isinstance(content, dict) else None)
        return ElicitationResponse("cancel" if action == "cancel" else "decline")
