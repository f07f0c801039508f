"""The API's routes are built before ``serve`` takes requests (``prepare_routes``), not at a client's first request.

FastAPI builds an included router's routes (their models: pydantic type adapters) at the first request that
looks through that router, in the event loop. On a replica under load that froze every other request of the
process for 1-1.9 s (bench/RESULTS.md, recovery after ``kill -9``). What is counted here is that work itself:
the type adapters made while a request is answered.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pydantic
import pytest
from starlette.types import ASGIApp

from mcpdeck.api import create_api, prepare_routes
from tests.api.conftest import running_api

pytestmark = pytest.mark.anyio


@contextmanager
def type_adapters_made(monkeypatch: pytest.MonkeyPatch) -> Generator[list[object]]:
    """Each pydantic ``TypeAdapter`` made meanwhile (its type), in order."""
    made: list[object] = []
    adapter: type[pydantic.TypeAdapter[Any]] = pydantic.TypeAdapter
    real = adapter.__init__

    def counting(self: pydantic.TypeAdapter[Any], type: Any, *args: Any, **kwargs: Any) -> None:
        made.append(type)
        real(self, type, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(adapter, "__init__", counting)
        yield made


async def _first_request(app: ASGIApp, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://api") as client:
        with type_adapters_made(monkeypatch) as made:
            answer = await client.get("/history/calls", params={"limit": 5})
    assert answer.status_code == 200, answer.text
    return made


async def test_a_prepared_api_builds_nothing_at_its_first_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_api(tmp_path, {}, in_process=False) as api:
        # Without it, the first request builds the routes of every router it looks through on its way.
        assert await _first_request(create_api(api.ctx), monkeypatch) != []
        prepared = create_api(api.ctx)
        await prepare_routes(prepared)
        assert await _first_request(prepared, monkeypatch) == []
