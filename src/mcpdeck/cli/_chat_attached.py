"""``mcpdeck chat`` through a running ``mcpdeck serve`` (see ``_attach``): its host, its servers, this terminal.

The chat is opened in ``serve`` (``POST /api/chats``) with what the command was given: the
model, the system prompt, the servers (``--server``), tool search, and the variables the
model's provider reads from this process's environment (its key and URL, the ``${VAR}``\\ s
of the config's ``providers`` entry), since ``serve`` may not have them. Each prompt's run
streams back and is shown as a chat run here shows it (``_chat_print``); the questions the
run asks (``ask`` events: approvals, a server's elicitation) are asked at this terminal, as
a chat here asks them, and answered with ``POST /api/asks/{id}`` on a second connection.
A server's sampling request is refused, as a chat here refuses it. The chat is closed when
the command ends, and its model (and the key it holds) with it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import click

from mcpdeck.cli._app import CliContext
from mcpdeck.cli._attach import Attached, AttachError
from mcpdeck.cli._chat import ChatOptions, chat_start
from mcpdeck.cli._chat_print import HELP, Printer, answer_command, read_turn
from mcpdeck.cli._output import safe

__all__ = ["provider_environment", "run_attached_chat"]

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


class _Chat:
    """One chat opened in ``serve``, and the runs of its prompts."""

    def __init__(self, api: Attached, body: dict[str, Any], printer: Printer, yes: bool):
        self.api = api
        self.body = body
        self.printer = printer
        self.yes = yes
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

    def tools(self) -> dict[str, list[str]]:
        return self.api.request("GET", f"/chats/{self.id}/tools")

    def tool_names(self) -> list[str]:
        offered = self.tools()
        return offered["native"] + offered["mcp"]

    def run(self, prompt: str) -> dict[str, Any] | None:
        """Run ``prompt``, show its events, answer its questions; the ``done`` event's data."""
        finished: dict[str, Any] | None = None
        for kind, data in self.api.events("POST", f"/chats/{self.id}/messages", {"prompt": prompt}):
            if kind == "ask":
                self._answer(data)
            elif kind != "ask-closed":
                self.printer.show(kind, data)
                finished = data if kind == "done" else finished
        return finished

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


def _interactive(chat: _Chat) -> None:
    click.echo(f"chatting with {chat.model}; {len(chat.tools()['mcp'])} MCP tools. {HELP}", err=True)
    while (line := read_turn()) is not None:
        if not answer_command(line, chat.reset, chat.tool_names):
            chat.run(line)


def run_attached_chat(api: Attached, config: Path, **params: Any) -> None:
    """``mcpdeck chat`` through ``serve`` (see ``mcpdeck chat --help``; the same output as alone)."""
    ctx = click.get_current_context().find_object(CliContext)
    assert ctx is not None  # the group always makes one
    options = ChatOptions(**params)
    raw, spec, search = chat_start(ctx, options)
    body = {
        "model": spec,
        "system": options.system,
        "maxSteps": options.max_steps,
        "servers": list(options.servers) or None,
        "toolSearch": search,
        "resultChars": None,
        "environment": provider_environment(spec, raw, os.environ),
    }
    chat = _Chat(api, body, Printer(options.as_json), options.yes)
    chat.open()
    finished: dict[str, Any] | None = None
    try:
        if not options.as_json:
            for status in api.request("GET", "/servers")["servers"]:
                if status.get("error") and (not options.servers or status["name"] in options.servers):
                    click.echo(click.style(f"{status['name']}: ", fg="yellow") + safe(status["error"]), err=True)
        if options.prompt is not None:
            finished = chat.run(options.prompt)
        else:
            _interactive(chat)
    finally:
        chat.close()
    if finished is not None and finished.get("reason") == "error":
        sys.exit(1)
