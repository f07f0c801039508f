"""The local callback listener and the parsing of authorization responses."""

from __future__ import annotations

import httpx2
import pytest

from mcpdeck.auth import (
    AuthorizationDeniedError,
    AuthorizationError,
    AuthorizationTimeoutError,
    CallbackListener,
    parse_callback,
)
from mcpdeck.auth._callback import reserve_port
from tests.helpers import WAIT

pytestmark = pytest.mark.anyio


def test_parse_callback_reads_code_state_and_issuer() -> None:
    answer = parse_callback("s", "http://127.0.0.1:1234/callback?code=abc&state=xyz&iss=https%3A%2F%2Fas")
    assert (answer.code, answer.state, answer.iss) == ("abc", "xyz", "https://as")
    assert parse_callback("s", "code=abc&state=xyz", expected_state="xyz").code == "abc"


def test_parse_callback_turns_errors_into_clear_exceptions() -> None:
    with pytest.raises(AuthorizationDeniedError, match=r"authorization was refused \(access_denied: nope\)"):
        parse_callback("s", "?error=access_denied&error_description=nope&state=x")
    with pytest.raises(AuthorizationError, match=r"refused the request \(invalid_scope\)"):
        parse_callback("s", "?error=invalid_scope&state=x")
    with pytest.raises(AuthorizationError, match="state mismatch"):
        parse_callback("s", "?code=abc&state=other", expected_state="mine")
    with pytest.raises(AuthorizationError, match="no code"):
        parse_callback("s", "?state=x")


async def test_listener_answers_only_the_current_request_and_shows_a_closing_page() -> None:
    sock = reserve_port("127.0.0.1", 0)
    uri = f"http://127.0.0.1:{sock.getsockname()[1]}/callback"
    async with CallbackListener.serve("s", sock, uri) as listener, httpx2.AsyncClient() as http:
        listener.expect("the-state")
        assert (await http.get(uri.replace("/callback", "/favicon.ico"))).status_code == 404
        assert (await http.post(uri)).status_code == 405
        stray = await http.get(f"{uri}?code=forged&state=wrong")
        assert stray.status_code == 400 and "does not belong" in stray.text
        page = await http.get(f"{uri}?code=real&state=the-state")
        assert page.status_code == 200 and "You can close this tab" in page.text
        assert page.headers["cache-control"] == "no-store"
        answer = await listener.wait(WAIT)
        assert (answer.code, answer.state) == ("real", "the-state")
        assert (await http.get(f"{uri}?code=again&state=the-state")).status_code == 200  # a reload is harmless
        assert (await listener.wait(WAIT)).code == "real"


async def test_listener_reports_a_refusal() -> None:
    sock = reserve_port("127.0.0.1", 0)
    uri = f"http://127.0.0.1:{sock.getsockname()[1]}/callback"
    async with CallbackListener.serve("s", sock, uri) as listener, httpx2.AsyncClient() as http:
        listener.expect("st")
        page = await http.get(f"{uri}?error=access_denied&state=st")
        assert "Authorization failed" in page.text
        with pytest.raises(AuthorizationDeniedError):
            await listener.wait(WAIT)


async def test_listener_wait_is_bounded() -> None:
    sock = reserve_port("127.0.0.1", 0)
    async with CallbackListener.serve("s", sock, "http://127.0.0.1/callback") as listener:
        with pytest.raises(AuthorizationTimeoutError, match=r"no answer from the browser within 0\.05 s"):
            await listener.wait(0.05)


def test_a_taken_port_cannot_be_reserved() -> None:
    with reserve_port("127.0.0.1", 0) as first:
        first.listen(1)
        with pytest.raises(OSError):
            reserve_port("127.0.0.1", first.getsockname()[1])
