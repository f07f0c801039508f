"""``/api/servers``: list, get, add, update (name locked), remove, enable/disable, reconnect,
disconnect, test (saved or not), per-tool enable/disable, logs; ``/api/import``."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, cast

import anyio.to_thread
from fastapi import APIRouter, Query, Request

from mcpdeck.api._common import ApiContextDep, ChangesConfig, changing, require_server, server_json, until_disconnected
from mcpdeck.api._context import ApiContext
from mcpdeck.api._errors import ApiError
from mcpdeck.api._models import (
    ImportIn,
    ImportOut,
    ImportPreviewOut,
    ServerConfigIn,
    ServerDetailOut,
    ServerIn,
    ServerListOut,
    ServerOut,
    ServerTestIn,
    TestOut,
)
from mcpdeck.api._secrets import mask_config, moved_secrets, restore_masked
from mcpdeck.config import (
    AnyServerConfig,
    ImportResult,
    InProcessServerConfig,
    StdioServerConfig,
    ToolFilter,
    default_import_path,
    import_servers,
    parse_server_config,
    validate_server_name,
)
from mcpdeck.errors import ConfigError
from mcpdeck.host import ServerTest
from mcpdeck.status import ServerState

__all__ = ["router"]

router = APIRouter(tags=["servers"])

KeepSecrets = Query(
    default=None,
    alias="keepSecrets",
    description="When the URL now names another host: true sends the stored headers and OAuth secrets the "
    "config keeps (masked or unchanged) to it, false drops them; without it such a change is refused (409).",
)


def _detail(ctx: ApiContext, name: str) -> dict[str, Any]:
    status = require_server(ctx, name)
    config: dict[str, Any] | None = None
    disabled: list[str] = []
    if not status.unreadable:
        running = ctx.host.config_of(name)
        if not isinstance(running, InProcessServerConfig):  # an in-process server has no entry to show
            config = mask_config(running)
            disabled = list(running.tools.exclude) if running.tools else []
    tools = [tool.original_name for tool in ctx.host.catalog.for_server(name)]
    return {"config": config, "status": server_json(ctx, status), "tools": tools, "disabledTools": disabled}


async def _stored(ctx: ApiContext, name: str) -> dict[str, Any]:
    """The server's entry as the file stores it (secrets and all), else as it runs."""
    if ctx.store is not None:
        document = await anyio.to_thread.run_sync(ctx.store.document)
        servers: dict[str, Any] = document.raw.get("mcpServers") or {}
        entry: object = servers.get(name)
        if isinstance(entry, dict):
            return copy.deepcopy(cast(dict[str, Any], entry))  # the document is shared: the caller gets its own
    if ctx.host.servers.get(name) is not None and not ctx.host.servers[name].unreadable:
        running = ctx.host.config_of(name)
        if not isinstance(running, InProcessServerConfig):
            return running.to_json()
    return {}


@router.get("/servers", response_model=ServerListOut, summary="List servers")
async def list_servers(ctx: ApiContextDep) -> dict[str, Any]:
    """Every configured server with its status, tool count, transport, target, last error, uptime and call counts."""
    path = str(ctx.store.path) if ctx.store is not None else None
    return {"config": path, "servers": [server_json(ctx, s) for s in ctx.host.servers.values()]}


@router.get("/servers/{name}", response_model=ServerDetailOut, summary="Get a server")
async def get_server(ctx: ApiContextDep, name: str) -> dict[str, Any]:
    """One server: its config (secrets masked), status and tool names (``mcpdeck get NAME --json``)."""
    return _detail(ctx, name)


def _refuse_taken(ctx: ApiContext, body: ServerIn) -> None:
    if body.name in ctx.host.servers and not body.force:
        where = f" in {ctx.store.path}" if ctx.store is not None else ""
        raise ApiError(409, "server-exists", f"server {body.name!r} already exists{where}; use force to replace it")


