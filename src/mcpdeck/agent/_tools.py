"""Native tools: Python functions offered to a model beside the MCP servers' tools.

::

    @tool
    def add(a: int, b: int = 1) -> int:
        \"\"\"Add two numbers.

        Args:
            a: The first number.
            b: The second number.
        \"\"\"
        return a + b

    result = await add.call({"a": 2})        # ToolResult, text "3"

The input schema comes from the type hints (through pydantic) and the parameter
descriptions from the docstring (Google ``Args:``, reST ``:param x:`` or numpy, read by
``docstring-parser``); the description is the docstring's text before its first section.
A call validates the arguments first: arguments that do not fit, and exceptions the
function raises, come back as results with ``is_error=True`` that say what was wrong, for
the model to fix. Sync functions run in a worker thread unless made with ``thread=False``.
"""

from __future__ import annotations

import functools
import inspect
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast, overload

import anyio.to_thread
from pydantic import BaseModel, ValidationError

from mcpdeck.agent._docstrings import parse_docstring
from mcpdeck.agent._signature import Parameter, arguments_model, schema_of
from mcpdeck.agent._tool_results import NO_OUTPUT, failure, problems, result_of
from mcpdeck.catalog import MAX_TOOL_NAME, PREFIX
from mcpdeck.results import ToolResult

__all__ = ["NO_OUTPUT", "NativeTool", "ToolError", "as_tool", "check_native_name", "parse_docstring", "tool"]

_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_TOOL_NAME}}}")


class ToolError(Exception):
    """Raise in a native tool to fail with exactly this message (no ``Error: <type>:`` prefix).

    Any other exception fails the call too, as ``Error: <type>: <message>``.
    """


def check_native_name(name: str) -> str:
    """``name`` if a native tool may have it, else a ValueError saying what to do."""
    if name.startswith(PREFIX):
        raise ValueError(
            f"native tools are never named {PREFIX}...: that prefix is for MCP servers' tools; rename {name!r}"
        )
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"invalid tool name {name!r}: use 1 to {MAX_TOOL_NAME} letters, digits, '_' or '-' (give name=...)"
        )
    return name


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


