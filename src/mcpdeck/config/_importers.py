"""Importers: read other MCP hosts' config files and turn their servers into mcpdeck configs.

Readers are pure functions of the file (plus the home and working folders some formats
refer to). One unusable entry never stops the others: it lands in ``ImportResult.skipped``
with the reason, and whatever the import changed on the way is told in ``notes``.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import yaml

from mcpdeck.config._json import load_json
from mcpdeck.config._models import MAX_SERVER_NAME, ServerConfig, parse_server_config, validate_server_name
from mcpdeck.errors import ConfigError

__all__ = ["IMPORT_SOURCES", "ImportResult", "ImportSource", "default_import_path", "import_servers"]

ImportSource = Literal["claude-desktop", "claude-code", "cursor", "vscode", "goose"]
IMPORT_SOURCES: tuple[ImportSource, ...] = ("claude-desktop", "claude-code", "cursor", "vscode", "goose")

_LABELS: dict[ImportSource, str] = dict(
    zip(IMPORT_SOURCES, ("Claude Desktop", "Claude Code", "Cursor", "VS Code", "Goose"), strict=True)
)
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
# A JSON string, to its closing quote or (unterminated) to the end of its line: never backtracks.
_STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?'
# Everything up to the next comment (or trailing comma), strings included; greedy, so it never backtracks.
_UP_TO_COMMENT = re.compile(rf"(?:[^\"/]+|{_STRING}|/(?![/*]))*")
_UP_TO_TRAILING_COMMA = re.compile(rf"(?:[^\",]+|{_STRING}|,(?!\s*[}}\]]))*")


@dataclass(frozen=True)
class ImportResult:
    """What one import found.

    Attributes:
        source: The host the file belongs to.
        path: The file that was read.
        servers: The importable servers, by (valid, possibly renamed) mcpdeck name, in file order.
        skipped: Entries that could not be imported: original name -> why.
        notes: What the import changed or what the user must do (renames, variables to set).
    """

    source: ImportSource
    path: Path
    servers: dict[str, ServerConfig]
    skipped: dict[str, str]
    notes: list[str]


class _Skip(Exception):
    """One entry cannot be imported; the message says why."""


# A converter turns one entry of the host's file into an mcpServers-style dict, appending
# notes for that entry (kept only if the entry imports), or raises _Skip.
_Convert = Callable[[str, Any, list[str]], dict[str, Any]]


def default_import_path(
    source: ImportSource, *, home: Path | None = None, platform: str | None = None, cwd: Path | None = None
) -> Path:
    """Where ``source`` keeps its MCP config by default.

    Args:
        source: The host.
        home: The user's home folder. When given, ``%APPDATA%`` and ``$XDG_CONFIG_HOME`` are
            taken to be their defaults under it; when omitted, the real home and environment are used.
        platform: A ``sys.platform`` value (``darwin``, ``win32``, ``linux``); default: this one.
        cwd: The project folder for project-level files; default: the working directory.

    Returns:
        The per-user file (Claude Desktop, Cursor, Goose) or the project file under ``cwd`` (Claude Code, VS Code).
    """
    user = home if home is not None else Path.home()
    system = platform or sys.platform
    if source == "claude-code":
        return (cwd if cwd is not None else Path.cwd()) / ".mcp.json"
    if source == "vscode":
        return (cwd if cwd is not None else Path.cwd()) / ".vscode" / "mcp.json"
    if source == "cursor":
        return user / ".cursor" / "mcp.json"
    env: Mapping[str, str] = os.environ if home is None else {}
    windows = system.startswith("win")
    appdata = Path(env["APPDATA"]) if env.get("APPDATA") else user / "AppData" / "Roaming"
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else user / ".config"
    if source == "goose":
        return (appdata / "Block" / "goose" / "config" if windows else xdg / "goose") / "config.yaml"
    folder = appdata if windows else user / "Library" / "Application Support" if system == "darwin" else xdg
    return folder / "Claude" / "claude_desktop_config.json"


def import_servers(source: ImportSource, path: Path | None = None) -> ImportResult:
    """Read ``source``'s config file and convert its servers.

    Args:
        source: The host whose format the file is in.
        path: The file; default: :func:`default_import_path` for ``source``.

    Returns:
        The servers ready to save, the entries skipped with reasons, and notes.

    Raises:
        ConfigError: The file is missing, unreadable, or not valid JSON/YAML (with the line).
    """
    path = path if path is not None else default_import_path(source)
    label = _LABELS[source]
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(
            f"no {label} config file here; if yours is elsewhere, give its path: `mcpdeck import {source} PATH`",
            path=str(path),
        ) from None
    except OSError as error:
        raise ConfigError(f"cannot read the {label} config: {error.strerror}", path=str(path)) from None
    found = _Found()
    if source == "goose":
        for name, raw in _servers_object(_load_yaml(text, path), "extensions", path).items():
            found.add(name, raw, _goose_entry)
    elif source == "vscode":
        _read_vscode(_load_json(text, path), path, found)
    else:
        _read_mcp_servers(source, _load_json(text, path), path, found)
    return found.result(source, path)


@dataclass
class _Found:
    entries: dict[str, tuple[dict[str, Any], list[str]]] = field(default_factory=dict[str, Any])
    skipped: dict[str, str] = field(default_factory=dict[str, str])
    notes: list[str] = field(default_factory=list[str])

    def add(self, name: str, raw: Any, convert: _Convert) -> None:
        notes: list[str] = []
        try:
            self.entries[name] = (convert(name, raw, notes), notes)
        except _Skip as skip:
            self.skipped[name] = str(skip)

    def result(self, source: ImportSource, path: Path) -> ImportResult:
        parsed: dict[str, tuple[ServerConfig, list[str]]] = {}
        for original, (raw, notes) in self.entries.items():
            base = _sanitize(original)
            try:
                parsed[original] = (parse_server_config(base, raw), notes)
            except ConfigError as error:
                self.skipped[original] = str(error).removeprefix(f"server {base!r}: ")
        taken = {name for name in parsed if _is_valid(name)}
        servers: dict[str, ServerConfig] = {}
        for original, (config, notes) in parsed.items():
            name = original
            if not _is_valid(original):
                name = _unique(_sanitize(original), taken)
                taken.add(name)
                self.notes.append(
                    f"renamed {original!r} to {name!r}: mcpdeck server names use only letters, digits, '_' and '-', "
                    f"without '__', at most {MAX_SERVER_NAME} characters"
                )
            servers[name] = config
            self.notes.extend(notes)
        if not self.entries and not self.skipped and not self.notes:
            self.notes.append(f"no MCP servers found in this {_LABELS[source]} file")
        return ImportResult(source, path, servers, self.skipped, list(dict.fromkeys(self.notes)))


def _is_valid(name: str) -> bool:
    try:
        validate_server_name(name)
    except ConfigError:
        return False
    return True


def _sanitize(name: str) -> str:
    clean = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]", "_", name)).strip("_-")
    return clean[:MAX_SERVER_NAME].rstrip("_-") or "server"


def _unique(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        suffix = f"-{n}"
        name, n = base[: MAX_SERVER_NAME - len(suffix)] + suffix, n + 1
    return name


def _blank(comment: str) -> str:
    """Spaces as long as ``comment``, keeping its newlines."""
    if "\n" not in comment:
        return " " * len(comment)
    return "\n".join(" " * len(line) for line in comment.split("\n"))


def _strip_jsonc(text: str) -> str:
    """JSONC to JSON in linear time: comments, then trailing commas, become spaces.

    Each pass visits every character once: the text between comments (or trailing commas)
    is skipped by one pattern that never backtracks, a block comment's end is found with
    ``str.find``. Newlines inside comments are kept, so the lines and columns of a later
    parse error stay true. An unterminated ``/*`` runs to the end of the text.
    """
    out: list[str] = []
    pos = 0
    while (at := _UP_TO_COMMENT.match(text, pos).end()) < len(text):  # pyright: ignore[reportOptionalMemberAccess]
        if text.startswith("//", at):
            end = text.find("\n", at)
        else:
            end = text.find("*/", at + 2)
            end = end + 2 if end != -1 else end
        end = len(text) if end == -1 else end
        out += (text[pos:at], _blank(text[at:end]))
        pos = end
    out.append(text[pos:])
    text, out, pos = "".join(out), [], 0
    while (at := _UP_TO_TRAILING_COMMA.match(text, pos).end()) < len(text):  # pyright: ignore[reportOptionalMemberAccess]
        out += (text[pos:at], " ")
        pos = at + 1
    out.append(text[pos:])
    return "".join(out)


