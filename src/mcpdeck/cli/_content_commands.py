"""CLI commands for what servers offer besides tools: resources and prompts."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from mcpdeck.cli._app import CliContext, json_object_option, option_group, pass_ctx, run_async
from mcpdeck.cli._switch import on_backend

if TYPE_CHECKING:
    import mcp_types as types

    from mcpdeck.cli._backend import Backend

__all__ = ["register_content_commands"]

_LIST_OPTIONS = option_group(
    click.option("--server", "servers", multiple=True, metavar="NAME", help="Only this server's (repeatable)."),
    click.option("--json", "as_json", is_flag=True, help="Machine-readable output."),
)


@click.command(short_help="List every server's resources and resource templates.")
@_LIST_OPTIONS
@pass_ctx
@on_backend("resources")
async def resources(ctx: CliContext, backend: Backend, servers: tuple[str, ...], as_json: bool) -> None:
    """List the resources and resource templates of every connected server.

    \b
    Example:
      mcpdeck resources --server everything
    """
    from mcpdeck.cli._settle import show_offered

    def text(found: dict[str, list[dict[str, Any]]]) -> str:
        return resources_text(found["resources"], found["templates"])

    show, end = show_offered(as_json, text, "No resources.")
    await backend.offered("resources", servers, show, at_once=as_json)
    end()


def resources_text(listed: list[dict[str, Any]], templates: list[dict[str, Any]]) -> str:
    """The tables of ``mcpdeck resources``, from the JSON of resources and templates (as the API has them too)."""
    from mcpdeck.cli._output import table

    rows = [[r["server"], r["uri"], r.get("mimeType") or "", r.get("title") or r.get("name") or ""] for r in listed]
    parts = [table(["server", "uri", "type", "name"], rows)] if rows else []
    rows = [[t["server"], t["uriTemplate"], t.get("title") or t.get("name") or ""] for t in templates]
    if rows:
        parts.append(table(["server", "template", "name"], rows))
    return "\n\n".join(parts)


def _print_contents(result: types.ReadResourceResult, output: str | None) -> None:
    """Text to the terminal made safe; to FILE as it is (a new FILE is ``0600``); binary data as it is
    to FILE or a pipe (asked for as data), only described on a terminal."""
    import base64

    import mcp_types as types

    from mcpdeck._util.files import private_opener
    from mcpdeck.cli._render import safe

    for item in result.contents:
        if isinstance(item, types.TextResourceContents):
            if output:
                with open(output, "w", encoding="utf-8", opener=private_opener) as handle:
                    handle.write(item.text)
            else:
                click.echo(safe(item.text, multiline=True))
        else:
            data = base64.b64decode(item.blob)
            if output:
                with open(output, "wb", opener=private_opener) as handle:
                    handle.write(data)
            elif not sys.stdout.isatty():
                sys.stdout.buffer.write(data)
            else:
                click.echo(f"[binary {safe(item.mime_type or 'data')}, {len(data)} bytes: use --output FILE or a pipe]")


@click.command(short_help="Read a resource by URI.")
@click.argument("uri")
@click.option("--server", metavar="NAME", help="The server to read from (needed when several offer the URI).")
@click.option("--json", "as_json", is_flag=True, help="The whole MCP result as JSON.")
@click.option("-o", "--output", metavar="FILE", help="Write the contents to FILE.")
@pass_ctx
@run_async
async def read(ctx: CliContext, uri: str, server: str | None, as_json: bool, output: str | None) -> None:
    """Read a resource by URI.

    \b
    Examples:
      mcpdeck read demo://resource/static/document/architecture.md
      mcpdeck read file:///tmp/report.pdf --server fs -o report.pdf
    """
    from mcpdeck.cli._render import echo_json

    if server is not None:
        ctx.server(server)
    async with ctx.host(only=[server] if server else None, interactive=True) as host:
        result = await host.read_resource(uri, server=server)
    if as_json:
        echo_json(result.model_dump(mode="json", by_alias=True, exclude_none=True))
    else:
        _print_contents(result, output)


@click.command(short_help="List every server's prompts under their namespaced names.")
@_LIST_OPTIONS
@pass_ctx
@on_backend("prompts")
async def prompts(ctx: CliContext, backend: Backend, servers: tuple[str, ...], as_json: bool) -> None:
    """List the prompts of every connected server, under their namespaced names.

    \b
    Example:
      mcpdeck prompts --server everything
    """
    from mcpdeck.cli._settle import show_offered

    show, end = show_offered(as_json, prompts_text, "No prompts.")
    await backend.offered("prompts", servers, show, at_once=as_json)
    end()


def prompts_text(listed: list[dict[str, Any]]) -> str:
    """The table of ``mcpdeck prompts``, from the prompts' JSON (as the API has it too)."""
    from mcpdeck.cli._output import table

    rows = [
        [
            p["name"],
            " ".join(a["name"] + ("" if a.get("required") else "?") for a in p.get("arguments") or ()),
            (p.get("description") or "").strip().split("\n")[0],
        ]
        for p in listed
    ]
    return table(["prompt", "arguments", "description"], rows)


def _render_message(message: types.PromptMessage) -> str:
    import mcp_types as types

    from mcpdeck.cli._render import safe, style

    content = message.content
    if isinstance(content, types.TextContent):
        body = content.text
    elif isinstance(content, types.EmbeddedResource) and isinstance(content.resource, types.TextResourceContents):
        body = content.resource.text
    else:
        body = f"[{content.type} content]"
    return f"{style(message.role, bold=True)}: {safe(body, multiline=True)}"


@click.command(short_help="Get a prompt by its namespaced name, with --args JSON.")
@click.argument("name")
@click.option("--args", "args_json", metavar="JSON", default="{}", help="Arguments as a JSON object of strings.")
@click.option("--json", "as_json", is_flag=True, help="The whole MCP result as JSON.")
@pass_ctx
@run_async
async def prompt(ctx: CliContext, name: str, args_json: str, as_json: bool) -> None:
    """Get a prompt (its namespaced name, e.g. mcp__srv__summarize) with --args.

    \b
    Example:
      mcpdeck prompt mcp__everything__args-prompt --args '{"city": "Oslo"}'
    """
    from mcpdeck.cli._render import echo_json, style

    arguments = json_object_option(args_json, "--args", '{"topic": "rain"}')
    async with ctx.host(only=ctx.servers_for(name, "prompt"), interactive=True) as host:
        result = await host.get_prompt(name, {key: str(value) for key, value in arguments.items()})
    if as_json:
        echo_json(result.model_dump(mode="json", by_alias=True, exclude_none=True))
        return
    if result.description:
        click.echo(style(result.description, multiline=True, dim=True))
    for message in result.messages:
        click.echo(_render_message(message))


def register_content_commands(group: click.Group) -> None:
    """Add ``resources``, ``read``, ``prompts`` and ``prompt`` to the CLI."""
    for command in (resources, read, prompts, prompt):
        group.add_command(command)
