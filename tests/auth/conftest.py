"""Fixtures for the OAuth tests: a real authorization server + protected MCP server, and a token store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcpdeck.auth import TokenStore
from tests.auth.oauth_server import OAuthSetup, oauth_servers


@pytest.fixture
async def oauth() -> AsyncIterator[OAuthSetup]:
    """A fresh authorization server and protected MCP server."""
    async with oauth_servers() as setup:
        yield setup


@pytest.fixture
def store(tmp_path: Path) -> TokenStore:
    """A token store in the test's temp dir."""
    return TokenStore(tmp_path / "auth")
