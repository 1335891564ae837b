"""Provider tool calls in one shape: ``{id, index, name, arguments, rawArguments, argumentsError?}``.

The rules are in ``docs/protocol.md`` ("Normalized tool calls"); ``vectors/tool-calls.json``
pins them down.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ToolCallFormatError", "normalize_tool_calls"]

_GEMINI_OTHER_PARTS = (
    "text",
    "inlineData",
    "fileData",
    "executableCode",
    "codeExecutionResult",
    "functionResponse",
    "thought",
    "thoughtSignature",
    "videoMetadata",
)


class ToolCallFormatError(ValueError):
    """An entry that is not a tool call: ``code`` is ``invalid_tool_call``, ``index`` its position."""

    code = "invalid_tool_call"

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an object"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _format(entry: dict[str, Any]) -> str | None:
    if entry.get("type") == "tool_use":
        return "anthropic"
    if entry.get("type") == "function_call":
        return "openai-responses"
    if isinstance(entry.get("function"), dict):
        return "openai-chat"
    if isinstance(entry.get("functionCall"), dict):
        return "gemini"
    if "name" in entry and ("arguments" in entry or "input" in entry or "args" in entry):
        return "normalized"
    if isinstance(entry.get("type"), str) and entry["type"] != "function":
        return None
    if "name" in entry:
        return "normalized"
    if any(key in entry for key in _GEMINI_OTHER_PARTS):
        return None
    return "normalized"


def _parse_arguments(value: Any) -> tuple[dict[str, Any], str, str | None]:
    if value is None or value == "":
        return {}, "" if value == "" else "{}", None
    if isinstance(value, dict):
        return value, _compact(value), None
    if not isinstance(value, str):
        return {}, _compact(value), f"arguments must be a JSON object, got {_describe(value)}"
    try:
        parsed = json.loads(value)
    except ValueError as error:
        return {}, value, f"arguments are not valid JSON: {error}"
    if not isinstance(parsed, dict):
        return {}, value, f"arguments must be a JSON object, got {_describe(parsed)}"
    return parsed, value, None


def _pick(entry: dict[str, Any], fmt: str) -> tuple[Any, Any, Any]:
    if fmt == "openai-chat":
        fn = entry["function"]
        return entry.get("id"), fn.get("name"), fn.get("arguments")
    if fmt == "openai-responses":
        call_id = entry.get("call_id")
        return (call_id if call_id is not None else entry.get("id")), entry.get("name"), entry.get("arguments")
    if fmt == "anthropic":
        return entry.get("id"), entry.get("name"), entry.get("input")
    if fmt == "gemini":
        fc = entry["functionCall"]
        return (fc.get("id") if fc.get("id") is not None else entry.get("id")), fc.get("name"), fc.get("args")
    args = entry["arguments"] if "arguments" in entry else (entry.get("input") if entry.get("input") is not None else entry.get("args"))
    return entry.get("id"), entry.get("name"), args


def _entries(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in ("tool_calls", "content", "parts", "output"):
            if isinstance(value.get(key), list):
                return value[key]
        if isinstance(value.get("role"), str):
            return []
    return [value]


def normalize_tool_calls(value: Any) -> list[dict[str, Any]]:
    """Normalizes a batch of tool calls in any provider's format (or a whole message holding them).

    >>> normalize_tool_calls([{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
    [{'id': 'c1', 'index': 0, 'name': 'f', 'arguments': {}, 'rawArguments': '{}'}]
    """
    calls: list[dict[str, Any]] = []
    for position, entry in enumerate(_entries(value)):
        if not isinstance(entry, dict):
            raise ToolCallFormatError(
                f"tool call at position {position} is {_describe(entry)}, expected an object", position
            )
        fmt = _format(entry)
        if fmt is None:
            continue
        call_id, name, args = _pick(entry, fmt)
        if not isinstance(name, str) or not name:
            raise ToolCallFormatError(f"tool call at position {position} ({fmt}) has no tool name", position)
        if fmt == "normalized" and isinstance(entry.get("arguments"), dict) and isinstance(entry.get("rawArguments"), str):
            parsed, raw = entry["arguments"], entry["rawArguments"]
            error = entry.get("argumentsError") if isinstance(entry.get("argumentsError"), str) else None
        else:
            parsed, raw, error = _parse_arguments(args)
        index = len(calls)
        call: dict[str, Any] = {
            "id": call_id if isinstance(call_id, str) and call_id else f"call_{index}",
            "index": index,
            "name": name,
            "arguments": parsed,
            "rawArguments": raw,
        }
        if error is not None:
            call["argumentsError"] = error
        calls.append(call)
    return calls
