#!/usr/bin/env python3
"""The client the official MCP conformance suite drives, built on mcpdeck's public ``Host``.

Run by the suite (``conformance client --command "python tests/conformance/client.py"``) as::

    python tests/conformance/client.py <server-url>

with the scenario's name in ``$MCP_CONFORMANCE_SCENARIO`` and its data (JSON: credentials,
keys) in ``$MCP_CONFORMANCE_CONTEXT``. Each scenario connects one server named ``server``
over streamable HTTP and does what the scenario's test server waits for; the suite judges
the traffic. Exit 0 when the client did its part, 1 (with the reason on stderr) when not.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, cast

if importlib.util.find_spec("mcpdeck") is None:  # run from a checkout where mcpdeck is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import anyio
import httpx2
from mcp.shared.auth import AuthorizationCodeResult

from mcpdeck import Host, MCPDeckError, RetryPolicy, ServerState
from mcpdeck.auth import TokenStore, parse_callback
from mcpdeck.callbacks import ElicitationHandler, ElicitationRequest, ElicitationResponse
from mcpdeck.errors import ServerError

SERVER = "server"
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client id (a Client ID Metadata Document URL) the ``auth/basic-cimd`` scenario expects."""


class ScenarioFailed(Exception):
    """The client could not do its part of the scenario."""


# ----- what the app plugs into Host ------------------------------------------------------


async def authorize(server: str, url: str) -> AuthorizationCodeResult:
    """Authorize like a headless browser: GET the authorization URL and read where it redirects.

    The conformance authorization servers approve at once and redirect to the host's
    ``redirect_uri`` with ``code`` and ``state``. The redirect is not followed: its
    ``Location`` is the answer.
    """
    async with httpx2.AsyncClient(follow_redirects=False) as http:
        response = await http.get(url)
    location = response.headers.get("location")
    if not response.is_redirect or not location:
        raise ServerError(server, f"the authorization endpoint answered {response.status_code}, not a redirect")
    return parse_callback(server, location)


async def accept_with_defaults(request: ElicitationRequest) -> ElicitationResponse:
    """Accept every form without answering a field: the host fills in the schema's defaults."""
    return ElicitationResponse(action="accept", content={})


# ----- scenarios -------------------------------------------------------------------------


async def run(
    url: str,
    tool: str | None = None,
    arguments: Mapping[str, Any] | None = None,
    *,
    oauth: Mapping[str, Any] | None = None,
    elicitation: ElicitationHandler | None = None,
) -> str:
    """Connect the server (with its ``oauth`` config), call ``tool``, return the result's text."""
    server: dict[str, Any] = {"url": url, "type": "http"}
    if oauth is not None:
        server["oauth"] = dict(oauth)
    with tempfile.TemporaryDirectory(prefix="mcpdeck-conformance-") as tokens:  # no token outlives the run
        host = Host(
            {SERVER: server},
            retry=RetryPolicy(attempts=0),
            elicitation=elicitation,
            oauth_interaction=authorize,
            auth_store=TokenStore(tokens),
        )
        async with host:
            status = host.servers[SERVER]
            if status.state is not ServerState.CONNECTED:
                raise ScenarioFailed(f"not connected ({status.state.value}): {status.error}")
            if tool is None:
                return ""
            names = {entry.original_name: entry.name for entry in host.tools}
            if tool not in names:
                raise ScenarioFailed(f"the server lists no tool {tool!r} (it lists {sorted(names)})")
            result = await host.call_tool(names[tool], arguments, timeout=20)
    print(f"{tool}: {result.text()}", file=sys.stderr)
    if result.is_error:
        raise ScenarioFailed(f"{tool} failed: {result.text()}")
    return result.text()


async def initialize(url: str, context: dict[str, str]) -> None:
    """Initialize (client info, a protocol version the server knows), then list tools."""
    await run(url)


async def tools_call(url: str, context: dict[str, str]) -> None:
    await run(url, "add_numbers", {"a": 5, "b": 3})


async def elicitation_defaults(url: str, context: dict[str, str]) -> None:
    """SEP-1034: the tool elicits a form whose fields all have defaults; we accept it empty."""
    text = await run(url, "test_client_elicitation_defaults", elicitation=accept_with_defaults)
    if not text.startswith("Elicitation completed"):
        raise ScenarioFailed(text)


async def sse_retry(url: str, context: dict[str, str]) -> None:
    """SEP-1699: the call's SSE stream closes early; the answer comes on the resumed GET stream."""
    await run(url, "test_reconnection")


