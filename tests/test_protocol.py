"""Everything besides tools: resources, prompts, completions, and what servers ask of the host.

Each test runs against the features server in-process, over stdio and over streamable HTTP, each
in the era a host chooses by default (the ``initialize`` handshake, where servers ask the host
inside a call and send notifications), each again with ``"protocol": "modern"`` (2026-07-28, where
servers ask by "input required" rounds and announce changes to ``subscriptions/listen``), and over
stdio speaking only the handshake ("legacy").
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest

from mcpdeck import Host, ServerError, ServerState
from mcpdeck.callbacks import ElicitationRequest, ElicitationResponse, Presented, SamplingRequest
from mcpdeck.config import InProcessServerConfig
from mcpdeck.errors import InvalidArgumentsError, PromptNotFoundError, ResourceNotFoundError, ServerTimeoutError
from mcpdeck.events import (
    Event,
    PromptsChanged,
    ResourceUpdated,
    ServerLog,
    ServerRequestHandled,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
)
from tests.helpers import WAIT, next_event, serve_asgi, stdio_server
from tests.servers.features import LANGUAGES, LOGO, PROMPTS, RESOURCES, TEMPLATE, build_server

pytestmark = pytest.mark.anyio

TRANSPORTS = ["in-process", "stdio", "http", "in-process-modern", "stdio-modern", "http-modern", "legacy"]
SHORT = 2.0
"""How long to wait for something that should come at once (a test that fails on it should not stall)."""


@dataclass(frozen=True)
class FeatureServer:
    """The features server over one transport.

    Attributes:
        transport: ``in-process``, ``stdio``, ``http``, each with ``-modern`` (``"protocol": "modern"``),
            or ``legacy`` (stdio, handshake era only).
        spec: What to give ``Host`` for it.
    """

    transport: str
    spec: InProcessServerConfig | dict[str, Any]

    @property
    def handshake(self) -> bool:
        """Whether the session is of the handshake era (before 2026-07-28)."""
        return not self.transport.endswith("-modern")


Reply = Callable[[ElicitationRequest], Awaitable[ElicitationResponse]]
Action = Literal["accept", "decline", "cancel"]


def replying(action: Action, content: dict[str, Any] | None = None) -> Reply:
    """A user who answers every request with ``action`` (and ``content``)."""

    async def reply(request: ElicitationRequest) -> ElicitationResponse:
        return ElicitationResponse(action=action, content=content)

    return reply


decline = replying("decline")


class Answers:
    """What the shared host answers servers with; each test sets ``reply`` and reads what was asked."""

    def __init__(self) -> None:
        self.reply: Reply = decline
        self.asked: list[ElicitationRequest] = []
        self.sampled: list[SamplingRequest] = []

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        self.asked.append(request)
        return await self.reply(request)

    async def sample(self, request: SamplingRequest) -> types.CreateMessageResult:
        self.sampled.append(request)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="short"), model="fake-model")


@pytest.fixture(scope="module", params=TRANSPORTS)
async def feature_server(request: pytest.FixtureRequest) -> AsyncIterator[FeatureServer]:
    """The features server over each transport."""
    transport: str = request.param
    protocol = "modern" if transport.endswith("-modern") else "auto"
    if transport.startswith("in-process"):
        yield FeatureServer(transport, InProcessServerConfig(server=build_server(), protocol=protocol))
    elif transport.startswith("stdio"):
        yield FeatureServer(transport, stdio_server("features", protocol=protocol))
    elif transport == "legacy":
        yield FeatureServer(transport, stdio_server("features", "--legacy"))
    else:
        async with serve_asgi(build_server().streamable_http_app()) as base:
            yield FeatureServer(transport, {"type": "http", "url": f"{base}/mcp", "protocol": protocol})


@pytest.fixture(scope="module")
def shared_answers() -> Answers:
    return Answers()


@pytest.fixture
def answers(shared_answers: Answers) -> Answers:
    """The shared host's answers, reset for this test."""
    shared_answers.reply = decline
    shared_answers.asked.clear()
    shared_answers.sampled.clear()
    return shared_answers


