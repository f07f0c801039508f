"""``/api/profiles`` over HTTP: the gateway's profiles in the config file, against real servers."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api

pytestmark = pytest.mark.anyio


async def test_a_profile_put_is_saved_beside_the_servers_and_shows_what_it_serves(api: Api) -> None:
    assert (await api.client.get("/api/profiles")).json() == {"config": str(api.config), "profiles": []}
    servers_before = api.file()["mcpServers"]

    body = {"servers": ["basic"], "tools": {"include": ["e*"], "exclude": ["env"]}, "description": "echoes"}
    answer = await api.client.put("/api/profiles/coding", json=body)
    assert answer.status_code == 200, answer.text
    coding = answer.json()
    assert coding["name"] == "coding" and coding["path"] == "/mcp/coding"
    assert coding["servers"] == ["basic"] and coding["unknownServers"] == []
    assert coding["tools"] == ["mcp__basic__echo"]
    assert api.file()["profiles"] == {"coding": body | {"tools": {"include": ["e*"], "exclude": ["env"]}}}
    assert api.file()["mcpServers"] == servers_before

    listed = (await api.client.get("/api/profiles")).json()["profiles"]
    assert listed == [coding]
    assert (await api.client.get("/api/profiles/coding")).json() == coding


async def test_a_profile_without_prefix_shows_the_servers_own_names(api: Api) -> None:
    answer = await api.client.put("/api/profiles/raw", json={"servers": ["basic"], "prefix": False, "tools": ["echo"]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["tools"] == ["echo"]
    assert api.file()["profiles"]["raw"] == {"servers": ["basic"], "tools": {"include": ["echo"]}, "prefix": False}


async def test_an_unusable_profile_is_refused_and_the_file_is_left_as_it_was(api: Api) -> None:
    before = api.config.read_bytes()
    two = await api.client.put("/api/profiles/raw", json={"servers": ["basic", "inproc"], "prefix": False})
    assert two.status_code == 400
    assert two.json()["error"]["code"] == "config-error"
    assert "exactly one server" in two.json()["error"]["message"]

    typo = await api.client.put("/api/profiles/coding", json={"servers": ["basci"]})
    assert typo.status_code == 400
    assert typo.json()["error"]["message"] == "profile 'coding': no server named 'basci' (known: basic, remote, inproc)"

    name = await api.client.put("/api/profiles/two%20words", json={})
    assert name.status_code == 400 and "use only letters, digits" in name.json()["error"]["message"]

    extra = await api.client.put("/api/profiles/coding", json={"servers": ["basic"], "tols": ["echo"]})
    assert extra.status_code == 422
    assert api.config.read_bytes() == before


async def test_a_deleted_profile_is_gone_and_an_unknown_one_names_the_known_ones(api: Api) -> None:
    await api.client.put("/api/profiles/keep", json={})
    await api.client.put("/api/profiles/drop", json={"servers": ["basic"]})
    answer = await api.client.delete("/api/profiles/drop")
    assert answer.status_code == 204
    assert list(api.file()["profiles"]) == ["keep"]
    again = await api.client.delete("/api/profiles/drop")
    assert again.status_code == 404
    assert again.json() == {"error": {"code": "profile-not-found", "message": "no profile named 'drop' (known: keep)"}}
    assert (await api.client.get("/api/profiles/drop")).status_code == 404
