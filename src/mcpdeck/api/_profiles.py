"""``/api/profiles``: the gateway's profiles (virtual servers) in the config file: list them with
what each serves now, add or replace one, delete one.

The file is the record: the gateway of the same process follows it and tells a changed
profile's connected clients to list again (see docs/gateway.md, Profiles).
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter

from mcpdeck.api._common import ApiContextDep, ChangesConfig
from mcpdeck.api._context import ApiContext
from mcpdeck.api._errors import ApiError
from mcpdeck.api._models import ProfileIn, ProfileListOut, ProfileOut
from mcpdeck.config import ConfigStore, ProfileConfig, put_profile, remove_profile

__all__ = ["router"]

router = APIRouter(tags=["profiles"])


def _store(ctx: ApiContext) -> ConfigStore:
    if ctx.store is None:
        raise ApiError(
            409, "no-config-file", "this host has no config file to keep profiles in; start it with --config"
        )
    return ctx.store


async def _profiles(ctx: ApiContext) -> dict[str, ProfileConfig]:
    store = _store(ctx)
    document = await anyio.to_thread.run_sync(store.document)
    document.check("profiles")
    return dict(document.profiles)


def _out(ctx: ApiContext, name: str, profile: ProfileConfig) -> dict[str, Any]:
    known = ctx.host.servers
    tools = [
        entry.name if profile.prefix else entry.original_name
        for entry in ctx.host.catalog
        if profile.allows_tool(entry.server, entry.name, entry.original_name)
    ]
    return {
        "name": name,
        "config": profile.to_json(),
        "path": f"/mcp/{name}",
        "servers": [server for server in known if profile.serves(server)],
        "unknownServers": [server for server in profile.servers or () if server not in known],
        "tools": tools,
    }


def _not_found(name: str, profiles: dict[str, ProfileConfig]) -> ApiError:
    known = ", ".join(profiles) or "none"
    return ApiError(404, "profile-not-found", f"no profile named {name!r} (known: {known})")


@router.get("/profiles", response_model=ProfileListOut, summary="List profiles")
async def list_profiles(ctx: ApiContextDep) -> dict[str, Any]:
    """Every profile of the config file, with the servers and tools it serves now."""
    if ctx.store is None:
        return {"config": None, "profiles": []}
    profiles = await _profiles(ctx)
    return {"config": str(ctx.store.path), "profiles": [_out(ctx, n, p) for n, p in profiles.items()]}


@router.get("/profiles/{name}", response_model=ProfileOut, summary="Get a profile")
async def get_profile(ctx: ApiContextDep, name: str) -> dict[str, Any]:
    """One profile, with the servers and tools it serves now."""
    profiles = await _profiles(ctx)
    if name not in profiles:
        raise _not_found(name, profiles)
    return _out(ctx, name, profiles[name])


@router.put(
    "/profiles/{name}", response_model=ProfileOut, summary="Add or replace a profile", dependencies=[ChangesConfig]
)
async def put_profile_(ctx: ApiContextDep, name: str, body: ProfileIn) -> dict[str, Any]:
    """Write the profile into the config file (other keys untouched); its clients are told to list again.

    Every server it names must be configured (a misspelt name would serve nothing).
    """
    store = _store(ctx)
    unknown = [server for server in body.servers or () if server not in ctx.host.servers]
    if unknown:
        known = ", ".join(ctx.host.servers) or "none"
        raise ApiError(
            400, "config-error", f"profile {name!r}: no server named {', '.join(map(repr, unknown))} (known: {known})"
        )
    entry = body.model_dump(exclude_none=True, exclude_defaults=True)
    saved = await anyio.to_thread.run_sync(lambda: put_profile(store, name, entry))
    return _out(ctx, name, saved)


@router.delete("/profiles/{name}", status_code=204, summary="Delete a profile", dependencies=[ChangesConfig])
async def delete_profile(ctx: ApiContextDep, name: str) -> None:
    """Take the profile out of the config file; its clients are told, and refused by name from then on."""
    store = _store(ctx)
    profiles = await _profiles(ctx)
    if name not in profiles:
        raise _not_found(name, profiles)
    await anyio.to_thread.run_sync(lambda: remove_profile(store, name))