async def _try_first(ctx: ApiContext, request: Request, name: str, config: AnyServerConfig) -> None:
    """Connect ``config`` apart (as ``mcpdeck add`` does) and refuse to save it if it does not connect.

    A client that gives up waiting (it closes the connection) ends the try: nothing is saved."""
    tried: list[ServerTest] = []
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            await until_disconnected(request)
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        tried.append(await ctx.host.test_server(config, name=name))
        tg.cancel_scope.cancel()
    if not tried:
        raise ApiError(499, "client-gone", f"the client went away while {name!r} was tried; nothing was saved")
    if not tried[0].ok:
        status = tried[0].status
        raise ApiError(
            502,
            "did-not-connect",
            f"{name!r} did not connect, so it was not saved: {status.error or status.state.value}\n"
            'Fix it and add it again, or save it as it is with "saveAnyway": true.',
        )


@router.post("/servers", response_model=ServerDetailOut, status_code=201, summary="Add a server")
async def add_server(
    ctx: ApiContextDep, request: Request, body: ServerIn, keep: bool | None = KeepSecrets
) -> dict[str, Any]:
    """Try a new server and save it to the config file if it connects (or anyway, with ``saveAnyway``);
    then connect it. Answers once it has connected or failed."""
    validate_server_name(body.name)
    _refuse_taken(ctx, body)
    stored = await _stored(ctx, body.name) if body.force else {}
    given = moved_secrets(body.config, stored, partial=False, keep=keep)
    config = parse_server_config(body.name, restore_masked(given, stored))
    if not body.saveAnyway and not config.disabled:
        await _try_first(ctx, request, body.name, config)
        _refuse_taken(ctx, body)  # another request may have added it meanwhile
    with changing(ctx):  # the follower holds off while the file is written and the server switched, not longer
        await ctx.host.add_server(body.name, config, wait=False)
    await ctx.host.wait_settled(body.name)
    return _detail(ctx, body.name)


@router.put("/servers/{name}", response_model=ServerDetailOut, summary="Replace a server's config")
async def replace_server(
    ctx: ApiContextDep, name: str, body: ServerConfigIn, keep: bool | None = KeepSecrets
) -> dict[str, Any]:
    """Save the server's whole new config and reconnect it. Masked values keep the stored ones; the name is locked."""
    require_server(ctx, name)
    if body.name is not None and body.name != name:
        raise ApiError(400, "name-locked", f"a server cannot be renamed ({name!r} to {body.name!r}); remove and add it")
    stored = await _stored(ctx, name)
    config = parse_server_config(
        name, restore_masked(moved_secrets(body.config, stored, partial=False, keep=keep), stored)
    )
    with changing(ctx):
        await ctx.host.add_server(name, config, wait=False)
    await ctx.host.wait_settled(name)
    return _detail(ctx, name)


@router.patch("/servers/{name}", response_model=ServerDetailOut, summary="Change some keys of a server's config")
async def update_server(
    ctx: ApiContextDep, name: str, changes: dict[str, Any], keep: bool | None = KeepSecrets
) -> dict[str, Any]:
    """Change the given keys (JSON names, e.g. ``{"timeout": 120}``), keep the rest, reconnect."""
    status = require_server(ctx, name)
    if "name" in changes:
        raise ApiError(400, "name-locked", "a server cannot be renamed; remove and add it")
    stored = await _stored(ctx, name)
    restored = restore_masked(moved_secrets(changes, stored, partial=True, keep=keep), stored)
    with changing(ctx):
        if status.unreadable:  # an entry that never parsed: the change must make it whole
            await ctx.host.add_server(name, parse_server_config(name, {**stored, **restored}), wait=False)
        else:
            await ctx.host.update_server(name, restored, wait=False)
    await ctx.host.wait_settled(name)
    return _detail(ctx, name)


@router.delete("/servers/{name}", summary="Remove a server", dependencies=[ChangesConfig])
async def remove_server(ctx: ApiContextDep, name: str) -> dict[str, str]:
    """Disconnect the server and delete its config."""
    require_server(ctx, name)
    await ctx.host.remove_server(name)
    return {"removed": name}


