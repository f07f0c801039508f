"""The gateway's settings in the config file's ``gateway`` object: ``approval``, who approves a call no rule covers.

::

    "gateway": {"approval": "client"}

``client`` (the default): the client that makes the call, which asks its own user before each call
(Claude Desktop, Cursor, VS Code), approves it. ``ask``: the gateway asks the client about it, as an
elicitation, as it asks about a call an ``ask`` rule covers. (``gateway.tokens`` is read by the CLI.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast, get_args

from mcpdeck.errors import ConfigError

__all__ = ["DEFAULT_APPROVAL", "GatewayApproval", "parse_gateway_approval"]

GatewayApproval = Literal["client", "ask"]
DEFAULT_APPROVAL: GatewayApproval = "client"


def parse_gateway_approval(doc: Mapping[str, Any], *, path: str | None = None) -> GatewayApproval:
    """The ``gateway.approval`` of a raw config document (``client`` when it is not set).

    Raises:
        ConfigError: ``gateway`` is not an object, or ``approval`` is neither ``"client"`` nor ``"ask"``.
    """
    section: object = doc.get("gateway")
    if section is None:
        return DEFAULT_APPROVAL
    if not isinstance(section, dict):
        raise ConfigError(f"gateway: expected an object, got {type(section).__name__}", path=path)
    value: object = cast(dict[str, object], section).get("approval", DEFAULT_APPROVAL)
    if value not in get_args(GatewayApproval):
        raise ConfigError(
            f'gateway.approval: {value!r} is not a choice; write "client" (the calling client approves what no '
            'rule covers) or "ask" (the gateway asks about every call no rule allows)',
            path=path,
        )
    return cast(GatewayApproval, value)
