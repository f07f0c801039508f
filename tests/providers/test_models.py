"""Making models: ``provider:model``, environment variables, config settings, precedence, defaults, errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcpdeck.errors import ConfigError, ProviderError, UnsetVariableError
from mcpdeck.providers import (
    ModelRef,
    ProviderSettings,
    chat_model,
    default_model,
    parse_model,
    parse_provider_settings,
)
from mcpdeck.providers._anthropic_chat import AnthropicModel
from mcpdeck.providers._gemini_chat import GeminiModel
from mcpdeck.providers._models import ollama_url
from mcpdeck.providers._openai_chat import OpenAIChatModel
from mcpdeck.providers._openai_responses import OpenAIResponsesModel
from tests.llm.scripted import Fail, Reply, serve_scripted
from tests.llm.turns import take_turn


def test_provider_and_model_split_at_the_first_colon() -> None:
    assert parse_model("openai:gpt-4.1") == ModelRef("openai", "gpt-4.1")
    assert parse_model("ollama:llama3.2:1b") == ModelRef("ollama", "llama3.2:1b")
    assert parse_model(" Anthropic:Claude-X ") == ModelRef("anthropic", "Claude-X")
    assert str(ModelRef("ollama", "llama3.2:1b")) == "ollama:llama3.2:1b"
    for spec in ("gpt-4.1", ":gpt", "openai:", ""):
        with pytest.raises(ProviderError, match="provider:model"):
            parse_model(spec)


def test_each_built_in_provider_makes_its_model_with_its_defaults() -> None:
    keys = {"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "GEMINI_API_KEY": "g"}
    cases = {
        "openai:gpt-4.1": (OpenAIChatModel, "https://api.openai.com/v1"),
        "openai-responses:gpt-5": (OpenAIResponsesModel, "https://api.openai.com/v1"),
        "anthropic:claude-sonnet-4-5": (AnthropicModel, "https://api.anthropic.com"),
        "gemini:gemini-2.5-flash": (GeminiModel, "https://generativelanguage.googleapis.com"),
        "google:gemini-2.5-flash": (GeminiModel, "https://generativelanguage.googleapis.com"),
        "ollama:llama3.2:1b": (OpenAIChatModel, "http://localhost:11434/v1"),
    }
    for spec, (kind, url) in cases.items():
        model = chat_model(spec, environ=keys)
        assert type(model) is kind and model.base_url == url, spec
        assert model.name == spec and model.converter.provider == model.api
    assert chat_model(ModelRef("ollama", "qwen3"), environ={}).model == "qwen3"


def test_a_missing_key_is_an_error_naming_the_variable_when_the_model_is_made() -> None:
    for spec, variable in [
        ("openai:gpt-4.1", "OPENAI_API_KEY"),
        ("openai-responses:gpt-5", "OPENAI_API_KEY"),
        ("anthropic:claude-x", "ANTHROPIC_API_KEY"),
        ("gemini:gemini-x", "GEMINI_API_KEY or GOOGLE_API_KEY"),
    ]:
        with pytest.raises(ProviderError) as caught:
            chat_model(spec, environ={"OPENAI_API_KEY": ""} if "openai" in spec else {})
        assert f"set {variable}" in str(caught.value) and "apiKey" in str(caught.value), spec
        assert caught.value.provider == spec.split(":")[0]


def test_an_unknown_provider_lists_the_known_ones() -> None:
    settings = parse_provider_settings({"providers": {"lmstudio": {"baseUrl": "http://localhost:1234/v1"}}})
    with pytest.raises(ProviderError) as caught:
        chat_model("mistral:large", environ={}, settings=settings)
    message = str(caught.value)
    assert "unknown provider 'mistral'" in message
    for name in ("anthropic", "gemini", "google", "lmstudio", "ollama", "openai", "openai-responses"):
        assert name in message


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("0.0.0.0:11434", "http://0.0.0.0:11434/v1"),
        ("myhost", "http://myhost:11434/v1"),
        ("myhost:8080", "http://myhost:8080/v1"),
        ("http://box", "http://box:80/v1"),
        ("https://ollama.example.com", "https://ollama.example.com:443/v1"),
        ("http://box:9000/ollama/", "http://box:9000/ollama/v1"),
        ("[::1]:11434", "http://[::1]:11434/v1"),
    ],
)
def test_ollama_host_is_read_as_ollama_reads_it(host: str, url: str) -> None:
    assert ollama_url(host) == url
    assert chat_model("ollama:llama3.2", environ={"OLLAMA_HOST": host}).base_url == url


@pytest.mark.anyio
async def test_environment_variables_give_the_key_and_the_base_url() -> None:
    async with serve_scripted("openai", [Reply(text="o"), Reply(text="l")]) as openai_server:
        environ = {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": openai_server.base_url}
        async with chat_model("openai:gpt-env", environ=environ) as model:
            _, turn = await take_turn(model, [model.user_message("hi")])
        environ = {"OLLAMA_BASE_URL": openai_server.base_url, "OLLAMA_HOST": "ignored:1"}
        async with chat_model("ollama:llama3.2:1b", environ=environ) as model:
            _, local = await take_turn(model, [model.user_message("hi")])
    assert (turn.text, local.text) == ("o", "l")
    first, second = openai_server.requests
    assert (first.api_key, first.model) == ("sk-env", "gpt-env")
    assert (second.api_key, second.model) == ("ollama", "llama3.2:1b")
    async with serve_scripted("gemini", [Reply(text="g")]) as gemini_server:
        environ = {"GOOGLE_API_KEY": "google-key", "GOOGLE_GEMINI_BASE_URL": gemini_server.base_url}
        async with chat_model("google:gemini-x", environ=environ) as model:
            assert model.provider == "google"
            _, turn = await take_turn(model, [model.user_message("hi")])
    assert turn.text == "g" and gemini_server.requests[0].api_key == "google-key"
    both = {"GEMINI_API_KEY": "gemini-key", "GOOGLE_API_KEY": "google-key"}
    with pytest.raises(ProviderError, match="check GEMINI_API_KEY"):
        raise chat_model("gemini:x", environ=both).status_error(401, "bad key")


@pytest.mark.anyio
async def test_arguments_beat_config_settings_which_beat_environment_variables() -> None:
    async with serve_scripted("anthropic", [Reply(text="1"), Reply(text="2"), Reply(text="3")]) as server:
        environ = {"ANTHROPIC_API_KEY": "env-key", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "CFG_KEY": "cfg-key"}
        doc = {"providers": {"anthropic": {"apiKey": "${CFG_KEY}", "baseUrl": server.base_url}}}
        settings = parse_provider_settings(doc)
        made = [
            chat_model("anthropic:c", environ=environ, settings=settings, api_key="arg-key"),
            chat_model("anthropic:c", environ=environ, settings=settings),
            chat_model("anthropic:c", environ={**environ, "ANTHROPIC_BASE_URL": server.base_url}),
        ]
        for model in made:
            async with model:
                await take_turn(model, [model.user_message("hi")])
    assert [r.api_key for r in server.requests] == ["arg-key", "cfg-key", "env-key"]
    assert "check the api_key given" in made[0].key_hint
    assert "providers.anthropic in the config" in made[1].key_hint and made[2].key_hint == "check ANTHROPIC_API_KEY"
    assert chat_model("anthropic:c", environ=environ, settings=settings, base_url="http://x").base_url == "http://x"
    assert chat_model("anthropic:c", environ=environ).base_url == "http://127.0.0.1:9"
    assert chat_model("anthropic:c", environ={"ANTHROPIC_API_KEY": "k"}).base_url == "https://api.anthropic.com"


@pytest.mark.anyio
async def test_a_provider_of_the_config_s_own_with_references_headers_params_and_retries() -> None:
    doc = {
        "providers": {
            "lmstudio": {
                "type": "openai",
                "baseUrl": "${LMS_URL}",
                "apiKey": "${LMS_KEY:-none}",
                "headers": {"X-Team": "${TEAM}"},
                "params": {"temperature": 0.1},
                "maxRetries": 0,
            },
            "proxy": {"type": "anthropic", "baseUrl": "http://proxy.local"},
        }
    }
    settings = parse_provider_settings(doc, path="mcp.json")
    assert settings["lmstudio"].api_key == "${LMS_KEY:-none}" and not settings["lmstudio"].expanded
    async with serve_scripted("openai", [Reply(text="hi"), Fail(500)]) as server:
        environ = {"LMS_URL": server.base_url, "TEAM": "blue"}
        async with chat_model("lmstudio:qwen3-8b", environ=environ, settings=settings) as model:
            assert isinstance(model, OpenAIChatModel) and model.name == "lmstudio:qwen3-8b"
            _, turn = await take_turn(model, [model.user_message("hi")])
            with pytest.raises(ProviderError, match="HTTP 500"):
                await take_turn(model, [model.user_message("hi")])
    assert turn.text == "hi"
    request = server.requests[0]
    assert request.api_key == "none" and request.headers["x-team"] == "blue" and request.body["temperature"] == 0.1
    assert len(server.requests) == 2  # maxRetries 0: the 500 was not retried
    proxy = chat_model("proxy:claude-x", environ={}, settings=settings)
    assert isinstance(proxy, AnthropicModel) and proxy.base_url == "http://proxy.local"
    with pytest.raises(UnsetVariableError, match=r"LMS_URL .*providers\.lmstudio\.baseUrl"):
        chat_model("lmstudio:qwen3-8b", environ={}, settings=settings)


def test_settings_expanded_when_parsed_are_not_expanded_again() -> None:
    doc = {"providers": {"openai": {"apiKey": "${KEY}", "headers": {"X-Literal": "$${NOT_A_VAR}"}}}}
    settings = parse_provider_settings(doc, environ={"KEY": "sk-now"})
    assert settings["openai"] == ProviderSettings(
        api_key="sk-now", headers={"X-Literal": "${NOT_A_VAR}"}, expanded=True
    )
    model = chat_model("openai:gpt", environ={}, settings=settings)
    assert model.key_hint.startswith('check "apiKey"')
    doc["providers"]["anthropic"] = {"apiKey": "${UNSET_KEY}"}
    kept = parse_provider_settings(doc, environ={"KEY": "sk-now"})  # an unset key spoils only its provider
    assert kept["openai"].expanded and kept["anthropic"] == ProviderSettings(api_key="${UNSET_KEY}")
    with pytest.raises(UnsetVariableError, match=r"UNSET_KEY .*providers\.anthropic\.apiKey"):
        chat_model("anthropic:claude-x", environ={"KEY": "sk-now"}, settings=kept)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"apikey": "x"}, "unknown key 'apikey'; the keys are type, apiKey, baseUrl, headers, maxRetries, timeout"),
        ({"type": "cohere", "baseUrl": "http://x"}, "type 'cohere' is not an API mcpdeck speaks"),
        ({"apiKey": 42}, "apiKey must be a string"),
        ({"headers": {"X": 1}}, "headers must be an object of strings"),
        ({"maxRetries": -1}, "maxRetries must be a whole number"),
        ({"timeout": 0}, "timeout must be a number of seconds above 0"),
        ({"params": []}, "params must be an object"),
        ("http://x", "must be an object like"),
    ],
)
def test_malformed_settings_are_config_errors_that_say_what_is_allowed(entry: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_provider_settings({"providers": {"openai": entry}}, path="/etc/mcp.json")
    assert message in str(caught.value)
    assert str(caught.value).startswith("/etc/mcp.json: providers.openai: ")


def test_built_in_providers_keep_their_api_and_others_need_a_base_url() -> None:
    with pytest.raises(ConfigError, match="openai is built in and speaks openai; leave out type"):
        parse_provider_settings({"providers": {"openai": {"type": "anthropic"}}})
    with pytest.raises(ConfigError, match='needs "baseUrl"'):
        parse_provider_settings({"providers": {"lmstudio": {"apiKey": "x"}}})
    with pytest.raises(ConfigError, match='"providers" must be an object'):
        parse_provider_settings({"providers": ["openai"]})
    assert parse_provider_settings({"mcpServers": {}}) == {}
    ollama = parse_provider_settings({"providers": {"Ollama": {"type": "openai", "baseUrl": "http://gpu:11434/v1"}}})
    assert chat_model("ollama:llama3.2", environ={}, settings=ollama).base_url == "http://gpu:11434/v1"


def test_the_default_model_comes_from_the_environment_then_the_config() -> None:
    doc = {"model": "anthropic:claude-sonnet-4-5"}
    assert default_model({"MCPDECK_MODEL": "ollama:llama3.2"}, doc) == "ollama:llama3.2"
    assert default_model({}, doc) == "anthropic:claude-sonnet-4-5"
    assert default_model({"MCPDECK_MODEL": " "}, {}) is None
    with pytest.raises(ConfigError, match='"model" must be a string'):
        default_model({}, {"model": 3})


def test_options_reach_the_model() -> None:
    environ = {"ANTHROPIC_API_KEY": "k"}
    model = chat_model("anthropic:claude-x", environ=environ, max_tokens=1024, params={"temperature": 0})
    assert isinstance(model, AnthropicModel) and model.max_tokens == 1024 and model.params == {"temperature": 0}
    with pytest.raises(TypeError):
        chat_model("anthropic:claude-x", environ=environ, no_such_option=1)


def test_an_adapter_given_an_option_it_does_not_take_names_the_ones_it_does() -> None:
    with pytest.raises(TypeError, match=r"AnthropicModel: unknown options colour; it takes api_key, .*, max_tokens$"):
        AnthropicModel("m", api_key="k", colour="red")  # pyright: ignore[reportCallIssue]
    with pytest.raises(TypeError, match=r"GeminiModel: no api_key; it takes .*, retry_delay, api_version$"):
        GeminiModel("m")  # pyright: ignore[reportCallIssue]
    model = OpenAIResponsesModel("m", api_key="k", provider="mine", params={"store": False})
    assert (model.provider, model.base_url, model.params) == ("mine", "https://api.openai.com/v1", {"store": False})


def test_the_sdks_are_imported_only_when_a_model_of_theirs_is_made() -> None:
    code = (
        "import sys; from mcpdeck.providers import chat_model; "
        "assert not {'openai', 'anthropic', 'google.genai'} & set(sys.modules), 'imported early'; "
        "chat_model('anthropic:c', environ={'ANTHROPIC_API_KEY': 'k'}); "
        "assert 'anthropic' in sys.modules and not {'openai', 'google.genai'} & set(sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