async def oauth_code_flow(url: str, context: dict[str, str]) -> None:
    """OAuth authorization code + PKCE: discovery, registration (DCR), scopes, step-up, then a call."""
    await run(url, "test-tool", oauth={})


async def oauth_cimd(url: str, context: dict[str, str]) -> None:
    """The authorization server supports Client ID Metadata Documents: our client id is a URL."""
    await run(url, "test-tool", oauth={"clientMetadataUrl": CIMD_URL})


async def oauth_pre_registered(url: str, context: dict[str, str]) -> None:
    """No dynamic registration: the client id and secret the operator configured."""
    await run(url, "test-tool", oauth={"clientId": context["client_id"], "clientSecret": context["client_secret"]})


async def client_credentials_basic(url: str, context: dict[str, str]) -> None:
    """SEP-1046: machine to machine, client_credentials grant with client_secret_basic."""
    oauth = {
        "grantType": "client_credentials",
        "clientId": context["client_id"],
        "clientSecret": context["client_secret"],
        "tokenEndpointAuthMethod": "client_secret_basic",
    }
    await run(url, "test-tool", oauth=oauth)


async def client_credentials_jwt(url: str, context: dict[str, str]) -> None:
    """SEP-1046: client_credentials grant authenticated with a private_key_jwt assertion."""
    oauth = {
        "grantType": "client_credentials",
        "clientId": context["client_id"],
        "privateKey": context["private_key_pem"],
        "signingAlgorithm": context["signing_algorithm"],
    }
    await run(url, "test-tool", oauth=oauth)


async def cross_app_access(url: str, context: dict[str, str]) -> None:
    """SEP-990: trade the IdP's ID token for an ID-JAG (RFC 8693), then present it (RFC 7523 jwt-bearer)."""
    oauth = {
        "grantType": "identity_assertion",
        "clientId": context["client_id"],
        "clientSecret": context["client_secret"],
        "identityProvider": {
            "issuer": context["idp_issuer"],
            "tokenEndpoint": context["idp_token_endpoint"],
            "clientId": context["idp_client_id"],
            "idToken": context["idp_id_token"],
        },
    }
    await run(url, "test-tool", oauth=oauth)


Scenario = Callable[[str, dict[str, str]], Awaitable[None]]

SCENARIOS: dict[str, Scenario] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    **dict.fromkeys(
        [
            "auth/metadata-default",
            "auth/metadata-var1",
            "auth/metadata-var2",
            "auth/metadata-var3",
            "auth/scope-from-www-authenticate",
            "auth/scope-from-scopes-supported",
            "auth/scope-omitted-when-undefined",
            "auth/scope-step-up",
            "auth/scope-retry-limit",  # the suite expects this one to end in an error
            "auth/token-endpoint-auth-basic",
            "auth/token-endpoint-auth-post",
            "auth/token-endpoint-auth-none",
            "auth/2025-03-26-oauth-metadata-backcompat",
            "auth/2025-03-26-oauth-endpoint-fallback",
            "auth/resource-mismatch",  # and this one: the client must refuse to authorize
            "auth/offline-access-scope",
            "auth/offline-access-not-supported",
        ],
        oauth_code_flow,
    ),
    "auth/basic-cimd": oauth_cimd,
    "auth/pre-registration": oauth_pre_registered,
    "auth/client-credentials-basic": client_credentials_basic,
    "auth/client-credentials-jwt": client_credentials_jwt,
    "auth/cross-app-access-complete-flow": cross_app_access,
}


def main(argv: list[str]) -> int:
    code = _run(argv)
    # When the whole suite runs at once (tests/conformance/test_conformance.py), it keeps each scenario's
    # checks but not the client's exit status: the client leaves it in $MCPDECK_CONFORMANCE_EXITS.
    folder = os.environ.get("MCPDECK_CONFORMANCE_EXITS")
    if folder:
        name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "").replace("/", "__")
        Path(folder, f"{name}.exit").write_text(str(code))
    return code


def _run(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} <server-url>  (scenario in $MCP_CONFORMANCE_SCENARIO)", file=sys.stderr)
        return 2
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    scenario = SCENARIOS.get(name)
    if scenario is None:
        print(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    context = cast("dict[str, str]", json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}"))
    try:
        anyio.run(scenario, argv[1], context)
    except (ScenarioFailed, MCPDeckError) as failure:
        print(f"{name}: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
