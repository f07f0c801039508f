"""The permission gate: patterns, precedence, autoApprove, answers, saving, and one prompt at a time."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcpdeck.catalog import CatalogTool, build_catalog
from mcpdeck.config import ConfigStore
from mcpdeck.errors import ConfigError
from mcpdeck.permissions import (
    GATE_APPROVER,
    Access,
    Approval,
    ApprovalRequest,
    CallingClient,
    PermissionGate,
    PermissionRules,
    parse_permissions,
    pattern_matches,
)
from mcpdeck.permissions._rules import covers_server

pytestmark = pytest.mark.anyio

CATALOG = build_catalog(
    {
        "github": [
            types.Tool(name="create_issue", description="Open an issue", input_schema={"type": "object"}),
            types.Tool(
                name="list_issues",
                input_schema={"type": "object"},
                annotations=types.ToolAnnotations(read_only_hint=True),
            ),
        ],
        "git_": [types.Tool(name="status", input_schema={"type": "object"})],
        "fs": [
            types.Tool(
                name="write_file",
                description="Write a file",
                input_schema={"type": "object"},
                annotations=types.ToolAnnotations(destructive_hint=True),
            ),
            types.Tool(name="read.file", input_schema={"type": "object"}),
        ],
    },
    version=1,
)


def tool(name: str) -> CatalogTool:
    found = CATALOG.get(name)
    assert found is not None, name
    return found


CREATE, LIST, STATUS = tool("mcp__github__create_issue"), tool("mcp__github__list_issues"), tool("mcp__git___status")
WRITE, READ = tool("mcp__fs__write_file"), tool("mcp__fs__read_file")


def rules(allow: tuple[str, ...] = (), ask: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> PermissionRules:
    return PermissionRules(allow=allow, ask=ask, deny=deny)


class Approver:
    """Answers every request the same way, and keeps what it was asked."""

    def __init__(self, answer: Approval, gate_open: anyio.Event | None = None):
        self.answer = answer
        self.requests: list[ApprovalRequest] = []
        self.gate_open = gate_open
        self.open_now = 0
        self.most_open = 0

    async def __call__(self, request: ApprovalRequest) -> Approval:
        self.requests.append(request)
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        if self.gate_open is not None:
            await self.gate_open.wait()
        self.open_now -= 1
        return self.answer


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    document = {
        "theme": "dark",
        "mcpServers": {"fs": {"command": "fs-server", "autoApprove": ["read.file"], "x-owner": "ops"}},
        "permissions": {"deny": ["mcp__github__delete_*"]},
    }
    path.write_text(json.dumps(document, indent=2))
    return path


# ----- patterns --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "matched"),
    [
        ("mcp__github", {"mcp__github__create_issue", "mcp__github__list_issues"}),
        ("mcp__github__*", {"mcp__github__create_issue", "mcp__github__list_issues"}),
        ("mcp__github__create_issue", {"mcp__github__create_issue"}),
        ("mcp__*__*_issue*", {"mcp__github__create_issue", "mcp__github__list_issues"}),
        ("*write*", {"mcp__fs__write_file"}),
        ("mcp__*write*", {"mcp__fs__write_file"}),
        ("mcp__fs__read.file", {"mcp__fs__read_file"}),  # the original name also counts
        ("mcp__git__*", set[str]()),  # not the tools of server "git_"
        ("mcp__git___status", {"mcp__git___status"}),
        ("mcp__git_", {"mcp__git___status"}),
        ("mcp__*", {*CATALOG.names()}),
        ("search_tools", set[str]()),
    ],
)
def test_a_pattern_names_a_server_a_tool_or_a_glob(pattern: str, matched: set[str]) -> None:
    assert {entry.name for entry in CATALOG if pattern_matches(pattern, entry)} == matched


LONG_TOOL = "write_" + "x" * 80
HASHED = build_catalog(
    {
        "storage": [types.Tool(name=LONG_TOOL, input_schema={"type": "object"})],
        "s" * 48: [types.Tool(name="write_file", input_schema={"type": "object"})],
        "sneaky": [types.Tool(name="resource:file:///x", input_schema={"type": "object"})],
    },
    version=1,
)


@pytest.mark.parametrize("pattern", ["mcp__*write*", "*write*", "mcp__storage__write_*", "mcp__*__write*"])
def test_a_cut_and_hashed_name_is_matched_by_its_original_name_too(pattern: str) -> None:
    [long_tool] = [entry for entry in HASHED if entry.server == "storage"]
    assert len(long_tool.name) == 64
    assert not long_tool.name.endswith(LONG_TOOL)  # the public name was cut and hashed
    assert pattern_matches(pattern, long_tool)
    decision = PermissionGate(rules(allow=("mcp__*",), deny=(pattern,))).decide_by_rules(long_tool)
    assert decision is not None and not decision.allowed and decision.rule == pattern


def test_a_tool_whose_server_part_was_shortened_is_matched_by_its_server_and_original_name() -> None:
    [entry] = [entry for entry in HASHED if entry.server == "s" * 48]
    assert not entry.name.startswith(f"mcp__{'s' * 48}")  # mcp__sss...-<hash>__write_file
    for pattern in (f"mcp__{'s' * 48}", f"mcp__{'s' * 48}__*", f"mcp__{'s' * 48}__write_file", "mcp__*write_file"):
        assert pattern_matches(pattern, entry), pattern


@pytest.mark.parametrize(
    ("pattern", "matched"),
    [
        ("mcp__fs", True),
        ("mcp__fs__*", True),
        ("mcp__*", True),
        ("mcp__fs__resource:*", True),
        ("mcp__fs__resource:file:///etc/*", True),
        ("mcp__*__resource:file:///etc/passwd", True),
        ("mcp__fs__resource:file:///home/*", False),
        ("mcp__fs__prompt:*", False),
        ("mcp__github", False),
        ("mcp__fs__read_file", False),
        ("*passwd", True),
    ],
)
def test_a_resource_read_has_its_own_name_under_its_server(pattern: str, matched: bool) -> None:
    access = Access("resource", "fs", "file:///etc/passwd")
    assert access.name == "mcp__fs__resource:file:///etc/passwd"
    assert pattern_matches(pattern, access) is matched


def test_a_prompt_is_named_like_a_resource_and_a_tool_cannot_pose_as_either() -> None:
    assert pattern_matches("mcp__fs__prompt:review", Access("prompt", "fs", "review"))
    assert not pattern_matches("mcp__fs__resource:*", Access("prompt", "fs", "review"))
    [sneaky] = [entry for entry in HASHED if entry.server == "sneaky"]
    assert not pattern_matches("mcp__sneaky__resource:*", sneaky)
    assert pattern_matches("mcp__sneaky", sneaky)


async def test_the_default_approver_is_a_named_sentinel_that_asks_the_gates_own_approver() -> None:
    assert repr(GATE_APPROVER) == "GATE_APPROVER"
    approver = Approver(Approval.once())
    gate = PermissionGate(approver=approver)
    assert (await gate.check(tool("mcp__fs__write_file"), {}, approver=GATE_APPROVER)).approved_by == "user-once"
    assert (await gate.check(tool("mcp__fs__write_file"), {})).approved_by == "user-once"
    assert len(approver.requests) == 2
    assert (await gate.check(tool("mcp__fs__write_file"), {}, approver=None)).approved_by == "no-approver"
    assert len(approver.requests) == 2


async def test_a_denied_server_denies_its_resources_and_prompts_and_reads_are_asked_about() -> None:
    gate = PermissionGate(rules(deny=("mcp__fs",)), allow_read_only=True, yes_to_all=True)
    for access in (Access("resource", "fs", "file:///a"), Access("prompt", "fs", "review")):
        decision = await gate.check(access, {})
        assert not decision.allowed and decision.rule == "mcp__fs"
        assert gate.denied(access) == decision
    approver = Approver(Approval.once())
    asking = PermissionGate(approver=approver)
    decision = await asking.check(Access("resource", "github", "repo://x"), {"uri": "repo://x"})
    assert decision.allowed and decision.approved_by == "user-once"
    [request] = approver.requests
    assert (request.name, request.server, request.original_name) == (
        "mcp__github__resource:repo://x",
        "github",
        "resource:repo://x",
    )
    assert request.arguments == {"uri": "repo://x"} and "repo://x" in request.description
    assert request.annotations is not None and request.annotations.read_only_hint
    assert PermissionGate(allow_read_only=True).decide_by_rules(Access("resource", "github", "repo://x")) == (
        await PermissionGate(allow_read_only=True).check(Access("resource", "github", "repo://x"))
    )
    assert PermissionGate().decide_by_rules(Access("resource", "github", "repo://x")) is None  # never "native"


def test_native_tools_match_by_their_plain_name() -> None:
    assert pattern_matches("search_tools", "search_tools")
    assert pattern_matches("search_*", "search_tools")
    assert not pattern_matches("mcp__github", "search_tools")


# ----- loading rules ---------------------------------------------------------------------


def test_rules_are_read_from_the_permissions_object() -> None:
    document = {"mcpServers": {}, "permissions": {"allow": ["a"], "deny": ["b", "c"]}}
    assert parse_permissions(document) == rules(allow=("a",), deny=("b", "c"))
    assert parse_permissions({}) == PermissionRules()


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        (["mcp__fs"], "permissions: expected an object"),
        ({"alow": ["mcp__fs"]}, "unknown key 'alow'"),
        ({"deny": "mcp__fs"}, "permissions.deny: expected a list"),
        ({"deny": ["mcp__fs", 3]}, r"permissions.deny\[1\]: expected a non-empty pattern string, got 3"),
        ({"allow": [""]}, r"permissions.allow\[0\]: expected a non-empty pattern string"),
        ({"ask": ["  "]}, r"permissions.ask\[0\]"),
        ({"deny": ["mcp__fs", " mcp__github "]}, r"permissions.deny\[1\]: the pattern ' mcp__github ' has spaces"),
        ({"allow": ["mcp__fs\t"]}, r"would match nothing; write 'mcp__fs'"),
    ],
)
def test_a_bad_rule_is_refused_saying_where(tmp_path: Path, section: object, problem: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"permissions": section}))
    with pytest.raises(ConfigError, match=problem) as caught:
        PermissionGate.from_store(ConfigStore(path))
    assert caught.value.path == str(path)


# ----- precedence ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "gate",
    [
        PermissionGate(rules(allow=("mcp__fs",), deny=("mcp__fs__write_file",))),
        PermissionGate(rules(deny=("mcp__fs__*",)), auto_approve={"fs": ["write_file"]}),
        PermissionGate(rules(deny=("*write*",)), yes_to_all=True),
        PermissionGate(rules(deny=("mcp__fs",)), default="allow"),
    ],
)
async def test_deny_wins_over_allow_auto_approve_yes_and_the_default(gate: PermissionGate) -> None:
    decision = await gate.check(WRITE, {})
    assert (decision.allowed, decision.approved_by) == (False, "denied-by-rule")
    assert decision.rule is not None
    assert decision.message == f"Permission denied for mcp__fs__write_file: denied by the rule {decision.rule!r}"


async def test_deny_wins_over_read_only_and_over_a_session_answer() -> None:
    approver = Approver(Approval.session())
    gate = PermissionGate(rules(), approver=approver, allow_read_only=True)
    assert (await gate.check(LIST)).approved_by == "rule"
    assert (await gate.check(CREATE)).approved_by == "user-session"
    gate.rules = rules(deny=("mcp__github",))
    assert not (await gate.check(LIST)).allowed
    assert not (await gate.check(CREATE)).allowed


async def test_a_rule_decision_follows_new_rules_and_unreadable_ones() -> None:
    # The gate remembers what the rules say of each tool: a reload (new rules, or rules that cannot
    # be read) must still decide the next call.
    gate = PermissionGate(rules(allow=("mcp__github__list_*",)))
    assert (await gate.check(LIST)).approved_by == "rule"
    assert (await gate.check(LIST)).rule == "mcp__github__list_*"
    gate.problem = "permissions.allow: expected a list of patterns"
    refused = await gate.check(LIST)
    assert not refused.allowed and "cannot be read" in refused.reason
    gate.problem = None
    gate.rules = rules(allow=("mcp__github__create_*",))
    assert (await gate.check(LIST)).approved_by == "no-approver"
    assert (await gate.check(CREATE)).approved_by == "rule"


async def test_allow_wins_over_ask_and_ask_wins_over_the_default() -> None:
    gate = PermissionGate(rules(allow=("mcp__github__list_*",), ask=("mcp__github",)), default="allow")
    assert (await gate.check(LIST)).approved_by == "rule"
    assert (await gate.check(CREATE)).approved_by == "no-approver"
    assert (await gate.check(WRITE)).approved_by == "rule"


def test_the_default_decides_tools_no_rule_matches() -> None:
    assert PermissionGate().decide_by_rules(WRITE) is None
    allowed = PermissionGate(default="allow").decide_by_rules(WRITE)
    assert allowed is not None and allowed.allowed and allowed.rule is None
    denied = PermissionGate(default="deny", yes_to_all=True).decide_by_rules(WRITE)
    assert denied is not None and not denied.allowed and "default is deny" in denied.reason
    assert PermissionGate(rules(ask=("mcp__fs",)), default="deny").decide_by_rules(WRITE) is None


def test_read_only_tools_are_allowed_only_when_set_and_no_ask_rule_fences_them() -> None:
    assert PermissionGate().decide_by_rules(LIST) is None
    decision = PermissionGate(allow_read_only=True).decide_by_rules(LIST)
    assert decision is not None and decision.allowed and "readOnlyHint" in decision.reason
    assert PermissionGate(allow_read_only=True).decide_by_rules(CREATE) is None
    assert PermissionGate(rules(ask=("mcp__github",)), allow_read_only=True).decide_by_rules(LIST) is None


@pytest.mark.parametrize("pattern", ["read.file", "read*", "mcp__fs__read_file", "mcp__fs__read.*"])
async def test_auto_approve_matches_the_original_or_the_namespaced_name(pattern: str) -> None:
    decision = await PermissionGate(auto_approve={"fs": [pattern]}).check(READ)
    assert (decision.allowed, decision.approved_by, decision.rule) == (True, "autoApprove", pattern)


async def test_auto_approve_covers_only_its_own_server() -> None:
    gate = PermissionGate(auto_approve={"github": ["*_file", "mcp__fs__write_file"]})
    assert (await gate.check(WRITE)).approved_by == "no-approver"
    gate = PermissionGate(auto_approve=lambda server: ["*"] if server == "fs" else [])
    assert (await gate.check(WRITE)).approved_by == "autoApprove"
    assert (await gate.check(CREATE)).approved_by == "no-approver"


async def test_a_gate_from_the_config_file_uses_its_rules_and_auto_approve(config: Path) -> None:
    gate = PermissionGate.from_store(ConfigStore(config))
    assert gate.rules == rules(deny=("mcp__github__delete_*",))
    assert (await gate.check(READ)).approved_by == "autoApprove"
    assert (await gate.check(WRITE)).approved_by == "no-approver"


# ----- asking ----------------------------------------------------------------------------


async def test_without_an_approver_ask_is_denied_saying_how_to_allow_it(config: Path) -> None:
    gate = PermissionGate.from_store(ConfigStore(config))
    decision = await gate.check(WRITE, {"path": "x"})
    assert (decision.allowed, decision.approved_by) == (False, "no-approver")
    assert decision.message.startswith("Permission denied for mcp__fs__write_file: it needs approval")
    assert decision.reason.endswith(f'to allow it, add "mcp__fs__write_file" to permissions.allow in {config}')
    # A program with a switch of its own for this (the CLI's chat: --yes) says it too; a library
    # user or a gateway client gets only advice they can follow.
    gate.allow_hint = "run with --yes"
    hinted = await gate.check(WRITE, {"path": "x"})
    assert hinted.reason.endswith(
        f'to allow it, run with --yes or add "mcp__fs__write_file" to permissions.allow in {config}'
    )


async def test_yes_to_all_approves_every_ask_without_asking() -> None:
    approver = Approver(Approval.deny())
    gate = PermissionGate(rules(ask=("mcp__fs",)), approver=approver, yes_to_all=True)
    assert (await gate.check(WRITE)).allowed
    assert (await gate.check("search_tools")).allowed
    assert approver.requests == []


async def test_the_approver_is_told_what_the_call_is() -> None:
    approver = Approver(Approval.once())
    gate = PermissionGate(rules(ask=("search_tools",)), approver=approver)
    await gate.check(WRITE, {"path": "a.txt"})
    await gate.check("search_tools", None)
    asked_write, asked_native = approver.requests
    assert asked_write == ApprovalRequest(
        name="mcp__fs__write_file",
        server="fs",
        original_name="write_file",
        arguments={"path": "a.txt"},
        annotations=types.ToolAnnotations(destructive_hint=True),
        description="Write a file",
    )
    assert (asked_native.name, asked_native.server, asked_native.arguments) == ("search_tools", None, {})


async def test_once_allows_one_call_and_asks_again_next_time() -> None:
    approver = Approver(Approval.once())
    gate = PermissionGate(approver=approver)
    assert (await gate.check(WRITE)).approved_by == "user-once"
    assert (await gate.check(WRITE)).approved_by == "user-once"
    assert len(approver.requests) == 2


async def test_session_allows_the_tool_until_the_gate_goes_and_saves_nothing(config: Path) -> None:
    before = await anyio.Path(config).read_bytes()
    approver = Approver(Approval.session())
    gate = PermissionGate.from_store(ConfigStore(config), approver=approver)
    assert (await gate.check(WRITE)).approved_by == "user-session"
    assert (await gate.check(WRITE)).approved_by == "user-session"
    assert len(approver.requests) == 1
    assert gate.session_allowed == {"mcp__fs__write_file"}
    assert await anyio.Path(config).read_bytes() == before
    assert (await gate.check(CREATE)).approved_by == "user-session"
    assert len(approver.requests) == 2


async def test_deny_refuses_the_call_with_the_users_reason() -> None:
    gate = PermissionGate(approver=Approver(Approval.deny("not on main")))
    decision = await gate.check(WRITE)
    assert (decision.allowed, decision.approved_by) == (False, "denied-by-user")
    assert decision.message == "Permission denied for mcp__fs__write_file: the user declined: not on main"
    assert (await PermissionGate(approver=Approver(Approval.deny())).check(WRITE)).reason == "the user declined"


async def test_always_appends_an_allow_rule_to_the_file_keeping_everything_else(config: Path) -> None:
    approver = Approver(Approval.always())
    store = ConfigStore(config)
    gate = PermissionGate.from_store(store, approver=approver)
    decision = await gate.check(WRITE)
    assert (decision.allowed, decision.approved_by, decision.rule) == (True, "user-always", "mcp__fs__write_file")
    saved: dict[str, Any] = json.loads(await anyio.Path(config).read_text())
    assert saved["permissions"] == {"deny": ["mcp__github__delete_*"], "allow": ["mcp__fs__write_file"]}
    assert saved["theme"] == "dark"
    assert saved["mcpServers"]["fs"] == {"command": "fs-server", "autoApprove": ["read.file"], "x-owner": "ops"}
    assert sorted(p.name for p in config.parent.iterdir()) == ["mcp.json"]  # no temp file, no lock file
    assert (await gate.check(WRITE)).approved_by == "rule"
    assert len(approver.requests) == 1
    fresh = PermissionGate.from_store(store)
    assert (await fresh.check(WRITE)).approved_by == "rule"


async def test_always_without_a_config_file_lasts_for_the_session() -> None:
    gate = PermissionGate(approver=Approver(Approval.always()))
    decision = await gate.check(WRITE)
    assert (decision.allowed, decision.approved_by) == (True, "user-session")
    assert "no config file" in decision.reason


async def test_a_failing_save_leaves_the_file_intact_and_allows_for_the_session(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = await anyio.Path(config).read_bytes()
    gate = PermissionGate.from_store(ConfigStore(config), approver=Approver(Approval.always()))

    def full_disk(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    decision = await gate.check(WRITE)
    assert (decision.allowed, decision.approved_by) == (True, "user-session")
    assert "saving the rule failed" in decision.reason
    assert await anyio.Path(config).read_bytes() == before
    assert sorted(p.name for p in config.parent.iterdir()) == ["mcp.json"]  # no temp file, no lock file


async def test_a_file_broken_since_loading_is_not_written_over(config: Path) -> None:
    gate = PermissionGate.from_store(ConfigStore(config), approver=Approver(Approval.always()))
    await anyio.Path(config).write_text('{"permissions": ["oops"]}')
    decision = await gate.check(WRITE)
    assert decision.approved_by == "user-session"
    assert "permissions: expected an object" in decision.reason
    assert await anyio.Path(config).read_text() == '{"permissions": ["oops"]}'


# ----- one prompt at a time --------------------------------------------------------------


async def test_concurrent_checks_of_one_tool_prompt_once_for_a_session_answer() -> None:
    answered = anyio.Event()
    approver = Approver(Approval.session(), answered)
    gate = PermissionGate(approver=approver)
    decisions: list[str] = []

    async def check() -> None:
        decisions.append((await gate.check(WRITE)).approved_by)

    async with anyio.create_task_group() as tg:
        tg.start_soon(check)
        tg.start_soon(check)
        await anyio.wait_all_tasks_blocked()
        answered.set()
    assert decisions == ["user-session", "user-session"]
    assert len(approver.requests) == 1


async def test_prompts_for_different_tools_never_overlap() -> None:
    answered = anyio.Event()
    approver = Approver(Approval.once(), answered)
    gate = PermissionGate(approver=approver)
    async with anyio.create_task_group() as tg:
        for entry in (WRITE, CREATE, STATUS):
            tg.start_soon(gate.check, entry)
        await anyio.wait_all_tasks_blocked()
        assert len(approver.requests) == 1
        answered.set()
    assert len(approver.requests) == 3
    assert approver.most_open == 1


async def test_native_tools_run_unless_a_rule_names_them() -> None:
    approver = Approver(Approval.deny())
    gate = PermissionGate(rules(deny=("drop_*",), ask=("send_mail",)), approver=approver)
    free = await gate.check("search_tools")
    assert (free.allowed, free.approved_by) == (True, "native")
    denied = await gate.check("drop_table")
    assert (denied.allowed, denied.approved_by, denied.rule) == (False, "denied-by-rule", "drop_*")
    asked = await gate.check("send_mail")
    assert (asked.allowed, asked.approved_by) == (False, "denied-by-user")
    assert [request.name for request in approver.requests] == ["send_mail"]


async def test_unreadable_rules_deny_every_call_and_say_why() -> None:
    gate = PermissionGate(rules(allow=("mcp__fs",)), yes_to_all=True, problem="permissions.deny: expected a list")
    for tool in (WRITE, "search_tools"):
        decision = await gate.check(tool)
        assert not decision.allowed
        assert "cannot be read: permissions.deny: expected a list" in decision.reason


async def test_a_calling_client_approves_what_no_rule_covers_and_is_asked_what_an_ask_rule_asks() -> None:
    rules = PermissionRules(ask=("mcp__fs__write_file",), deny=("mcp__github__create_issue",))
    gate = PermissionGate(rules=rules, approver=Approver(Approval.once()))
    asked = Approver(Approval.session())
    desktop = CallingClient("claude-ai 0.1.0", asked)
    unruled = await gate.check(LIST, approver=desktop)
    denied = await gate.check(CREATE, approver=desktop)
    first = await gate.check(WRITE, approver=desktop)
    again = await gate.check(WRITE, approver=desktop)
    assert (unruled.allowed, unruled.approved_by) == (True, "client")
    assert "claude-ai 0.1.0" in unruled.reason
    assert (denied.allowed, denied.approved_by) == (False, "denied-by-rule")
    assert (first.approved_by, again.approved_by) == ("user-session", "user-session")
    assert [r.name for r in asked.requests] == ["mcp__fs__write_file"]  # asked once, for its session
    assert gate.session_allowed == set() and desktop.session_allowed == {"mcp__fs__write_file"}


async def test_no_session_answer_holds_for_a_calling_client_but_its_own() -> None:
    """What the host's own user allowed for the session (the console, the chat) or another client allowed is
    not a calling client's approval: it is asked itself."""
    gate = PermissionGate(rules=PermissionRules(ask=("mcp__fs__*",)), approver=Approver(Approval.session()))
    assert (await gate.check(WRITE)).approved_by == "user-session"
    other = CallingClient("cursor 1.2", Approver(Approval.session()))
    await gate.check(WRITE, approver=other)
    mine = Approver(Approval.deny("it answered deny", by="vscode 1.9"))
    refused = await gate.check(WRITE, approver=CallingClient("vscode 1.9", mine))
    assert len(mine.requests) == 1
    assert (refused.allowed, refused.approved_by) == (False, "denied-by-user")
    assert refused.reason == "refused by vscode 1.9 (it answered deny)"


