"""A JSON Schema (draft 2020-12) checker for the subset the Patchbay protocol schemas use.

It checks and decodes at once: the decoded value keeps the fields a schema names (unknown ones
are dropped, as the protocol says), takes defaults for absent ones, and keeps every field of an
object that allows additional properties (JSON objects such as ``metadata``). Problems come out
in the order of the schema's fields, each with its dotted path, so the first one is the one the
protocol's vectors name. Tool parameter schemas are checked with the same code.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MISSING: Any = object()


@dataclass(frozen=True)
class Issue:
    """One problem: the path of the field (a tuple of keys and indices) and what is wrong."""

    path: tuple[str | int, ...]
    message: str
    missing: bool = False

    @property
    def dotted(self) -> str:
        return ".".join(str(p) for p in self.path)




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
    decoded = _check(schema, value, (), issues, value)
    return decoded, issues


def _check(schema: dict[str, Any], value: Any, path: tuple[str | int, ...], issues: list[Issue], root: Any) -> Any:
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
        if isinstance(items, dict):
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
    schema: dict[str, Any], value: dict[str, Any], path: tuple[str | int, ...], issues: list[Issue], root: Any
) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    extra = schema.get("additionalProperties")
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


def _check_union(
    schema: dict[str, Any], value: Any, path: tuple[str | int, ...], issues: list[Issue], root: Any
) -> Any:
    forms = schema.get("oneOf") or schema.get("anyOf") or []
    if value is not None:
        # `X or null` is a nullable X: a value that is not null is told what X wants.
        forms = [form for form in forms if form.get("type") != "null"] or forms
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
