"""How the CLI shows things: tidy tables, colored states, secrets masked, server text made safe.

Everything a server sends passes ``safe`` (``mcpdeck._safe_text.safe_text``) before it is
printed. ``table`` does it for every cell, ``style`` for what it colors, ``echo_json`` for
JSON; the few direct prints of server text call ``safe`` themselves. Python's log records
(warnings of the library, the SDK) go through the same filter (``install_safe_logging``).
"""

from __future__ import annotations

import logging
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import click

from mcpdeck._masking import mask_config, mask_urls
from mcpdeck._safe_text import safe_json, safe_text
from mcpdeck.config import RemoteServerConfig, ServerConfig
from mcpdeck.status import ServerState, ServerStatus

__all__ = [
    "Styled",
    "echo_json",
    "install_safe_logging",
    "mask_secrets",
    "safe",
    "state_label",
    "style",
    "table",
    "target_of",
]

safe = safe_text
"""The one function that makes server text safe to print (see ``mcpdeck._safe_text``)."""


class Styled(str):
    """Text the CLI made (and colored) from safe parts; ``table`` prints it as it is."""

    __slots__ = ()


def style(text: str, *, multiline: bool = False, **styles: Any) -> Styled:
    """``click.style`` of ``text`` made safe first: the only escape sequences are the colors asked for.

    Line breaks that start ``text`` (the CLI's own spacing) are kept as they are.
    """
    body = text.lstrip("\n")
    spacing = text[: len(text) - len(body)]
    return Styled(spacing + click.style(safe_text(body, multiline=multiline), **styles))


_STATE_STYLE: dict[str, tuple[str, str]] = {
    ServerState.CONNECTED: ("●", "green"),
    ServerState.CONNECTING: ("◌", "yellow"),
    ServerState.RECONNECTING: ("◌", "yellow"),
    ServerState.FAILED: ("✖", "red"),
    ServerState.DISABLED: ("○", "bright_black"),
    ServerState.STOPPED: ("○", "bright_black"),
}


def state_label(state: ServerState) -> Styled:
    """The state with a symbol and color (color only on a terminal)."""
    symbol, color = _STATE_STYLE.get(state, ("?", "white"))
    return style(f"{symbol} {state.value}", fg=color)


def _visible_len(text: str) -> int:
    return len(click.unstyle(text))


def _fit(text: str, width: int) -> str:
    plain = click.unstyle(text)
    if len(plain) <= width:
        return text + " " * (width - len(plain))
    return plain[: max(width - 1, 0)] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, wrap_last: bool = False) -> str:
    """Columns sized to their content; the last column is cut to the terminal width.

    Every cell but a ``Styled`` one is made safe (one line, controls escaped).
    """
    if not rows:
        return ""
    rows = [[cell if isinstance(cell, Styled) else safe_text(str(cell)) for cell in row] for row in rows]
    widths = [max(_visible_len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    total = shutil.get_terminal_size((120, 24)).columns
    used = sum(widths[:-1]) + 2 * (len(widths) - 1)
    widths[-1] = max(min(widths[-1], total - used), 20) if not wrap_last else widths[-1]
    header = "  ".join(_fit(h.upper(), w) for h, w in zip(headers, widths, strict=True))
    lines = [click.style(header.rstrip(), bold=True)]
    for row in rows:
        cells = [_fit(str(cell), width) for cell, width in zip(row, widths, strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def mask_secrets(config: ServerConfig, *, show: bool = False) -> dict[str, Any]:
    """The config's JSON form with what can be secret masked (``mask_config``), or all of it as it is with ``show``."""
    return config.to_json() if show else mask_config(config)


def target_of(config: ServerConfig, *, show: bool = False) -> str:
    """The command line or URL of a server: masked (as ``ServerStatus.target`` is) unless ``show``."""
    if not show:
        return config.target
    return config.url if isinstance(config, RemoteServerConfig) else " ".join([config.command, *config.args])


def status_row(status: ServerStatus, target: str | None = None) -> list[str]:
    """One row of ``mcpdeck list`` (``target`` replaces the masked one, for ``--show-secrets``)."""
    shown = target if target is not None else status.target
    detail = shown if status.state is not ServerState.FAILED else style(status.error or "", fg="red")
    tools = str(status.tool_count) if status.state is ServerState.CONNECTED else "-"
    return [status.name, state_label(status.state), tools, status.transport, detail]


def echo_json(data: Any, *, compact: bool = False) -> None:
    """Print ``data`` as indented JSON, or on one line (``compact``, for JSON Lines): exact, and safe to print."""
    click.echo(safe_json(data, indent=None if compact else 2))


class _SafeFormatter(logging.Formatter):
    """Log records as one safe line each: controls escaped, URL secrets masked, no traceback."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            message = f"{message}: {record.exc_info[1]}"
        return safe_text(mask_urls(message))


def install_safe_logging() -> None:
    """Show warnings of the library and the SDK on stderr through the safe filter (once per process).

    Without a handler Python prints them raw (server text included) with tracebacks.
    """
    root = logging.getLogger()
    if any(isinstance(handler.formatter, _SafeFormatter) for handler in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_SafeFormatter())
    root.addHandler(handler)
