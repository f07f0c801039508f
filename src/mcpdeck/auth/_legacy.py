"""The MCP 2025-03-26 discovery path: a server that publishes no protected resource metadata.

MCP 2025-03-26 (Authorization, "Server Metadata Discovery") makes the MCP server's origin the
*authorization base URL*: the client fetches ``<origin>/.well-known/oauth-authorization-server``
and, when that is absent, uses ``<origin>/authorize``, ``/token`` and ``/register``. On that
path the MCP server's origin is the trust anchor: it, and nothing it points to, is who the user
configured.

Some such servers host their authorization server under a path of the same origin and say so
in the root document: ``issuer: "<origin>/oauth"``. RFC 8414 §3.3 wants the ``issuer`` of a
metadata document to be the one its well-known URL was built from, and the SDK (SEP-2468)
enforces that, so it refuses the root document: it was fetched for the issuer ``<origin>``.

mcpdeck accepts such an issuer on this legacy path only, and only when it can do so without
widening whom it trusts:

1. The issuer must be on the same origin (scheme, host and port) as the MCP server, whose
   origin served the document. The same party controls both, so naming a path of its own
   origin moves trust nowhere. An issuer on any other origin is refused: the document would
   then speak for a server that did not publish it (the mix-up RFC 8414 §3.3 guards against).
2. mcpdeck then asks the issuer's own RFC 8414 location
   (``<origin>/.well-known/oauth-authorization-server/<path>``). If a document is there, it
   must name exactly that issuer (the RFC's rule, applied strictly) or the server is refused.
   Only when nothing is there does the same-origin rule alone decide; mcpdeck logs it.
3. Everything after that is the SDK's own strict check: the issuer mcpdeck accepted becomes
   the issuer the SDK expects (its ``_expected_issuer``, reached through ``_sdk.oauth``'s
   ``issuer_expected`` hook), so the root document is still validated against it, client
   credentials are bound to it (SEP-2352) and the authorization response's
   ``iss`` (RFC 9207) is compared with it.

With protected resource metadata (MCP 2025-06-18 and later) none of this applies: the issuer
is the one the resource names, and the SDK's check stays exactly as strict as it is.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from mcp.shared.auth import OAuthMetadata

__all__ = ["LegacyVerdict", "issuer_location", "judge_legacy_issuer", "legacy_metadata_url", "origin_of"]

_DEFAULT_PORTS = {"http": 80, "https": 443}

LegacyVerdict = Literal["origin", "same-origin", "cross-origin", "malformed"]
"""What a legacy root document's issuer is: the origin itself (what the SDK expects), a path of
the same origin (this module's rule), another origin (refused), or not an issuer URL (refused)."""


def origin_of(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` with the host lower-cased and the scheme's default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port if parts.port is not None else _DEFAULT_PORTS.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def legacy_metadata_url(server_url: str) -> str:
    """Where MCP 2025-03-26 puts the authorization server metadata: the origin's RFC 8414 root."""
    parts = urlsplit(server_url)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server"


def issuer_location(issuer: str) -> str:
    """The RFC 8414 §3.1 metadata URL of ``issuer``: the well-known path between host and path."""
    parts = urlsplit(issuer)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{parts.path.rstrip('/')}"


def judge_legacy_issuer(server_url: str, metadata: OAuthMetadata) -> LegacyVerdict:
    """Classify the issuer of the root metadata document of a server without protected resource metadata."""
    issuer = str(metadata.issuer)
    parts = urlsplit(issuer)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        return "malformed"
    if origin_of(issuer) != origin_of(server_url):
        return "cross-origin"
    return "origin" if parts.path in ("", "/") else "same-origin"
