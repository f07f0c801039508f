"""``${VAR}`` and ``${VAR:-default}`` expansion, applied at connect time only.

The saved file keeps the references, so secrets stay in the environment. ``$${`` writes
a literal ``${``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mcpdeck.config._models import RemoteServerConfig, ServerConfig, StdioServerConfig
from mcpdeck.errors import UnsetVariableError

__all__ = ["expand_server_config", "expand_vars"]

_REF = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_vars(text: str, environ: Mapping[str, str], *, field: str, server: str | None = None) -> str:
    """Replace each ``${VAR}`` / ``${VAR:-default}`` in ``text`` with its value.

    ``${VAR:-default}`` uses the default when VAR is unset or empty, as the shell does.

    Raises:
        UnsetVariableError: A ``${VAR}`` without default names an unset variable.
    """
    if "$" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        name, default = match.group(1), match.group(2)
        value = environ.get(name)
        if default is not None:
            return value if value else default
        if value is None:
            raise UnsetVariableError(name, field=field, server=server)
        return value

    return _REF.sub(replace, text)


def expand_server_config(name: str, config: ServerConfig, environ: Mapping[str, str]) -> ServerConfig:
    """A copy of ``config`` with every reference in command, args, env, cwd, url and headers expanded."""

    def ex(text: str, field: str) -> str:
        return expand_vars(text, environ, field=field, server=name)

    if isinstance(config, StdioServerConfig):
        return config.model_copy(
            update={
                "command": ex(config.command, "command"),
                "args": [ex(arg, f"args[{i}]") for i, arg in enumerate(config.args)],
                "env": {key: ex(value, f"env.{key}") for key, value in config.env.items()},
                "cwd": ex(config.cwd, "cwd") if config.cwd is not None else None,
                "npm_registry": ex(config.npm_registry, "npmRegistry") if config.npm_registry else None,
            }
        )
    assert isinstance(config, RemoteServerConfig)
    return config.model_copy(
        update={
            "url": ex(config.url, "url"),
            "headers": {key: ex(value, f"headers.{key}") for key, value in config.headers.items()},
        }
    )