async def test_a_calling_client_that_cannot_be_asked_is_refused_saying_which_rule_and_what_to_change() -> None:
    gate = PermissionGate(rules=PermissionRules(ask=("mcp__fs__*",)), allow_hint="run with --yes")
    by_rule = await gate.check(WRITE, approver=CallingClient("cursor 1.2"))
    asks_all = await gate.check(LIST, approver=CallingClient("cursor 1.2", ask_all="everything is asked about"))
    assert (by_rule.allowed, by_rule.approved_by) == (False, "no-approver")
    assert by_rule.reason == (
        "the rule 'mcp__fs__*' in permissions.ask asks about it, and cursor 1.2 cannot be asked (it does not offer "
        'elicitation); to allow it, add "mcp__fs__write_file" to permissions.allow'
    )
    assert asks_all.reason.startswith("everything is asked about, and cursor 1.2 cannot be asked")


def test_a_deny_covers_a_whole_server_only_when_it_names_all_of_it() -> None:
    """For requests about nothing in particular (a log level): ``mcp__fs``, ``mcp__fs__*``, ``mcp__*`` and ``*``
    keep every request from ``fs``; a deny of some of its tools, resources or prompts does not."""
    whole = ["mcp__fs", "mcp__fs__*", "mcp__*", "*", "mcp__f*"]
    part = ["mcp__fs__write_*", "mcp__fs__resource:*", "mcp__*__prompt:*", "mcp__fsx", "mcp__github__*"]
    assert [p for p in whole if not covers_server(p, "fs")] == []
    assert [p for p in part if covers_server(p, "fs")] == []
    gate = PermissionGate(rules=PermissionRules(deny=("mcp__fs__write_*", "mcp__git_*")))
    assert gate.denied_server("fs") is None
    refused = gate.denied_server("git_")
    assert refused is not None and refused.reason == "denied by the rule 'mcp__git_*'"
    broken = PermissionGate(problem="permissions: unknown key 'denny'")
    assert broken.denied_server("fs") is not None
