"""What every part of one server's connection shares: its name, the config it runs, its log, masking."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import mcp_types as types

from mcpdeck._util.masking import Redactor, mask_urls
from mcpdeck.config import AnyServerConfig, InProcessServerConfig, referenced_values
from mcpdeck.connection._server_log import ServerLogFile

__all__ = ["ServerContext"]

logger = logging.getLogger(__name__)


class ServerContext:
    """One server as its supervisor, its sessions and its requests all see it.

    Attributes:
        name: The server's name.
        config: The config it runs now (unexpanded); ``reconnect(config)`` replaces it.
        log: Its log file (stderr, MCP log messages, the host's notes).
    """

    __slots__ = ("_environ", "config", "log", "name")

    def __init__(self, name: str, config: AnyServerConfig, log: ServerLogFile, environ: Mapping[str, str] | None):
        self.name = name
        self.config = config
        self.log = log
        self._environ = environ

    @property
    def environ(self) -> Mapping[str, str]:
        """The variables ``${VAR}`` references are expanded from: ``Host(environ=...)``, else the process's."""
        return os.environ if self._environ is None else self._environ

    @property
    def given_environ(self) -> Mapping[str, str] | None:
        """``Host(environ=...)`` as given (None: the process's own)."""
        return self._environ

    @property
    def log_path(self) -> Path | None:
        """The log file; None for an in-process server, which has none."""
        return None if isinstance(self.config, InProcessServerConfig) else self.log.path

    def own_roots(self) -> list[types.Root] | None:
        """The server's own roots (its config's ``roots`` list), as the protocol gives them."""
        roots = self.config.roots
        if not isinstance(roots, list):
            return None
        paths = [Path(r).expanduser().resolve() for r in roots]
        return [types.Root.model_validate({"uri": p.as_uri(), "name": p.name or str(p)}) for p in paths]

    def hide(self, text: str) -> str:
        """``text`` (an error) with URL query strings and passwords, and the values the config's ``${VAR}``
        references bring in, masked: what is built from the expanded config must not show them."""
        return Redactor(referenced_values({self.name: self.config}, self.environ))(mask_urls(text))

    def note(self, line: str) -> None:
        """A host's note in the server's log, masked (see ``hide``)."""
        if self.log_path is not None:
            self.log.write(self.hide(line))

    def list_warning(self, method: str, text: str | None) -> None:
        """An optional list failed (the server stays connected; the list is asked for again on its change
        notice or the next connect), or works again."""
        if text is None:
            self.note(f"[mcpdeck] {method} works again")
            logger.info("server %r: %s works again", self.name, method)
        else:
            self.note(f"[mcpdeck] warning: {text}")
            logger.warning("server %r: %s", self.name, text)
