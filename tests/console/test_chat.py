"""Chat and Traffic in Chromium against a real ``mcpdeck serve`` and the scripted OpenAI-format server:
a streamed answer, a tool call approved in a dialog (a card that ends ``done``), one denied, model text
shown as text, and the JSON-RPC messages of the call on the Traffic page; a New chat that fails, and
an older server's refused protocol probe on the Traffic page."""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import expect

from tests.console.conftest import Console
from tests.helpers import closed_port, stdio_server
from tests.llm.scripted import Call, Reply, Step, serve_scripted_in_thread

MARKUP = "<img src=x onerror=alert(1)><b>bold</b>"


def test_chat_with_an_approval_dialog_and_tool_cards_then_traffic(console_for: Callable[..., Console]) -> None:
    script: list[Step] = [
        Reply(text=f"Adding them. {MARKUP}", tool_calls=[Call("mcp__basic__add", {"a": 2, "b": 3})]),
        lambda request: Reply(text=f"The answer is {request.tool_results[0][1]}.", chunks=5),
        Reply(tool_calls=[Call("mcp__basic__echo", {"text": "hi"})]),
        Reply(text="Fine, I will not echo."),
    ]
    with serve_scripted_in_thread("openai", script) as llm:
        providers = {"scripted": {"type": "openai", "baseUrl": llm.base_url, "apiKey": "test-key"}}
        console = console_for({"basic": stdio_server("basic")}, providers=providers, model="scripted:test-model")
        page = console.open("#/servers")
        expect(page.locator("tr[data-name=basic] .status")).to_have_attribute("data-state", "connected")

        page.get_by_role("link", name="Chat").click()
        expect(page.get_by_label("Model")).to_have_value("scripted:test-model")
        page.get_by_role("button", name="New chat").click()
        expect(page.locator(".chat-title")).to_contain_text("scripted:test-model")

        message = page.get_by_label("Message")
        message.fill("what is 2 + 3?")
        message.press("Enter")
        dialog = page.get_by_role("dialog", name="Allow this tool call?")
        expect(dialog).to_be_visible()
        expect(dialog).to_contain_text("mcp__basic__add")
        expect(dialog).to_contain_text('"a": 2')
        card = page.locator(".tool-card[data-name=mcp__basic__add]")
        expect(card).to_have_attribute("data-state", "waiting")
        dialog.get_by_role("button", name="Allow once").click()
        expect(dialog).to_be_hidden()
        expect(card).to_have_attribute("data-state", "done")
        expect(card.locator(".card-result")).to_have_text("5")
        expect(card).to_contain_text("user-once")
        transcript = page.get_by_role("log", name="Conversation")
        expect(transcript).to_contain_text("The answer is 5.")
        # The model's markup is text: no element was made from it, and no script ran.
        expect(transcript).to_contain_text(MARKUP)
        assert page.locator(".transcript img, .transcript b").count() == 0
        expect(page.get_by_role("button", name="Send")).to_be_enabled()

        message.fill("now echo hi")
        page.get_by_role("button", name="Send").click()
        dialog = page.get_by_role("dialog", name="Allow this tool call?")
        dialog.get_by_role("button", name="Deny").click()
        denied = page.locator(".tool-card[data-name=mcp__basic__echo]")
        expect(denied).to_have_attribute("data-state", "denied")
        expect(transcript).to_contain_text("Fine, I will not echo.")
        assert llm.script.left == 0

        # The conversation is in the history list; the call's messages are on the Traffic page.
        expect(page.locator(".chat-list")).to_contain_text("what is 2 + 3?")
        page.get_by_role("link", name="Traffic").click()
        call = page.locator("tr.msg.out", has_text="tools/call").first
        expect(call).to_be_visible()
        call.click()
        expect(page.locator("pre.traffic-body").first).to_contain_text('"name": "add"')
        expect(page.locator("tr.msg.in.response").first).to_be_visible()
    assert console.errors == [], console.errors


