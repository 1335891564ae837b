"""Tools: JSON Schema from type hints, argument checks, results."""

import asyncio
import base64
import enum
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest

from patchbay import (
    ImageContent,
    InMemoryIdempotencyStore,
    ToolError,
    ToolOutput,
    Tools,
    get_tool_call_context,
    json_schema_for,
)
from patchbay._validate import MAX_REF_DEPTH, check
from patchbay.hosted import HostedAgent, HostedCalls
from patchbay.tools import MAX_PROBLEMS, to_output


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Passenger:
    name: str
    age: int
    seat_color: Color = Color.RED

    def __post_init__(self) -> None:
        if self.age < 0:
            raise ValueError("age cannot be negative")


class Address(TypedDict):
    city: str
    color: Color


@dataclass
class Node:
    name: str
    children: list["Node"] = field(default_factory=list)


def hosted_result(tools, tool, arguments):
    """The result a worker answers for one call of ``tool`` with ``arguments``."""
    sent = []

    async def send(frame, durable):
        sent.append(frame)

    async def scenario():
        hosted = HostedCalls(send, InMemoryIdempotencyStore(), lambda: 5 * 1024 * 1024)
        hosted.agents["a"] = HostedAgent("a", {t.name: t for t in tools.list()})
        frame = {
            "type": "hosted.call",
            "callId": "c1",
            "attempt": 1,
            "agent": "a",
            "sessionId": "s1",
            "tool": tool,
            "arguments": arguments,
            "user": {"id": "u1"},
            "conversation": [],
            "timeoutMs": 30_000,
        }
        await hosted.call(frame)
        await hosted.idle()

    asyncio.run(scenario())
    return [f["result"] for f in sent if f["type"] == "hosted.result"][-1]


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


def test_arguments_reach_the_function_as_their_hinted_types():
    tools = Tools()
    seen = {}

    @tools.register(description="Book")
    async def book(
        color: Color,
        passenger: Passenger,
        others: list[Passenger],
        address: Address,
        by_color: dict[str, Color],
        pair: tuple[Color, int],
        fallback: Optional[Color] = None,
        either: Passenger | Color = Color.BLUE,
        meta: dict = None,
        anything: Any = None,
    ) -> str:
        seen.update(locals())
        return "ok"

    tool = tools.get("book")
    raw = {
        "color": "red",
        "passenger": {"name": "Ada", "age": 36, "seat_color": "blue"},
        "others": [{"name": "Bo", "age": 3}],
        "address": {"city": "Oslo", "color": "red"},
        "by_color": {"x": "blue"},
        "pair": ["blue", 2],
        "fallback": "red",
        "meta": {"k": [1]},
        "anything": {"a": 1},
    }
    arguments, problem = tool.check_arguments(raw)
    assert problem is None
    assert asyncio.run(tool.invoke(arguments)) == "ok"
    assert seen["color"] is Color.RED
    assert seen["passenger"] == Passenger("Ada", 36, Color.BLUE)
    assert seen["others"] == [Passenger("Bo", 3)]
    assert seen["address"] == {"city": "Oslo", "color": Color.RED}  # a TypedDict stays a dict
    assert seen["by_color"] == {"x": Color.BLUE}
    assert seen["pair"] == (Color.BLUE, 2)
    assert seen["fallback"] is Color.RED
    assert seen["either"] is Color.BLUE  # the schema's default, as the enum member
    assert tool.spec["parameters"]["properties"]["either"]["default"] == "blue"
    assert seen["meta"] == {"k": [1]} and seen["anything"] == {"a": 1}  # JSON objects kept whole

    # A union tries its forms in order; converting twice changes nothing.
    arguments, problem = tool.check_arguments({**raw, "either": {"name": "Cy", "age": 5}})
    assert problem is None and arguments["either"] == Passenger("Cy", 5)
    assert tool._converted(arguments) == (arguments, [])


def test_a_value_that_does_not_convert_is_invalid_arguments_naming_the_field():
    tools = Tools()
    runs = []

    @tools.register(description="Board")
    async def board(passengers: list[Passenger]) -> str:
        runs.append(passengers)
        return "ok"

    tool = tools.get("board")
    _, problem = tool.check_arguments({"passengers": [{"name": "Ada", "age": 36}, {"name": "Bo", "age": -1}]})
    assert problem == "passengers.1: age cannot be negative"

    result = hosted_result(tools, "board", {"passengers": [{"name": "Bo", "age": -1}]})
    assert result["outcome"] == "invalid_arguments"
    assert result["error"]["code"] == "invalid_arguments"
    assert "passengers.0: age cannot be negative" in result["content"]["text"]
    assert runs == []

    # Arguments handed to invoke without check_arguments are converted there, or refused.
    with pytest.raises(ToolError, match="passengers.0: age cannot be negative") as refused:
        asyncio.run(tool.invoke({"passengers": [{"name": "Bo", "age": -1}]}))
    assert refused.value.code == "invalid_arguments"