@pytest.fixture(scope="module")
async def host(
    feature_server: FeatureServer, shared_answers: Answers, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Host]:
    """An open host whose server ``features`` is the features server, with elicitation and sampling handlers."""
    logs = tmp_path_factory.mktemp("logs")
    servers = {"features": feature_server.spec}
    answers = shared_answers
    async with Host(
        servers, log_dir=logs, elicitation=answers.elicit, sampling=answers.sample, roots=[Path.cwd()]
    ) as opened:
        status = opened.servers["features"]
        assert (status.state, status.error) == (ServerState.CONNECTED, None)
        yield opened


@pytest.fixture(scope="module")
async def bare_host(feature_server: FeatureServer, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Host]:
    """A host without handlers, with the features server and a twin (in-process) that offers the same URIs."""
    servers = {"features": feature_server.spec, "twin": build_server("twin")}
    async with Host(servers, log_dir=tmp_path_factory.mktemp("logs")) as opened:
        yield opened


def key(feature_server: FeatureServer, name: str) -> str:
    """A name unique to this transport (the HTTP and in-process servers are shared by several hosts)."""
    return f"{name}_{feature_server.transport.replace('-', '_')}"


def text_of(result: types.ReadResourceResult) -> str:
    [content] = result.contents
    assert isinstance(content, types.TextResourceContents)
    return content.text


# ----- lists ----------------------------------------------------------------------------------


async def test_resources_templates_and_prompts_are_read_from_every_page(host: Host) -> None:
    resources = [r for r in host.resources if r.server == "features"]
    assert [r.uri for r in resources] == RESOURCES  # five resources in pages of two
    assert {r.uri: r.resource.mime_type for r in resources}["features://logo"] == "image/png"
    assert resources[0].to_json()["server"] == "features"
    assert [(t.server, t.uri_template) for t in host.resource_templates] == [("features", TEMPLATE)]
    assert host.resource_templates[0].matches("note://anything")
    prompts = [p for p in host.prompts if p.server == "features"]
    assert [p.original_name for p in prompts][: len(PROMPTS)] == PROMPTS
    assert [p.name for p in prompts][: len(PROMPTS)] == [f"mcp__features__{name}" for name in PROMPTS]
    review = prompts[0]
    assert [(a.name, bool(a.required)) for a in review.arguments] == [("code", True), ("language", False)]
    assert review.to_json()["arguments"][0] == {"name": "code", "description": None, "required": True}


# ----- reading resources ----------------------------------------------------------------------


async def test_a_listed_uri_and_a_template_uri_are_read_from_the_server_that_offers_them(host: Host) -> None:
    assert text_of(await host.read_resource("note://second")) == "the second note"
    assert text_of(await host.read_resource("note://42")) == "note 42 (from the template)"
    [logo] = (await host.read_resource("features://logo")).contents
    assert isinstance(logo, types.BlobResourceContents)
    assert (logo.mime_type, base64.b64decode(logo.blob)) == ("image/png", LOGO)


async def test_a_uri_two_servers_offer_names_both_until_a_server_is_given(bare_host: Host) -> None:
    for uri in ("features://info", "note://99"):  # listed by both; matched by both templates
        with pytest.raises(ResourceNotFoundError) as caught:
            await bare_host.read_resource(uri)
        assert sorted(caught.value.servers) == ["features", "twin"], uri
        assert "features, twin" in str(caught.value) or "twin, features" in str(caught.value)
        assert "name one with --server" in str(caught.value)
    assert text_of(await bare_host.read_resource("features://info", server="twin")) == "the twin server"
    assert text_of(await bare_host.read_resource("features://info", server="features")) == "the features server"
    with pytest.raises(ResourceNotFoundError) as unknown:
        await bare_host.read_resource("nothing://here")
    assert unknown.value.servers == [] and "no connected server offers 'nothing://here'" in str(unknown.value)


# ----- prompts and completions --------------------------------------------------------------------


async def test_a_prompt_is_got_with_its_arguments_and_refused_without_the_required_ones(host: Host) -> None:
    result = await host.get_prompt("mcp__features__review", {"code": "x = 1"})
    [message] = result.messages
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Review this python code: x = 1"
    given = await host.get_prompt("mcp__features__review", {"code": "fn main() {}", "language": "rust"})
    assert isinstance(given.messages[0].content, types.TextContent)
    assert given.messages[0].content.text == "Review this rust code: fn main() {}"

    with pytest.raises(InvalidArgumentsError) as missing:
        await host.get_prompt("mcp__features__review", {"language": "rust"})
    assert missing.value.problems == ["'code' is a required argument"]
    with pytest.raises(PromptNotFoundError) as unknown:
        await host.get_prompt("mcp__features__reveiw", {"code": "x"})
    assert "mcp__features__review" in str(unknown.value)


