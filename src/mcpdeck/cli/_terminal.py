"""Answering at the terminal: tool-call approvals, elicitation forms and pages, and a progress line.

Forms are asked field by field, each answer checked against the field's schema (type,
enum, bounds, length, pattern, format) and asked again until it fits. An empty answer
leaves the field out (the host fills the schema's default). Without a terminal on stdin
the host declines, and says why. A page (URL elicitation) is opened only when it is
``https:`` (or ``http:`` on this computer), after the user saw its full address and host
and said yes; the default answer is no.

An approval is asked on stderr and answered with one line on stdin: ``y`` once, ``s`` for
this session, ``a`` always (saved to the config's ``permissions.allow``), ``n`` deny. Piped
answers work (``yes s | mcpdeck chat ...``); end of input, or no standard input at all,
denies and says why. Every argument is shown by name; a long value is shortened in the
middle, with the count of characters left out.

Everything shown that a server (or a model) wrote passes ``safe`` first.
"""

from __future__ import annotations

import ipaddress
import json
import re
import sys
import webbrowser
from collections.abc import Mapping
from typing import Any, TextIO, cast
from urllib.parse import urlsplit

import anyio.to_thread
import click

from mcpdeck.callbacks import ElicitationRequest, ElicitationResponse
from mcpdeck.cli._output import ProgressLine, safe, style
from mcpdeck.permissions import Approval, ApprovalRequest

__all__ = [
    "ProgressLine",
    "check_field",
    "format_arguments",
    "openable_url",
    "shorten_middle",
    "terminal_approval",
    "terminal_elicitation",
]

VALUE_LIMIT = 300
"""Characters of one argument value shown whole; a longer one keeps its start and end."""

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
    click.echo(style(f"\n{request.server} asks: ", bold=True) + safe(request.message, multiline=True), err=True)
    content: dict[str, Any] = {}
    for name, spec in properties.items():
        label = safe(str(spec.get("title") or name))
        hints = [str(spec.get("type", "string"))]
        if _choices(spec):
            hints = ["/".join(map(str, _choices(spec)))]
        if "default" in spec:
            hints.append(f"default {spec['default']}")
        if name in required:
            hints.append("required")
        if spec.get("description"):
            click.echo(f"  {safe(str(spec['description']), multiline=True)}", err=True)
        while True:
            text = click.prompt(f"  {label} ({safe(', '.join(hints))})", default="", show_default=False, err=True)
            if not text:
                if name in required and "default" not in spec:
                    click.echo("  this field is required", err=True)
                    continue
                break  # left empty: the host fills in the default, if there is one
            value, problem = check_field(spec, text)
            if problem is None:
                content[name] = value
                break
            click.echo(f"  {safe(problem)}", err=True)
    action = click.prompt("  send this answer? [a]ccept, [d]ecline, [c]ancel", default="a", err=True).strip()[:1]
    if action == "d":
        return ElicitationResponse(action="decline")
    if action == "c":
        return ElicitationResponse(action="cancel")
    return ElicitationResponse(action="accept", content=content)


