"""Answering at the terminal: tool-call approvals, elicitation forms and pages, and a progress line.

Forms are asked field by field, each answer checked against the field's schema (type,
enum, bounds, length, pattern, format) and asked again until it fits. An empty answer
leaves the field out (the host fills the schema's default). Without a terminal on stdin
the host declines, and says why.

An approval is asked on stderr and answered with one line on stdin: ``y`` once, ``s`` for
this session, ``a`` always (saved to the config's ``permissions.allow``), ``n`` deny. Piped
answers work (``yes s | mcpdeck chat ...``); end of input denies.
"""

from __future__ import annotations

import json
import re
import sys
import webbrowser
from typing import Any, cast

import anyio.to_thread
import click

from mcpdeck.callbacks import ElicitationRequest, ElicitationResponse
from mcpdeck.permissions import Approval, ApprovalRequest

__all__ = ["ProgressLine", "check_field", "terminal_approval", "terminal_elicitation"]

_ANSWERS = {
    "y": Approval.once,
    "yes": Approval.once,
    "o": Approval.once,
    "once": Approval.once,
    "s": Approval.session,
    "session": Approval.session,
    "a": Approval.always,
    "always": Approval.always,
}

_FORMATS = {
    "email": re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+"),
    "uri": re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+"),
    "date": re.compile(r"\d{4}-\d{2}-\d{2}"),
    "date-time": re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"),
}


def _choices(spec: dict[str, Any]) -> list[Any]:
    if isinstance(spec.get("enum"), list):
        return list(spec["enum"])
    options: list[Any] = spec.get("oneOf") or spec.get("anyOf") or []
    return [cast(dict[str, Any], o).get("const") for o in options if isinstance(o, dict)]


def check_field(spec: dict[str, Any], text: str) -> tuple[Any, str | None]:
    """The value of ``text`` for a field of this schema, or None and why it does not fit."""
    kind = spec.get("type", "string")
    choices = _choices(spec)
    value: Any = text
    if kind == "boolean":
        folded = text.strip().lower()
        if folded not in ("y", "yes", "true", "1", "n", "no", "false", "0"):
            return None, "answer yes or no"
        return folded in ("y", "yes", "true", "1"), None
    if kind in ("number", "integer"):
        try:
            value = int(text) if kind == "integer" else float(text)
        except ValueError:
            return None, f"enter {'a whole number' if kind == 'integer' else 'a number'}"
        if "minimum" in spec and value < spec["minimum"]:
            return None, f"must be at least {spec['minimum']}"
        if "maximum" in spec and value > spec["maximum"]:
            return None, f"must be at most {spec['maximum']}"
        return value, None
    if kind == "array":
        items = [part.strip() for part in text.split(",") if part.strip()]
        allowed = _choices(cast(dict[str, Any], spec.get("items") or {}))
        if allowed and any(item not in allowed for item in items):
            return None, f"choose from {', '.join(map(str, allowed))}"
        return items, None
    if choices and text not in choices:
        return None, f"choose one of {', '.join(map(str, choices))}"
    if "minLength" in spec and len(text) < spec["minLength"]:
        return None, f"needs at least {spec['minLength']} characters"
    if "maxLength" in spec and len(text) > spec["maxLength"]:
        return None, f"takes at most {spec['maxLength']} characters"
    pattern = spec.get("pattern")
    if isinstance(pattern, str) and not re.search(pattern, text):
        return None, f"must match {pattern}"
    checker = _FORMATS.get(spec.get("format", ""))
    if checker is not None and not checker.fullmatch(text):
        return None, f"must be a valid {spec['format']}"
    return value, None