def test_every_argument_problem_is_told_one_line_each_and_bounded():
    tools = Tools()

    @tools.register(description="Book a flight")
    async def book_flight(
        flight_id: str, seats: int, cabin: Literal["economy", "business"], passenger: Passenger
    ) -> str:
        return "ok"

    tool = tools.get("book_flight")
    _, problem = tool.check_arguments({"flight_id": 400, "seats": "two", "cabin": "first", "passenger": {"age": 1}})
    assert problem.splitlines() == [
        "flight_id: expected string, got number",
        "seats: expected integer, got string",
        "cabin: must be one of 'economy', 'business'",
        "passenger.name: required",
    ]
    result = hosted_result(tools, "book_flight", {"flight_id": 400, "seats": "two"})
    assert result["outcome"] == "invalid_arguments"
    assert result["content"]["text"].splitlines()[1:] == [
        "flight_id: expected string, got number",
        "seats: expected integer, got string",
        "cabin: required",
        "passenger: required",
    ]

    @tools.register(description="Many")
    async def many(values: list[int]) -> str:
        return "ok"

    _, problem = tools.get("many").check_arguments({"values": ["x"] * 100})
    lines = problem.splitlines()
    assert len(lines) == MAX_PROBLEMS + 1
    assert lines[0] == "values.0: expected integer, got string"
    assert lines[-1] == f"({100 - MAX_PROBLEMS} more problems not shown)"
    assert len(problem) <= 2_000


def test_local_refs_are_followed_with_a_bound():
    schema = {
        "type": "object",
        "properties": {
            "color": {"$ref": "#/$defs/Color", "default": "red"},
            "seat": {"allOf": [{"$ref": "#/definitions/Seat"}], "description": "where"},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["seat"],
        "$defs": {"Color": {"enum": ["red", "blue"]}},
        "definitions": {"Seat": {"type": "object", "properties": {"row": {"type": "integer"}}, "required": ["row"]}},
    }
    assert check(schema, {"seat": {"row": 3, "unknown": 1}}) == ({"color": "red", "seat": {"row": 3}}, [])
    _, issues = check(schema, {"color": "green", "seat": {}, "pair": ["a", "b"]})
    assert [(i.dotted, i.message) for i in issues] == [
        ("color", "must be one of 'red', 'blue'"),
        ("seat.row", "required"),
        ("pair.1", "expected integer, got string"),
    ]
    # A reference that goes round in a circle stops at the bound instead of recursing forever.
    circle = {"$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}]}}, "$ref": "#/$defs/A"}
    _, issues = check(circle, 1)
    assert [i.message for i in issues] == [f"nested more than {MAX_REF_DEPTH} schema references deep"]
    _, issues = check({"$ref": "#/$defs/Missing"}, 1)
    assert "names nothing" in issues[0].message

    # A dataclass that contains itself is described once in $defs; its arguments are checked through it.
    tools = Tools()

    @tools.register(description="Tree")
    async def tree(root: Node) -> str:
        return root.children[0].children[0].name

    tool = tools.get("tree")
    assert tool.parameters["properties"]["root"] == {"$ref": "#/$defs/Node"}
    assert tool.parameters["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert json_schema_for(Node)["type"] == "object"  # at the root, the definition itself
    _, problem = tool.check_arguments({"root": {"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]}})
    assert problem == "root.children.0.children.0.name: expected string, got number"
    deep = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    arguments, _ = tool.check_arguments({"root": deep})
    assert asyncio.run(tool.invoke(arguments)) == "c"


def test_pydantic_models_and_their_validator_errors():
    pydantic = pytest.importorskip("pydantic")
    version_2 = pydantic.VERSION.startswith("2")

    class Item(pydantic.BaseModel):
        sku: str
        color: Color = Color.RED

    class Order(pydantic.BaseModel):
        order_id: str
        items: list[Item]

        if version_2:

            @pydantic.field_validator("order_id")
            @classmethod
            def known(cls, value):
                if not value.startswith("A"):
                    raise ValueError("order ids start with A")
                return value

        else:

            @pydantic.validator("order_id")
            def known(cls, value):
                if not value.startswith("A"):
                    raise ValueError("order ids start with A")
                return value

    tools = Tools()

    @tools.register(description="Place an order")  # Pydantic 1 crashed here
    async def place(order: Order) -> Order:
        return order

    @tools.register(description="Place several")
    async def place_all(orders: list[Order]) -> str:
        return ",".join(f"{type(o).__name__}:{o.items[0].color.value}" for o in orders)

    tool = tools.get("place")
    assert tool.parameters["type"] == "object"
    arguments, problem = tool.check_arguments({"order_id": "A1", "items": [{"sku": "x", "color": "blue"}]})
    assert problem is None
    order = asyncio.run(tool.invoke(arguments))
    assert isinstance(order, Order) and order.items[0].color is Color.BLUE
    assert '"order_id"' in to_output(order).text

    _, problem = tool.check_arguments({"order_id": "B1", "items": [{"sku": 5, "color": "green"}]})
    assert problem.splitlines() == [
        "items.0.sku: expected string, got number",
        "items.0.color: must be one of 'red', 'blue'",
    ]
    _, problem = tool.check_arguments({"order_id": "B1", "items": []})
    assert problem.startswith("order_id: ") and "order ids start with A" in problem
    orders = [{"order_id": "A1", "items": []}, {"order_id": "B2", "items": []}]
    _, problem = tools.get("place_all").check_arguments({"orders": orders})
    assert problem.startswith("orders.1.order_id: ") and "order ids start with A" in problem
    arguments, _ = tools.get("place_all").check_arguments({"orders": [{"order_id": "A1", "items": [{"sku": "x"}]}]})
    assert asyncio.run(tools.get("place_all").invoke(arguments)) == "Order:red"

    result = hosted_result(tools, "place", {"order_id": "B1", "items": []})
    assert result["outcome"] == "invalid_arguments"
    assert "order ids start with A" in result["content"]["text"]