def openable_url(url: str) -> tuple[str, str | None]:
    """The host of ``url`` as shown to the user, and why it may not be opened (None: it may).

    Only ``https:`` pages are opened, and ``http:`` ones on this computer (``localhost``,
    ``127.0.0.0/8``, ``::1``): any other scheme (``file:``, ``javascript:``, an app's own
    scheme) could run or read something with no page the user can judge first. The host is
    given in its ASCII form, so a look-alike name (``xn--...``) shows as what it is.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "", "it is not a valid URL"
    try:
        shown = host.encode("idna").decode("ascii") if host else ""
    except UnicodeError:
        shown = host
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        return shown, f"its scheme is {scheme or 'missing'}: (only https: is opened, or http: on this computer)"
    if not host:
        return shown, "it names no host"
    if scheme == "http" and not (host == "localhost" or _loopback(host)):
        return shown, "it is plain http: to another computer (only https: is opened, or http: on this computer)"
    return shown, None


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ask_url(request: ElicitationRequest) -> ElicitationResponse:
    url = request.url or ""
    click.echo(style(f"\n{request.server} asks you to open a page: ", bold=True) + safe(request.message), err=True)
    click.echo(f"  address: {safe(url)}", err=True)
    host, refused = openable_url(url)
    click.echo(f"  host:    {safe(host) or '(none)'}", err=True)
    if refused is not None:
        click.echo(f"  not opened: {refused}; declined.", err=True)
        return ElicitationResponse(action="decline")
    if not click.confirm("  open it in your browser?", default=False, err=True):
        return ElicitationResponse(action="decline")
    webbrowser.open(url)
    click.confirm("  press enter when you are done there", default=True, show_default=False, err=True)
    return ElicitationResponse(action="accept")


def _stdin() -> TextIO | None:
    """Standard input, if there is one that can be read."""
    stream = sys.stdin
    try:
        if stream is None or stream.closed:
            return None
        stream.fileno()
    except (OSError, ValueError):
        return None
    return stream


def _no_terminal() -> str | None:
    """Why the user cannot be asked at a terminal, or None if they can."""
    stream = _stdin()
    if stream is None:
        return "there is no standard input (it is closed), so no terminal to ask at"
    try:
        return None if stream.isatty() else "there is no terminal to ask at"
    except (OSError, ValueError):
        return "there is no terminal to ask at"


async def terminal_elicitation(request: ElicitationRequest) -> ElicitationResponse:
    """Ask the user at the terminal (declines, and says why, when it cannot ask)."""
    problem = _no_terminal()
    if problem is not None:
        message = safe(shorten_middle(request.message))
        click.echo(f"{safe(request.server)} asked for input ('{message}'), but {problem}; declined.", err=True)
        return ElicitationResponse(action="decline")
    ask = _ask_form if request.mode == "form" else _ask_url
    try:
        return await anyio.to_thread.run_sync(ask, request)
    except (click.Abort, EOFError, OSError, ValueError):  # end of input or a terminal gone mid-question
        click.echo("\n(no answer: the input ended); declined.", err=True)
        return ElicitationResponse(action="decline")


def shorten_middle(text: str, limit: int = VALUE_LIMIT) -> str:
    """``text`` as it is up to ``limit`` characters; longer, its start and end and how much was left out between."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}…[{len(text) - head - tail:,} characters left out]…{text[-tail:]}"


def _shrink(value: Any) -> Any:
    """``value`` with every long string in it shortened in the middle."""
    if isinstance(value, str):
        return shorten_middle(value)
    if isinstance(value, dict):
        return {shorten_middle(str(k), 80): _shrink(v) for k, v in cast(dict[object, Any], value).items()}
    if isinstance(value, list):
        return [_shrink(item) for item in cast(list[Any], value)]
    return value


def format_arguments(arguments: Mapping[str, Any], indent: str = "    ", depth: int = 0) -> list[str]:
    """The lines that show a tool call's arguments: every name (nested objects too), no value dropped.

    A long value is shortened in the middle (its start and end stay, with the number of
    characters left out); a long list or deeply nested value as a whole. Everything is
    made safe to print.
    """
    lines: list[str] = []
    for key, value in arguments.items():
        name = safe(shorten_middle(str(key), 80))
        if isinstance(value, dict) and value and depth < 3:
            lines.append(f"{indent}{name}:")
            lines.extend(format_arguments(cast(Mapping[str, Any], value), indent + "  ", depth + 1))
            continue
        shown = json.dumps(_shrink(value), ensure_ascii=False, default=str)
        lines.append(f"{indent}{name}: {safe(shorten_middle(shown, 2 * VALUE_LIMIT))}")
    return lines


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
    click.echo(style(f"\nAllow {request.name}{where}?", bold=True) + _hints(request), err=True)
    click.echo("  arguments:" + ("" if request.arguments else " (none)"), err=True)
    for line in format_arguments(request.arguments):
        click.echo(line, err=True)
    stream = _stdin()
    if stream is None:
        click.echo("  (no answer: there is no standard input to read one from; denied)", err=True)
        return Approval.deny("no answer: standard input is closed")
    while True:
        click.echo("  [y] once, [s] this session, [a] always (saved), [n] no: ", err=True, nl=False)
        try:
            line = stream.readline()
        except (OSError, ValueError) as error:
            click.echo(f"(no answer: standard input cannot be read: {safe(str(error))}; denied)", err=True)
            return Approval.deny("no answer: standard input cannot be read")
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
