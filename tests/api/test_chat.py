"""``/api/chat``: models, a chat whose run streams over real HTTP against the scripted OpenAI-format
server, tool calls through real MCP servers, approvals, elicitation, sampling, stop, history."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcpdeck.callbacks import ElicitationRequest, ElicitationResponse
from mcpdeck.permissions import Approval, ApprovalRequest
from tests.api.conftest import Api, running_api
from tests.helpers import WAIT, closed_port, stdio_server
from tests.llm.scripted import Call, Reply, ScriptedServer, Step, serve_scripted

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def chat_api(tmp_path: Path, script: Sequence[Step], **extra: Any) -> AsyncGenerator[tuple[Api, ScriptedServer]]:
    """The API for basic + features over stdio, with a provider ``scripted`` that answers from ``script``."""
    async with serve_scripted("openai", script) as llm:
        servers = {"basic": stdio_server("basic"), "features": stdio_server("features")}
        providers = {"scripted": {"type": "openai", "baseUrl": llm.base_url, "apiKey": "test-key"}}
        providers.update(extra.pop("providers_extra", {}))
        async with running_api(tmp_path, servers, in_process=False, providers=providers, **extra) as api:
            yield api, llm


async def run(api: Api, chat: str, prompt: str, on_event: Any = None) -> list[tuple[str, dict[str, Any]]]:
    """Send a prompt; every event of the run until ``done``. ``on_event(kind, data)`` may answer questions."""
    events: list[tuple[str, dict[str, Any]]] = []
    with anyio.fail_after(WAIT):
        async with api.client.stream("POST", f"/api/chats/{chat}/messages", json={"prompt": prompt}) as response:
            assert response.status_code == 200, await response.aread()
            kind = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data = json.loads(line[6:])
                    events.append((kind, data))
                    if on_event is not None:
                        await on_event(kind, data)
                    if kind == "done":
                        break
    return events


async def new_chat(client: httpx2.AsyncClient, **body: Any) -> dict[str, Any]:
    answer = await client.post("/api/chats", json={"model": "scripted:test-model", **body})
    assert answer.status_code == 201, answer.text
    return answer.json()


async def test_models_name_the_default_and_which_providers_are_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_HOST"):
        monkeypatch.delenv(variable, raising=False)
    with closed_port() as port:
        # No Ollama runs (its URL refuses connections), nor the config's local "lab" server.
        monkeypatch.setenv("OLLAMA_BASE_URL", f"http://127.0.0.1:{port}/v1")
        lab = {"lab": {"type": "openai", "baseUrl": f"http://localhost:{port}/v1"}}
        async with chat_api(tmp_path, [], model="scripted:test-model", providers_extra=lab) as (api, _):
            body = (await api.client.get("/api/chat/models")).json()
    assert body["default"] == "scripted:test-model"
    assert body["models"][0] == "scripted:test-model"
    by_name = {p["name"]: p for p in body["providers"]}
    # A local provider is ready when it answers: the scripted server does.
    assert by_name["scripted"] == {"name": "scripted", "api": "openai", "ready": True, "note": "from the config"}
    assert by_name["ollama"] == {
        "name": "ollama",
        "api": "openai",
        "ready": False,
        "note": f"nothing answers at http://127.0.0.1:{port}/v1 (start Ollama, or set OLLAMA_BASE_URL)",
    }
    assert by_name["lab"]["ready"] is False and by_name["lab"]["note"].startswith("nothing answers at http://localhost")
    assert by_name["openai"] == {"name": "openai", "api": "openai", "ready": False, "note": "set $OPENAI_API_KEY"}
    assert "test-key" not in json.dumps(body)


async def test_a_running_ollama_is_ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with serve_scripted("openai", []) as ollama:
        monkeypatch.setenv("OLLAMA_BASE_URL", ollama.base_url)
        async with running_api(tmp_path, {}, in_process=False) as api:
            body = (await api.client.get("/api/chat/models")).json()
    by_name = {p["name"]: p for p in body["providers"]}
    assert by_name["ollama"] == {"name": "ollama", "api": "openai", "ready": True, "note": "no key needed"}


async def test_a_chat_streams_text_and_a_tool_card_and_is_kept_in_the_history(tmp_path: Path) -> None:
    script: list[Step] = [
        Reply(text="Adding.", tool_calls=[Call("mcp__basic__add", {"a": 2, "b": 40})]),
        lambda request: Reply(text=f"The sum is {request.tool_results[0][1]}.", chunks=4),
    ]
    allow = {"allow": ["mcp__basic__add"]}
    async with chat_api(tmp_path, script, permissions=allow) as (api, llm):
        chat = await new_chat(api.client)
        events = await run(api, chat["id"], "what is 2 + 40?")
        kinds = [kind for kind, _ in events]
        assert kinds.count("text") >= 4
        call = next(data for kind, data in events if kind == "tool-call")
        assert (call["name"], call["server"], call["arguments"]) == ("mcp__basic__add", "basic", {"a": 2, "b": 40})
        done = next(data for kind, data in events if kind == "tool-result")
        assert (done["text"], done["isError"], done["denied"], done["approvedBy"]) == ("42", False, False, "rule")
        assert events[-1] == ("done", {"reason": "done", "steps": 2, "text": "The sum is 42."})
        assert llm.requests[1].tool_results[0][1] == "42"
        listed = (await api.client.get("/api/chats")).json()
        assert listed[0]["title"] == "what is 2 + 40?" and listed[0]["running"] is False
        conversation = listed[0]["conversation"]
        assert conversation is not None
        past = (await api.client.get("/api/history/conversations")).json()["conversations"]
        assert past[0]["id"] == conversation and past[0]["model"] == "scripted:test-model"
        calls = (await api.client.get("/api/history/calls")).json()["toolCalls"]
        assert calls[0]["name"] == "mcp__basic__add"


async def test_an_approval_is_asked_in_the_stream_and_answered_once_or_denied(tmp_path: Path) -> None:
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__basic__echo", {"text": "first"})]),
        Reply(tool_calls=[Call("mcp__basic__echo", {"text": "second"})]),
        Reply(text="done"),
    ]
    answers = iter(["once", "deny"])
    async with chat_api(tmp_path, script) as (api, _):
        chat = await new_chat(api.client)
        asked: list[dict[str, Any]] = []

        async def answer(kind: str, data: dict[str, Any]) -> None:
            if kind == "ask":
                asked.append(data)
                listed = (await api.client.get("/api/asks")).json()
                assert [a["id"] for a in listed] == [data["id"]]
                reply = await api.client.post(f"/api/asks/{data['id']}", json={"answer": next(answers)})
                assert reply.json() == {"answered": True}

        events = await run(api, chat["id"], "echo twice", answer)
        assert [a["kind"] for a in asked] == ["approval", "approval"]
        assert asked[0]["tool"] == "mcp__basic__echo" and asked[0]["arguments"] == {"text": "first"}
        assert asked[0]["chat"] == chat["id"]
        results = [data for kind, data in events if kind == "tool-result"]
        assert (results[0]["text"], results[0]["approvedBy"]) == ("first", "user-once")
        assert results[1]["denied"] is True and results[1]["approvedBy"] == "denied-by-user"
        assert [kind for kind, _ in events].count("ask-closed") == 2
        gone = await api.client.post(f"/api/asks/{asked[0]['id']}", json={"answer": "once"})
        assert gone.status_code == 404


async def test_with_no_one_watching_an_approval_is_denied_and_an_elicitation_declined(tmp_path: Path) -> None:
    async with chat_api(tmp_path, []) as (api, _):
        asks = api.ctx.chats.asks
        request = ApprovalRequest("mcp__basic__echo", "basic", "echo", {"text": "x"}, None, "Echo")
        with anyio.fail_after(WAIT):
            assert await asks.approve(request) == Approval.deny("no one was in the console to approve it")
            form = ElicitationRequest(server="basic", mode="form", message="name?", schema={"type": "object"})
            assert await asks.elicit(form) == ElicitationResponse("decline")
        assert asks.pending() == []


async def test_an_elicitation_form_during_a_chat_is_answered_in_the_console(tmp_path: Path) -> None:
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__features__ask", {"question": "Your colour?"})]),
        lambda request: Reply(text=request.tool_results[0][1]),
    ]
    async with chat_api(tmp_path, script, permissions={"allow": ["mcp__features__ask"]}) as (api, _):
        chat = await new_chat(api.client)
        asked: list[dict[str, Any]] = []

        async def answer(kind: str, data: dict[str, Any]) -> None:
            if kind == "ask":
                asked.append(data)
                content = {"colour": "teal"}
                await api.client.post(f"/api/asks/{data['id']}", json={"action": "accept", "content": content})

        events = await run(api, chat["id"], "ask me", answer)
    assert asked[0]["kind"] == "elicitation" and asked[0]["mode"] == "form"
    assert asked[0]["message"] == "Your colour?" and asked[0]["server"] == "features"
    assert "properties" in asked[0]["schema"]
    result = next(data for kind, data in events if kind == "tool-result")
    assert json.loads(result["text"])["action"] == "accept"
    assert json.loads(result["text"])["content"]["colour"] == "teal"


async def test_a_url_elicitation_names_the_host_before_anything_opens(tmp_path: Path) -> None:
    script: list[Step] = [Reply(tool_calls=[Call("mcp__features__ask_url", {})]), Reply(text="ok")]
    async with chat_api(tmp_path, script, permissions={"allow": ["mcp__features__ask_url"]}) as (api, _):
        chat = await new_chat(api.client)
        asked: list[dict[str, Any]] = []

        async def answer(kind: str, data: dict[str, Any]) -> None:
            if kind == "ask":
                asked.append(data)
                await api.client.post(f"/api/asks/{data['id']}", json={"action": "decline"})

        events = await run(api, chat["id"], "connect", answer)
    assert (asked[0]["mode"], asked[0]["url"], asked[0]["host"]) == (
        "url",
        "https://example.com/connect",
        "example.com",
    )
    assert next(data for kind, data in events if kind == "tool-result")["text"] == "decline"


async def test_sampling_during_a_chat_uses_its_model_once_approved(tmp_path: Path) -> None:
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__features__summarize", {"text": "a long story"})]),
        lambda request: Reply(text="short: " + request.last_user_text[:40]),  # the sampling request
        lambda request: Reply(text=request.tool_results[0][1]),
    ]
    allow = {"allow": ["mcp__features__summarize"]}
    async with chat_api(tmp_path, script, permissions=allow) as (api, _):
        chat = await new_chat(api.client)
        asked: list[dict[str, Any]] = []

        async def answer(kind: str, data: dict[str, Any]) -> None:
            if kind == "ask":
                asked.append(data)
                await api.client.post(f"/api/asks/{data['id']}", json={"answer": "approve"})

        events = await run(api, chat["id"], "summarise it", answer)
    assert asked[0]["kind"] == "sampling" and asked[0]["server"] == "features"
    assert asked[0]["messages"] == [{"role": "user", "text": "Summarise: a long story"}]
    result = next(data for kind, data in events if kind == "tool-result")
    assert result["text"] == "summary by scripted:test-model: short: Summarise: a long story"


async def test_stop_cancels_a_run_waiting_on_a_slow_tool(tmp_path: Path) -> None:
    script: list[Step] = [Reply(tool_calls=[Call("mcp__basic__sleep", {"seconds": 30})]), Reply(text="never")]
    async with chat_api(tmp_path, script, permissions={"allow": ["mcp__basic__sleep"]}) as (api, llm):
        chat = await new_chat(api.client)

        async def stop(kind: str, data: dict[str, Any]) -> None:
            if kind == "tool-call":
                busy = await api.client.post(f"/api/chats/{chat['id']}/messages", json={"prompt": "again"})
                assert busy.status_code == 409
                assert (await api.client.post(f"/api/chats/{chat['id']}/stop")).json() == {"stopped": True}

        events = await run(api, chat["id"], "sleep", stop)
        assert events[-1][0] == "done" and events[-1][1]["reason"] == "stopped"
        assert len(llm.requests) == 1
        assert (await api.client.post(f"/api/chats/{chat['id']}/stop")).json() == {"stopped": False}


async def test_a_past_conversation_goes_on_in_a_new_chat(tmp_path: Path) -> None:
    script: list[Step] = [Reply(text="I am Ada."), lambda request: Reply(text=f"{len(request.messages)} messages")]
    async with chat_api(tmp_path, script) as (api, _):
        first = await new_chat(api.client)
        await run(api, first["id"], "who are you?")
        conversation = (await api.client.get("/api/chats")).json()[0]["conversation"]
        second = await new_chat(api.client, model=None, conversation=conversation)
        assert second["model"] == "scripted:test-model" and second["messages"] == 2
        events = await run(api, second["id"], "and now?")
        assert events[-1][1]["text"] == "3 messages"
        missing = await api.client.post("/api/chats", json={"conversation": 999})
        assert missing.status_code == 404


async def test_bad_requests_say_what_to_do(tmp_path: Path) -> None:
    async with chat_api(tmp_path, []) as (api, _):
        no_model = await api.client.post("/api/chats", json={})
        assert no_model.status_code == 400 and "name a model" in no_model.json()["error"]["message"]
        unknown = await api.client.post("/api/chats", json={"model": "nosuch:thing"})
        assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "provider-error"
        assert (await api.client.post("/api/chats/nope/stop")).status_code == 404
        assert (await api.client.post("/api/asks/ask-0", json={"answer": "once"})).status_code == 404


async def test_a_chat_keeps_to_its_servers_and_takes_the_client_s_provider_variables(tmp_path: Path) -> None:
    big = "x" * 30_000  # over the 20,000 characters the console is sent by default
    script: list[Step] = [
        Reply(tool_calls=[Call("mcp__features__info", {}), Call("mcp__basic__echo", {"text": big})]),
        Reply(text="done"),
        Reply(text="searching"),
    ]
    async with serve_scripted("openai", script) as llm:
        servers = {"basic": stdio_server("basic"), "features": stdio_server("features")}
        allow = {"allow": ["mcp__basic"]}
        async with running_api(tmp_path, servers, in_process=False, permissions=allow) as api:
            # serve has no key for openai and no URL of this model: the client sends its own.
            environment = {"OPENAI_API_KEY": "sk-from-the-client", "OPENAI_BASE_URL": llm.base_url}
            body = {"model": "openai:m", "servers": ["basic"], "toolSearch": False, "environment": environment}
            chat = await new_chat(api.client, **body, resultChars=None)
            assert "sk-from-the-client" not in json.dumps(chat)
            offered = (await api.client.get(f"/api/chats/{chat['id']}/tools")).json()
            assert offered["native"] == ["list_mcp_resources", "read_mcp_resource"]
            assert offered["mcp"] and all(name.startswith("mcp__basic__") for name in offered["mcp"])
            events = await run(api, chat["id"], "go")
            # A tool of another server is no tool of this chat; the whole result text comes back.
            unknown_tool, echoed = [data for kind, data in events if kind == "tool-result"]
            assert unknown_tool["isError"] and "there is no tool named 'mcp__features__info'" in unknown_tool["text"]
            assert echoed["text"] == big
            assert llm.requests[0].api_key == "sk-from-the-client"
            assert sorted(llm.requests[0].tool_names) == sorted(offered["native"] + offered["mcp"])
            cut = await new_chat(api.client, **{**body, "toolSearch": 0})
            events = await run(api, cut["id"], "again")
            assert llm.requests[2].tool_names == ["list_mcp_resources", "read_mcp_resource", "search_tools"]
            unknown = await api.client.post("/api/chats", json={**body, "servers": ["nope"]})
            assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "server-not-found")
            no_key = await api.client.post("/api/chats", json={**body, "environment": {}})
            assert no_key.status_code == 400 and "no API key for openai" in no_key.json()["error"]["message"]


async def test_a_chat_whose_provider_fails_is_in_the_history_with_why(tmp_path: Path) -> None:
    with closed_port() as port:
        providers = {"down": {"type": "openai", "baseUrl": f"http://127.0.0.1:{port}/v1", "apiKey": "k"}}
        async with running_api(
            tmp_path, {"basic": stdio_server("basic")}, in_process=False, providers=providers
        ) as api:
            chat = await new_chat(api.client, model="down:m")
            events = await run(api, chat["id"], "is anyone there?")
            assert events[-1][1]["reason"] == "error"
            listed = (await api.client.get("/api/chats")).json()
            conversation = listed[0]["conversation"]
            assert conversation is not None
            past = (await api.client.get("/api/history/conversations")).json()["conversations"]
            assert [(c["id"], c["title"], c["model"]) for c in past] == [(conversation, "is anyone there?", "down:m")]
            shown = (await api.client.get(f"/api/history/conversations/{conversation}")).json()["messages"]
            assert [m["role"] for m in shown] == ["user", "error"]
            assert shown[1]["content"]["kind"] == "provider" and "cannot reach" in shown[1]["content"]["message"]
            # Going on with it sends the model the prompt, never the error.
            again = await new_chat(api.client, model=None, conversation=conversation)
            assert again["messages"] == 1
