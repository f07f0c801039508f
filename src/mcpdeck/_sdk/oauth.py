"""The SDK's ``RedirectAwareAuth`` (``mcp.shared._httpx_utils``): the base its own OAuth providers use, so the
identity-assertion grant (``auth._identity``) follows redirects the way they do."""

from __future__ import annotations

from mcp.shared._httpx_utils import RedirectAwareAuth

__all__ = ["RedirectAwareAuth"]
