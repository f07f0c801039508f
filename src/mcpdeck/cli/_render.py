"""How the CLI shows things: tidy tables, colored states, secrets masked."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from typing import Any

import click

from mcpdeck.config._masking import mask_secrets
from mcpdeck.status import ServerState, ServerStatus

__all__ = ["echo_json", "mask_secrets", "state_label", "table"]

_STATE_STYLE: dict[str, tuple[str, str]] = {
    ServerState.CONNECTED: ("●", "green"),
    ServerState.CONNECTING: ("◌", "yellow"),
    ServerState.RECONNECTING: ("◌", "yellow"),
    ServerState.FAILED: ("✖", "red"),
    ServerState.DISABLED: ("○", "bright_black"),
    ServerState.STOPPED: ("○", "bright_black"),
}


def state_label(state: ServerState) -> str:
    """The state with a symbol and color (color only on a terminal)."""
    symbol, color = _STATE_STYLE.get(state, ("?", "white"))
    return click.style(f"{symbol} {state.value}", fg=color)


def _visible_len(text: str) -> int:
    return len(click.unstyle(text))


def _fit(text: str, width: int) -> str:
    plain = click.unstyle(text)
    if len(plain) <= width:
        return text + " " * (width - len(plain))
    return plain[: max(width - 1, 0)] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, wrap_last: bool = False) -> str:
    """Columns sized to their content; the last column is cut to the terminal width."""
    if not rows:
        return ""
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


def status_row(status: ServerStatus) -> list[str]:
    """One row of ``mcpdeck list``."""
    detail = status.target if status.state is not ServerState.FAILED else click.style(status.error or "", fg="red")
    tools = str(status.tool_count) if status.state is ServerState.CONNECTED else "-"
    return [status.name, state_label(status.state), tools, status.transport, detail]


def echo_json(data: Any, *, compact: bool = False) -> None:
    """Print ``data`` as indented JSON, or on one line (``compact``, for JSON Lines)."""
    indent = None if compact else 2
    click.echo(json.dumps(data, indent=indent, ensure_ascii=False, default=str))
