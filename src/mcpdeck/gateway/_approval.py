"""The permission gate's question to a gateway client: an elicitation asking whether a call may run."""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext

from mcpdeck.gateway._clients import Downstream
from mcpdeck.permissions import Approval, ApprovalCallback, ApprovalRequest

__all__ = ["APPROVAL_TIMEOUT", "asker"]

APPROVAL_TIMEOUT = 120.0
"""Seconds a client has to answer the gate's question before the call is refused."""


def _approval_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Allow this call?",
                "oneOf": [
                    {"const": "once", "title": "Allow once"},
                    {"const": "session", "title": "Allow this tool until the gateway restarts"},
                    {"const": "deny", "title": "Deny"},
                ],
                "default": "once",
            }
        },
        "required": ["decision"],
    }


def _question(request: ApprovalRequest) -> str:
    if request.original_name.startswith(("resource:", "prompt:")):  # a read or a prompt, not a tool call
        return f"mcpdeck: allow this? {request.description}"
    arguments = json.dumps(dict(request.arguments), ensure_ascii=False)[:2000]
    return f"mcpdeck: allow {request.original_name!r} of server {request.server!r} to run with arguments {arguments}?"


def asker(ctx: ServerRequestContext[Any], client: Downstream) -> ApprovalCallback | None:
    """The approval callback for a call from ``client``: an elicitation to it, if it takes them."""
    if not client.can_elicit("form"):
        return None

    async def ask(request: ApprovalRequest) -> Approval:
        schema: Any = _approval_schema()
        with anyio.move_on_after(APPROVAL_TIMEOUT):  # the gate asks one client at a time: never wait forever
            answer = await ctx.session.elicit_form(_question(request), schema, related_request_id=ctx.request_id)
            if answer.action != "accept":
                return Approval.deny(f"{client.name} answered {answer.action}")
            decision = (answer.content or {}).get("decision")
            if decision == "session":
                return Approval.session()
            if decision == "once":
                return Approval.once()
            if decision == "deny":
                return Approval.deny(f"{client.name} answered deny")
            return Approval.undecided(
                f"{client.name} accepted the question without a decision ('once', 'session' or 'deny'), "
                f"so the call was not made (it gave {decision!r})"
            )
        return Approval.undecided(f"{client.name} did not answer within {APPROVAL_TIMEOUT:g} s")

    return ask
