"""The permission gate: which tool calls may run, and who said so.

Rules live in the config file next to ``mcpServers``::

    "permissions": {"allow": ["mcp__github__list_*"], "ask": ["mcp__fs"], "deny": ["mcp__fs__delete_*"]}

A pattern is a shell-style glob on the namespaced name. ``mcp__github`` means everything of
server ``github``: its tools, resources and prompts (as does ``mcp__github__*``);
``mcp__github__create_issue`` one tool, and a name without the prefix (``search_tools``) a
native tool. In a ``mcp__<server>__<tool>`` pattern the server part must match the tool's
server as a whole and the tool part its namespaced or original name, so ``mcp__git__*`` never
reaches the tools of a server ``git_``. A pattern without a server part (``mcp__*write*``,
``*write*``) is matched against every name a tool is known by: its public name (which may be
cut and hashed) and ``mcp__<server>__<original name>``.

Reading a resource and getting a prompt on a model's behalf pass the gate too, as an
:class:`Access` named ``mcp__<server>__resource:<uri>`` or ``mcp__<server>__prompt:<name>``
(so ``mcp__fs__resource:file:///etc/*`` is a rule on some resources of ``fs``). They are
read-only by nature (``allow_read_only`` covers them) and are never native: with no rule
they are asked about, like a tool.

Precedence: a ``deny`` rule wins over everything; then ``allow`` (rules, this session's
answers, the server's ``autoApprove`` on the original or the namespaced name); then ``ask``;
then, when ``allow_read_only`` is set, tools that declare ``readOnlyHint`` are allowed; then
the default (``ask`` unless configured). Only ``ask`` reaches the approval callback.

A call made for a client that asks its own user before each call (a gateway's client: Claude
Desktop, Cursor, VS Code) passes that client as a :class:`CallingClient`: the client approves
what no rule covers, an ``ask`` rule is put to it, and its ``session`` answers are its own.

Native tools (Python functions registered in code, named without ``mcp__``) are the
program's own: no rule matching them means allowed, but a ``deny`` or ``ask`` rule still
applies to them.

Annotations such as ``readOnlyHint`` are hints from the server, not guarantees: a server can
call anything read-only. ``allow_read_only`` is off by default and covers every server: turn
it on only when you trust them all (a ``deny`` or ``ask`` rule still fences one off).
"""

from mcpdeck.permissions._gate import (
    GATE_APPROVER,
    Approval,
    ApprovalCallback,
    ApprovalRequest,
    ApprovedBy,
    CallingClient,
    ClientKey,
    Decision,
    GateApprover,
    PermissionGate,
    SharedApprovals,
)
from mcpdeck.permissions._rules import Access, PermissionRules, RuleKind, parse_permissions, pattern_matches

__all__ = [
    "GATE_APPROVER",
    "Access",
    "Approval",
    "ApprovalCallback",
    "ApprovalRequest",
    "ApprovedBy",
    "CallingClient",
    "ClientKey",
    "Decision",
    "GateApprover",
    "PermissionGate",
    "PermissionRules",
    "RuleKind",
    "SharedApprovals",
    "parse_permissions",
    "pattern_matches",
]
