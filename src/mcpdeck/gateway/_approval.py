"""Who approves a gateway client's call: the client itself (a ``CallingClient``), which approves what no rule
covers and is asked, as an elicitation, what an ``ask`` rule (or ``gateway.approval: "ask"``) asks about."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import NoBackChannelError
from mcp_types.jsonrpc import INVALID_PARAMS, INVALID_REQUEST

from mcpdeck.config import GatewayApproval
from mcpdeck.gateway._clients import GatewayClient, parked_call
from mcpdeck.permissions import (
    Access,
    Approval,
    ApprovalCallback,
    ApprovalRequest,
    CallingClient,
    ClientKey,
    PermissionGate,
    SharedApprovals,
)

__all__ = ["APPROVAL_TIMEOUT", "ASK_ALL", "ApprovalStore", "GatewayGate", "calling_client", "session_ended"]

logger = logging.getLogger(__name__)

APPROVAL_TIMEOUT = 120.0
"""Seconds a client has to answer the gate's question before the call is refused."""
ASK_ALL = (
    'the gateway asks about every call no rule allows (gateway.approval is "ask"; "client" lets the calling '
    "client approve it)"
)
"""Why a call no rule covers is asked about, with ``gateway.approval: "ask"``."""

_WHAT = {"tool": "call", "resource": "read", "prompt": "prompt"}


def _approval_schema(kind: str, *, session: bool) -> dict[str, Any]:
    """The gate's form; ``session``: the client has a session to allow something for (the handshake era)."""
    choices: list[dict[str, str]] = [{"const": "once", "title": "Allow once"}]
    if session:
        choices.append({"const": "session", "title": f"Allow this {kind} for the rest of this session"})
    choices.append({"const": "deny", "title": "Deny"})
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": f"Allow this {_WHAT.get(kind, 'call')}?",
                "oneOf": choices,
                "default": "once",
            }
        },
        "required": ["decision"],
    }


def _question(request: ApprovalRequest) -> str:
    """What is asked, in words: running a tool, reading a resource, getting a prompt (with its arguments)."""
    arguments = json.dumps(dict(request.arguments), ensure_ascii=False)[:2000]
    target = request.original_name.partition(":")[2]
    if request.kind == "resource":
        return f"mcpdeck: read the resource {target} of server {request.server!r}?"
    if request.kind == "prompt":
        return f"mcpdeck: get the prompt {target!r} of server {request.server!r} with arguments {arguments}?"
    return f"mcpdeck: run the tool {request.original_name!r} of server {request.server!r} with arguments {arguments}?"


class ApprovalStore(Protocol):
    """Where the clients' ``session`` answers are kept for every replica of a fleet (``mcpdeck.store``'s
    ``SessionApprovals``): by client (``ClientKey``), each held by the gateway session that gave or used it."""

    async def holds(self, who: ClientKey, tool: str, session: str) -> bool:
        """Whether ``who`` allowed ``tool`` for a session of theirs; if so ``session`` holds it too."""
        ...

    async def give(self, who: ClientKey, tool: str, session: str) -> None:
        """Keep ``who``'s approval of ``tool`` for ``session``, committed when this returns."""
        ...

    async def end(self, session: str) -> None:
        """``session`` ended: the approvals it held go."""
        ...


class _Kept(SharedApprovals):
    """One client's session answers in the ``ApprovalStore``."""

    def __init__(self, store: ApprovalStore, client: GatewayClient):
        self._store = store
        self._client = client

    def _who(self) -> ClientKey:
        client = self._client
        return ClientKey(client.token or "", client.profile or "", client.name)

    async def holds(self, tool: str) -> bool:
        held = await self._store.holds(self._who(), tool, self._client.key)
        self._client.kept |= held
        return held

    async def give(self, tool: str) -> None:
        self._client.kept = True
        await self._store.give(self._who(), tool, self._client.key)


def calling_client(
    ctx: ServerRequestContext[Any], client: GatewayClient, *, ask_all: bool, store: ApprovalStore | None = None
) -> CallingClient:
    """``client`` as the approver of one of its requests (``ctx``): asked by elicitation, if it takes them.

    ``ask_all``: what no rule covers is asked about too (``gateway.approval: "ask"``). ``store``: where its
    ``session`` answers are kept for the other replicas (none: in this process only).
    """
    return CallingClient(
        client.name,
        _asker(ctx, client) if client.can_elicit("form") else None,
        ask_all=ASK_ALL if ask_all else None,
        session_allowed=client.session_allowed,
        lock=client.approving,
        shared=_Kept(store, client) if store is not None else None,
    )


