"""Test helpers for the OAuth tests: a headless browser and the protected server's config."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx2
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from mcp.shared.auth import AuthorizationCodeResult

from mcpdeck import Host
from mcpdeck.auth import AuthorizationError, CallbackListener, OAuthInteraction, TokenStore
from tests.auth.oauth_server import OAuthSetup
from tests.helpers import WAIT

SERVER = "secure"


class HeadlessBrowser:
    """Plays the user's browser: GETs the authorization URL (not following the redirect,
    the way a browser would show the consent page), then GETs the redirect's ``Location``,
    which lands on mcpdeck's own callback listener.

    Attributes:
        urls: Every authorization URL it was sent to.
        pages: The listener's answer pages (status, text).
        stray: Before the real answer, send the listener one with a wrong ``state``.
        errors: What the authorization server answered instead of a redirect.
        strict: Raise when the authorization server does not redirect (as an app would);
            else just note it, as a person's browser would show it, and never come back.
    """

    def __init__(self, *, stray: bool = False, strict: bool = True):
        self.urls: list[str] = []
        self.pages: list[tuple[int, str]] = []
        self.errors: list[str] = []
        self.stray = stray
        self.strict = strict

    async def redirect(self, server: str, authorization_url: str) -> None:
        self.urls.append(authorization_url)
        async with httpx2.AsyncClient(follow_redirects=False, timeout=WAIT) as http:
            consent = await http.get(authorization_url)
            location = consent.headers.get("location")
            if not consent.is_redirect or not location:
                self.errors.append(f"{consent.status_code}: {consent.text[:200]}")
                if not self.strict:
                    return
                raise AuthorizationError(server, f"the authorization server answered {self.errors[-1]}")
            if self.stray:
                forged = location.split("?")[0] + "?code=forged&state=not-the-state"
                page = await http.get(forged)
                self.pages.append((page.status_code, page.text))
            page = await http.get(location)
            self.pages.append((page.status_code, page.text))

    async def callback(self, server: str, listener: CallbackListener) -> AuthorizationCodeResult:
        return await listener.wait(WAIT)


def spec(setup: OAuthSetup, **oauth: Any) -> dict[str, Any]:
    """The config of the protected server (``oauth`` keys as users write them)."""
    config: dict[str, Any] = {"type": "http", "url": setup.mcp_url}
    if oauth:
        config["oauth"] = oauth
    return config


def host(
    setup: OAuthSetup,
    store: TokenStore,
    log_dir: Path,
    interaction: OAuthInteraction | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    **oauth: Any,
) -> Host:
    """A host with just the protected server (``environ``: for the ``${VAR}`` in ``oauth``)."""
    return Host(
        {SERVER: spec(setup, **oauth)},
        log_dir=log_dir,
        auth_store=store,
        oauth_interaction=interaction,
        environ=environ,
    )


def ec_key_pair() -> tuple[str, str]:
    """A fresh P-256 key pair: the private key (PKCS #8 PEM) and the public key (PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private.decode(), public.decode()


def read_all(folder: Path) -> str:
    """Every file under ``folder``, as text (to look for secrets that must not be there)."""
    return "".join(path.read_text(errors="replace") for path in folder.rglob("*") if path.is_file())