def test_a_new_chat_that_fails_leaves_the_open_one_and_says_why(console_for: Callable[..., Console]) -> None:
    with serve_scripted_in_thread("openai", [Reply(text="hello")]) as llm:
        providers = {"scripted": {"type": "openai", "baseUrl": llm.base_url, "apiKey": "test-key"}}
        console = console_for({"basic": stdio_server("basic")}, providers=providers, model="scripted:test-model")
        page = console.open("#/chat")
        page.get_by_role("button", name="New chat").click()
        expect(page.locator(".chat-title")).to_contain_text("scripted:test-model")
        first = page.url

        page.get_by_label("Model").fill("nosuchprovider:some-model")
        page.get_by_role("button", name="New chat").click()
        # The open chat is left: the next message cannot go to it by mistake.
        expect(page.locator(".chat-title")).to_have_text("No chat open")
        assert page.url != first
        alert = page.get_by_role("log", name="Conversation").get_by_role("alert")
        expect(alert).to_contain_text("The chat was not started:")
        expect(alert).to_contain_text("nosuchprovider")
        assert llm.script.left == 1  # nothing was sent to the model
    # The browser notes the refused request (400); nothing else went wrong on the page.
    assert [e for e in console.errors if "status of 400" not in e] == [], console.errors


def test_a_modern_only_server_s_refused_handshake_is_not_shown_as_a_failure(
    console_for: Callable[..., Console],
) -> None:
    console = console_for({"new": stdio_server("asking", "--modern-only")})
    page = console.open("#/servers")
    expect(page.locator("tr[data-name=new] .status")).to_have_attribute("data-state", "connected")
    page.get_by_role("link", name="Traffic").click()
    refused = page.locator("tr.msg.in", has_text="initialize")
    expect(refused).to_have_count(1)
    expect(refused).to_have_class(re.compile(r"\bprobe\b"))
    expect(refused).to_contain_text("modern server")
    expect(page.locator("tr.msg.in", has_text="server/discover")).to_have_count(1)
    expect(page.locator("tr.msg.error")).to_have_count(0)
    assert console.errors == [], console.errors


NO_PROVIDER: dict[str, str | None] = {
    "OPENAI_API_KEY": None,
    "ANTHROPIC_API_KEY": None,
    "GEMINI_API_KEY": None,
    "GOOGLE_API_KEY": None,
    "OLLAMA_HOST": None,
    "MCPDECK_MODEL": None,
}


def test_with_no_provider_the_page_says_what_to_set_and_shows_each_error_once(
    console_for: Callable[..., Console],
) -> None:
    with closed_port() as port:
        # No key in the environment, and no Ollama: nothing answers at its URL.
        environment = {**NO_PROVIDER, "OLLAMA_BASE_URL": f"http://127.0.0.1:{port}/v1"}
        console = console_for({"basic": stdio_server("basic")}, environment)
        page = console.open("#/chat")
        note = page.locator(".chat-side .hint")
        expect(note).to_contain_text("No provider is ready: set OPENAI_API_KEY")
        expect(note).to_contain_text(f"ollama: nothing answers at http://127.0.0.1:{port}/v1")
        expect(note).not_to_contain_text("Ready:")

        # A chat that cannot start says why once, in the transcript, and not again in a toast.
        page.get_by_label("Model").fill("openai:gpt-test")
        page.get_by_role("button", name="New chat").click()
        alert = page.get_by_role("log", name="Conversation").get_by_role("alert")
        expect(alert).to_contain_text("no API key for openai")
        expect(page.locator("#toasts .toast")).to_have_count(0)

        # The same error twice is one toast (counted), and no toast covers the message box. Each opening is
        # let finish before the next (one overtaken by a later opening says nothing: the user moved on).
        toast = page.locator("#toasts .toast")
        for n in (1, 2, 3):
            page.evaluate("location.hash = '#/chat'")
            page.evaluate("location.hash = '#/chat/history/999'")
            expect(page.locator(".chat-title")).to_have_text("Conversation 999")
            expect(toast).to_have_count(1)
            if n > 1:
                expect(toast).to_contain_text(f"\u00d7{n}")  # counted
        expect(toast).to_contain_text("no conversation 999")
        for width in (900, 1360, 1920):
            page.set_viewport_size({"width": width, "height": 800})
            box, message = toast.bounding_box(), page.get_by_label("Message").bounding_box()
            assert box is not None and message is not None
            overlap_x = min(box["x"] + box["width"], message["x"] + message["width"]) - max(box["x"], message["x"])
            overlap_y = min(box["y"] + box["height"], message["y"] + message["height"]) - max(box["y"], message["y"])
            assert overlap_x <= 0 or overlap_y <= 0, (width, box, message)
    assert [e for e in console.errors if "status of 40" not in e] == [], console.errors


