"""What ``mcpdeck chat`` shows of a run, alone or through a running ``serve``: the same events, the same lines.

A run's events come as ``(event name, data)``, the shape ``mcpdeck.agent.event_json``
gives and the API's chat stream sends. The model's text goes to stdout as it streams; tool
calls, their results and approvals go to stderr. With ``--json`` every event is one JSON line
on stdout, with the keys in ``JSON_KEYS`` (the stream's extra keys are left out).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from mcpdeck.cli._output import echo_json, safe, style

__all__ = ["HELP", "JSON_KEYS", "NO_MODEL", "Printer", "answer_command", "read_prompt", "read_turn"]

HELP = "commands: /reset (new conversation), /tools (what the model is offered), /exit"
NO_MODEL = (
    "name a model: --model openai:gpt-4.1 (or anthropic:..., gemini:..., ollama:...), "
    'or set MCPDECK_MODEL, or "model" in the config file'
)

JSON_KEYS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "turn": ("step", "text", "toolCalls"),
    "tool-call": ("id", "name", "arguments"),
    "progress": ("id", "name", "progress"),
    "tool-result": ("id", "name", "isError", "denied", "approvedBy", "text", "cut"),
    "tools-found": ("query", "names"),
    "error": ("kind", "message", "retryable"),
    "done": ("reason", "steps", "text"),
}
"""The keys ``--json`` prints for each event (docs/cli.md, chat)."""


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return safe(text if len(text) <= limit else text[: limit - 1] + "…")


class Printer:
    """Shows a run's events: text on stdout, tool traffic on stderr (or every event as a JSON line)."""

    def __init__(self, as_json: bool):
        self.as_json = as_json
        self.open_line = False  # text was printed without a newline yet

    def _end_text(self) -> None:
        if self.open_line:
            click.echo("")
            self.open_line = False

    def show(self, kind: str, data: dict[str, Any]) -> None:
        """Show one event (an event this version does not know is left out)."""
        keys = JSON_KEYS.get(kind)
        if keys is None:
            return
        if self.as_json:
            echo_json({"event": kind, **{key: data.get(key) for key in keys}}, compact=True)
            return
        match kind:
            case "text":
                text = str(data["text"])
                click.echo(safe(text, multiline=True), nl=False)
                self.open_line = not text.endswith("\n")
            case "turn":
                self._end_text()
            case "tool-call":
                click.echo(style(f"→ {data['name']} ", fg="cyan") + _short(data["arguments"]), err=True)
            case "progress":
                total, progress = data.get("total"), data["progress"]
                amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
                click.echo(safe(f"  … {data['name']} {amount} {data.get('message') or ''}".rstrip()), err=True)
            case "tool-result":
                self._result(data)
            case "tools-found":
                click.echo(click.style("  found: ", fg="cyan") + safe(", ".join(data["names"])), err=True)
            case "error":
                self._end_text()
                label = "error" if data["kind"] != "tool" else "tool error"
                message = safe(data["message"], multiline=True)
                click.echo(click.style(f"{label}: ", fg="red", bold=True) + message, err=True)
            case _:  # done
                self._end_text()
                if data["reason"] == "max_steps":
                    note = f"stopped after {data['steps']} model turns (--max-steps); the model was still calling tools"
                    click.echo(click.style("note: ", fg="yellow") + note, err=True)

    @staticmethod
    def _result(data: dict[str, Any]) -> None:
        name, text = data["name"], str(data["text"])
        if data["denied"]:
            click.echo(style(f"✗ {name} denied: ", fg="red") + safe(text), err=True)
            return
        mark = click.style("✗", fg="red") if data["isError"] else click.style("✓", fg="green")
        note = f" ({data['cut']:,} characters cut for the model)" if data["cut"] else ""
        duration = float(data.get("duration") or 0.0)
        click.echo(f"{mark} {safe(name)} {duration * 1000:.0f} ms: {_short(text, 120)}{note}", err=True)


def read_prompt() -> str | None:
    """The next line of a conversation from stdin (None at its end), asked with ``you>`` at a terminal."""
    if sys.stdin is None:  # no standard input at all: the conversation ends
        return None
    if sys.stdin.isatty():
        click.echo(click.style("you> ", bold=True), nl=False, err=True)
    line = sys.stdin.readline()
    return None if not line else line.rstrip("\n")


def read_turn() -> str | None:
    """The next line of a conversation that says something (blank lines are passed over): a prompt, or a
    command for ``answer_command``; None at the end (end of input, ``/exit``, ``/quit``)."""
    while (line := read_prompt()) is not None:
        if line.strip() in ("/exit", "/quit"):
            return None
        if line.strip():
            return line
    return None


def answer_command(line: str, reset: Callable[[], None], tools: Callable[[], list[str]]) -> bool:
    """Answer a chat's own command (``HELP``): ``/reset`` starts a new conversation with ``reset``,
    ``/tools`` lists the names ``tools`` gives. False when ``line`` is a prompt for the model."""
    match line.strip():
        case "/reset":
            reset()
            click.echo("(new conversation)", err=True)
        case "/tools":
            for name in tools():
                click.echo(f"  {safe(name)}", err=True)
        case _:
            return False
    return True