async def test_completions_come_from_the_server_for_prompts_and_templates(host: Host) -> None:
    starting_p = [lang for lang in LANGUAGES if lang.startswith("p")]
    assert await host.complete_prompt_argument("mcp__features__review", "language", "p") == types.Completion(
        values=starting_p, total=len(starting_p), has_more=False
    )
    every = await host.complete_prompt_argument("mcp__features__review", "language", "")
    assert every.values == LANGUAGES and every.total == len(LANGUAGES)
    assert await host.complete_resource_argument("features", TEMPLATE, "id", "s") == types.Completion(
        values=["second"], total=1, has_more=False
    )
    with pytest.raises(PromptNotFoundError):
        await host.complete_prompt_argument("mcp__features__nope", "language", "p")


# ----- elicitation ---------------------------------------------------------------------------------


async def test_an_accepted_form_reaches_the_server_with_defaults_for_the_fields_left_empty(
    host: Host, answers: Answers
) -> None:
    answers.reply = replying("accept", {"name": "Ada", "count": None})  # count left empty, the rest left out
    async with host.events.subscribe() as events:
        result = await host.call_tool("mcp__features__ask", {"question": "Who are you?"})
        handled = await next_event(events, ServerRequestHandled, lambda e: e.kind == "elicitation")
    assert json.loads(result.text()) == {
        "action": "accept",
        "content": {"name": "Ada", "colour": "blue", "count": 3, "loud": False},
    }
    [asked] = answers.asked
    assert (asked.server, asked.mode, asked.message) == ("features", "form", "Who are you?")
    assert asked.schema is not None and asked.schema["required"] == ["name"]
    assert set(asked.schema["properties"]) == {"name", "colour", "count", "loud"}
    assert (handled.server, handled.outcome) == ("features", "accept")


async def test_a_declined_or_cancelled_form_reaches_the_server_as_such(host: Host, answers: Answers) -> None:
    actions: list[Action] = ["decline", "cancel"]
    for action in actions:
        answers.reply = replying(action, {"name": "ignored"})
        result = await host.call_tool("mcp__features__ask", {"question": "Who?"})
        assert json.loads(result.text()) == {"action": action, "content": None}, action
    assert len(answers.asked) == 2


async def test_a_host_without_handlers_declines_forms_and_refuses_sampling_and_says_so(
    bare_host: Host, feature_server: FeatureServer
) -> None:
    async with bare_host.events.subscribe() as events:
        asked = await bare_host.call_tool("mcp__features__ask", {"question": "Who?"})
        declined = await next_event(events, ServerRequestHandled, lambda e: e.kind == "elicitation")
        assert json.loads(asked.text()) == {"action": "decline", "content": None}
        assert declined.outcome == "decline"
        assert declined.detail is not None and "no elicitation handler" in declined.detail

        reason = "sampling is not available: no model is configured for this host"
        # (Over streamable HTTP a host that nobody answers for opens with 2026-07-28: see test_era_choice.py.)
        if bare_host.servers["features"].protocol_version != "2026-07-28":
            # Asked inside the call: the tool gets the refusal as an error and goes on.
            summary = await bare_host.call_tool("mcp__features__summarize", {"text": "a long story"})
            assert summary.text() == f"sampling failed: {reason}"
        else:
            # 2026-07-28: the host answers the server's "input required"; a refusal ends the call.
            with pytest.raises(ServerError, match=reason):
                await bare_host.call_tool("mcp__features__summarize", {"text": "a long story"})
        refused = await next_event(events, ServerRequestHandled, lambda e: e.kind == "sampling")
    assert (refused.server, refused.outcome, refused.detail) == ("features", "refused", reason)


