"""Tools: JSON Schema from type hints, argument checks, results."""

import base64
from dataclasses import dataclass
from typing import Annotated, Literal, Optional

import pytest

from patchbay import ImageContent, ToolError, ToolOutput, Tools, get_tool_call_context, json_schema_for
from patchbay.tools import to_output


def test_schema_from_type_hints():
    tools = Tools()

    @tools.register(description="Book a flight", interruptible=True, timeout=60, needs_approval="Book {flight_id}?")
    async def book_flight(
        flight_id: Annotated[str, "e.g. LH400"],
        seats: int,
        cabin: Literal["economy", "business"] = "economy",
        note: Optional[str] = None,
    ) -> str:
        return "ok"

    spec = tools.get("book_flight").spec
    assert spec["parameters"] == {
        "type": "object",
        "properties": {
            "flight_id": {"type": "string", "description": "e.g. LH400"},
            "seats": {"type": "integer"},
            "cabin": {"type": "string", "enum": ["economy", "business"], "default": "economy"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["flight_id", "seats"],
    }
    assert spec["interruptible"] is True
    assert spec["timeoutMs"] == 60_000
    assert spec["approval"] == {"title": "Book {flight_id}?"}


def test_dataclass_and_list_hints():
    @dataclass
    class Seat:
        row: int
        letter: str = "A"

    assert json_schema_for(list[Seat]) == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"row": {"type": "integer"}, "letter": {"type": "string"}},
            "required": ["row"],
        },
    }
    with pytest.raises(TypeError, match="parameters_schema"):
        json_schema_for(complex)


def test_arguments_are_checked_with_the_field_named():
    tools = Tools()

    @tools.register(description="Echo")
    async def echo(text: str, times: int = 1) -> str:
        return text * times

    tool = tools.get("echo")
    assert tool.check_arguments({"text": "a"}) == ({"text": "a", "times": 1}, None)
    _, problem = tool.check_arguments({"text": "a", "times": True})
    assert problem == "times: expected integer, got boolean"
    _, problem = tool.check_arguments({})
    assert problem == "text: required"


def test_a_given_schema_is_not_checked():
    tools = Tools()

    @tools.register(description="Raw", parameters_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    async def raw(n) -> str:
        return str(n)

    assert tools.get("raw").check_arguments({"n": "x"}) == ({"n": "x"}, None)


def test_outputs():
    png = b"\x89PNG\r\n"
    output = to_output(["seat map", ImageContent(data=png, mime="image/png")]).to_wire()
    assert output == {
        "text": "seat map",
        "images": [{"type": "image", "mimeType": "image/png", "data": base64.b64encode(png).decode()}],
    }
    assert to_output({"status": "shipped"}).text == '{"status": "shipped"}'
    assert to_output(None).to_wire() == {"text": "", "images": []}
    with pytest.raises(ToolError, match="https"):
        ToolOutput(images=[ImageContent(url="http://x")]).to_wire()
    with pytest.raises(ToolError, match="not both"):
        ImageContent(data=png, url="https://x").to_wire()


def test_context_is_only_inside_a_call():
    with pytest.raises(RuntimeError, match="inside a running tool call"):
        get_tool_call_context()


def test_a_tool_needs_a_description():
    tools = Tools()
    with pytest.raises(ValueError, match="description"):

        @tools.register
        async def nameless(x: int) -> int:
            return x
