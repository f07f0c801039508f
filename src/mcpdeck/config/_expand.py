"""``${VAR}`` and ``${VAR:-default}`` expansion, applied at connect time only.

The saved file keeps the references, so secrets stay in the environment. ``$${`` writes
a literal ``${``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import cast

from mcpdeck.config._models import AnyServerConfig, RemoteServerConfig, ServerConfig, StdioServerConfig
from mcpdeck.errors import UnsetVariableError

__all__ = ["ORDINARY_VARIABLES", "expand_server_config", "expand_vars", "referenced_values"]

_REF = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

ORDINARY_VARIABLES = frozenset(
    {"HOME", "USER", "USERNAME", "LOGNAME", "PATH", "PWD", "SHELL", "TMPDIR", "TEMP", "TMP", "LANG", "TERM"}
)
"""Variables that describe the user's environment, not a secret: their values are not redacted
(redacting the home folder would hide every path)."""


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


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in cast(dict[str, object], value).values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in cast(list[object], value) for s in _strings(item)]
    return []


def referenced_values(configs: Mapping[str, AnyServerConfig], environ: Mapping[str, str]) -> set[str]:
    """The values that ``${VAR}`` references anywhere in these configs bring in from ``environ``.

    What a user keeps in the environment and refers to is what they did not want in the
    file, so error messages and the history hide these values. Defaults
    (``${VAR:-default}``) are in the file already and not counted; nor are
    ``ORDINARY_VARIABLES`` or values shorter than 4 characters.
    """
    found: set[str] = set()
    for config in configs.values():
        for text in _strings(config.to_json()):
            for match in _REF.finditer(text):
                name = match.group(1)
                value = environ.get(name) if name and name not in ORDINARY_VARIABLES else None
                if value and len(value) >= 4:
                    found.add(value)
    return found