async def test_a_url_elicitation_shows_the_page_and_the_server_hears_the_answer(
    host: Host, answers: Answers, feature_server: FeatureServer
) -> None:
    answers.reply = replying("accept")
    assert (await host.call_tool("mcp__features__ask_url")).text() == "accept"
    answers.reply = decline
    assert (await host.call_tool("mcp__features__ask_url")).text() == "decline"
    first = answers.asked[0]
    assert (first.mode, first.url, first.message) == ("url", "https://example.com/connect", "Connect your account")
    assert first.schema is None
    # The elicitation id exists on the wire up to 2025-11-25 only.
    assert first.elicitation_id == ("connect-1" if feature_server.handshake else None)


async def test_a_call_that_needs_a_page_is_sent_again_once_the_user_has_opened_it(
    host: Host, answers: Answers, feature_server: FeatureServer
) -> None:
    page = key(feature_server, "accepted")

    async def visit(request: ElicitationRequest) -> ElicitationResponse:
        await host.call_tool("mcp__features__visit", {"key": page})  # what opening the page does
        return ElicitationResponse(action="accept")

    answers.reply = visit
    result = await host.call_tool("mcp__features__needs_page", {"key": page})
    assert result.text() == f"page {page} was visited"
    [asked] = answers.asked
    assert (asked.mode, asked.url, asked.elicitation_id) == (
        "url",
        f"https://example.com/visit/{page}",
        f"visit-{page}",
    )


async def test_a_call_that_needs_a_page_fails_when_the_user_declines(
    host: Host, answers: Answers, feature_server: FeatureServer
) -> None:
    page = key(feature_server, "declined")
    with pytest.raises(ServerError) as caught:
        await host.call_tool("mcp__features__needs_page", {"key": page})
    assert "needs the user to open a page first, and they did not" in str(caught.value)
    assert caught.value.server == "features"
    assert [a.url for a in answers.asked] == [f"https://example.com/visit/{page}"]


# ----- sampling ---------------------------------------------------------------------------------------


async def test_sampling_is_answered_by_the_hosts_model(host: Host, answers: Answers) -> None:
    async with host.events.subscribe() as events:
        result = await host.call_tool("mcp__features__summarize", {"text": "a long story"})
        handled = await next_event(events, ServerRequestHandled, lambda e: e.kind == "sampling")
    assert result.text() == "summary by fake-model: short"
    [request] = answers.sampled
    assert request.server == "features"
    assert request.params.max_tokens == 50
    content = request.params.messages[0].content
    assert isinstance(content, types.TextContent) and content.text == "Summarise: a long story"
    assert (handled.outcome, handled.detail) == ("answered", None)


# ----- roots --------------------------------------------------------------------------------------------


async def test_roots_given_to_the_host_are_offered(host: Host) -> None:
    cwd = Path.cwd()
    assert [(str(r.uri), r.name) for r in host.roots] == [(cwd.as_uri(), cwd.name)]
    answer = json.loads((await host.call_tool("mcp__features__list_roots")).text())
    assert answer == {"capability": True, "roots": [{"uri": cwd.as_uri(), "name": cwd.name}]}


async def test_without_roots_asked_for_none_are_offered_and_the_capability_is_not_announced(
    feature_server: FeatureServer, tmp_path: Path
) -> None:
    async with Host({"features": feature_server.spec}, log_dir=tmp_path / "logs") as host:
        assert host.roots == []
        with anyio.fail_after(WAIT):
            answer = json.loads((await host.call_tool("mcp__features__list_roots")).text())
    assert answer == {"capability": False, "roots": []}


async def test_roots_someone_else_has_for_a_server_later_are_offered_by_connecting_again(
    feature_server: FeatureServer, tmp_path: Path
) -> None:
    """A face that decides roots (a stdio gateway's client) may have some only once the server has connected
    without the capability: ``roots_changed(offer=True)`` connects it again, offering them, and a call made at
    once waits for the new session instead of going to the one being closed."""
    given = [types.Root.model_validate({"uri": "file:///given", "name": "given"})]
    router = _RootsRouter(given)
    async with Host({"features": feature_server.spec}, log_dir=tmp_path / "logs") as host:
        host.route_server_requests(router)
        with anyio.fail_after(WAIT):
            before = json.loads((await host.call_tool("mcp__features__list_roots")).text())
            router.has = True
            await host.roots_changed(offer=True)
            after = json.loads((await host.call_tool("mcp__features__list_roots")).text())
    assert before == {"capability": False, "roots": []}
    assert after == {"capability": True, "roots": [{"uri": "file:///given", "name": "given"}]}


