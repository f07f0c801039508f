"""Tables, styled text and JSON for the terminal, made safe: the light part of ``_render``.

Everything a server sends passes ``safe`` (``mcpdeck._util.safe_text.safe_text``) before it is
printed: ``table`` does it for every cell, ``style`` for what it colors, ``echo_json`` for
JSON. Only ``click`` and the safe-text filter are imported, so the commands that go through a
running ``serve`` (``_serve_backend``) render with it without loading the config models.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from typing import Any

import click

from mcpdeck._util.safe_text import safe_json, safe_text

__all__ = ["ProgressLine", "Styled", "echo_json", "safe", "state_label", "style", "table"]

safe = safe_text
"""The one function that makes server text safe to print (see ``mcpdeck._util.safe_text``)."""


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
    "connected": ("●", "green"),
    "connecting": ("◌", "yellow"),
    "reconnecting": ("◌", "yellow"),
    "failed": ("✖", "red"),
    "disabled": ("○", "bright_black"),
    "stopped": ("○", "bright_black"),
}


def state_label(state: str) -> Styled:
    """A server's state (a ``ServerState`` or its value) with a symbol and color (color only on a terminal)."""
    symbol, color = _STATE_STYLE.get(state, ("?", "white"))
    return style(f"{symbol} {state}", fg=color)


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


def echo_json(data: Any, *, compact: bool = False) -> None:
    """Print ``data`` as indented JSON, or on one line (``compact``, for JSON Lines): exact, and safe to print."""
    click.echo(safe_json(data, indent=None if compact else 2))


class ProgressLine:
    """A one-line progress bar on stderr (only on a terminal)."""

    def __init__(self, label: str):
        self._label = label
        self._shown = False
        self.live = sys.stderr.isatty()
        """Whether it draws anything (stderr is a terminal)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.draw(progress, total, message)

    def draw(self, progress: float, total: float | None, message: str | None) -> None:
        """Redraw the line for this much progress (of ``total``, if known) and the server's message."""
        if not self.live:
            return
        if total:
            filled = int(30 * min(progress / total, 1.0))
            bar = f"[{'#' * filled}{' ' * (30 - filled)}] {100 * progress / total:5.1f}%"
        else:
            bar = f"[{progress:g}]"
        text = f"\r{safe(self._label)} {bar} {safe(message or '')}"
        click.echo(text[:200].ljust(80), err=True, nl=False)
        self._shown = True

    def close(self) -> None:
        """End the line, if one was drawn."""
        if self._shown:
            click.echo("", err=True)