class GatewayGate:
    """The permission gate as a gateway's handlers use it: whether it checks at all, who approves what no rule
    covers (the gateway's ``approval`` now), where the clients' session approvals are kept for the fleet.

    Args:
        permissions: The host's gate.
        check: Pass every request through it (``Gateway(check_permission=...)``).
        approval: The gateway's ``approval`` setting as it is now (the config file's is followed).
        approvals: The fleet's store of session approvals (None: this process only).
    """

    def __init__(
        self,
        permissions: PermissionGate,
        *,
        check: bool,
        approval: Callable[[], GatewayApproval],
        approvals: ApprovalStore | None,
    ) -> None:
        self.permissions = permissions
        self.check = check
        self._approval = approval
        self._approvals = approvals

    def approver(self, ctx: ServerRequestContext[Any], who: GatewayClient) -> CallingClient:
        """``who`` as the approver of its request ``ctx``: it approves what no rule covers (unless the gateway's
        ``approval`` is ``ask``), and is asked what an ``ask`` rule asks about."""
        return calling_client(ctx, who, ask_all=self._approval() == "ask", store=self._approvals)

    def denied_server(self, server: str) -> bool:
        """Whether a ``deny`` rule covers all of ``server`` (for a gateway that checks): it is sent no request of
        a client, not even a log level, and learns nothing of the clients (their roots)."""
        return self.check and self.permissions.denied_server(server) is not None

    def refuse_denied(self, access: Access) -> None:
        """Refuse a request that a ``deny`` rule covers and nothing is asked about (a completion, a subscription).

        Raises:
            MCPError: A ``deny`` rule (or unreadable rules) covers ``access``.
        """
        if self.check and (refused := self.permissions.denied(access)) is not None:
            raise MCPError(code=INVALID_REQUEST, message=refused.message)


async def session_ended(client: GatewayClient, store: ApprovalStore | None) -> None:
    """A client's session (connection) ended: the approvals it held in ``store`` go with it."""
    if store is None or not client.kept:
        return
    try:
        await store.end(client.key)
    except Exception as error:  # its rows are dropped with its replica's, as orphans
        logger.warning("the session approvals of %s were not removed: %s", client.name, error)


def _asker(ctx: ServerRequestContext[Any], client: GatewayClient) -> ApprovalCallback:
    async def ask(request: ApprovalRequest) -> Approval:
        # A 2026-07-28 client has no session: each request stands alone, so nothing can be allowed "for the rest
        # of this session" (kept, it would outlive every request and hold for any client of the same name).
        sessionless = parked_call() is not None
        schema: Any = _approval_schema(request.kind, session=not sessionless)
        with anyio.move_on_after(APPROVAL_TIMEOUT):  # the gate asks one client at a time: never wait forever
            try:
                answer = await _elicit(ctx, _question(request), schema)
            except (MCPError, NoBackChannelError) as error:  # it failed to ask: no one said no
                return Approval.undecided(f"{client.name} could not ask: {error}")
            if answer.action != "accept":
                return Approval.deny(f"it answered {answer.action}", by=client.name)
            decision = (answer.content or {}).get("decision")
            if decision == "session" and not sessionless:
                return Approval.session()
            if decision == "once" or decision == "session":  # "session" unoffered: no more than this call
                return Approval.once()
            if decision == "deny":
                return Approval.deny("it answered deny", by=client.name)
            return Approval.undecided(
                f"{client.name} accepted the question without a decision ('once', 'session' or 'deny'), "
                f"so the call was not made (it gave {decision!r})"
            )
        return Approval.undecided(f"{client.name} did not answer within {APPROVAL_TIMEOUT:g} s")

    return ask


async def _elicit(ctx: ServerRequestContext[Any], message: str, schema: Any) -> types.ElicitResult:
    """Ask the client a form: in its call's next round for a 2026-07-28 client, else on the request's stream."""
    parked = parked_call()
    if parked is None:
        return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    params = types.ElicitRequestFormParams.model_validate({"message": message, "requestedSchema": schema})
    answer = await parked.ask(types.ElicitRequest(params=params))
    if not isinstance(answer, types.ElicitResult):
        raise MCPError(code=INVALID_PARAMS, message="the answer to the approval question was not an elicitation result")
    return answer