def _load_json(text: str, path: Path) -> dict[str, Any]:
    # Comments and trailing commas (VS Code writes JSONC) become spaces, so lines and columns stay true.
    text = _strip_jsonc(text)
    data: Any = load_json(text, str(path)) if text.strip() else {}
    if not isinstance(data, dict):
        raise ConfigError("expected a JSON object at the top of the file", path=str(path), line=1)
    return _as_dict(data)


def _load_yaml(text: str, path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except RecursionError:
        raise ConfigError(
            "nested too deeply to be a config file; check that this is the right file", path=str(path)
        ) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else None
        raise ConfigError(f"not valid YAML: {error.problem or error.context}", path=str(path), line=line) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"not valid YAML: {error}", path=str(path)) from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError("expected a YAML mapping at the top of the file", path=str(path), line=1)
    return _as_dict(data)


def _as_dict(value: Any) -> dict[str, Any]:
    return {str(key): item for key, item in cast("dict[Any, Any]", value).items()} if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return list(cast("list[Any]", value)) if isinstance(value, list) else []


def _servers_object(doc: Mapping[str, Any], key: str, path: Path) -> dict[str, Any]:
    servers = doc.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise ConfigError(f'"{key}" must be an object mapping server names to configs', path=str(path))
    return _as_dict(servers)


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
            return [self.convert(item, notes) for item in _as_list(value)]
        if isinstance(value, dict):
            return {key: self.convert(item, notes) for key, item in _as_dict(value).items()}
        return value

    def _one(self, match: re.Match[str], notes: list[str]) -> str:
        ref, kind, arg = match[0], match[1], match[2]
        if kind == "env" and arg is not None and _ENV_NAME.fullmatch(arg):
            return "${" + arg + "}"
        if kind == "input" and arg is not None:
            return self._input(arg, notes)
        if kind in ("workspaceFolder", "workspaceFolderBasename") and arg is None:
            if self.workspace is None:
                raise _Skip(f"uses {ref}, but this file belongs to no workspace folder; replace it with a path")
            if self.workspace == self.home:
                notes.append(f"{self.host}'s user-level file used {ref}; it became your home folder: check that path")
            return str(self.workspace) if kind == "workspaceFolder" else self.workspace.name
        if kind == "userHome" and arg is None:
            return str(self.home)
        if kind in ("/", "pathSeparator") and arg is None:
            return os.sep
        if not kind[0].islower() and (arg is None or arg.startswith("-")):
            return ref  # `${API_KEY}` / `${API_KEY:-x}`: already an mcpdeck environment reference
        raise _Skip(f"uses {ref}, which only {self.host} can resolve; replace it with a value or a ${{VAR}} reference")

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
        raise _Skip(f"expected an object, got {type(raw).__name__}")
    entry = {key: value for key, value in _as_dict(raw).items() if key != "dev"}
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


