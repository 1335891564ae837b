"""The JSON Schema of Python type hints, for tools whose parameters come from a function's
signature: plain types, containers, ``Literal``, unions, enums, dataclasses, ``TypedDict`` and
Pydantic models (2, or 1.10). Internal to :mod:`patchbay.tools`.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import inspect
import sys
import types
import typing
from functools import lru_cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints


def _pydantic_model(hint: Any) -> Any:
    """``hint`` when it is a Pydantic model class (Pydantic 2, Pydantic 1.10, or the ``pydantic.v1``
    of Pydantic 2), else None. A model class exists only once Pydantic is imported, so this never
    imports it."""
    if not inspect.isclass(hint):
        return None
    for module in ("pydantic", "pydantic.v1"):
        base = getattr(sys.modules.get(module), "BaseModel", None)
        if base is not None and issubclass(hint, base):
            return hint
    return None


def _model_schema(model: Any) -> dict[str, Any]:
    """A Pydantic model's JSON Schema, its definitions under ``$defs`` (``model_json_schema()`` of
    Pydantic 2, ``schema()`` of Pydantic 1)."""
    if hasattr(model, "model_json_schema"):
        schema = model.model_json_schema(ref_template="#/$defs/{model}")
    else:
        schema = model.schema(ref_template="#/$defs/{model}")
    # Pydantic 1 hands out the schema it caches: change a copy.
    schema = copy.deepcopy(schema)
    if "definitions" in schema:
        schema["$defs"] = {**schema.pop("definitions"), **schema.get("$defs", {})}
    return schema


def _model_value(model: Any, value: Any) -> Any:
    """An instance of a Pydantic model from JSON data (``model_validate`` or ``parse_obj``)."""
    if hasattr(model, "model_validate"):
        return model.model_validate(value)
    return model.parse_obj(value)


class _Defs:
    """The ``$defs`` of a schema being built: the classes that contain themselves and the
    definitions of Pydantic models, referred to as ``#/$defs/<name>`` from wherever they are used."""

    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {}
        self.building: list[Any] = []
        self.recursive: set[Any] = set()

    def add(self, name: str, schema: Any) -> None:
        if name in self.schemas and self.schemas[name] != schema:
            raise TypeError(f"two different types are named {name}; rename one, or pass parameters_schema")
        self.schemas[name] = schema

    def attach(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The schema as a whole document: its definitions added, a root that only refers to one of
        them replaced by it (the root of tool parameters must say ``"type": "object"``)."""
        if not self.schemas:
            return schema
        if set(schema) == {"$ref"} and schema["$ref"].startswith("#/$defs/"):
            schema = dict(self.schemas[schema["$ref"][len("#/$defs/") :]])
        return {**schema, "$defs": dict(self.schemas)}


def json_schema_for(hint: Any) -> dict[str, Any]:
    """The JSON Schema of a Python type hint (str, int, float, bool, list[...], tuple[...],
    dict[...], Literal, Optional, Enum, TypedDict, dataclasses, Pydantic models,
    ``Annotated[x, "description"]``). A class that contains itself is described once in
    ``$defs``."""
    defs = _Defs()
    return defs.attach(_schema_for(hint, defs))


def _schema_for(hint: Any, defs: _Defs) -> dict[str, Any]:
    description = None
    if get_origin(hint) is Annotated:
        base, *extra = get_args(hint)
        schema = _schema_for(base, defs)
        for item in extra:
            if isinstance(item, str):
                description = item
            elif getattr(item, "description", None):
                description = item.description
        return {**schema, "description": description} if description else schema
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is Any or hint is object:
        return {}
    if hint is type(None):
        return {"type": "null"}
    if hint is dict or get_origin(hint) is dict:
        args = get_args(hint)
        values = _schema_for(args[1], defs) if len(args) == 2 else {}
        return {"type": "object", **({"additionalProperties": values} if values else {})}
    if get_origin(hint) is tuple and get_args(hint) and not _homogeneous(hint):
        forms = [_schema_for(arg, defs) for arg in get_args(hint)]
        return {"type": "array", "prefixItems": forms, "minItems": len(forms), "maxItems": len(forms)}
    if hint in (list, tuple, set, frozenset) or get_origin(hint) in (list, tuple, set, frozenset):
        args = get_args(hint)
        return {"type": "array", **({"items": _schema_for(args[0], defs)} if args else {})}
    if get_origin(hint) is Literal:
        values = list(get_args(hint))
        kinds = {type(v) for v in values}
        typed = {str: "string", int: "integer", bool: "boolean", float: "number"}.get(next(iter(kinds))) if len(kinds) == 1 else None
        return {**({"type": typed} if typed else {}), "enum": values}
    if get_origin(hint) in (Union, types.UnionType):
        args = [a for a in get_args(hint) if a is not type(None)]
        nullable = len(args) < len(get_args(hint))
        inner = _schema_for(args[0], defs) if len(args) == 1 else {"anyOf": [_schema_for(a, defs) for a in args]}
        return {"anyOf": [inner, {"type": "null"}]} if nullable else inner
    if inspect.isclass(hint) and issubclass(hint, enum.Enum):
        return {"enum": [member.value for member in hint]}
    model = _pydantic_model(hint)
    if model is not None:
        schema = _model_schema(model)
        for name, definition in schema.pop("$defs", {}).items():
            defs.add(name, definition)
        schema.pop("title", None)
        return schema
    if inspect.isclass(hint) and (dataclasses.is_dataclass(hint) or typing.is_typeddict(hint)):
        ref = {"$ref": f"#/$defs/{hint.__name__}"}
        if hint in defs.building:
            defs.recursive.add(hint)
            return ref
        defs.building.append(hint)
        try:
            schema = _object_schema(hint, defs)
        finally:
            defs.building.pop()
        if hint not in defs.recursive:
            return schema
        defs.add(hint.__name__, schema)
        return ref
    raise TypeError(f"no JSON Schema for the type hint {hint!r}; pass parameters_schema instead")


def _homogeneous(hint: Any) -> bool:
    """``tuple[x, ...]``: any number of one type (not ``tuple[x, y]``, one type per position)."""
    args = get_args(hint)
    return len(args) == 2 and args[1] is Ellipsis


def _object_schema(cls: Any, defs: _Defs) -> dict[str, Any]:
    hints, required = _fields_of(cls)
    properties = {name: _schema_for(hint, defs) for name, hint in hints.items()}
    listed = sorted(required) if typing.is_typeddict(cls) else list(required)
    return {"type": "object", "properties": properties, "required": listed}


@lru_cache(maxsize=512)
def _fields_of(cls: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The fields of a dataclass (those its ``__init__`` takes) or TypedDict, each with its type
    hint, and the names of the required ones."""
    hints = get_type_hints(cls, include_extras=True)
    if dataclasses.is_dataclass(cls):
        fields = [f for f in dataclasses.fields(cls) if f.init]
        required = tuple(
            f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        )
        return {f.name: hints.get(f.name, Any) for f in fields}, required
    return hints, tuple(name for name in hints if name in getattr(cls, "__required_keys__", hints.keys()))
