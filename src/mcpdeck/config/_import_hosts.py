"""Each host's format: one entry of its file turned into an ``mcpServers``-style dict.

A converter (``Convert``) takes an entry's name, its raw value and a list for notes about it
(kept only if the entry imports), and returns the dict, or raises ``Skip`` with the reason.
VS Code and Cursor ``${...}`` variables become values or mcpdeck ``${VAR}`` references
(``_Refs``); Goose extensions that are not MCP servers are skipped with what to do instead.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpdeck.config._import_files import as_dict, as_list, servers_object

__all__ = ["Convert", "Entry", "Skip", "goose_entries", "mcp_servers_entries", "vscode_entries"]

# Goose extension types that are not MCP servers mcpdeck could start or reach.
_GOOSE_NOT_MCP = {
    "builtin": "a Goose built-in extension: it runs inside Goose, not as an MCP server mcpdeck can start",
    "platform": "a Goose platform extension: it is part of Goose itself, not an MCP server",
    "frontend": "a Goose frontend extension: its tools live in the Goose app, not in an MCP server",
    "inline_python": "inline Python that Goose runs itself; save the code as a script and add it as a stdio server",
}
# `${name}` or `${name:arg}` in VS Code / Cursor files; `${/}` is VS Code's path separator.
_VSCODE_VAR = re.compile(r"\$\{(/|[A-Za-z]\w*)(?::([^}]*))?\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Skip(Exception):
    """One entry cannot be imported; the message says why."""


Convert = Callable[[str, Any, list[str]], dict[str, Any]]
"""One entry (name, raw value, notes to append to) to an mcpServers-style dict; raises ``Skip``."""
Entry = tuple[str, Any, Convert]
"""An entry of a host's file: its name, its raw value, and the converter it needs."""


@dataclass(frozen=True)
class _Refs:
    """Translates VS Code / Cursor ``${...}`` variables into values or mcpdeck ``${VAR}`` references."""

    host: str
    home: Path
    workspace: Path | None
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict[str, Any])

    def convert(self, value: Any, notes: list[str]) -> Any:
        if isinstance(value, str):
            return _VSCODE_VAR.sub(lambda match: self._one(match, notes), value)
        if isinstance(value, list):
            return [self.convert(item, notes) for item in as_list(value)]
        if isinstance(value, dict):
            return {key: self.convert(item, notes) for key, item in as_dict(value).items()}
        return value

    def _one(self, match: re.Match[str], notes: list[str]) -> str:
        ref, kind, arg = match[0], match[1], match[2]
        if kind == "env" and arg is not None and _ENV_NAME.fullmatch(arg):
            return "${" + arg + "}"
        if kind == "input" and arg is not None:
            return self._input(arg, notes)
        if kind in ("workspaceFolder", "workspaceFolderBasename") and arg is None:
            if self.workspace is None:
                raise Skip(f"uses {ref}, but this file belongs to no workspace folder; replace it with a path")
            if self.workspace == self.home:
                notes.append(f"{self.host}'s user-level file used {ref}; it became your home folder: check that path")
            return str(self.workspace) if kind == "workspaceFolder" else self.workspace.name
        if kind == "userHome" and arg is None:
            return str(self.home)
        if kind in ("/", "pathSeparator") and arg is None:
            return os.sep
        if not kind[0].islower() and (arg is None or arg.startswith("-")):
            return ref  # `${API_KEY}` / `${API_KEY:-x}`: already an mcpdeck environment reference
        raise Skip(f"uses {ref}, which only {self.host} can resolve; replace it with a value or a ${{VAR}} reference")

    def _input(self, ident: str, notes: list[str]) -> str:
        words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", ident)
        var = re.sub(r"[^A-Za-z0-9]+", "_", words).strip("_").upper() or "INPUT"
        var = f"INPUT_{var}" if var[0].isdigit() else var
        spec = self.inputs.get(ident, {})
        about = f" ({spec['description']})" if isinstance(spec.get("description"), str) else ""
        default = spec.get("default")
        if isinstance(default, str) and default and "}" not in default:
            notes.append(
                f"{self.host} input {ident!r}{about} became ${{{var}:-{default}}}: set that variable to override"
            )
            return f"${{{var}:-{default}}}"
        notes.append(f"{self.host} input {ident!r}{about} became ${{{var}}}: set that variable")
        return f"${{{var}}}"


