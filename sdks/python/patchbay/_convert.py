"""Checked JSON arguments turned into the types a tool's function names (enum members,
dataclasses, Pydantic models, and so on inside containers), and the problems the model is told
when they do not fit. Internal to :mod:`patchbay.tools`.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from ._schema import _fields_of, _homogeneous, _model_value, _pydantic_model
from ._validate import Issue, _type_of

MAX_PROBLEMS = 20
"""At most this many problems (one line each) tell the model why its arguments do not fit."""
MAX_PROBLEM_TEXT = 2_000
"""At most this many characters of them, as ``MAX_ERROR_TEXT`` of ``@patchbay/tools``; a last line
says how many problems were left out."""
_MAX_PROBLEM_LINE = 300


_PLAIN = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _to_type(hint: Any, value: Any, path: tuple[str | int, ...], issues: list[Issue], exact: bool = False) -> Any:
    """``value`` (JSON, checked against the hint's schema) as the type ``hint`` names: Enum members
    by value, dataclasses built field by field, Pydantic models validated, and so on inside lists,
    tuples, sets, dicts and unions; a TypedDict stays a dict. A value that is that type already is
    kept, so converting twice changes nothing. Problems go to ``issues`` with their path.
    ``exact`` (inside a union, to find the form that fits) also refuses fields a class lacks."""
    origin = get_origin(hint)
    if origin is Annotated:
        return _to_type(get_args(hint)[0], value, path, issues, exact)
    if hint is Any or hint is object:
        return value
    if hint is type(None) or hint is None:
        if value is not None:
            issues.append(Issue(path, f"expected null, got {_type_of(value)}"))
        return value
    if hint in _PLAIN:
        return _to_plain(hint, value, path, issues)
    if inspect.isclass(hint) and issubclass(hint, enum.Enum):
        if isinstance(value, hint):
            return value
        try:
            return hint(value)
        except (ValueError, TypeError):
            issues.append(Issue(path, "must be one of " + ", ".join(repr(member.value) for member in hint)))
            return value
    if origin is Literal:
        if not any(value == choice and type(value) is type(choice) for choice in get_args(hint)):
            issues.append(Issue(path, "must be one of " + ", ".join(repr(choice) for choice in get_args(hint))))
        return value
    if origin in (Union, types.UnionType):
        return _to_union(hint, value, path, issues)
    if hint in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        return _to_collection(hint, value, path, issues, exact)
    if hint is dict or origin is dict:
        if not isinstance(value, dict):
            issues.append(Issue(path, f"expected object, got {_type_of(value)}"))
            return value
        args = get_args(hint)
        if len(args) != 2:
            return value
        converted = {}
        for key, item in value.items():
            where = (*path, key)
            converted[_to_key(args[0], key, where, issues)] = _to_type(args[1], item, where, issues, exact)
        return converted
    model = _pydantic_model(hint)
    if model is not None:
        if isinstance(value, model):
            return value
        try:
            return _model_value(model, value)
        except Exception as error:  # a validator's own error is the caller's problem, not the tool's
            issues.extend(_error_issues(error, path))
            return value
    if inspect.isclass(hint) and (dataclasses.is_dataclass(hint) or typing.is_typeddict(hint)):
        return _to_object(hint, value, path, issues, exact)
    return value


def _to_plain(hint: Any, value: Any, path: tuple[str | int, ...], issues: list[Issue]) -> Any:
    if hint is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if hint is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, hint) and (hint is bool or not isinstance(value, bool)):
        return value
    issues.append(Issue(path, f"expected {_PLAIN[hint]}, got {_type_of(value)}"))
    return value


def _to_key(hint: Any, key: Any, path: tuple[str | int, ...], issues: list[Issue]) -> Any:
    """A key of a ``dict[K, V]``: JSON keys are strings, so ``int`` and ``float`` keys are read from them."""
    if hint in (int, float) and isinstance(key, str):
        try:
            return hint(key)
        except ValueError:
            issues.append(Issue(path, f"the key {key!r} is not a number"))
            return key
    return _to_type(hint, key, path, issues)


def _to_union(hint: Any, value: Any, path: tuple[str | int, ...], issues: list[Issue]) -> Any:
    forms = get_args(hint)
    if value is None and type(None) in forms:
        return None
    best: list[Issue] | None = None
    for form in forms:
        if form is type(None):
            continue
        found: list[Issue] = []
        converted = _to_type(form, value, path, found, exact=True)
        if not found:
            return converted
        if best is None or len(found) < len(best):
            best = found
    issues.extend(best or [Issue(path, f"expected null, got {_type_of(value)}")])
    return value


def _to_collection(hint: Any, value: Any, path: tuple[str | int, ...], issues: list[Issue], exact: bool) -> Any:
    kind = get_origin(hint) or hint
    if not isinstance(value, (list, tuple, set, frozenset)):
        issues.append(Issue(path, f"expected array, got {_type_of(value)}"))
        return value
    args = get_args(hint)
    if kind is tuple and args and not _homogeneous(hint):
        if len(value) != len(args):
            issues.append(Issue(path, f"expected {len(args)} items, got {len(value)}"))
            return value
        forms = list(args)
    else:
        forms = [args[0] if args else Any] * len(value)
    before = len(issues)
    items = [_to_type(form, item, (*path, i), issues, exact) for i, (form, item) in enumerate(zip(forms, value))]
    if len(issues) > before:
        return value
    try:
        return kind(items)
    except TypeError as error:  # a set of values that cannot be in one (unhashable)
        issues.append(Issue(path, str(error)))
        return value


def _to_object(cls: Any, value: Any, path: tuple[str | int, ...], issues: list[Issue], exact: bool) -> Any:
    """A dataclass built from a JSON object, each field by its own hint; a TypedDict stays a dict."""
    if dataclasses.is_dataclass(cls) and isinstance(value, cls):
        return value
    if not isinstance(value, dict):
        issues.append(Issue(path, f"expected object, got {_type_of(value)}"))
        return value
    hints, required = _fields_of(cls)
    before = len(issues)
    fields: dict[str, Any] = {}
    for name, item in value.items():
        if name in hints:
            fields[name] = _to_type(hints[name], item, (*path, name), issues, exact)
        elif exact:
            issues.append(Issue((*path, name), f"{cls.__name__} has no field {name}"))
        elif typing.is_typeddict(cls):
            fields[name] = item
    for name in required:
        if name not in value:
            issues.append(Issue((*path, name), "required", missing=True))
    if len(issues) > before:
        return value
    if typing.is_typeddict(cls):
        return fields
    try:
        return cls(**fields)
    except Exception as error:  # __post_init__ refused the values: the caller's problem
        issues.extend(_error_issues(error, path))
        return value


def _error_issues(error: Exception, path: tuple[str | int, ...]) -> list[Issue]:
    """The problems an error raised while building a value names: each of a Pydantic
    ``ValidationError``'s errors at its own path, else the error's message at ``path``."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        try:
            found = [Issue((*path, *e.get("loc", ())), str(e.get("msg", "is not valid"))) for e in errors()]
        except Exception:  # not Pydantic's errors() after all
            found = []
        if found:
            return found
    return [Issue(path, str(error) or type(error).__name__)]


def _problem_text(issues: list[Issue]) -> str:
    """The problems the model is told, one line each (``path: what``, the same line once): at most
    :data:`MAX_PROBLEMS` lines and :data:`MAX_PROBLEM_TEXT` characters, then how many were left out."""
    lines: list[str] = []
    seen: set[str] = set()
    for issue in issues:
        line = f"{issue.dotted or 'arguments'}: {issue.message}"
        if len(line) > _MAX_PROBLEM_LINE:
            line = line[: _MAX_PROBLEM_LINE - 1] + "…"
        if line not in seen:
            seen.add(line)
            lines.append(line)
    shown: list[str] = []
    size = 0
    for line in lines:
        # Room is kept for the line that says how many were left out.
        if len(shown) == MAX_PROBLEMS or size + len(line) > MAX_PROBLEM_TEXT - 40:
            break
        shown.append(line)
        size += len(line) + 1
    left = len(lines) - len(shown)
    if left:
        shown.append(f"({left} more problem{'s' if left > 1 else ''} not shown)")
    return "\n".join(shown)