@dataclass(frozen=True, eq=False)
class NativeTool:
    """A Python function offered to a model as a tool; a ``ToolSpec``.

    Make one with ``@tool`` (or ``as_tool``). Calling the object calls the function as
    before; ``call`` is how a model's tool call runs it. Made directly, as
    ``NativeTool(name, description, input_schema, function)``, the schema is yours: the
    arguments are passed to the function as keyword arguments, unchecked.

    Attributes:
        name: The name the model calls it by.
        description: What it does, for the model.
        input_schema: JSON Schema of its arguments.
        function: The function.
        read_only: Whether it changes nothing (permission rules may let such tools run unasked).
        thread: Whether a sync function runs in a worker thread (async ones never do).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    function: Callable[..., Any]
    read_only: bool = False
    thread: bool = True
    _model: type[BaseModel] = field(default=BaseModel, repr=False)
    _parameters: tuple[Parameter, ...] = field(default=(), repr=False)
    _async: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        check_native_name(self.name)
        if self._model is BaseModel:  # made directly
            object.__setattr__(self, "_async", _is_async(self.function))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function directly (no validation, no ToolResult)."""
        return self.function(*args, **kwargs)

    async def call(self, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Run the tool on a model's arguments.

        Arguments that do not fit the schema, and exceptions from the function, come back as
        results with ``is_error=True`` (cancellation and other ``BaseException`` propagate).

        Args:
            arguments: The arguments, by parameter name.
        """
        started = time.perf_counter()
        if self._model is BaseModel:  # made directly, with a schema of its own
            return await self._run((), dict(arguments or {}), started)
        try:
            values = self._model.model_validate(dict(arguments or {}))
        except ValidationError as error:
            listed = "\n".join(f"- {problem}" for problem in problems(error))
            return failure(
                self.name, f"Invalid arguments for {self.name}:\n{listed}\nFix them and call again.", started
            )
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for parameter in self._parameters:
            value = getattr(values, parameter.field)
            if parameter.positional_only:
                args.append(value)
            else:
                kwargs[parameter.name] = value
        return await self._run(args, kwargs, started)

    async def _run(self, args: Sequence[Any], kwargs: dict[str, Any], started: float) -> ToolResult:
        try:
            if self._async:
                value = await self.function(*args, **kwargs)
            elif self.thread:
                value = await anyio.to_thread.run_sync(lambda: self.function(*args, **kwargs))
            else:
                value = self.function(*args, **kwargs)
            if inspect.isawaitable(value):
                value = await value
        except ToolError as error:
            return failure(self.name, str(error) or "Error", started)
        except Exception as error:
            message = str(error)
            text = f"Error: {type(error).__name__}: {message}" if message else f"Error: {type(error).__name__}"
            return failure(self.name, text, started)
        return result_of(value, self.name, time.perf_counter() - started)


def _docstring(fn: Callable[..., Any]) -> str | None:
    """The function's docstring (a partial's function's; a callable object's class's, else its ``__call__``'s)."""
    if isinstance(fn, functools.partial):
        return _docstring(cast(functools.partial[Any], fn).func)
    if inspect.isroutine(fn):
        return inspect.getdoc(fn)
    return inspect.getdoc(type(fn)) or inspect.getdoc(type(fn).__call__)


def _make(
    fn: Callable[..., Any], name: str | None, description: str | None, read_only: bool, thread: bool
) -> NativeTool:
    if isinstance(fn, NativeTool):
        raise TypeError(f"{fn.name!r} is a tool already; use it as it is")
    if not callable(fn):
        raise TypeError(f"a tool must be a function, not {type(fn).__name__}")
    tool_name = name if name is not None else getattr(fn, "__name__", None)
    if not isinstance(tool_name, str):
        raise TypeError(f"{fn!r} has no __name__; give the tool a name with tool(name=...)")
    check_native_name(tool_name)
    summary, descriptions = parse_docstring(_docstring(fn))
    model, parameters = arguments_model(fn, tool_name, descriptions)
    return NativeTool(
        name=tool_name,
        description=description if description is not None else summary,
        input_schema=schema_of(model, tool_name),
        function=fn,
        read_only=read_only,
        thread=thread,
        _model=model,
        _parameters=parameters,
        _async=_is_async(fn),
    )


@overload
def tool(fn: Callable[..., Any], /) -> NativeTool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, read_only: bool = False, thread: bool = True
) -> Callable[[Callable[..., Any]], NativeTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    thread: bool = True,
) -> NativeTool | Callable[[Callable[..., Any]], NativeTool]:
    """Make a function a native tool: ``@tool`` or ``@tool(name=..., read_only=True)``.

    Args:
        fn: The function (sync or async).
        name: The tool's name (default: the function's name); ``[A-Za-z0-9_-]{1,64}``, not ``mcp__...``.
        description: What it does (default: the docstring up to its first section).
        read_only: Whether it changes nothing.
        thread: Run a sync function in a worker thread so it does not block the event loop
            (default); ``False`` for cheap functions, which then run on the loop.

    Raises:
        ValueError: The name is not allowed.
        TypeError: The function takes ``*args``/``**kwargs``/``self``, or a parameter's type has
            no JSON Schema.
    """
    if fn is not None:
        return _make(fn, name, description, read_only, thread)

    def decorate(function: Callable[..., Any]) -> NativeTool:
        return _make(function, name, description, read_only, thread)

    return decorate


def as_tool(value: NativeTool | Callable[..., Any]) -> NativeTool:
    """A native tool as given, or a plain function made one with ``tool``'s defaults.

    Raises:
        TypeError: ``value`` is neither (or the function cannot be a tool; see ``tool``).
        ValueError: The function's name is not allowed as a tool name.
    """
    if isinstance(value, NativeTool):
        return value
    if not callable(value):
        raise TypeError(f"a tool must be a function or a NativeTool, not {type(value).__name__}")
    return _make(value, None, None, False, True)