@router.post("/servers/{name}/enable", response_model=ServerOut, summary="Enable a server")
async def enable_server(ctx: ApiContextDep, name: str) -> dict[str, Any]:
    """Clear ``disabled`` in its config and connect it."""
    require_server(ctx, name)
    with changing(ctx):
        await ctx.host.set_server_disabled(name, False, wait=False)
    return server_json(ctx, await ctx.host.wait_settled(name))


@router.post(
    "/servers/{name}/disable", response_model=ServerOut, summary="Disable a server", dependencies=[ChangesConfig]
)
async def disable_server(ctx: ApiContextDep, name: str) -> dict[str, Any]:
    """Set ``disabled`` in its config and disconnect it (the config is kept)."""
    require_server(ctx, name)
    return server_json(ctx, await ctx.host.set_server_disabled(name, True))


@router.post("/servers/{name}/reconnect", response_model=ServerOut, summary="Reconnect a server")
async def reconnect_server(ctx: ApiContextDep, name: str) -> dict[str, Any]:
    """Close its session and connect again; answers once it has connected or failed. A disabled server is a 409."""
    status = require_server(ctx, name)
    if status.state is ServerState.DISABLED:
        raise ApiError(
            409,
            "server-disabled",
            f"server {name!r} is disabled, so it was not reconnected; enable it first "
            f"(POST /api/servers/{name}/enable, `mcpdeck enable {name}`, or its switch in the console)",
        )
    return server_json(ctx, await ctx.host.reconnect(name))


@router.post("/servers/{name}/disconnect", response_model=ServerOut, summary="Disconnect a server")
async def disconnect_server(ctx: ApiContextDep, name: str) -> dict[str, Any]:
    """Close its session and leave it stopped until reconnected (its config is kept)."""
    require_server(ctx, name)
    return server_json(ctx, await ctx.host.disconnect(name))


def _test_json(ctx: ApiContext, name: str, report: ServerTest) -> dict[str, Any]:
    data = server_json(ctx, report.status) | {"name": name, "calls": 0, "errors": 0, "lastCallAt": None}
    return data | {"ok": report.ok, "duration": round(report.duration, 3), "tools": [t.name for t in report.tools]}


@router.post("/servers/{name}/test", response_model=TestOut, summary="Test a configured server")
async def test_server(ctx: ApiContextDep, name: str) -> dict[str, Any]:
    """Connect the server's config apart from the running one, list its tools, disconnect (``mcpdeck test``)."""
    status = require_server(ctx, name)
    if status.unreadable:
        raise ApiError(400, "config-error", status.error or f"server {name!r} has no usable config")
    return _test_json(ctx, name, await ctx.host.test_server(name))


@router.post("/test", response_model=TestOut, summary="Test a config without saving it")
async def test_config(ctx: ApiContextDep, body: ServerTestIn, keep: bool | None = KeepSecrets) -> dict[str, Any]:
    """Connect a server from its config, list its tools, disconnect. Nothing is saved.

    Masked values are taken from the server of the same name, so a console can test an edit.
    """
    name = validate_server_name(body.name)
    stored = await _stored(ctx, name) if name in ctx.host.servers else {}
    config = parse_server_config(
        name, restore_masked(moved_secrets(body.config, stored, partial=False, keep=keep), stored)
    )
    return _test_json(ctx, name, await ctx.host.test_server(config, name=name))


# ----- per-tool switches -------------------------------------------------------------------


def _tool_filter(ctx: ApiContext, name: str) -> ToolFilter:
    status = require_server(ctx, name)
    config = ctx.host.config_of(name) if not status.unreadable else None
    if config is None or isinstance(config, InProcessServerConfig):
        raise ApiError(400, "config-error", f"server {name!r} has no config file entry to change")
    return config.tools.model_copy(deep=True) if config.tools else ToolFilter()


