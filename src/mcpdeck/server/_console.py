"""The web console's files: ``/`` is its page, ``/console/<file>`` its scripts, styles and icons.

The console is plain files inside the package (``mcpdeck/console/``): HTML, CSS and one
ES module per page, no build step. Every file is served with a strict Content-Security-Policy
(scripts only from this origin, no inline script or style, images only from here or ``data:``),
so text a server sends can never run as code even if a page bug put it in the DOM as markup.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from mcpdeck.api import error_response

__all__ = ["CONSOLE_DIR", "CSP", "console_routes", "public"]

CONSOLE_DIR = Path(__file__).resolve().parent.parent / "console"
"""Where the console's files are (inside the installed package)."""

CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "media-src data:",
        "connect-src 'self'",
        "font-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}
_HEADERS = {"content-security-policy": CSP, "cache-control": "no-cache"}


_FILES = {path.name: path for path in CONSOLE_DIR.iterdir() if path.suffix in _TYPES and path.is_file()}
"""The files the console ships, by name: a request names one of these or nothing (no path is built from it)."""


def public(method: str, path: str) -> bool:
    """Whether a request is for the console's own files, which the guard serves without a token: the
    package's code, no data in them."""
    return method in ("GET", "HEAD") and (path == "/" or path.startswith("/console/"))


def _file(path: Path) -> Response:
    return FileResponse(path, media_type=_TYPES[path.suffix], headers=_HEADERS)


async def _index(_: Request) -> Response:
    return _file(CONSOLE_DIR / "index.html")


async def _asset(request: Request) -> Response:
    name: str = request.path_params["name"]
    # Only the files the console ships, looked up by name: "..", folders, NUL bytes and names too
    # long for the file system never reach it.
    path = _FILES.get(name)
    if path is None:
        shown = name if len(name) <= 80 else f"{name[:80]}…"
        return error_response(404, "not-found", f"the console has no file {shown!r}")
    return _file(path)


def console_routes() -> list[Route]:
    """The routes that serve the console (mount them behind the guard)."""
    return [
        Route("/", _index, methods=["GET", "HEAD"]),
        Route("/console/{name}", _asset, methods=["GET", "HEAD"]),
    ]