async def test_a_router_taken_away_answers_no_more_and_the_host_answers_again(
    feature_server: FeatureServer, tmp_path: Path
) -> None:
    """``route_server_requests`` returns what takes the router away: the host's own roots answer then."""
    router = _RootsRouter([types.Root.model_validate({"uri": "file:///given", "name": "given"})])
    router.has = True
    async with Host({"features": feature_server.spec}, log_dir=tmp_path / "logs", roots=[str(tmp_path)]) as host:
        remove = host.route_server_requests(router)
        with anyio.fail_after(WAIT):
            routed = json.loads((await host.call_tool("mcp__features__list_roots")).text())
            remove()
            remove()  # twice is harmless
            own = json.loads((await host.call_tool("mcp__features__list_roots")).text())
        hosts = [{"uri": str(root.uri), "name": root.name} for root in host.roots]
    assert routed["roots"] == [{"uri": "file:///given", "name": "given"}]
    assert own["roots"] == hosts and hosts[0]["name"] == tmp_path.name


class _RootsRouter:
    """A router with roots only (a ``ServerRequestRouter``): it says None to everything else."""

    def __init__(self, roots: list[types.Root]) -> None:
        self.roots = roots
        self.has = False

    async def elicitation(self, request: ElicitationRequest) -> ElicitationResponse | None:
        return None

    async def sampling(self, request: SamplingRequest) -> types.CreateMessageResult | None:
        return None

    async def roots_for(self, server: str) -> list[types.Root] | None:
        return self.roots if self.has else None

    def roots_offered(self, server: str) -> bool:
        return self.has

    def presented(self, server: str) -> Presented | None:
        return None


async def test_new_roots_reach_the_server_and_older_servers_are_told(
    host: Host, feature_server: FeatureServer, tmp_path: Path
) -> None:
    before = int((await host.call_tool("mcp__features__roots_changed_count", {"at_least": 0})).text())
    try:
        await host.set_roots([tmp_path])
        answer = json.loads((await host.call_tool("mcp__features__list_roots")).text())
        assert answer["roots"] == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]
        if feature_server.handshake:
            told = await host.call_tool("mcp__features__roots_changed_count", {"at_least": before + 1})
            assert int(told.text()) == before + 1
        else:  # 2026-07-28 servers ask for the roots with each request: nothing to tell them
            told = await host.call_tool("mcp__features__roots_changed_count", {"at_least": 0})
            assert int(told.text()) == 0
    finally:
        await host.set_roots([Path.cwd()])


async def test_roots_given_to_the_host_a_servers_own_roots_and_roots_turned_off(tmp_path: Path) -> None:
    own = tmp_path / "own"
    async with serve_asgi(build_server().streamable_http_app()) as base:
        url = f"{base}/mcp"
        servers: dict[str, Any] = {
            "given": build_server(),
            "own": {"type": "http", "url": url, "roots": [str(own)]},
            "private": {"type": "http", "url": url, "roots": False},
            "private_legacy": stdio_server("features", "--legacy", roots=False),
        }
        async with Host(servers, log_dir=tmp_path / "logs", roots=[tmp_path, "file:///srv/data"]) as host:
            assert [str(r.uri) for r in host.roots] == [tmp_path.as_uri(), "file:///srv/data"]
            answers = {name: json.loads((await host.call_tool(f"mcp__{name}__list_roots")).text()) for name in servers}
    assert answers["given"] == {
        "capability": True,
        "roots": [{"uri": tmp_path.as_uri(), "name": tmp_path.name}, {"uri": "file:///srv/data", "name": "data"}],
    }
    assert answers["own"] == {"capability": True, "roots": [{"uri": own.as_uri(), "name": "own"}]}
    # Without the capability the server cannot ask, on either protocol era.
    assert answers["private"] == {"capability": False, "roots": []}
    assert answers["private_legacy"] == {"capability": False, "roots": []}


# ----- logging and progress -----------------------------------------------------------------------------