def _json_entry(name: str, raw: Any, notes: list[str], refs: _Refs | None = None) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise Skip(f"expected an object, got {type(raw).__name__}")
    entry = {key: value for key, value in as_dict(raw).items() if key != "dev"}
    if refs is not None:
        entry = refs.convert(entry, notes)
    env_file = entry.pop("envFile", None)
    if env_file is not None:
        notes.append(
            f"{name!r} loaded variables from the env file {env_file}, which mcpdeck does not read: "
            "export them, or add them under its env"
        )
    return entry


def _workspace_of(path: Path, marker: str) -> Path | None:
    folder = Path(os.path.abspath(path)).parent
    return folder.parent if folder.name == marker else None


def mcp_servers_entries(source: str, doc: dict[str, Any], path: Path, notes: list[str]) -> list[Entry]:
    """The entries of an ``mcpServers`` file (Claude Desktop, Claude Code, Cursor); file-wide notes go to ``notes``."""
    servers = servers_object(doc, "mcpServers", path)
    convert: Convert = _json_entry
    if source == "cursor":
        convert = functools.partial(_json_entry, refs=_Refs("Cursor", Path.home(), _workspace_of(path, ".cursor")))
    projects = doc.get("projects")
    if source == "claude-code" and isinstance(projects, dict):
        # ~/.claude.json: top-level servers are user-wide; each project's apply only in that folder.
        here = os.path.normcase(os.path.realpath(Path.cwd()))
        for folder, project in as_dict(projects).items():
            local = servers_object(as_dict(project), "mcpServers", path)
            if not local:
                continue
            if os.path.normcase(os.path.realpath(folder)) != here:
                notes.append(
                    f"skipped the servers of project {folder} ({', '.join(local)}): Claude Code uses them only "
                    "in that folder; run the import from there to get them"
                )
                continue
            notes.extend(
                f"{name!r} of project {folder} replaces the user-wide {name!r}, as in Claude Code"
                for name in local.keys() & servers.keys()
            )
            servers.update(local)
    return [(name, raw, convert) for name, raw in servers.items()]


def vscode_entries(doc: dict[str, Any], path: Path) -> list[Entry]:
    """The entries of a VS Code file: ``.vscode/mcp.json`` (``servers``, ``inputs``) or a user ``settings.json``."""
    # .vscode/mcp.json holds `servers` and `inputs`; a user settings.json holds them under "mcp".
    section = as_dict(doc.get("mcp")) if "servers" not in doc and isinstance(doc.get("mcp"), dict) else doc
    inputs = {str(item["id"]): item for item in map(as_dict, as_list(section.get("inputs"))) if "id" in item}
    refs = _Refs("VS Code", Path.home(), _workspace_of(path, ".vscode"), inputs)
    convert = functools.partial(_json_entry, refs=refs)
    return [(name, raw, convert) for name, raw in servers_object(section, "servers", path).items()]


def goose_entries(doc: dict[str, Any], path: Path) -> list[Entry]:
    """The entries of Goose's ``config.yaml`` (its ``extensions``)."""
    return [(name, raw, _goose_entry) for name, raw in servers_object(doc, "extensions", path).items()]


def _goose_entry(name: str, raw: Any, notes: list[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise Skip(f"expected a mapping, got {type(raw).__name__}")
    ext = as_dict(raw)
    kind = str(ext.get("type", ""))
    if kind in _GOOSE_NOT_MCP:
        raise Skip(_GOOSE_NOT_MCP[kind])
    if kind == "stdio":
        if not ext.get("cmd"):
            raise Skip("a stdio extension needs 'cmd'")
        env = {key: str(value) for key, value in as_dict(ext.get("envs")).items()}
        secret = [str(key) for key in as_list(ext.get("env_keys")) if str(key) not in env]
        env.update({key: f"${{{key}}}" for key in secret})
        if secret:
            notes.append(f"Goose keeps {', '.join(secret)} of {name!r} in its keyring: set it in the environment")
        entry: dict[str, Any] = {"command": str(ext["cmd"]), "args": list(map(str, as_list(ext.get("args"))))}
        entry["env"] = env
    elif kind in ("sse", "streamable_http"):
        if not ext.get("uri"):
            raise Skip(f"a {kind} extension needs 'uri'")
        headers = {key: str(value) for key, value in as_dict(ext.get("headers")).items()}
        entry = {"type": "sse" if kind == "sse" else "http", "url": str(ext["uri"]), "headers": headers}
    else:
        raise Skip(f"unknown Goose extension type {kind!r}; expected stdio, sse or streamable_http")
    if ext.get("enabled") is False:
        entry["disabled"] = True
    timeout = ext.get("timeout")
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
        entry["timeout"] = timeout
    if tools := as_list(ext.get("available_tools")):
        entry["tools"] = {"include": list(map(str, tools))}
    return entry
