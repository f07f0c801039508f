"""Which providers a chat can use now: a key where one is needed, and someone answering where the provider is local.

A provider whose API runs on this machine (Ollama, LM Studio, vLLM on ``localhost``) needs no
key, so a key says nothing about it: it is ready only when its port takes a connection. The
check is one TCP connect per local provider, all at once, each bounded by ``timeout``; remote
providers are never contacted (a key is all they need, and asking would cost a request).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio

from mcpdeck.providers._models import provider_url
from mcpdeck.providers._provider_settings import ALIASES, BUILTIN, ProviderSettings

__all__ = ["ProviderReadiness", "is_local", "provider_readiness", "reachable"]

REACH_TIMEOUT = 1.0
"""Seconds a local provider's port has to take a connection."""


@dataclass(frozen=True)
class ProviderReadiness:
    """Whether a model of a provider can be made and used now, and what is missing if not."""

    name: str
    api: str
    ready: bool
    note: str


def is_local(url: str) -> bool:
    """Whether ``url`` points at this machine (``localhost``, a loopback or unspecified address)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _where(url: str) -> str:
    """The URL without credentials, query or fragment (it is shown)."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


async def reachable(url: str, timeout: float = REACH_TIMEOUT) -> bool:
    """Whether the host and port of ``url`` take a TCP connection within ``timeout`` seconds."""
    parts = urlsplit(url)
    host = parts.hostname
    if not host:
        return False
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    with anyio.move_on_after(timeout):
        try:
            stream = await anyio.connect_tcp("127.0.0.1" if host == "0.0.0.0" else host, port)
        except OSError:
            return False
        await stream.aclose()
        return True
    return False


async def provider_readiness(
    settings: Mapping[str, ProviderSettings], environ: Mapping[str, str], *, timeout: float = REACH_TIMEOUT
) -> list[ProviderReadiness]:
    """Every built-in provider and every one of the config's ``settings``, with whether it is ready.

    Ready means: a key is set where the provider needs one, and a local provider's port answers.
    """
    found: list[ProviderReadiness] = []
    local: dict[int, str] = {}  # index in `found` -> the URL to try
    for name, builtin in BUILTIN.items():
        own = settings.get(name)
        key_from = next((var for var in builtin.key_env if environ.get(var)), None)
        if own is not None and own.api_key:
            note = "key from the config"
        elif key_from:
            note = f"key from ${key_from}"
        elif not builtin.needs_key:
            note = "no key needed"
        else:
            found.append(ProviderReadiness(name, builtin.api, False, f"set ${builtin.key_env[0]}"))
            continue
        url = provider_url(name, settings, environ)
        if is_local(url):
            local[len(found)] = url
        found.append(ProviderReadiness(name, builtin.api, True, note))
    for name, own in settings.items():
        if ALIASES.get(name, name) in BUILTIN:
            continue
        url = provider_url(name, settings, environ)
        if is_local(url):
            local[len(found)] = url
        found.append(ProviderReadiness(name, own.type or "openai", True, "from the config"))
    answers: dict[int, bool] = {}

    async def check(index: int, url: str) -> None:
        answers[index] = await reachable(url, timeout)

    async with anyio.create_task_group() as group:
        for index, url in local.items():
            group.start_soon(check, index, url)
    for index, url in local.items():
        if not answers[index]:
            entry = found[index]
            hint = " (start Ollama, or set OLLAMA_BASE_URL)" if entry.name == "ollama" else ""
            found[index] = ProviderReadiness(entry.name, entry.api, False, f"nothing answers at {_where(url)}{hint}")
    return found