def _read_mcp_servers(source: ImportSource, doc: dict[str, Any], path: Path, found: _Found) -> None:
    servers = _servers_object(doc, "mcpServers", path)
    convert: _Convert = _json_entry
    if source == "cursor":
        convert = functools.partial(_json_entry, refs=_Refs("Cursor", Path.home(), _workspace_of(path, ".cursor")))
    projects = doc.get("projects")
    if source == "claude-code" and isinstance(projects, dict):
        # ~/.claude.json: top-level servers are user-wide; each project's apply only in that folder.
        here = os.path.normcase(os.path.realpath(Path.cwd()))
        for folder, project in _as_dict(projects).items():
            local = _servers_object(_as_dict(project), "mcpServers", path)
            if not local:
                continue
            if os.path.normcase(os.path.realpath(folder)) != here:
                found.notes.append(
                    f"skipped the servers of project {folder} ({', '.join(local)}): Claude Code uses them only "
                    "in that folder; run the import from there to get them"
                )
                continue
            for name in local.keys() & servers.keys():
                found.notes.append(f"{name!r} of project {folder} replaces the user-wide {name!r}, as in Claude Code")
            servers.update(local)
    for name, raw in servers.items():
        found.add(name, raw, convert)


def _read_vscode(doc: dict[str, Any], path: Path, found: _Found) -> None:
    # .vscode/mcp.json holds `servers` and `inputs`; a user settings.json holds them under "mcp".
    section = _as_dict(doc.get("mcp")) if "servers" not in doc and isinstance(doc.get("mcp"), dict) else doc
    inputs = {str(item["id"]): item for item in map(_as_dict, _as_list(section.get("inputs"))) if "id" in item}
    refs = _Refs("VS Code", Path.home(), _workspace_of(path, ".vscode"), inputs)
    for name, raw in _servers_object(section, "servers", path).items():
        found.add(name, raw, functools.partial(_json_entry, refs=refs))


def _goose_entry(name: str, raw: Any, notes: list[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _Skip(f"expected a mapping, got {type(raw).__name__}")
    ext = _as_dict(raw)
    kind = str(ext.get("type", ""))
    if kind in _GOOSE_NOT_MCP:
        raise _Skip(_GOOSE_NOT_MCP[kind])
    if kind == "stdio":
        if not ext.get("cmd"):
            raise _Skip("a stdio extension needs 'cmd'")
        env = {key: str(value) for key, value in _as_dict(ext.get("envs")).items()}
        secret = [str(key) for key in _as_list(ext.get("env_keys")) if str(key) not in env]
        env.update({key: f"${{{key}}}" for key in secret})
        if secret:
            notes.append(f"Goose keeps {', '.join(secret)} of {name!r} in its keyring: set it in the environment")
        entry: dict[str, Any] = {"command": str(ext["cmd"]), "args": list(map(str, _as_list(ext.get("args"))))}
        entry["env"] = env
    elif kind in ("sse", "streamable_http"):
        if not ext.get("uri"):
            raise _Skip(f"a {kind} extension needs 'uri'")
        headers = {key: str(value) for key, value in _as_dict(ext.get("headers")).items()}
        entry = {"type": "sse" if kind == "sse" else "http", "url": str(ext["uri"]), "headers": headers}
    else:
        raise _Skip(f"unknown Goose extension type {kind!r}; expected stdio, sse or streamable_http")
    if ext.get("enabled") is False:
        entry["disabled"] = True
    timeout = ext.get("timeout")
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
        entry["timeout"] = timeout
    if tools := _as_list(ext.get("available_tools")):
        entry["tools"] = {"include": list(map(str, tools))}
    return entry