async def test_log_messages_become_events_and_lines_in_the_servers_log(
    host: Host, feature_server: FeatureServer
) -> None:
    async with host.events.subscribe() as events:
        result = await host.call_tool("mcp__features__chatty", {"count": 7})
        logs = [await next_event(events, ServerLog, lambda e: e.server == "features") for _ in range(8)]
    assert result.text() == "sent 8 messages"
    assert [(e.level, e.logger, e.data) for e in logs[:2]] == [
        ("info", "chatter", "chatty message 1"),
        ("info", "chatter", "chatty message 2"),
    ]
    assert (logs[-1].level, logs[-1].logger, logs[-1].data) == ("warning", None, {"done": 7})
    log_path = host.servers["features"].log_path
    if feature_server.transport.startswith("in-process"):
        assert log_path is None
    else:
        assert log_path is not None
        text = log_path.read_text()
        assert "[info chatter] chatty message 7" in text
        assert "[warning] {'done': 7}" in text


async def test_progress_reaches_the_callback_and_the_events(host: Host) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with host.events.subscribe() as events:
        result = await host.call_tool("mcp__features__progress", {"steps": 3, "delay": 0.01}, progress=on_progress)
        started = await next_event(events, ToolCallStarted)
        reported = [await next_event(events, ToolCallProgress) for _ in range(3)]
    assert result.text() == "done after 3 steps"
    expected = [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]
    assert [(e.progress, e.total, e.message) for e in reported] == expected
    assert seen == expected
    assert {e.call_id for e in reported} == {started.call_id}
    assert {(e.name, e.server) for e in reported} == {("mcp__features__progress", "features")}


async def test_progress_restarts_the_timeout_of_a_long_call(host: Host) -> None:
    result = await host.call_tool("mcp__features__progress", {"steps": 4, "delay": 0.2}, timeout=0.5)
    assert result.text() == "done after 4 steps"  # 0.8 s in all, never 0.5 s without progress: not cut


async def test_a_silent_call_is_cut_at_its_timeout_and_the_server_is_told(
    host: Host, feature_server: FeatureServer
) -> None:
    job = key(feature_server, "silent")
    with anyio.fail_after(WAIT), pytest.raises(ServerTimeoutError) as caught:  # never answered: cut by the timeout
        await host.call_tool("mcp__features__wait_forever", {"key": job}, timeout=0.3)
    assert "within 0.3 s" in str(caught.value)
    told = await host.call_tool("mcp__features__was_cancelled", {"key": job, "within": SHORT})
    assert told.text() == "true"


async def test_cancelling_a_call_cancels_it_on_the_server(host: Host, feature_server: FeatureServer) -> None:
    job = key(feature_server, "cancelled")
    running = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        running.set()

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await host.call_tool("mcp__features__wait_forever", {"key": job}, progress=on_progress)

            tg.start_soon(call)
            with anyio.fail_after(WAIT):
                await running.wait()
            scope.cancel()
    assert scope.cancelled_caught
    told = await host.call_tool("mcp__features__was_cancelled", {"key": job, "within": SHORT})
    assert told.text() == "true"


async def test_a_cancelled_call_still_publishes_that_it_finished(host: Host, feature_server: FeatureServer) -> None:
    job = key(feature_server, "finished")
    seen: list[Event] = []
    running = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        running.set()

    unsubscribe = host.events.on(seen.append)
    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await host.call_tool("mcp__features__wait_forever", {"key": job}, progress=on_progress)

                tg.start_soon(call)
                with anyio.fail_after(WAIT):
                    await running.wait()
                scope.cancel()
    finally:
        unsubscribe()
    [started] = [e for e in seen if isinstance(e, ToolCallStarted)]
    finished = [e for e in seen if isinstance(e, ToolCallFinished) and e.call_id == started.call_id]
    assert len(finished) == 1, "a cancelled call published ToolCallStarted but never ToolCallFinished"
    assert finished[0].is_error


# ----- change notifications and subscriptions ----------------------------------------------------------


async def test_an_update_made_right_after_subscribing_is_reported(host: Host, feature_server: FeatureServer) -> None:
    uri = f"note://{key(feature_server, 'prompt')}"
    async with host.events.subscribe() as events:
        await host.subscribe_resource(uri, server="features")
        try:
            await host.call_tool("mcp__features__touch", {"uri": uri})
            updated = await next_event(events, ResourceUpdated, timeout=SHORT)
        finally:
            await host.unsubscribe_resource(uri, server="features")
    assert (updated.server, updated.uri) == ("features", uri)