def _ask_form(request: ElicitationRequest) -> ElicitationResponse:
    schema = request.schema or {}
    required = set(cast(list[str], schema.get("required") or []))
    properties = cast(dict[str, dict[str, Any]], schema.get("properties") or {})
    click.echo(click.style(f"\n{request.server} asks: ", bold=True) + request.message, err=True)
    content: dict[str, Any] = {}
    for name, spec in properties.items():
        label = spec.get("title") or name
        hints = [str(spec.get("type", "string"))]
        if _choices(spec):
            hints = ["/".join(map(str, _choices(spec)))]
        if "default" in spec:
            hints.append(f"default {spec['default']}")
        if name in required:
            hints.append("required")
        if spec.get("description"):
            click.echo(f"  {spec['description']}", err=True)
        while True:
            text = click.prompt(f"  {label} ({', '.join(hints)})", default="", show_default=False, err=True)
            if not text:
                if name in required and "default" not in spec:
                    click.echo("  this field is required", err=True)
                    continue
                break  # left empty: the host fills in the default, if there is one
            value, problem = check_field(spec, text)
            if problem is None:
                content[name] = value
                break
            click.echo(f"  {problem}", err=True)
    action = click.prompt("  send this answer? [a]ccept, [d]ecline, [c]ancel", default="a", err=True).strip()[:1]
    if action == "d":
        return ElicitationResponse(action="decline")
    if action == "c":
        return ElicitationResponse(action="cancel")
    return ElicitationResponse(action="accept", content=content)


def _ask_url(request: ElicitationRequest) -> ElicitationResponse:
    click.echo(click.style(f"\n{request.server} asks you to open a page: ", bold=True) + request.message, err=True)
    click.echo(f"  {request.url}", err=True)
    if not click.confirm("  open it now?", default=True, err=True):
        return ElicitationResponse(action="decline")
    if request.url:
        webbrowser.open(request.url)
    click.confirm("  press enter when you are done there", default=True, show_default=False, err=True)
    return ElicitationResponse(action="accept")


async def terminal_elicitation(request: ElicitationRequest) -> ElicitationResponse:
    """Ask the user at the terminal (declines when stdin is not a terminal)."""
    if not sys.stdin.isatty():
        click.echo(
            f"{request.server} asked for input ({request.message!r}), but there is no terminal to ask at; declined.",
            err=True,
        )
        return ElicitationResponse(action="decline")
    ask = _ask_form if request.mode == "form" else _ask_url
    return await anyio.to_thread.run_sync(ask, request)


def _hints(request: ApprovalRequest) -> str:
    hints = request.annotations
    if hints is None:
        return ""
    marks = [
        label
        for label, on in (
            ("read-only", hints.read_only_hint),
            ("destructive", hints.destructive_hint),
            ("open-world", hints.open_world_hint),
        )
        if on
    ]
    return f" [{', '.join(marks)}, as the server says]" if marks else ""


def _ask_approval(request: ApprovalRequest) -> Approval:
    where = f" ({request.server}: {request.original_name})" if request.server else " (native tool)"
    click.echo(click.style(f"\nAllow {request.name}{where}?", bold=True) + _hints(request), err=True)
    arguments = json.dumps(request.arguments, ensure_ascii=False)
    click.echo(f"  arguments: {arguments if len(arguments) <= 500 else arguments[:500] + '…'}", err=True)
    while True:
        click.echo("  [y] once, [s] this session, [a] always (saved), [n] no: ", err=True, nl=False)
        line = sys.stdin.readline()
        if not line:
            click.echo("(no answer: end of input)", err=True)
            return Approval.deny("no answer")
        answer = line.strip().lower()
        if answer in ("n", "no", "d", "deny"):
            return Approval.deny()
        if answer in _ANSWERS:
            return _ANSWERS[answer]()
        click.echo("  answer y, s, a or n", err=True)


async def terminal_approval(request: ApprovalRequest) -> Approval:
    """Ask at the terminal whether a tool call may run (one line on stdin; end of input denies)."""
    return await anyio.to_thread.run_sync(_ask_approval, request, abandon_on_cancel=True)


class ProgressLine:
    """A one-line progress bar on stderr (only on a terminal)."""

    def __init__(self, label: str):
        self._label = label
        self._shown = False
        self._live = sys.stderr.isatty()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if not self._live:
            return
        if total:
            filled = int(30 * min(progress / total, 1.0))
            bar = f"[{'#' * filled}{' ' * (30 - filled)}] {100 * progress / total:5.1f}%"
        else:
            bar = f"[{progress:g}]"
        text = f"\r{self._label} {bar} {message or ''}"
        click.echo(text[:200].ljust(80), err=True, nl=False)
        self._shown = True

    def close(self) -> None:
        """End the line, if one was drawn."""
        if self._shown:
            click.echo("", err=True)
