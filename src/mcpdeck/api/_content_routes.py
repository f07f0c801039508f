"""``/api/resources``, ``/api/prompts``, ``/api/completions``: what servers offer besides tools."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from mcpdeck.api._common import ApiContextDep, require_server
from mcpdeck.api._errors import ApiError
from mcpdeck.api._models import CompletionIn, CompletionOut, PromptGetIn, ResourceIn, ResourcesOut
from mcpdeck.errors import PromptNotFoundError

__all__ = ["router"]

router = APIRouter()
Servers = Annotated[list[str] | None, Query(description="Only these servers' (repeatable).")]


def _check(ctx: ApiContextDep, servers: list[str] | None) -> None:
    for name in servers or ():
        require_server(ctx, name)


def _server_of(ctx: ApiContextDep, body: ResourceIn) -> str | None:
    """The server a request about a URI names, checked (None: the host finds the one that offers it)."""
    if body.server is not None:
        require_server(ctx, body.server)
    return body.server


@router.get("/resources", response_model=ResourcesOut, tags=["resources"], summary="List resources and templates")
async def list_resources(ctx: ApiContextDep, server: Servers = None) -> dict[str, Any]:
    """Every connected server's resources and resource templates (``mcpdeck resources --json``)."""
    _check(ctx, server)
    resources = [r.to_json() for r in ctx.host.resources if not server or r.server in server]
    templates = [t.to_json() for t in ctx.host.resource_templates if not server or t.server in server]
    return {"resources": resources, "templates": templates}


@router.get("/resources/templates", response_model=list[dict[str, Any]], tags=["resources"], summary="List templates")
async def list_templates(ctx: ApiContextDep, server: Servers = None) -> list[dict[str, Any]]:
    """Every connected server's resource templates."""
    _check(ctx, server)
    return [t.to_json() for t in ctx.host.resource_templates if not server or t.server in server]


@router.post("/resources/read", response_model=dict[str, Any], tags=["resources"], summary="Read a resource")
async def read_resource(ctx: ApiContextDep, body: ResourceIn) -> dict[str, Any]:
    """Read a resource by URI (``mcpdeck read URI --json``); name the server when several offer it."""
    result = await ctx.host.read_resource(body.uri, server=_server_of(ctx, body))
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


@router.post("/resources/subscribe", tags=["resources"], summary="Subscribe to a resource")
async def subscribe(ctx: ApiContextDep, body: ResourceIn) -> dict[str, str]:
    """Get a ``ResourceUpdated`` event on ``/api/events`` each time the resource changes."""
    await ctx.host.subscribe_resource(body.uri, server=_server_of(ctx, body))
    return {"subscribed": body.uri}


@router.post("/resources/unsubscribe", tags=["resources"], summary="Unsubscribe from a resource")
async def unsubscribe(ctx: ApiContextDep, body: ResourceIn) -> dict[str, str]:
    """Stop the updates of a subscription."""
    await ctx.host.unsubscribe_resource(body.uri, server=_server_of(ctx, body))
    return {"unsubscribed": body.uri}


@router.get("/prompts", response_model=list[dict[str, Any]], tags=["prompts"], summary="List prompts")
async def list_prompts(ctx: ApiContextDep, server: Servers = None) -> list[dict[str, Any]]:
    """Every connected server's prompts, under namespaced names (``mcpdeck prompts --json``)."""
    _check(ctx, server)
    return [p.to_json() for p in ctx.host.prompts if not server or p.server in server]


@router.get("/prompts/{name}", response_model=dict[str, Any], tags=["prompts"], summary="Describe a prompt")
async def describe_prompt(ctx: ApiContextDep, name: str) -> dict[str, Any]:
    """One prompt: its description and arguments."""
    for prompt in ctx.host.prompts:
        if prompt.name == name:
            return prompt.to_json()
    raise PromptNotFoundError(name)


@router.post("/prompts/{name}/get", response_model=dict[str, Any], tags=["prompts"], summary="Get a prompt")
async def get_prompt(ctx: ApiContextDep, name: str, body: PromptGetIn) -> dict[str, Any]:
    """Get a prompt's messages with its arguments (``mcpdeck prompt NAME --json``)."""
    result = await ctx.host.get_prompt(name, body.arguments)
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


@router.post(
    "/completions",
    response_model=CompletionOut,
    response_model_exclude_none=True,
    tags=["prompts"],
    summary="Complete an argument",
)
async def complete(ctx: ApiContextDep, body: CompletionIn) -> dict[str, Any]:
    """The server's completion of an argument of a prompt, or of a resource template: ``values``, and ``total``
    and ``hasMore`` when the server gives them."""
    if body.prompt is not None:
        completion = await ctx.host.complete_prompt_argument(body.prompt, body.argument, body.value, body.context)
    elif body.server is not None and body.uriTemplate is not None:
        require_server(ctx, body.server)
        completion = await ctx.host.complete_resource_argument(
            body.server, body.uriTemplate, body.argument, body.value, body.context
        )
    else:
        raise ApiError(422, "invalid-request", "give either prompt, or server and uriTemplate")
    return completion.model_dump(mode="json", by_alias=True, exclude_none=True)