class Updates:
    """The ``ResourceUpdated`` events a host publishes, and a beacon to know the ones before it have arrived."""

    def __init__(self, beacon: str):
        self.beacon = beacon
        self.seen: list[ResourceUpdated] = []
        self._heard = anyio.Event()

    def __call__(self, event: Event) -> None:
        if isinstance(event, ResourceUpdated):
            self.seen.append(event)
            if event.uri == self.beacon:
                self._heard.set()

    def of(self, uri: str) -> list[ResourceUpdated]:
        return [e for e in self.seen if e.uri == uri]

    async def beacon_heard(self, host: Host) -> None:
        """Touch the beacon until its update arrives: subscriptions made before it are then in effect,
        and updates sent before it have arrived."""
        with anyio.fail_after(WAIT):
            while True:
                self._heard = anyio.Event()
                await host.call_tool("mcp__features__touch", {"uri": self.beacon})
                with anyio.move_on_after(0.25):
                    await self._heard.wait()
                    return


async def test_each_update_is_reported_once_and_none_after_unsubscribing(
    host: Host, feature_server: FeatureServer
) -> None:
    watched = f"note://{key(feature_server, 'watched')}"
    updates = Updates(f"note://{key(feature_server, 'beacon')}")
    unsubscribe = host.events.on(updates)
    try:
        await host.subscribe_resource(updates.beacon, server="features")
        await host.subscribe_resource(watched, server="features")
        await updates.beacon_heard(host)
        await host.call_tool("mcp__features__touch", {"uri": watched})
        await updates.beacon_heard(host)
        assert [(e.server, e.uri) for e in updates.of(watched)] == [("features", watched)]

        await host.unsubscribe_resource(watched, server="features")
        await updates.beacon_heard(host)
        updates.seen.clear()
        await host.call_tool("mcp__features__touch", {"uri": watched})
        await updates.beacon_heard(host)
        assert updates.of(watched) == []
    finally:
        unsubscribe()
        await host.unsubscribe_resource(updates.beacon, server="features")


async def test_a_prompt_added_by_the_server_joins_the_prompts(host: Host, feature_server: FeatureServer) -> None:
    name = key(feature_server, "grown")
    count = len([p for p in host.prompts if p.server == "features"])
    async with host.events.subscribe() as events:
        await host.call_tool("mcp__features__grow_prompts", {"prompt_name": name})
        changed = await next_event(events, PromptsChanged, lambda e: e.server == "features")
    assert changed.prompt_count == count + 1
    assert f"mcp__features__{name}" in [p.name for p in host.prompts]
    result = await host.get_prompt(f"mcp__features__{name}")
    assert isinstance(result.messages[0].content, types.TextContent)
    assert result.messages[0].content.text == f"I am {name}"


async def test_subscriptions_made_and_dropped_at_once_all_settle(host: Host, feature_server: FeatureServer) -> None:
    """Many subscribe/unsubscribe requests in flight together each return (none waits on a stream
    another request replaced), and what stays subscribed afterwards is what the last requests asked."""
    uris = [f"note://{key(feature_server, f'crowd{i}')}" for i in range(8)]
    updates = Updates(f"note://{key(feature_server, 'crowd-beacon')}")
    unsubscribe = host.events.on(updates)
    try:
        await host.subscribe_resource(updates.beacon, server="features")
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for uri in uris:
                    tg.start_soon(functools.partial(host.subscribe_resource, uri, server="features"))
            async with anyio.create_task_group() as tg:
                for uri in uris[::2]:
                    tg.start_soon(functools.partial(host.unsubscribe_resource, uri, server="features"))
        await updates.beacon_heard(host)
        updates.seen.clear()
        for uri in uris:
            await host.call_tool("mcp__features__touch", {"uri": uri})
        await updates.beacon_heard(host)
        assert sorted({e.uri for e in updates.seen} - {updates.beacon}) == sorted(uris[1::2])
    finally:
        unsubscribe()
        for uri in [updates.beacon, *uris[1::2]]:
            await host.unsubscribe_resource(uri, server="features")
