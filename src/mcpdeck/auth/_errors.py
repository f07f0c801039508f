"""The errors of the OAuth flow (defined in ``mcpdeck.errors``), and how to tell one inside a group."""

from __future__ import annotations

from mcpdeck.errors import (
    AuthorizationDeniedError,
    AuthorizationError,
    AuthorizationRequiredError,
    AuthorizationTimeoutError,
    leaf_errors,
    login_hint,
)

__all__ = [
    "AuthorizationDeniedError",
    "AuthorizationError",
    "AuthorizationRequiredError",
    "AuthorizationTimeoutError",
    "is_auth_error",
    "login_hint",
]


def is_auth_error(error: BaseException) -> bool:
    """Whether ``error`` (or any error inside an exception group) is an ``AuthorizationError``.

    Such a failure does not go away by trying another transport or by waiting.
    """
    return any(isinstance(leaf, AuthorizationError) for leaf in leaf_errors(error))
