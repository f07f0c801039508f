"""The errors of the OAuth flow, each a ``ServerError`` whose reason says what to do next."""

from __future__ import annotations

from collections.abc import Iterator

from mcpdeck.errors import ServerError

__all__ = [
    "AuthorizationDeniedError",
    "AuthorizationError",
    "AuthorizationRequiredError",
    "AuthorizationTimeoutError",
    "is_auth_error",
    "login_hint",
]


def login_hint(server: str) -> str:
    """The command that authorizes ``server``."""
    return f"run `mcpdeck auth login {server}`"


class AuthorizationError(ServerError):
    """Authorizing to a server failed: refused, timed out, or the authorization server said no."""


class AuthorizationRequiredError(AuthorizationError):
    """The server needs authorization and there is no usable token, and no one to ask.

    Raised when a host runs without an interaction (the default): it never opens a browser
    by itself.
    """

    def __init__(self, server: str, why: str = "needs authorization"):
        super().__init__(server, f"{why}: {login_hint(server)}")


class AuthorizationDeniedError(AuthorizationError):
    """The user (or the authorization server) refused the authorization request."""


class AuthorizationTimeoutError(AuthorizationError):
    """No answer came back from the browser in time."""


def _leaves(error: BaseException) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]
            yield from _leaves(inner)  # pyright: ignore[reportUnknownArgumentType]
    else:
        yield error


def is_auth_error(error: BaseException) -> bool:
    """Whether ``error`` (or any error inside an exception group) is an ``AuthorizationError``.

    Such a failure does not go away by trying another transport or by waiting.
    """
    return any(isinstance(leaf, AuthorizationError) for leaf in _leaves(error))
