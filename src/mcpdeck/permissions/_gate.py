"""The gate: decides each call by the rules, asks the approver when they say ``ask``, saves ``always`` answers.

Also the vocabulary of a decision: what the approver is asked (``ApprovalRequest``), what it
answers (``Approval``), the client a call comes from when that client approves calls itself
(``CallingClient``), and what the gate decided and why (``Decision``; ``ApprovedBy``, from
``mcpdeck.events``, since tool-call events carry it too).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from fnmatch import fnmatchcase
from typing import Any, Final, Literal, Protocol, cast

import anyio
import anyio.to_thread
import mcp_types as types

from mcpdeck.catalog import PREFIX, CatalogTool
from mcpdeck.config import ConfigStore
from mcpdeck.errors import ConfigError
from mcpdeck.events import ApprovedBy
from mcpdeck.permissions._rules import (
    Access,
    PermissionRules,
    RuleKind,
    Subject,
    covers_server,
    pattern_matches,
)

__all__ = [
    "GATE_APPROVER",
    "Approval",
    "ApprovalCallback",
    "ApprovalRequest",
    "ApprovedBy",
    "CallingClient",
    "ClientKey",
    "Decision",
    "GateApprover",
    "PermissionGate",
    "SharedApprovals",
]

logger = logging.getLogger(__name__)


class GateApprover(Enum):
    """The type of ``GATE_APPROVER``, its one value."""

    GATE_APPROVER = "GATE_APPROVER"

    def __repr__(self) -> str:
        return "GATE_APPROVER"


GATE_APPROVER: Final = GateApprover.GATE_APPROVER
"""The default of every ``approver=`` parameter (``PermissionGate.check``, ``Host.call_tool`` and the
other calls made on someone's behalf): ask the gate's own approver. Pass None for "no one to ask",
or a callback or ``CallingClient`` to ask someone else about this one call."""


@dataclass(frozen=True)
class ApprovalRequest:
    """What the approval callback is asked about: one call of one tool."""

    name: str
    """The namespaced name (``mcp__fs__write_file``, ``mcp__fs__resource:<uri>``), or a native tool's name."""
    server: str | None
    """The tool's server; None for a native tool."""
    original_name: str
    """The name the server uses (``resource:<uri>`` / ``prompt:<name>`` for an :class:`Access`)."""
    arguments: Mapping[str, Any]
    annotations: types.ToolAnnotations | None
    """The server's hints (``readOnlyHint``, ``destructiveHint`` …): show them, do not trust them."""
    description: str
    kind: Literal["tool", "resource", "prompt"] = "tool"
    """What is asked about: calling a tool, reading a resource or getting a prompt."""


@dataclass(frozen=True)
class Approval:
    """The user's answer: ``once``, ``session`` (until the gate goes), ``always`` (saved), or ``deny``."""

    kind: Literal["once", "session", "always", "deny"]
    reason: str | None = None
    declined: bool = True
    """For ``deny``: the user said no (False: no decision came, e.g. no answer in time)."""
    by: str | None = None
    """Who answered, when it is not known to be the user (a gateway's client answering the gate's question:
    whether it asked its user is its own affair), so a refusal names it instead of "the user"."""

    @classmethod
    def once(cls) -> Approval:
        """Allow this call only."""
        return cls("once")

    @classmethod
    def session(cls) -> Approval:
        """Allow this tool for the rest of the session."""
        return cls("session")

    @classmethod
    def always(cls) -> Approval:
        """Allow this tool from now on: an ``allow`` rule is saved to the config file."""
        return cls("always")

    @classmethod
    def deny(cls, reason: str | None = None, *, by: str | None = None) -> Approval:
        """Refuse this call; ``reason`` is passed on to the model (``by``: who refused, if not the user)."""
        return cls("deny", reason, by=by)

    @classmethod
    def undecided(cls, reason: str) -> Approval:
        """Refuse this call because no decision came (no answer in time, an answer without one)."""
        return cls("deny", reason, declined=False)


ApprovalCallback = Callable[[ApprovalRequest], Awaitable[Approval]]


@dataclass(frozen=True)
class ClientKey:
    """Who a gateway client is, for the approvals it gives: the name of the token it used (``""``: none), the
    profile it opened (``""``: none) and its ``clientInfo`` (``name version``)."""

    token: str
    profile: str
    client: str


class SharedApprovals(Protocol):
    """Where one client's ``session`` answers are kept beyond this process (the store a fleet of ``serve``
    replicas shares), so another replica serving the same client honours them."""

    async def holds(self, tool: str) -> bool:
        """Whether this client allowed ``tool`` for its session (on any replica)."""
        ...

    async def give(self, tool: str) -> None:
        """Keep this client's ``session`` answer for ``tool`` (committed when this returns)."""
        ...


@dataclass(eq=False)
class CallingClient:
    """The client a call comes from, when that client asks its own user before each call it makes (the
    gateway's clients: Claude Desktop, Cursor, VS Code): it approves what no rule covers, and an ``ask``
    rule's question is put to it. Pass one as the ``approver`` of a check (``Host.call_tool`` ...).

    Its answers are its own: what it allows "for this session" holds for its later calls only, never for
    another client's (nor does an answer given elsewhere hold for its calls).

    Attributes:
        name: How it is named in reasons (``claude-ai 0.1.0``).
        ask: Puts the gate's question to it; None: it cannot be asked (``cannot_ask`` says why).
        cannot_ask: Why it cannot be asked, for the refusal.
        ask_all: None: it approves what no rule covers. Otherwise that is asked about too, and this says
            why and how to change it (for the refusal when it cannot be asked).
        session_allowed: What it allowed for the rest of its session.
        lock: Its questions go one at a time (another client's wait for their own).
        shared: Where its ``session`` answers are kept for the other replicas of a fleet, if anywhere; looked
            up only for a call that would otherwise be asked about (and then remembered in ``session_allowed``).
    """

    name: str
    ask: ApprovalCallback | None = None
    cannot_ask: str = "it does not offer elicitation"
    ask_all: str | None = None
    session_allowed: set[str] = field(default_factory=set[str])
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    shared: SharedApprovals | None = None

    async def allowed_elsewhere(self, tool: str) -> bool:
        """Whether it allowed ``tool`` for its session through another replica (then it is remembered here too).
        A store that cannot be asked counts as no: the client is asked."""
        if self.shared is None:
            return False
        try:
            held = await self.shared.holds(tool)
        except Exception as error:
            logger.warning("the session approvals of %s could not be read: %s", self.name, error)
            return False
        if held:
            self.session_allowed.add(tool)
        return held

    async def keep(self, tool: str) -> None:
        """Allow ``tool`` for the rest of its session, here and, with ``shared``, on every replica."""
        self.session_allowed.add(tool)
        if self.shared is not None:
            try:
                await self.shared.give(tool)
            except Exception as error:  # it holds here all the same
                logger.warning("the session approval of %s by %s was not shared: %s", tool, self.name, error)


@dataclass(frozen=True)
class Decision:
    """Whether a call may run, why, and who decided."""

    tool: str
    allowed: bool
    approved_by: ApprovedBy
    reason: str
    rule: str | None = None
    """The pattern that decided, when one did."""

    @property
    def message(self) -> str:
        """One line for the model or the user, e.g. ``Permission denied for mcp__fs__write_file: …``."""
        return f"{'Allowed' if self.allowed else 'Permission denied for'} {self.tool}: {self.reason}"


_RULED = 4096
"""Catalog tools whose rule decision the gate remembers at most (past that it starts over)."""


@dataclass(eq=False)
class PermissionGate:
    """Decides tool calls by rules, asking ``approver`` only when the rules say ``ask``.

    Attributes:
        rules: The config file's rules; replace them to reload.
        approver: Asks the user; without it (and without ``yes_to_all``) ``ask`` means denied.
        auto_approve: Each server's ``autoApprove`` patterns, or a function giving them.
        store: Where ``always`` answers are saved (none: they last for the session).
        default: The decision for a tool no rule matches.
        allow_read_only: Allow tools whose server says ``readOnlyHint`` (an untrusted hint).
        yes_to_all: Approve every ``ask`` without asking (``--yes``); deny rules still win.
        allow_hint: How this program lets every ``ask`` through (the CLI's chat: ``run with
            --yes``), said when there is no one to ask; None: only the rule to add is said.
        session_allowed: Names allowed by ``session`` answers, for as long as this gate lives.
        problem: Why the rules could not be read (a malformed ``permissions`` object); while
            set, every call is denied with this reason, so a broken rule file never opens the gate.
    """

    rules: PermissionRules = field(default_factory=PermissionRules)
    approver: ApprovalCallback | None = None
    auto_approve: Mapping[str, Sequence[str]] | Callable[[str], Sequence[str]] = field(
        default_factory=dict[str, Sequence[str]]
    )
    store: ConfigStore | None = None
    default: RuleKind = "ask"
    allow_read_only: bool = False
    yes_to_all: bool = False
    allow_hint: str | None = None
    problem: str | None = None
    session_allowed: set[str] = field(default_factory=set[str], init=False)
    _lock: anyio.Lock = field(default_factory=anyio.Lock, init=False, repr=False)
    _ruled: dict[tuple[str, str, str], Decision | None] = field(
        default_factory=dict[tuple[str, str, str], "Decision | None"], init=False, repr=False
    )
    """What the deny and allow rules say of each catalog tool asked about (None: neither), while ``_ruled_by``
    are the rules and problem."""
    _ruled_by: tuple[PermissionRules, str | None] | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_store(cls, store: ConfigStore, **options: Any) -> PermissionGate:
        """A gate with the rules and ``autoApprove`` lists of a config file; ``always`` saves there.

        Raises:
            ConfigError: The file or its ``permissions`` object is unusable.
        """
        document = store.document()
        if store.problem is not None:
            raise store.problem
        document.check("permissions")
        auto_approve = {name: list(server.auto_approve) for name, server in document.config.servers.items()}
        return cls(rules=document.permissions, auto_approve=auto_approve, store=store, **options)

    def _auto_patterns(self, server: str) -> Sequence[str]:
        if callable(self.auto_approve):
            return self.auto_approve(server)
        return self.auto_approve.get(server, ())

    def denied(self, subject: Subject) -> Decision | None:
        """The refusal a ``deny`` rule (or unreadable rules) gives ``subject``; None when none does.

        For filtering what a model is shown (e.g. the resources of a denied server): nothing is asked.
        """
        name = subject if isinstance(subject, str) else subject.name
        if self.problem is not None:
            return Decision(name, False, "denied-by-rule", f"the permission rules cannot be read: {self.problem}")
        for pattern in self.rules.deny:
            if pattern_matches(pattern, subject):
                return Decision(name, False, "denied-by-rule", f"denied by the rule {pattern!r}", pattern)
        return None

    def denied_server(self, server: str) -> Decision | None:
        """The refusal a ``deny`` rule covering all of ``server`` (or unreadable rules) gives any request to it;
        None when none does. For requests about nothing in particular (``logging/setLevel``)."""
        name = f"{PREFIX}{server}"
        if self.problem is not None:
            return Decision(name, False, "denied-by-rule", f"the permission rules cannot be read: {self.problem}")
        for pattern in self.rules.deny:
            if covers_server(pattern, server):
                return Decision(name, False, "denied-by-rule", f"denied by the rule {pattern!r}", pattern)
        return None

    def _by_rules(self, tool: Subject) -> Decision | None:
        """What the deny rules, then the allow rules, decide for ``tool``; None when neither does."""
        refused = self.denied(tool)
        if refused is not None:
            return refused
        for pattern in self.rules.allow:
            if pattern_matches(pattern, tool):
                name = tool if isinstance(tool, str) else tool.name
                return Decision(name, True, "rule", f"allowed by the rule {pattern!r}", pattern)
        return None

    def _by_rules_of_tool(self, tool: CatalogTool) -> Decision | None:
        """``_by_rules`` for a catalog tool, remembered until the rules change: a gateway or an agent asks it
        for every call, and it depends only on the rules and the tool's names."""
        if self._ruled_by is None or self._ruled_by[0] is not self.rules or self._ruled_by[1] != self.problem:
            self._ruled.clear()
            self._ruled_by = (self.rules, self.problem)
        key = (tool.name, tool.server, tool.original_name)
        try:
            return self._ruled[key]
        except KeyError:
            if len(self._ruled) >= _RULED:
                self._ruled.clear()
            decided = self._ruled[key] = self._by_rules(tool)
            return decided

    def decide_by_rules(self, tool: Subject, *, client: CallingClient | None = None) -> Decision | None:
        """The decision the rules make without asking anyone; None when the user must be asked.

        For a call from ``client``, its own ``session`` answers count instead of the gate's, and it
        approves what no rule covers (unless it is to be asked about everything).
        """
        name = tool if isinstance(tool, str) else tool.name
        decided = self._by_rules_of_tool(tool) if isinstance(tool, CatalogTool) else self._by_rules(tool)
        if decided is not None:
            return decided
        if name in (self.session_allowed if client is None else client.session_allowed):
            by = "" if client is None else f" by {client.name}"
            return Decision(name, True, "user-session", f"allowed for this session{by}", name)
        if not isinstance(tool, str):
            for pattern in self._auto_patterns(tool.server):
                if fnmatchcase(tool.original_name, pattern) or pattern_matches(pattern, tool):
                    reason = f"in autoApprove of server {tool.server!r}"
                    return Decision(name, True, "autoApprove", reason, pattern)
        if any(pattern_matches(pattern, tool) for pattern in self.rules.ask):
            return None
        if isinstance(tool, str):
            return Decision(name, True, "native", "a native tool of this program; no rule matches it")
        if self.allow_read_only:
            if isinstance(tool, Access):
                return Decision(name, True, "rule", f"a {tool.kind} is only read and read-only access is allowed")
            if tool.read_only:
                reason = "the server marks it readOnlyHint and read-only tools are allowed"
                return Decision(name, True, "rule", reason)
        if self.default == "ask":
            if client is not None and client.ask_all is None:
                return Decision(
                    name, True, "client", f"no rule covers it; approved by the calling client, {client.name}"
                )
            return None
        if self.default == "allow":
            return Decision(name, True, "rule", "no rule matches and the default is allow")
        return Decision(name, False, "denied-by-rule", f"no rule allows it and the default is deny; {self._how(name)}")

    def _how(self, name: str, *, hint: bool = False) -> str:
        where = f" in {self.store.path}" if self.store is not None else ""
        other = f"{self.allow_hint} or " if hint and self.allow_hint else ""
        return f'to allow it, {other}add "{name}" to permissions.allow{where}'

    async def check(
        self,
        tool: Subject,
        arguments: Mapping[str, Any] | None = None,
        *,
        approver: ApprovalCallback | CallingClient | GateApprover | None = GATE_APPROVER,
    ) -> Decision:
        """Decide one call of ``tool`` (a catalog tool, a resource or prompt access, or a native tool's name).

        ``approver`` asks about this call instead of the gate's own approver (None: there is
        no one to ask); the gateway passes the ``CallingClient`` the call came from.

        Prompts run one at a time (a calling client's, one at a time for that client); a call that
        waited for another prompt is decided again first, so a ``session`` or ``always`` answer
        covers it without a second prompt.

        Raises:
            Exception: Whatever the approver raises; nothing is allowed then.
        """
        client = approver if isinstance(approver, CallingClient) else None
        decided = self.decide_by_rules(tool, client=client)
        if decided is not None:
            return decided
        name = tool if isinstance(tool, str) else tool.name
        if client is not None and await client.allowed_elsewhere(name):
            return Decision(name, True, "user-session", f"allowed for this session by {client.name}", name)
        if self.yes_to_all:
            return Decision(name, True, "user-once", "approved for every call (yes to all)")
        if client is not None:
            ask = client.ask
        else:
            ask = self.approver if isinstance(approver, GateApprover) else cast(ApprovalCallback | None, approver)
        if ask is None:
            return Decision(name, False, "no-approver", self._nobody_to_ask(tool, client))
        async with self._lock if client is None else client.lock:
            decided = self.decide_by_rules(tool, client=client)
            if decided is not None:
                return decided
            answer = await ask(self._request(tool, arguments))
            who = "the user" if client is None else client.name
            if answer.kind == "deny":
                if answer.by is not None:
                    reason = f"refused by {answer.by}" + (f" ({answer.reason})" if answer.reason else "")
                elif not answer.declined:
                    reason = f"not approved: {answer.reason}"
                else:
                    reason = f"the user declined: {answer.reason}" if answer.reason else "the user declined"
                return Decision(name, False, "denied-by-user", reason)
            if answer.kind == "once":
                return Decision(name, True, "user-once", f"approved by {who} for this call")
            if answer.kind == "always":
                return await self._save(name)
            if client is None:
                self.session_allowed.add(name)
            else:
                await client.keep(name)
            return Decision(name, True, "user-session", f"approved by {who} for this session", name)

    def _nobody_to_ask(self, tool: Subject, client: CallingClient | None) -> str:
        """Why a call that needs approval is refused when no one can be asked, and what to change."""
        name = tool if isinstance(tool, str) else tool.name
        if client is None:
            return f"it needs approval and there is no one to ask; {self._how(name, hint=True)}"
        rule = next((pattern for pattern in self.rules.ask if pattern_matches(pattern, tool)), None)
        if rule is not None:
            why = f"the rule {rule!r} in permissions.ask asks about it"
        else:
            why = client.ask_all or "it needs approval"
        return f"{why}, and {client.name} cannot be asked ({client.cannot_ask}); {self._how(name)}"

    async def _save(self, name: str) -> Decision:
        if self.store is None:
            self.session_allowed.add(name)
            return Decision(name, True, "user-session", "approved for this session (no config file to save to)", name)

        def change(doc: dict[str, Any]) -> None:
            section: object = doc.setdefault("permissions", {})
            if not isinstance(section, dict):
                raise ConfigError("permissions: expected an object", path=str(store.path))
            allow: object = cast(dict[str, Any], section).setdefault("allow", [])
            if not isinstance(allow, list):
                raise ConfigError("permissions.allow: expected a list of patterns", path=str(store.path))
            if name not in allow:
                cast(list[Any], allow).append(name)

        store = self.store
        try:
            await anyio.to_thread.run_sync(store.edit, change)  # fsync: not on the event loop
        except (ConfigError, OSError) as error:
            self.session_allowed.add(name)
            reason = f"approved for this session; saving the rule failed: {error}"
            return Decision(name, True, "user-session", reason, name)
        self.rules = PermissionRules((*self.rules.allow, name), self.rules.ask, self.rules.deny)
        return Decision(name, True, "user-always", f"approved by the user; {name!r} saved to permissions.allow", name)

    @staticmethod
    def _request(tool: Subject, arguments: Mapping[str, Any] | None) -> ApprovalRequest:
        args = dict(arguments or {})
        if isinstance(tool, str):
            return ApprovalRequest(tool, None, tool, args, None, "")
        if isinstance(tool, Access):
            hints = types.ToolAnnotations(read_only_hint=True)
            return ApprovalRequest(tool.name, tool.server, tool.original_name, args, hints, tool.description, tool.kind)
        return ApprovalRequest(tool.name, tool.server, tool.original_name, args, tool.annotations, tool.description)
