"""A 2026-07-28 call's round that reaches a replica other than the one holding the call.

A server's question in the middle of a 2026-07-28 client's call parks the call in the memory of the
replica that runs it, under a ``requestState`` that begins with that replica's id (``r1.<random>``).
The client's next round carries the answers and that state; behind a load balancer (no affinity in this
era) it may reach another replica. That replica:

- with a relay (``serve`` on PostgreSQL: ``mcpdeck.store.Relay``) sends the round to the holder, which
  answers it as if it had come itself (``answer_relayed``) and sends back its outcome: the result, the
  call's error, or the next ``InputRequiredResult``;
- without one (SQLite, or no store), or when the holder is gone or does not answer in time, answers at
  once with a clear error: the call is lost, call again.

A state the holder does not know (it ended, expired, or was made with another token) is, as on the
holder itself, no call at all: the request runs as a new call.
"""

from __future__ import annotations

import json
from typing import Any, Protocol, cast

import mcp_types as types
from mcp import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR

from mcpdeck.gateway._clients import MultiRoundCall

__all__ = ["RELAY_LIMIT", "RoundRelay", "answer_relayed", "holder_of", "relay_round", "responses"]

RELAY_LIMIT = 300.0
"""Seconds a relayed round may take on the holder (as long as a call waits for its client's next round);
the wait ends sooner when the holder dies."""
_RESULTS: dict[str, type[Any]] = {
    kind.__name__: kind
    for kind in (types.CallToolResult, types.ReadResourceResult, types.GetPromptResult, types.InputRequiredResult)
}


class RoundRelay(Protocol):
    """How a replica sends a message to another and waits for its answer (``mcpdeck.store.Relay``)."""

    async def ask(self, replica: str, body: str, *, limit: float) -> str:
        """``replica``'s answer to ``body``; raises (with a message that says why) when none can come."""
        ...


def responses(raw: object) -> dict[str, types.InputResponse]:
    """The client's answers of a 2026-07-28 round, each read as the kind of answer it is."""
    if not isinstance(raw, dict):
        return {}
    kinds: tuple[type[Any], ...] = (
        types.ElicitResult,
        types.ListRootsResult,
        types.CreateMessageResultWithTools,
        types.CreateMessageResult,
    )
    answers: dict[str, types.InputResponse] = {}
    for key, value in cast(dict[str, object], raw).items():
        for kind in kinds:
            try:
                answers[key] = kind.model_validate(value)
                break
            except ValueError:
                continue
    return answers


def holder_of(state: str, replica: str | None) -> str | None:
    """The replica, other than ``replica`` (this one), whose parked call ``state`` names; None: not another's."""
    if replica is None:
        return None
    head, dot, _ = state.partition(".")
    return head if dot and head and head != replica else None


async def relay_round(
    relay: RoundRelay | None, replica: str, holder: str, state: str, owner: str | None, raw: object
) -> Any | None:
    """Answer a round whose call ``holder`` holds, through ``relay``: its outcome (a result, or the next
    ``InputRequiredResult``), or None when the holder knows no such call for this token.

    Raises:
        MCPError: The call's own error; or the round cannot reach the holder (no relay, the holder is gone or
            does not answer): the call is lost, and the client is told to call again.
    """
    if relay is None:
        raise MCPError(
            code=INTERNAL_ERROR,
            message=(
                f"this call is held by replica {holder} (its requestState says so), and this is replica {replica}: "
                "the store is not PostgreSQL, so replicas cannot pass a call's rounds to each other. The call is "
                "lost here; call the tool again (a new call, without requestState)"
            ),
        )
    body = json.dumps({"state": state, "owner": owner, "responses": raw})
    try:
        answer: dict[str, Any] = json.loads(await relay.ask(holder, body, limit=RELAY_LIMIT))
    except Exception as error:
        raise MCPError(
            code=INTERNAL_ERROR,
            message=(
                f"this call is held by replica {holder}, which replica {replica} cannot reach: {error}. The call "
                "is lost; call the tool again (a new call, without requestState)"
            ),
        ) from None
    if answer.get("unknown"):
        return None
    if (error := answer.get("error")) is not None:
        raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))
    kind = _RESULTS.get(str(answer.get("type")))
    if kind is None:
        raise MCPError(code=INTERNAL_ERROR, message=f"replica {holder} answered the round with {answer.get('type')!r}")
    return kind.model_validate(answer["result"])


async def answer_relayed(parked: dict[str, MultiRoundCall], body: str) -> str:
    """The holder's side: a round another replica relayed, answered as if it had come here, and its outcome
    as the answer to send back (see ``relay_round``)."""
    try:
        asked: dict[str, Any] = json.loads(body)
        call = parked.get(str(asked.get("state")))
        if call is None or call.owner != asked.get("owner"):  # another token's call: for this one, no call at all
            return json.dumps({"unknown": True})
        call.answer(responses(asked.get("responses")))
        outcome = await call.round(parked)
    except MCPError as error:
        return json.dumps({"error": {"code": error.code, "message": error.message, "data": error.data}})
    except Exception as error:
        return json.dumps({"error": {"code": INTERNAL_ERROR, "message": str(error) or type(error).__name__}})
    dumped = outcome.model_dump(by_alias=True, mode="json", exclude_none=True)
    return json.dumps({"type": type(outcome).__name__, "result": dumped})
