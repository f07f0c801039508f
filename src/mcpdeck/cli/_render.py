"""How the CLI shows things: tidy tables, colored states, secrets masked, server text made safe.

Everything a server sends passes ``safe`` (``mcpdeck._util.safe_text.safe_text``) before it is
printed. ``table`` does it for every cell, ``style`` for what it colors, ``echo_json`` for
JSON; the few direct prints of server text call ``safe`` themselves. Python's log records
(warnings of the library, the SDK) go through the same filter (``install_safe_logging``).
"""

from __future__ import annotations

import logging
import shlex
import sys
from typing import Any

from mcpdeck._util.masking import mask_config, mask_urls
from mcpdeck._util.safe_text import safe_text
from mcpdeck.cli._output import Styled, echo_json, safe, state_label, style, table
from mcpdeck.config import RemoteServerConfig, ServerConfig

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


def mask_secrets(config: ServerConfig, *, show: bool = False) -> dict[str, Any]:
    """The config's JSON form with what can be secret masked (``mask_config``), or all of it as it is with ``show``."""
    return config.to_json() if show else mask_config(config)


def target_of(config: ServerConfig, *, show: bool = False) -> str:
    """The command line or URL of a server: masked (as ``ServerStatus.target`` is) unless ``show``."""
    if not show:
        return config.target
    return config.url if isinstance(config, RemoteServerConfig) else shlex.join([config.command, *config.args])


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
