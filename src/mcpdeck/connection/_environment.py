"""The environment a stdio server is started with.

The SDK's safe defaults (HOME, PATH, USER ...), proxy settings, the server's own ``env``
and, so that ``npx``/``uvx``/``node`` are found even when the host was started from a GUI
or a service with a bare PATH, the usual install folders of those tools appended to PATH.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from mcp.client.stdio import get_default_environment

__all__ = ["child_environment", "extended_path", "find_command"]

_PASS_THROUGH = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "SSL_CERT_FILE",
    "NODE_EXTRA_CA_CERTS",
)


def _tool_dirs(home: Path) -> Iterable[Path]:
    """Folders where node, npx, uv and uvx are commonly installed."""
    yield Path(sys.executable).parent  # the venv mcpdeck runs in: uvx / python tools installed beside it
    for name in ("node", "npx", "uvx"):
        found = shutil.which(name)
        if found:
            yield Path(found).parent
    yield from (
        home / ".local" / "bin",
        home / ".cargo" / "bin",
        home / ".volta" / "bin",
        home / ".bun" / "bin",
        home / ".asdf" / "shims",
        home / ".local" / "share" / "mise" / "shims",
        home / ".local" / "share" / "fnm" / "aliases" / "default" / "bin",
        Path("/opt/homebrew/bin"),
        Path("/usr/local/bin"),
        Path("/usr/bin"),
        Path("/bin"),
        Path("/snap/bin"),
    )
    nvm = home / ".nvm" / "versions" / "node"
    if nvm.is_dir():
        versions = sorted((p for p in nvm.iterdir() if (p / "bin").is_dir()), key=lambda p: p.name, reverse=True)
        yield from (p / "bin" for p in versions[:1])


def extended_path(path: str | None, home: Path | None = None) -> str:
    """``path`` with the usual tool folders that exist appended (no duplicates, order kept)."""
    parts: list[str] = []
    seen: set[str] = set()
    for part in (path or "").split(os.pathsep):
        if part and part not in seen:
            parts.append(part)
            seen.add(part)
    for folder in _tool_dirs(home or Path.home()):
        text = str(folder)
        if text not in seen and folder.is_dir():
            parts.append(text)
            seen.add(text)
    return os.pathsep.join(parts)


def child_environment(
    env: Mapping[str, str], *, npm_registry: str | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The full environment for a stdio server: safe defaults, proxies, PATH extended, then ``env``."""
    source = os.environ if environ is None else environ
    result = get_default_environment() if environ is None else {}
    if environ is not None:
        for key in ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"):
            if key in source:
                result[key] = source[key]
    for key in _PASS_THROUGH:
        if key in source:
            result[key] = source[key]
    result["PATH"] = extended_path(result.get("PATH"))
    if npm_registry:
        result["npm_config_registry"] = npm_registry
    result.update(env)
    return result


def find_command(command: str, path: str) -> str | None:
    """The executable ``command`` resolves to on ``path`` (or as given, if it contains a separator)."""
    return shutil.which(command, path=path)
