"""A JSON Schema (draft 2020-12) checker for the subset the Patchbay protocol schemas use.

It checks and decodes at once: the decoded value keeps the fields a schema names (unknown ones
are dropped, as the protocol says), takes defaults for absent ones, and keeps every field of an
object that allows additional properties (JSON objects such as ``metadata``) or names no fields at
all. Problems come out in the order of the schema's fields, each with its dotted path, so the
first one is the one the protocol's vectors name. Tool parameter schemas are checked with the same
code; for them it also follows local ``$ref``s (``#/$defs/...``, ``#/definitions/...``), ``allOf``
and ``prefixItems``, as Pydantic and dataclass schemas use them.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

MISSING: Any = object()

MAX_REF_DEPTH = 64
"""How many ``$ref``s one check follows inside each other (a recursive schema, a value nested that
deep, or a schema whose references go round in a circle) before it gives up on the value."""

# Keywords that say nothing about the value: a form of `allOf` made of these alone checks nothing.
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
    | {"$defs", "definitions", "$schema", "$id"}
)


@dataclass(frozen=True)
class Issue:
    """One problem: the path of the field (a tuple of keys and indices) and what is wrong."""

    path: tuple[str | int, ...]
    message: str
    missing: bool = False

    @property
    def dotted(self) -> str:
        return ".".join(str(p) for p in self.path)


class _Root:
    """The schema a check started from, which local ``$ref``s point into, and how deep in them it is."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.depth = 0
        self._resolved: dict[str, Any] = {}

    def resolve(self, ref: Any) -> Any:
        """The part of the root schema ``ref`` (a JSON pointer such as ``#/$defs/Seat``) names, or None."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        if ref not in self._resolved:
            node: Any = self.schema
            body = ref[1:]
            for segment in body.split("/")[1:] if body else []:
                key = unquote(segment).replace("~1", "/").replace("~0", "~")
                if isinstance(node, dict) and key in node:
                    node = node[key]
                elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                    node = node[int(key)]
                else:
                    node = None
                    break
            self._resolved[ref] = node if isinstance(node, (dict, bool)) else None
        return self._resolved[ref]


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    # ECMAScript patterns: `$` matches only at the very end (Python's also before a final
    # newline) and `\d` means ASCII digits only.
    converted = pattern.replace("\\d", "[0-9]")
    if converted.endswith("$") and not converted.endswith("\\$"):
        converted = converted[:-1] + r"\Z"
    return re.compile(converted)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def _fits_type(value: Any, expected: str) -> bool:
    if expected == "integer":
        return _is_integer(value)
    return _type_of(value) == expected


def check(schema: dict[str, Any], value: Any) -> tuple[Any, list[Issue]]:
    """Checks ``value`` against ``schema``; returns the decoded value and the problems (none when it fits)."""
    issues: list[Issue] = []
    decoded = _check(schema, value, (), issues, _Root(schema))
    return decoded, issues


def _check(schema: Any, value: Any, path: tuple[str | int, ...], issues: list[Issue], root: _Root) -> Any:
    if schema is True:
        return value
    if schema is False:
        issues.append(Issue(path, "must be absent"))
        return value
    if "$ref" in schema:
        return _check_ref(schema, value, path, issues, root)
    if "allOf" in schema:
        return _check_all(schema, value, path, issues, root)
    if "oneOf" in schema or "anyOf" in schema:
        return _check_union(schema, value, path, issues, root)
    if schema.get("not") == {}:
        issues.append(Issue(path, "must be absent"))
        return value
    expected = schema.get("type")
    if isinstance(expected, list):
        if not any(_fits_type(value, t) for t in expected):
            issues.append(Issue(path, f"expected {' or '.join(expected)}, got {_type_of(value)}"))
            return value
    elif isinstance(expected, str) and not _fits_type(value, expected):
        issues.append(Issue(path, f"expected {expected}, got {_type_of(value)}"))
        return value
    if "const" in schema and value != schema["const"]:
        issues.append(Issue(path, f"must be {schema['const']!r}"))
        return value
    if "enum" in schema and value not in schema["enum"]:
        issues.append(Issue(path, "must be one of " + ", ".join(repr(v) for v in schema["enum"])))
        return value
    if isinstance(value, str):
        _check_string(schema, value, path, issues)
        return value
    if _type_of(value) == "number":
        _check_number(schema, value, path, issues)
        return int(value) if schema.get("type") == "integer" and isinstance(value, float) else value
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            issues.append(Issue(path, f"at most {schema['maxItems']} items"))
        if "minItems" in schema and len(value) < schema["minItems"]:
            issues.append(Issue(path, f"at least {schema['minItems']} items"))
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            # A tuple: a schema per position, then `items` (if any) for the rest.
            forms = [prefix[i] if i < len(prefix) else items for i in range(len(value))]
            return [
                _check(form, item, (*path, i), issues, root) if isinstance(form, (dict, bool)) else item
                for i, (form, item) in enumerate(zip(forms, value))
            ]
        if isinstance(items, (dict, bool)):
            return [_check(items, item, (*path, i), issues, root) for i, item in enumerate(value)]
        return list(value)
    if isinstance(value, dict):
        return _check_object(schema, value, path, issues, root)
    return value


def _check_string(schema: dict[str, Any], value: str, path: tuple[str | int, ...], issues: list[Issue]) -> None:
    if "minLength" in schema or "maxLength" in schema:
        # Code points, as JSON Schema and the protocol count them: Python's len().
        length = len(value)
        if "minLength" in schema and length < schema["minLength"]:
            issues.append(Issue(path, f"at least {schema['minLength']} characters"))
        if "maxLength" in schema and length > schema["maxLength"]:
            issues.append(Issue(path, f"at most {schema['maxLength']} characters, got {length}"))
    if "pattern" in schema and not _compile(schema["pattern"]).search(value):
        issues.append(Issue(path, f"must match {schema['pattern']}"))


def _check_number(schema: dict[str, Any], value: float, path: tuple[str | int, ...], issues: list[Issue]) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        issues.append(Issue(path, f"must be at least {schema['minimum']}"))
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        issues.append(Issue(path, f"must be more than {schema['exclusiveMinimum']}"))
    if "maximum" in schema and value > schema["maximum"]:
        issues.append(Issue(path, f"must be at most {schema['maximum']}"))
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        issues.append(Issue(path, f"must be less than {schema['exclusiveMaximum']}"))


def _check_object(
    schema: dict[str, Any], value: dict[str, Any], path: tuple[str | int, ...], issues: list[Issue], root: _Root
) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    extra = schema.get("additionalProperties")
    if extra is True or (extra is None and "properties" not in schema):
        # Any field is allowed (`true`, or a schema that names none: a `dict` parameter).
        extra = {}
    decoded: dict[str, Any] = {}
    for name, sub in properties.items():
        if name not in value:
            if "default" in sub:
                decoded[name] = copy.deepcopy(sub["default"])
            elif name in required:
                issues.append(Issue((*path, name), "required", missing=True))
            continue
        decoded[name] = _check(sub, value[name], (*path, name), issues, root)
    if extra is not None and extra is not False:
        # A JSON object (metadata, arguments): every field is kept as it is.
        for name, item in value.items():
            if name not in properties:
                decoded[name] = _check(extra, item, (*path, name), issues, root) if extra else item
    return decoded


def _check_ref(
    schema: dict[str, Any], value: Any, path: tuple[str | int, ...], issues: list[Issue], root: _Root
) -> Any:
    ref = schema["$ref"]
    target = root.resolve(ref)
    if target is None:
        issues.append(Issue(path, f"the schema's $ref {ref!r} names nothing in it"))
        return value
    if root.depth >= MAX_REF_DEPTH:
        issues.append(Issue(path, f"nested more than {MAX_REF_DEPTH} schema references deep"))
        return value
    # Keywords beside the $ref (a description, a default) apply together with the target's.
    siblings = {key: item for key, item in schema.items() if key != "$ref"}
    form = {**target, **siblings} if siblings and isinstance(target, dict) else target
    root.depth += 1
    try:
        return _check(form, value, path, issues, root)
    finally:
        root.depth -= 1


def _check_all(
    schema: dict[str, Any], value: Any, path: tuple[str | int, ...], issues: list[Issue], root: _Root
) -> Any:
    rest = {key: item for key, item in schema.items() if key != "allOf"}
    forms = list(schema["allOf"])
    if not rest.keys() <= _ANNOTATIONS:
        forms.insert(0, rest)
    decoded = [_check(form, value, path, issues, root) for form in forms]
    if not decoded:
        return value
    if isinstance(value, dict):
        # Each form keeps the fields it names; the value keeps what any of them keeps.
        merged: dict[str, Any] = {}
        for part in decoded:
            if isinstance(part, dict):
                merged.update(part)
        return merged
    return decoded[0]


def _check_union(
    schema: dict[str, Any], value: Any, path: tuple[str | int, ...], issues: list[Issue], root: _Root
) -> Any:
    forms = schema.get("oneOf") or schema.get("anyOf") or []
    if value is not None:
        # `X or null` is a nullable X: a value that is not null is told what X wants.
        forms = [form for form in forms if not (isinstance(form, dict) and form.get("type") == "null")] or forms
    one_of = "oneOf" in schema
    fitting: list[Any] = []
    failures: list[list[Issue]] = []
    for form in forms:
        form_issues: list[Issue] = []
        decoded = _check(form, value, path, form_issues, root)
        if form_issues:
            failures.append(form_issues)
        else:
            fitting.append(decoded)
    if fitting:
        if one_of and len(fitting) > 1 and _type_of(value) == "object":
            issues.append(Issue(path, f"fits {len(fitting)} forms; exactly one is allowed"))
            return value
        return fitting[0]
    # The form whose complaints are about fields the value has (a wrong value) beats one that
    # complains about fields it lacks (another form altogether); then fewer complaints win.
    best = min(failures, key=lambda found: sum(1000 if i.missing else 1 for i in found))
    issues.extend(best)
    return value
