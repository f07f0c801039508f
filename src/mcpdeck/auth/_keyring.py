"""The optional ``keyring`` package (``pip install mcpdeck[keyring]``): the OS credential store."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import Protocol, cast

__all__ = ["KEYRING_ENV", "SERVICE", "KeyringModule", "keyring_wanted", "load_keyring"]

logger = logging.getLogger(__name__)

KEYRING_ENV = "MCPDECK_KEYRING"
"""Set to ``1`` to keep tokens in the OS keyring (when the ``keyring`` package is installed)."""
SERVICE = "mcpdeck"
"""The keyring service name mcpdeck's entries are stored under."""


class KeyringModule(Protocol):
    """The three functions of the ``keyring`` package mcpdeck uses (the module, or any object alike)."""

    def get_password(self, service_name: str, username: str) -> str | None:
        """The secret stored for ``username``, or None."""
        ...

    def set_password(self, service_name: str, username: str, password: str) -> None:
        """Store ``password`` for ``username``."""
        ...

    def delete_password(self, service_name: str, username: str) -> None:
        """Delete the secret of ``username`` (raises if there is none)."""
        ...


def keyring_wanted(environ: Mapping[str, str]) -> bool:
    """Whether the user opted in to the keyring (``MCPDECK_KEYRING=1``)."""
    return environ.get(KEYRING_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def load_keyring() -> KeyringModule | None:
    """The ``keyring`` module, or None when it is not installed."""
    try:
        module = importlib.import_module("keyring")
    except ImportError:
        return None
    return cast(KeyringModule, module)
