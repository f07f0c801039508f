"""``POST /api/login``: a one-time login code for the console, for whoever holds the token (see ``_login``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from mcpdeck.api._common import ApiContextDep

__all__ = ["router"]

router = APIRouter(tags=["login"])


class LoginOut(BaseModel):
    code: str = Field(description="Good for one sign-in, within expiresIn seconds.")
    url: str = Field(description="The console with the code in its fragment (never sent to a server).")
    expiresIn: float


@router.post("/login", response_model=LoginOut, summary="A one-time login link for the console")
async def login_code(ctx: ApiContextDep, request: Request) -> dict[str, Any]:
    """A login code and the console URL that spends it: open the URL in a browser to sign that tab in.

    ``mcpdeck ui`` asks for one; the code is spent by the first tab that opens it, or expires.
    """
    code = ctx.logins.code()
    host = request.headers.get("host", "127.0.0.1")
    return {"code": code, "url": f"http://{host}/#code={code}", "expiresIn": ctx.logins.ttl}