async def _save_tool_filter(ctx: ApiContext, name: str, filters: ToolFilter) -> dict[str, Any]:
    """Save the server's ``tools`` (none at all when it filters nothing), reload it, and describe it."""
    data = filters.model_dump(exclude_none=True)
    await ctx.host.update_server(name, {"tools": data if data.get("include") is not None or data["exclude"] else None})
    return _detail(ctx, name)


@router.post(
    "/servers/{name}/tools/{tool}/disable",
    response_model=ServerDetailOut,
    summary="Disable a tool",
    dependencies=[ChangesConfig],
)
async def disable_tool(ctx: ApiContextDep, name: str, tool: str) -> dict[str, Any]:
    """Add the tool (its original name) to the server's ``tools.exclude`` in the config, and reload the server."""
    filters = _tool_filter(ctx, name)
    if tool not in filters.exclude:
        filters.exclude.append(tool)
    return await _save_tool_filter(ctx, name, filters)


@router.post(
    "/servers/{name}/tools/{tool}/enable",
    response_model=ServerDetailOut,
    summary="Enable a tool",
    dependencies=[ChangesConfig],
)
async def enable_tool(ctx: ApiContextDep, name: str, tool: str) -> dict[str, Any]:
    """Take the tool out of ``tools.exclude`` (and into ``tools.include`` if there is one), and reload the server."""
    filters = _tool_filter(ctx, name)
    filters.exclude = [pattern for pattern in filters.exclude if pattern != tool]
    if not filters.allows(tool) and filters.include is not None:
        filters.include.append(tool)
    if not filters.allows(tool):
        patterns = ", ".join(repr(p) for p in filters.exclude)
        raise ApiError(
            409, "tool-excluded", f"{tool!r} is still excluded by the pattern(s) {patterns}; edit tools.exclude"
        )
    return await _save_tool_filter(ctx, name, filters)


# ----- import --------------------------------------------------------------------------------


def _read_import(body: ImportIn) -> ImportResult:
    path = Path(body.path).expanduser() if body.path else default_import_path(body.source)
    return import_servers(body.source, path)


@router.post("/import/preview", response_model=ImportPreviewOut, tags=["import"], summary="Preview an import")
async def preview_import(ctx: ApiContextDep, body: ImportIn) -> dict[str, Any]:
    """What importing from another host's config would add (secrets masked); nothing is changed."""
    result = await anyio.to_thread.run_sync(_read_import, body)
    known = ctx.host.servers
    servers = [
        {
            "name": name,
            "transport": server.transport,
            "target": server.target if isinstance(server, StdioServerConfig) else mask_config(server)["url"],
            "config": mask_config(server),
            "exists": name in known,
        }
        for name, server in result.servers.items()
        if body.names is None or name in body.names
    ]
    return {
        "source": result.source,
        "path": str(result.path),
        "servers": servers,
        "skipped": result.skipped,
        "notes": result.notes,
    }


@router.post(
    "/import", response_model=ImportOut, tags=["import"], summary="Import servers", dependencies=[ChangesConfig]
)
async def import_(ctx: ApiContextDep, body: ImportIn) -> dict[str, Any]:
    """Add the servers of another host's config (all, or ``names``) and connect them."""
    result = await anyio.to_thread.run_sync(_read_import, body)
    skipped = dict(result.skipped)
    chosen: dict[str, Any] = {}
    for name, server in result.servers.items():
        if body.names is not None and name not in body.names:
            continue
        if name in ctx.host.servers and not body.force:
            skipped[name] = "already configured (use force to replace it)"
            continue
        chosen[name] = server
    if body.names is not None:
        for name in body.names:
            if name not in result.servers and name not in skipped:
                raise ConfigError(f"no server named {name!r} in {result.path}")
    async with anyio.create_task_group() as tg:
        for name, server in chosen.items():
            tg.start_soon(ctx.host.add_server, name, server)
    statuses = [server_json(ctx, ctx.host.servers[name]) for name in chosen]
    return {"imported": list(chosen), "skipped": skipped, "servers": statuses}
