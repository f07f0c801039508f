"""Native tools: schemas from hints and docstrings, calls, validation, errors and return values."""

from __future__ import annotations

import base64
import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal

import anyio
import mcp_types as types
import pytest
from jsonschema.validators import Draft202012Validator
from pydantic import BaseModel, Field

from mcpdeck.agent._tools import NO_OUTPUT, NativeTool, ToolError, as_tool, parse_docstring, tool
from mcpdeck.providers import ToolSpec, get_provider
from mcpdeck.results import ToolResult

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = Field(description="The city")


class Colour(Enum):
    RED = "red"
    GREEN = "green"


@dataclass
class Point:
    x: int
    y: int


def returning(value: Any) -> Callable[[], Any]:
    """A function that returns ``value``."""

    def give() -> Any:
        return value

    return give


def text_of(result: ToolResult) -> str:
    return result.text()


# ----- schemas --------------------------------------------------------------------------------


def test_the_schema_comes_from_the_hints_and_the_google_docstring() -> None:
    @tool  # pyright: ignore[reportUnknownArgumentType]
    def book(
        title: str,
        copies: int = 1,
        tags: list[int] | None = None,
        mode: Literal["fast", "slow"] = "fast",
        colour: Colour = Colour.RED,
        address: Address | None = None,
        *,
        anything,  # pyright: ignore[reportUnknownParameterType, reportMissingParameterType]  # no annotation: Any
    ) -> str:
        """Book a thing.

        Books it for real, so be careful.

        Args:
            title: What to book.
            copies (int): How many copies,
                at least one.
            tags: Labels.

        Returns:
            A confirmation.
        """
        return title

    assert book.name == "book"
    assert book.description == "Book a thing.\n\nBooks it for real, so be careful."
    schema = book.input_schema
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and "title" not in schema
    assert schema["required"] == ["title", "anything"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["title"] == {"type": "string", "description": "What to book."}
    assert props["copies"] == {"type": "integer", "default": 1, "description": "How many copies, at least one."}
    assert props["tags"]["anyOf"] == [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]
    assert props["tags"]["description"] == "Labels."
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"], "default": "fast"}
    assert props["colour"]["default"] == "red"
    assert schema["$defs"]["Colour"]["enum"] == ["red", "green"]
    assert schema["$defs"]["Address"]["properties"]["city"]["description"] == "The city"
    assert props["anything"] == {}
    assert all("title" not in prop for prop in props.values())
    assert isinstance(book, ToolSpec)


def test_every_provider_converts_a_native_tool_with_nested_models() -> None:
    @tool
    def ship(address: Address, points: list[Point]) -> None:
        """Ship to an address."""

    for provider in ("openai", "openai-responses", "anthropic", "gemini"):
        [definition] = get_provider(provider).tools([], [ship])
        assert "$defs" not in str(definition), provider


def test_rest_docstrings_and_explicit_descriptions() -> None:
    @tool(name="find-it", description="Find something.", read_only=True)
    def find(query: str, limit: Annotated[int, Field(description="explicit", ge=1)] = 5) -> str:
        """Search.

        :param query: What to look for.
        :param int limit: Ignored: the annotation says it.
        :returns: the hits
        """
        return query

    assert (find.name, find.description, find.read_only) == ("find-it", "Find something.", True)
    assert find.input_schema["properties"]["query"]["description"] == "What to look for."
    assert find.input_schema["properties"]["limit"] == {
        "type": "integer",
        "default": 5,
        "minimum": 1,
        "description": "explicit",
    }


def test_parse_docstring_reads_google_rest_and_plain_text() -> None:
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("Just one line.") == ("Just one line.", {})
    doc = """Summary line
    continued.

    - a list item
    - another

    Args:
        path: The path.
        *names: Names.
        flag (bool, optional): A flag
            that wraps. With a colon: inside.

    Raises:
        ValueError: never.
    """
    summary, params = parse_docstring(doc)
    assert summary == "Summary line continued.\n\n- a list item\n- another"
    assert params == {"path": "The path.", "names": "Names.", "flag": "A flag that wraps. With a colon: inside."}
    assert parse_docstring("Do it.\n\n:param x: the x\n    more\n:type x: int\n") == ("Do it.", {"x": "the x more"})
    assert parse_docstring("Numpy style.\n\nParameters\n----------\nx : int\n") == ("Numpy style.", {})


def test_a_function_without_docstring_or_parameters() -> None:
    def ping() -> str:
        return "pong"

    made = as_tool(ping)
    assert made.description == ""
    assert made.input_schema == {"type": "object", "properties": {}, "additionalProperties": False}
    assert as_tool(made) is made


def test_names_must_be_safe_and_never_mcp_prefixed() -> None:
    def f() -> None: ...

    with pytest.raises(ValueError, match=r"native tools are never named mcp__"):
        tool(name="mcp__x__f")(f)
    for bad in ("has space", "a" * 65, "", "dots.not.allowed", "ünï"):
        with pytest.raises(ValueError, match="invalid tool name"):
            tool(name=bad)(f)
    assert tool(name="a-b_C9")(f).name == "a-b_C9"
    with pytest.raises(ValueError, match="give name="):
        as_tool(lambda: None)


def test_parameters_that_cannot_be_arguments_are_refused() -> None:
    def star(*args: int) -> None: ...

    def stars(**kwargs: int) -> None: ...

    def method(self, x: int) -> None: ...  # pyright: ignore[reportUnknownParameterType, reportMissingParameterType]

    def opaque(lock: threading.Lock) -> None: ...

    with pytest.raises(TypeError, match=r"\*args has no schema"):
        as_tool(star)
    with pytest.raises(TypeError, match=r"\*\*kwargs has no schema"):
        as_tool(stars)
    with pytest.raises(TypeError, match="pass the bound method"):
        as_tool(method)  # pyright: ignore[reportUnknownArgumentType]
    with pytest.raises(TypeError, match="cannot make a tool of 'opaque'"):
        as_tool(opaque)
    with pytest.raises(TypeError, match="must be a function or a NativeTool"):
        as_tool("not callable")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def test_bound_methods_and_awkward_parameter_names_work() -> None:
    class Counter:
        def __init__(self) -> None:
            self.total = 0

        def add(self, json: int, _private: int = 0, copy: bool = False) -> int:
            """Add to the total."""
            self.total += json + _private
            return self.total

    counter = Counter()
    made = as_tool(counter.add)
    assert set(made.input_schema["properties"]) == {"json", "_private", "copy"}
    result = anyio.run(made.call, {"json": 2, "_private": 3})
    assert (text_of(result), counter.total) == ("5", 5)
    assert made(1) == 6  # still callable as the function


# ----- calls ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sync_functions_run_in_a_worker_thread_unless_told_not_to() -> None:
    loop_thread = threading.get_ident()

    def where() -> bool:
        return threading.get_ident() == loop_thread

    threaded, inline = tool(where), tool(thread=False)(where)
    assert (text_of(await threaded.call({})), text_of(await inline.call({}))) == ("false", "true")


@pytest.mark.anyio
async def test_async_functions_are_awaited_and_the_duration_measured() -> None:
    ran: list[float] = []

    @tool
    async def slow(seconds: float) -> str:
        began = time.perf_counter()
        await anyio.sleep(seconds)
        ran.append(time.perf_counter() - began)
        return "done"

    result = await slow.call({"seconds": 0.01})
    assert (result.name, result.server, result.tool, result.is_error) == ("slow", "", "slow", False)
    assert text_of(result) == "done"
    (inside,) = ran
    assert result.duration >= inside  # measured around the whole await, not the coroutine's creation


@pytest.mark.anyio
async def test_arguments_are_validated_and_coerced_and_problems_come_back_as_an_error_result() -> None:
    seen: list[Any] = []

    @tool
    def order(count: int, address: Address, mode: Literal["a", "b"] = "a") -> None:
        seen.append((count, address, mode))

    ok = await order.call({"count": "3", "address": {"street": "Main", "city": "X"}})
    assert not ok.is_error and text_of(ok) == NO_OUTPUT
    assert seen == [(3, Address(street="Main", city="X"), "a")]
    bad = await order.call({"count": "many", "address": {"street": "Main"}, "mode": "c", "extra": 1})
    assert bad.is_error and seen == [seen[0]]
    text = text_of(bad)
    assert text.startswith("Invalid arguments for order:")
    for problem in (
        "- count: Input should be a valid integer",
        "- address.city: Field required",
        "- mode: Input should be 'a' or 'b'",
        "- extra: Extra inputs are not permitted",
    ):
        assert problem in text
    assert text.endswith("Fix them and call again.")
    missing = await order.call(None)
    assert missing.is_error and "count: Field required" in text_of(missing)


@pytest.mark.anyio
async def test_exceptions_become_error_results_but_cancellation_propagates() -> None:
    @tool
    def broken(kind: str) -> str:
        if kind == "value":
            raise ValueError("bad value")
        if kind == "empty":
            raise RuntimeError
        raise ToolError("the exact message")

    assert [(r.is_error, text_of(r)) for r in [await broken.call({"kind": k}) for k in ("value", "empty", "tool")]] == [
        (True, "Error: ValueError: bad value"),
        (True, "Error: RuntimeError"),
        (True, "the exact message"),
    ]

    @tool
    async def forever() -> None:
        await anyio.sleep_forever()

    with anyio.move_on_after(0.05) as scope:
        await forever.call({})
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_return_values_become_content_and_structured_content() -> None:
    class Weather(BaseModel):
        city: str
        degrees: float

    image = types.ImageContent(data=PNG, mime_type="image/png")
    passthrough = ToolResult(
        name="x", server="", tool="x", content=[types.TextContent(text="as is")], structured_content=None, is_error=True
    )
    cases: list[tuple[Any, str, dict[str, Any] | None]] = [
        ("plain text", "plain text", None),
        (None, NO_OUTPUT, None),
        (42, "42", None),
        (True, "true", None),
        ([1, "two"], '[1, "two"]', None),
        ({"a": 1, "é": [Point(1, 2)]}, '{"a": 1, "é": [{"x": 1, "y": 2}]}', {"a": 1, "é": [{"x": 1, "y": 2}]}),
        (Weather(city="Oslo", degrees=-3.5), '{"city": "Oslo", "degrees": -3.5}', {"city": "Oslo", "degrees": -3.5}),
        (Point(1, 2), '{"x": 1, "y": 2}', {"x": 1, "y": 2}),
        (b"raw", "raw", None),
        (object, str(object), None),
    ]
    for value, text, structured in cases:
        result = await tool(name="give")(returning(value)).call({})
        assert (text_of(result), result.structured_content, result.is_error) == (text, structured, False), value

    blocks = await tool(name="blocks")(lambda: ["caption", image]).call({})
    assert [type(b) for b in blocks.content] == [types.TextContent, types.ImageContent]
    assert blocks.images() == [("image/png", base64.b64decode(PNG))]
    one = await tool(name="one")(lambda: image).call({})
    assert one.content == [image]
    raw = types.CallToolResult(content=[types.TextContent(text="mcp")], structured_content={"k": 1}, is_error=True)
    converted = await tool(name="mcp_result")(lambda: raw).call({})
    assert (text_of(converted), converted.structured_content, converted.is_error) == ("mcp", {"k": 1}, True)
    assert await tool(name="same")(lambda: passthrough).call({}) is passthrough
    strings = await tool(name="strings")(lambda: ["a", "b"]).call({})
    assert text_of(strings) == '["a", "b"]'  # a list of plain strings is data, not content


@pytest.mark.anyio
async def test_positional_only_parameters_and_callable_objects() -> None:
    def power(base: int, /, exponent: int = 2) -> int:
        return base**exponent

    class Greeter:
        async def __call__(self, name: str) -> str:
            """Greet someone."""
            return f"hello {name}"

    assert text_of(await as_tool(power).call({"base": 3})) == "9"
    square = tool(name="square")(functools.partial(power, exponent=2))
    assert square.description == "" and list(square.input_schema["properties"]) == ["base", "exponent"]
    assert text_of(await square.call({"base": 4})) == "16"
    greeter = tool(name="greet")(Greeter())
    assert greeter.description == "Greet someone."
    assert text_of(await greeter.call({"name": "Ann"})) == "hello Ann"


def test_native_tools_are_frozen_and_compared_by_identity() -> None:
    def f() -> None: ...

    first, second = as_tool(f), as_tool(f)
    assert first != second and first == first
    with pytest.raises(AttributeError):
        first.name = "other"  # type: ignore[misc]  # pyright: ignore[reportAttributeAccessIssue]
    assert isinstance(first, NativeTool) and "function" in repr(first)


@pytest.mark.anyio
async def test_a_tool_made_directly_keeps_its_schema_and_passes_arguments_through() -> None:
    async def lookup(**arguments: Any) -> dict[str, Any]:
        return arguments

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    made = NativeTool("lookup", "Look up.", schema, lookup, read_only=True)
    assert made.input_schema is schema
    result = await made.call({"q": "x", "other": 1})
    assert result.structured_content == {"q": "x", "other": 1}
    with pytest.raises(ValueError, match="never named mcp__"):
        NativeTool("mcp__a__b", "", schema, lookup)
