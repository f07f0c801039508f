"""Commands about tools: tools, tool, call."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, cast

import click

from mcpdeck.cli._app import SECONDS, CliContext, json_object_option, pass_ctx, run_async
from mcpdeck.cli._switch import on_backend

if TYPE_CHECKING:
    from mcpdeck.cli._backend import Backend

__all__ = ["register_tool_commands"]


@click.command(short_help="List every server's tools under their namespaced names.")
@click.option("--server", "servers", multiple=True, metavar="NAME", help="Only this server's tools (repeatable).")
@click.option("-v", "--verbose", is_flag=True, help="Each tool's arguments and whole description.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (with schemas).")
@pass_ctx
@on_backend("tools")
async def tools(ctx: CliContext, backend: Backend, servers: tuple[str, ...], verbose: bool, as_json: bool) -> None:
    """List the tools of every connected server, under their namespaced names.

    \b
    Examples:
      mcpdeck tools
      mcpdeck tools --server fs --verbose
    """
    from mcpdeck.cli._settle import show_offered

    show, end = show_offered(as_json, lambda listed: tools_text(listed, verbose=verbose), "No tools.")
    await backend.offered("tools", servers, show, at_once=as_json)
    end()


def tools_text(catalog: list[dict[str, Any]], *, verbose: bool) -> str:
    """What ``mcpdeck tools`` prints for these tools (their JSON, as the API has it too)."""
    from mcpdeck.cli._output import table

    if verbose:
        return "\n\n".join(describe(tool) for tool in catalog)
    return table(["tool", "description"], [[t["name"], _first_line(t.get("description") or "")] for t in catalog])


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _type_of(spec: dict[str, Any]) -> str:
    kind: Any = spec.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in cast(list[Any], kind))
    if isinstance(kind, str):
        if kind == "array" and isinstance(spec.get("items"), dict):
            return f"array of {_type_of(cast(dict[str, Any], spec['items']))}"
        return kind
    if "enum" in spec:
        return "one of " + ", ".join(json.dumps(v) for v in cast(list[Any], spec["enum"]))
    return "any"


def argument_lines(schema: dict[str, Any]) -> list[str]:
    """One line per argument of an input schema: name, type, required or default, description."""
    properties: Any = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return []
    required: Any = schema.get("required")
    needed = set(cast(list[Any], required)) if isinstance(required, list) else set[Any]()
    lines: list[str] = []
    for key, raw in cast(dict[str, Any], properties).items():
        spec = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
        notes = [_type_of(spec)]
        if "enum" in spec and "type" in spec:
            notes.append("one of " + ", ".join(json.dumps(v) for v in cast(list[Any], spec["enum"])))
        if "default" in spec:
            notes.append(f"default {json.dumps(spec['default'])}")
        elif key in needed:
            notes.append("required")
        description = _first_line(str(spec.get("description") or ""))
        lines.append(f"{key} ({', '.join(notes)})" + (f": {description}" if description else ""))
    return lines


def describe(tool: dict[str, Any]) -> str:
    """A tool (its JSON) as ``tool`` and ``tools --verbose`` show it: everything the server wrote made safe."""
    from mcpdeck.cli._output import safe, style

    title = tool.get("title")
    lines = [style(tool["name"], bold=True) + (safe(f"  ({title})") if title else "")]
    lines += [f"  {safe(line)}" for line in (tool.get("description") or "").strip().splitlines()]
    arguments = argument_lines(tool.get("inputSchema") or {})
    lines.append("  arguments:" if arguments else "  arguments: none")
    lines += [f"    {safe(line)}" for line in arguments]
    annotations: dict[str, Any] = tool.get("annotations") or {}
    if annotations.get("readOnlyHint"):
        lines.append("  read-only (the server says)")
    return "\n".join(lines)


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="The tool's entry as JSON (with its schemas).")
@pass_ctx
@run_async
async def tool(ctx: CliContext, name: str, as_json: bool) -> None:
    """Show one tool: its description and the arguments it takes.

    \b
    Examples:
      mcpdeck tool mcp__everything__echo
      mcpdeck tool mcp__fs__read_file --json
    """
    from mcpdeck.cli._render import echo_json

    async with ctx.host(only=ctx.servers_for(name)) as host:
        entry = host.tool(name)
    if as_json:
        echo_json(entry.to_json())
    else:
        click.echo(describe(entry.to_json()))


@click.command(short_help="Call a tool by its namespaced name, with --args JSON.")
@click.argument("tool")
@click.option("--args", "args_json", metavar="JSON", default="{}", help="Arguments as a JSON object.")
@click.option("--json", "as_json", is_flag=True, help="The whole MCP result as JSON.")
@click.option("--timeout", type=SECONDS, metavar="SECONDS", help="Request timeout (default: the server's).")
@click.option("--no-validate", is_flag=True, help="Send the arguments unchecked; the server judges them.")
@pass_ctx
@on_backend("call")
async def call(
    ctx: CliContext,
    backend: Backend,
    tool: str,
    args_json: str,
    as_json: bool,
    timeout: float | None,
    no_validate: bool,
) -> None:
    """Call TOOL (its namespaced name, e.g. mcp__fs__read_file) with --args JSON.

    \b
    Examples:
      mcpdeck call mcp__everything__echo --args '{"message": "hi"}'
      mcpdeck call mcp__fs__read_file --args '{"path": "README.md"}' --json
    """
    from mcpdeck.cli._output import ProgressLine, echo_json, safe

    arguments = json_object_option(args_json, "--args", '{"path": "README.md"}')
    progress = ProgressLine(tool)
    try:
        result = await backend.call(tool, arguments, timeout=timeout, validate=not no_validate, progress=progress)
    finally:
        progress.close()
    if as_json:
        echo_json(result.json)
    else:
        click.echo(safe(result.text(), multiline=True))
    if result.is_error:
        sys.exit(1)


def register_tool_commands(group: click.Group) -> None:
    """Add ``tools``, ``tool`` and ``call`` to the CLI."""
    for command in (tools, tool, call):
        group.add_command(command)
