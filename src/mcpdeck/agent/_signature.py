"""A native tool's arguments from its function's signature: a pydantic model and its JSON Schema."""

from __future__ import annotations

import functools
import inspect
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.errors import PydanticUserError
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, PydanticJsonSchemaWarning

__all__ = ["Parameter", "arguments_model", "schema_of"]


class _NoFieldTitles(GenerateJsonSchema):
    """Schemas without the ``title`` pydantic derives from each field's name (noise to a model)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


_ANNOTATED: Any = typing.Annotated


def _has_description(annotation: Any) -> bool:
    """Whether ``Annotated[..., Field(description=...)]`` already describes the parameter."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(isinstance(meta, FieldInfo) and meta.description for meta in typing.get_args(annotation)[1:])


@dataclass(frozen=True)
class Parameter:
    name: str
    field: str  # the field's name in the arguments model (the parameter's name is its alias)
    positional_only: bool


def arguments_model(
    fn: Callable[..., Any], name: str, descriptions: Mapping[str, str]
) -> tuple[type[BaseModel], tuple[Parameter, ...]]:
    """A pydantic model of ``fn``'s parameters, and how to pass each one back to ``fn``."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        raise TypeError(f"cannot make a tool of {name!r}: its signature cannot be read ({error})") from error
    target: Any = fn
    if isinstance(fn, functools.partial):
        target = cast(functools.partial[Any], fn).func
    elif not inspect.isroutine(fn):
        target = type(fn).__call__  # a callable object
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as error:
        raise TypeError(
            f"cannot make a tool of {name!r}: its type hints cannot be resolved ({error}); "
            "define the types they name at module level"
        ) from error
    fields: dict[str, Any] = {}
    parameters: list[Parameter] = []
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            star = "*" if parameter.kind is inspect.Parameter.VAR_POSITIONAL else "**"
            raise TypeError(
                f"cannot make a tool of {name!r}: {star}{parameter.name} has no schema; "
                "declare each argument as a named parameter"
            )
        if parameter.name in ("self", "cls"):
            raise TypeError(
                f"cannot make a tool of {name!r}: it takes {parameter.name!r}; "
                "pass the bound method (instance.method), or a function"
            )
        annotation = hints.get(parameter.name, Any)
        description = None if _has_description(annotation) else descriptions.get(parameter.name)
        # The parameter's name is the field's alias: any name works then, even one that
        # BaseModel uses (``json``, ``copy``) or a private-looking ``_x``.
        info = Field(alias=parameter.name, description=description) if description else Field(alias=parameter.name)
        annotated = _ANNOTATED[annotation, info]
        default = parameter.default
        internal = f"p{index}"
        fields[internal] = (annotated, ... if default is inspect.Parameter.empty else default)
        parameters.append(Parameter(parameter.name, internal, parameter.kind is inspect.Parameter.POSITIONAL_ONLY))
    try:
        model = create_model(
            f"{name}_arguments",
            __config__=ConfigDict(extra="forbid", validate_by_alias=True, validate_by_name=False),
            **fields,
        )
    except (PydanticUserError, TypeError, NameError) as error:
        raise TypeError(f"cannot make a tool of {name!r}: {error}") from error
    return model, tuple(parameters)


def schema_of(model: type[BaseModel], name: str) -> dict[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PydanticJsonSchemaWarning)  # defaults that are not JSON are left out
            schema = model.model_json_schema(schema_generator=_NoFieldTitles)
    except PydanticUserError as error:
        raise TypeError(
            f"cannot make a tool of {name!r}: a parameter's type has no JSON Schema ({error}); "
            "use JSON-friendly types (str, int, list, dict, Literal, pydantic models ...)"
        ) from error
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema
