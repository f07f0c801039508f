"""A chat in a running ``mcpdeck serve`` (``_backend.ChatSession``): its host, its servers, this terminal.

The chat is opened in ``serve`` (``POST /api/chats``) with what the command was given: the
model, the system prompt, the servers (``--server``), tool search, and the variables the
model's provider reads from this process's environment (its key and URL, the ``${VAR}``\\ s
of the config's ``providers`` entry), since ``serve`` may not have them. Each prompt's run
streams back as the same events a chat in this process yields; the questions the run asks
(``ask`` events: approvals, a server's elicitation) are asked at this terminal, as a chat here
asks them, and answered with ``POST /api/asks/{id}`` on a second connection. A server's
sampling request is refused, as a chat here refuses it. The chat is closed when the command
ends, and its model (and the key it holds) with it.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

import anyio

from mcpdeck.cli._attach import Attached, AttachError
from mcpdeck.cli._backend import ChatOptions
from mcpdeck.cli._chat_print import read_turn

__all__ = ["ServeChat", "provider_environment"]

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def provider_environment(spec: str, doc: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` a model ``spec`` is made from: its provider's key and URL variables,
    and those the config's settings for it (``providers.<name>``) refer to."""
    from mcpdeck.providers import builtin_providers, canonical_provider, parse_model

    name = parse_model(spec).provider
    canonical = canonical_provider(name)
    names: list[str] = ["OLLAMA_HOST"] if canonical == "ollama" else []
    builtin = builtin_providers().get(canonical)
    if builtin is not None:
        names += [*builtin.key_env, *builtin.url_env]
    section = doc.get("providers")
    if isinstance(section, Mapping):
        for key, value in cast(Mapping[Any, Any], section).items():
            if str(key).lower() in (name, canonical):
                names += _REFERENCE.findall(repr(value))
    return {variable: environ[variable] for variable in dict.fromkeys(names) if variable in environ}


def _approval(data: dict[str, Any], yes: bool) -> dict[str, Any]:
    """Ask about a tool call as a chat here asks (``--yes``: allowed once, unasked)."""
    if yes:
        return {"answer": "once"}
    import mcp_types as types

    from mcpdeck.cli._terminal import terminal_approval
    from mcpdeck.permissions import ApprovalRequest

    hints = data.get("annotations")
    request = ApprovalRequest(
        name=str(data.get("tool")),
        server=data.get("server"),
        original_name=str(data.get("originalName") or ""),
        arguments=cast(dict[str, Any], data.get("arguments") or {}),
        annotations=types.ToolAnnotations.model_validate(hints) if hints else None,
        description=str(data.get("description") or ""),
    )
    approval = anyio.run(terminal_approval, request)
    return {"answer": approval.kind} | ({"reason": approval.reason} if approval.reason else {})


def _elicitation(data: dict[str, Any]) -> dict[str, Any]:
    """Ask a server's question as a chat here asks it."""
    from mcpdeck.callbacks import ElicitationRequest
    from mcpdeck.cli._terminal import terminal_elicitation

    mode = "url" if data.get("mode") == "url" else "form"
    request = ElicitationRequest(
        server=str(data.get("server")),
        mode=mode,
        message=str(data.get("message") or ""),
        schema=cast(dict[str, Any], data.get("schema")) if mode == "form" else None,
        url=data.get("url"),
    )
    response = anyio.run(terminal_elicitation, request)
    return {"action": response.action} | ({"content": response.content} if response.content is not None else {})


class ServeChat:
    """One chat opened in ``serve``, and the runs of its prompts."""

    def __init__(
        self, api: Attached, options: ChatOptions, spec: str, search: bool | int, raw: dict[str, Any],
        errors: dict[str, str],
    ):  # fmt: skip
        self.api = api
        self.body = {
            "model": spec,
            "system": options.system,
            "maxSteps": options.max_steps,
            "servers": list(options.servers) or None,
            "toolSearch": search,
            "resultChars": None,
            "environment": provider_environment(spec, raw, os.environ),
        }
        self.yes = options.yes
        self.errors = errors
        self.answers: Attached | None = None  # a second connection: the first one carries the run
        self.id: str = ""
        self.model = ""

    def open(self) -> None:
        chat = self.api.request("POST", "/chats", self.body)
        self.id, self.model = chat["id"], chat["model"]

    def close(self) -> None:
        if self.id:
            try:
                self.api.request("DELETE", f"/chats/{self.id}")
            finally:
                self.id = ""
                if self.answers is not None:
                    self.answers.close()

    def reset(self) -> None:
        """A new conversation: this chat closed, another opened with the same settings."""
        self.close()
        self.open()

    def _tools(self) -> dict[str, list[str]]:
        return self.api.request("GET", f"/chats/{self.id}/tools")

    def tool_count(self) -> int:
        return len(self._tools()["mcp"])

    def tool_names(self) -> list[str]:
        offered = self._tools()
        return offered["native"] + offered["mcp"]

    async def read_turn(self) -> str | None:
        return read_turn()  # serve's servers run there: nothing here runs meanwhile

    async def run(self, prompt: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Run ``prompt``: its events, its questions answered here."""
        for kind, data in self.api.events("POST", f"/chats/{self.id}/messages", {"prompt": prompt}):
            if kind == "ask":
                self._answer(data)
            elif kind != "ask-closed":
                yield kind, data

    def _answer(self, data: dict[str, Any]) -> None:
        kind = data.get("kind")
        if kind == "approval":
            answer = _approval(data, self.yes)
        elif kind == "elicitation":
            answer = _elicitation(data)
        else:  # sampling: a chat here lends no model to servers either
            answer = {"answer": "deny"}
        if self.answers is None:
            self.answers = self.api.fork()
        try:
            self.answers.request("POST", f"/asks/{data['id']}", answer)
        except AttachError as error:
            if error.code != "ask-not-found":  # withdrawn meanwhile: the run went on without it
                raise
