"""Values typed into a server's env or headers, whether each is a secret, and the ``${VAR}`` reference to save
instead: one table for the Python masking and the console's ``secret-hint.js``."""

from __future__ import annotations

TYPED_VALUES: list[tuple[str, str, bool]] = [
    ("GITHUB_TOKEN", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", True),
    ("OPENAI_API_KEY", "sk-proj-abcdefghijklmnop", True),
    ("DB_PASSWORD", "hunter2hunter2", True),
    ("Authorization", "Bearer abc", True),
    ("Authorization", "Basic dXNlcjpwYXNz", True),
    ("X-Api-Key", "0123456789abcdef0123456789abcdef", True),
    ("SOME_SETTING", "Xk29fjQ0pLm3Nz8vTq4Wy7Rb", True),
    ("GITHUB_TOKEN", "${GITHUB_TOKEN}", False),
    ("Authorization", "Bearer ${GH_TOKEN}", False),
    ("API_KEY", "${KEY:-none}", False),
    ("API_KEY", "short", False),
    ("MODE", "production", False),
    ("PWD", "/home/me/project", False),
    ("SESSION_URL", "https://example.com/session", False),
    ("DEBUG", "1", False),
    ("LOG_LEVEL", "", False),
]
"""(name, value, looks like a secret typed out): the console's ``secret-hint.js`` is held to these too."""
REFERENCES: list[tuple[str, str, str, bool, tuple[str, str]]] = [
    ("github", "GITHUB_TOKEN", "ghp_x", False, ("GITHUB_TOKEN", "${GITHUB_TOKEN}")),
    ("github", "Authorization", "Bearer ghp_x", True, ("GITHUB_TOKEN", "Bearer ${GITHUB_TOKEN}")),
    ("my-api", "X-Api-Key", "k", True, ("MY_API_X_API_KEY", "${MY_API_X_API_KEY}")),
    ("fs", "api.key", "k", False, ("API_KEY", "${API_KEY}")),
    ("9lives", "authorization", "token abc", True, ("_9LIVES_TOKEN", "token ${_9LIVES_TOKEN}")),
]
"""(server, name, value, is a header, (variable, what to save)): the console's ``referenceFor`` too."""