def _chat_with_a_provider_that_is_down(console_for: Callable[..., Console], port: int) -> Console:
    """A console whose model's provider answers nowhere (``port`` is closed), with a new chat open on it."""
    providers = {"down": {"type": "openai", "baseUrl": f"http://127.0.0.1:{port}/v1", "apiKey": "k"}}
    console = console_for({"basic": stdio_server("basic")}, providers=providers, model="down:m")
    page = console.open("#/chat")
    page.get_by_role("button", name="New chat").click()
    expect(page.locator(".chat-title")).to_contain_text("down:m")
    return console


def test_a_chat_that_failed_is_in_the_history_with_why(console_for: Callable[..., Console]) -> None:
    with closed_port() as port:
        console = _chat_with_a_provider_that_is_down(console_for, port)
        page = console.page
        message = page.get_by_label("Message")
        message.fill("is anyone there?")
        message.press("Enter")
        transcript = page.get_by_role("log", name="Conversation")
        expect(transcript.get_by_role("alert")).to_contain_text("cannot reach")
        expect(page.locator("#toasts .toast")).to_have_count(0)

        page.get_by_role("link", name="History").click()
        page.get_by_role("tab", name="Conversations").click()
        page.get_by_role("button", name="is anyone there?").click()
        expect(page.locator(".messages .message.failed")).to_contain_text("cannot reach")
    assert console.errors == [], console.errors


# Where New chat and the list of conversations are when the page is first drawn (before /api/chat/models
# answers and the note fills in).
WATCH_NEW_CHAT = """
new MutationObserver(() => {
  const button = [...document.querySelectorAll('.chat-side button')].find((b) => b.textContent === 'New chat');
  if (button && window.newChatTop === undefined) window.newChatTop = button.getBoundingClientRect().top;
  const list = document.querySelector('.chat-list');
  if (list && window.chatListTop === undefined) window.chatListTop = list.getBoundingClientRect().top;
}).observe(document, { subtree: true, childList: true });
"""


def test_new_chat_and_the_conversations_stay_put_when_the_provider_note_fills_in(
    console_for: Callable[..., Console],
) -> None:
    # A click on them while /api/chat/models answers would land on what moved under the pointer.
    with closed_port() as port:
        providers = {"down": {"type": "openai", "baseUrl": f"http://127.0.0.1:{port}/v1", "apiKey": "k"}}
        console = console_for({"basic": stdio_server("basic")}, providers=providers, model="down:m")
        console.page.add_init_script(WATCH_NEW_CHAT)
        page = console.open("#/chat")
        expect(page.locator(".chat-side .hint")).to_contain_text("down: nothing answers")
        top = page.get_by_role("button", name="New chat").evaluate("(b) => b.getBoundingClientRect().top")
        assert top == page.evaluate("window.newChatTop")
        top = page.locator(".chat-list").evaluate("(list) => list.getBoundingClientRect().top")
        assert top == page.evaluate("window.chatListTop")
    assert console.errors == [], console.errors


def test_a_past_conversation_that_cannot_be_read_leaves_no_chat_open_to_type_into(
    console_for: Callable[..., Console],
) -> None:
    """From an open chat to a past conversation that cannot be read: the page says so, and the message box no
    longer sends to the chat that was open before (its title stayed, with the box enabled)."""
    with closed_port() as port:
        console = _chat_with_a_provider_that_is_down(console_for, port)
        page = console.page
        expect(page.get_by_label("Message")).to_be_enabled()
        page.evaluate("location.hash = '#/chat/history/999'")
        expect(page.locator("#toasts .toast")).to_contain_text("no conversation 999")
        expect(page.locator(".chat-title")).to_have_text("Conversation 999")
        expect(page.get_by_label("Message")).to_be_disabled()
    assert [e for e in console.errors if "status of 404" not in e] == [], console.errors
