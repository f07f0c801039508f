"""The gateway's settings in the config file's ``gateway`` object: who approves a call no rule covers, and the
bearer tokens of ``gateway --port``.

::

    "gateway": {
      "approval": "client",
      "tokens": {"laptop": {"token": "${LAPTOP_TOKEN}", "profile": "coding"}}
    }

``approval``: ``client`` (the default): the client that makes the call, which asks its own user before each call
(Claude Desktop, Cursor, VS Code), approves it. ``ask``: the gateway asks the client about it, as an
elicitation, as it asks about a call an ``ask`` rule covers.

``tokens``: named tokens, each optionally bound to one profile. A token is kept here as the file writes it
(``${VAR}`` unexpanded): the command that serves expands it (``mcpdeck.cli``), so the model holds no secret
the file does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from mcpdeck.errors import ConfigError

__all__ = [
    "DEFAULT_APPROVAL",
    "GatewayApproval",
    "GatewaySettings",
    "GatewayTokenSetting",
    "parse_gateway_settings",
]

GatewayApproval = Literal["client", "ask"]
DEFAULT_APPROVAL: GatewayApproval = "client"


@dataclass(frozen=True)
class GatewayTokenSetting:
    """One of ``gateway.tokens``: the token as written (``${VAR}`` kept) and the profile it opens (None: all)."""

    token: str
    profile: str | None = None

    def __repr__(self) -> str:
        return f"GatewayTokenSetting(token='***', profile={self.profile!r})"


@dataclass(frozen=True)
class GatewaySettings:
    """The config file's ``gateway`` object."""

    approval: GatewayApproval = DEFAULT_APPROVAL
    tokens: Mapping[str, GatewayTokenSetting] = field(default_factory=dict[str, GatewayTokenSetting])


def parse_gateway_settings(doc: Mapping[str, Any], *, path: str | None = None) -> GatewaySettings:
    """The ``gateway`` object of a raw config document (the defaults when it is not set).

    Raises:
        ConfigError: ``gateway`` is not an object, ``approval`` is neither ``"client"`` nor ``"ask"``, or a token
            lacks its ``token`` or has a ``profile`` that is not a name; the message says which and what to write.
    """
    section: object = doc.get("gateway")
    if section is None:
        return GatewaySettings()
    if not isinstance(section, dict):
        raise ConfigError(f"gateway: expected an object, got {type(section).__name__}", path=path)
    settings = cast(dict[str, object], section)
    value: object = settings.get("approval", DEFAULT_APPROVAL)
    if value not in get_args(GatewayApproval):
        raise ConfigError(
            f'gateway.approval: {value!r} is not a choice; write "client" (the calling client approves what no '
            'rule covers) or "ask" (the gateway asks about every call no rule allows)',
            path=path,
        )
    raw: object = settings.get("tokens") or {}
    if not isinstance(raw, dict):
        raise ConfigError(
            '"gateway.tokens" must be an object mapping token names to {"token": ..., "profile": ...}', path=path
        )
    tokens: dict[str, GatewayTokenSetting] = {}
    for name, entry in cast(dict[str, object], raw).items():
        spec = cast(dict[str, object], entry) if isinstance(entry, dict) else {}
        secret, profile = spec.get("token"), spec.get("profile")
        if not isinstance(secret, str) or not secret or not (profile is None or isinstance(profile, str)):
            hint = 'give "token" (use "${VAR}" to keep it out of the file) and optionally "profile"'
            raise ConfigError(f"gateway.tokens.{name}: {hint}", path=path)
        tokens[name] = GatewayTokenSetting(secret, profile)
    return GatewaySettings(approval=cast(GatewayApproval, value), tokens=tokens)
