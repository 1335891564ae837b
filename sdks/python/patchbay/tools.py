"""Tools: functions registered with a decorator, their JSON Schema from type hints (or a Pydantic
model, or a schema given as it is), the checked JSON arguments turned into the hinted types, their
results, and the context a running call sees.

>>> tools = Tools()
>>> @tools.register(description="Look up an order by its number")
... async def lookup_order(order_id: str) -> str:
...     return f"order {order_id}: shipped"
>>> tools.get("lookup_order").spec["parameters"]["required"]
['order_id']
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import dataclasses
import enum
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from ._convert import MAX_PROBLEM_TEXT, MAX_PROBLEMS, _problem_text, _to_type
from ._schema import _Defs, _pydantic_model, _schema_for, json_schema_for
from ._validate import Issue, check

__all__ = [
    "CallNotHeld",
    "ImageContent",
    "Tool",
    "ToolCallContext",
    "ToolError",
    "ToolOutput",
    "Tools",
    "User",
    "get_tool_call_context",
    "json_schema_for",
    "to_output",
]

_IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}


class ToolError(Exception):
    """An error whose ``message`` the model may read; ``code`` is stable (default ``tool_error``)."""

    def __init__(self, message: str, code: str = "tool_error") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class CallNotHeld(Exception):
    """``disallow_interruptions()`` came too late: the call was already being cancelled or had ended."""

    code = "call_not_held"

    def __init__(self, call_id: str, reason: str) -> None:
        super().__init__(f"call {call_id} could not be held: {reason}")
        self.call_id = call_id
        self.reason = reason


@dataclass(frozen=True)
class ImageContent:
    """An image a tool returns: ``data`` (bytes, with ``mime``) or an https ``url``."""

    data: bytes | None = None
    mime: str = "image/png"
    url: str | None = None

    def to_wire(self) -> dict[str, Any]:
        if (self.data is None) == (self.url is None):
            raise ToolError("an image needs either data or url, not both", "invalid_output")
        if self.url is not None:
            if not self.url.startswith("https://"):
                raise ToolError(f"an image url must be https: {self.url[:60]}", "invalid_output")
            return {"type": "image", "url": self.url}
        if self.mime not in _IMAGE_TYPES:
            raise ToolError(f"image type {self.mime} is not one of {sorted(_IMAGE_TYPES)}", "invalid_output")
        return {"type": "image", "mimeType": self.mime, "data": base64.b64encode(self.data or b"").decode("ascii")}


@dataclass(frozen=True)
class ToolOutput:
    """What the model is shown: text and images."""

    text: str = ""
    images: tuple[ImageContent, ...] | list[ImageContent] = ()

    def to_wire(self) -> dict[str, Any]:
        return {"text": self.text, "images": [image.to_wire() for image in self.images]}


@dataclass(frozen=True)
class User:
    """The user whose turn made the call."""

    id: str
    name: str | None = None


@dataclass
class ToolCallContext:
    """What a running call knows about itself; read it with :func:`get_tool_call_context`."""

    id: str
    """The call id: the idempotency key to pass to the system a tool changes."""
    name: str
    session_id: str
    user: User
    attempt: int
    conversation: list[dict[str, Any]] = field(default_factory=list)
    """The conversation as it is now. Read it, do not change it: the worker keeps these items
    between calls of the session, so a change would be what its later calls read."""
    _update: Callable[[str], Awaitable[None]] | None = None
    _say: Callable[[str], Awaitable[None]] | None = None
    _hold: Callable[[], Awaitable[None]] | None = None

    async def update(self, text: str) -> None:
        """A status line the user sees while the call runs (the newest one wins)."""
        if self._update:
            await self._update(text)

    async def say(self, text: str) -> None:
        """Exact words to say to the user now."""
        if self._say:
            await self._say(text)

    async def disallow_interruptions(self) -> None:
        """From now on an interrupt does not cancel this call; only its timeout does.

        Raises :class:`CallNotHeld` when the call was cancelled before the hold took effect: then
        the change the tool was about to make must not start.
        """
        if self._hold:
            await self._hold()


_current: contextvars.ContextVar[ToolCallContext] = contextvars.ContextVar("patchbay_tool_call_context")


def get_tool_call_context() -> ToolCallContext:
    """The context of the call the current task runs (inside a tool only)."""
    try:
        return _current.get()
    except LookupError:
        raise RuntimeError("get_tool_call_context() is only available inside a running tool call") from None


def _set_context(context: ToolCallContext) -> contextvars.Token[ToolCallContext]:
    return _current.set(context)



Handler = Callable[..., Any]
ApprovalCheck = Callable[..., "bool | Awaitable[bool]"]
"""An approval's ``when``: ``when(arguments)`` or ``when(arguments, ctx)``, plain or async."""


@dataclass
class Tool:
    """One registered tool: its spec (what the server and the model see) and how to call it."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    interruptible: bool = False
    timeout: float | None = None
    idle_timeout: float | None = None
    approval: dict[str, Any] | None = None
    approval_when: ApprovalCheck | None = None
    """The approval's ``when``: whether a call asks the user (see :meth:`Tools.register`)."""
    display_title: str | None = None
    concurrency: int | None = None
    model: Any = None
    validate: bool = True
    hints: dict[str, Any] = field(default_factory=dict)
    """The type hint of each parameter, which its JSON value is turned into (the model, for a tool
    that takes one Pydantic model)."""
    _semaphore: asyncio.Semaphore | None = None

    def __post_init__(self) -> None:
        if self.model is not None and not self.hints:
            first = next(iter(inspect.signature(self.handler).parameters), "model")
            self.hints = {first: self.model}

    @property
    def spec(self) -> dict[str, Any]:
        """The ToolSpec of the protocol."""
        spec: dict[str, Any] = {"name": self.name, "description": self.description, "parameters": self.parameters}
        if self.approval:
            spec["approval"] = self.approval
        if self.display_title:
            spec["displayTitle"] = self.display_title
        if self.interruptible:
            spec["interruptible"] = True
        if self.timeout is not None:
            spec["timeoutMs"] = max(1, round(self.timeout * 1000))
        if self.idle_timeout is not None:
            spec["idleTimeoutMs"] = max(1, round(self.idle_timeout * 1000))
        return spec

    def check_arguments(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The arguments as the function takes them, or the problems the model is told.

        The JSON arguments are checked against the schema (defaults filled in), then turned into
        the hinted types: Enum members, dataclasses, the Pydantic model, and so on. Every problem
        of either step is a line ``path: what`` (at most :data:`MAX_PROBLEMS` of them); then the
        arguments come back as they were, with the text.
        """
        if not self.validate:
            return arguments, None
        decoded, issues = check(self.parameters, arguments)
        if not issues:
            decoded, issues = self._converted(decoded)
        if issues:
            return arguments, _problem_text(issues)
        return decoded, None

    def _converted(self, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[Issue]]:
        issues: list[Issue] = []
        if self.model is not None:
            (name,) = self.hints
            if len(arguments) == 1 and isinstance(arguments.get(name), self.model):
                return arguments, issues
            return {name: _to_type(self.model, arguments, (), issues)}, issues
        converted = {
            name: _to_type(self.hints.get(name, Any), value, (name,), issues) for name, value in arguments.items()
        }
        return converted, issues

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Calls the function with the arguments :meth:`check_arguments` gave. Arguments it did not
        give are turned into the hinted types first (values that are already are kept); when they
        do not convert, raises :class:`ToolError` with the code ``invalid_arguments``."""
        if self.validate:
            arguments, issues = self._converted(arguments)
            if issues:
                raise ToolError(_problem_text(issues), "invalid_arguments")
        value = self.handler(**arguments)
        if inspect.isawaitable(value):
            value = await value
        return value


def to_output(value: Any) -> ToolOutput:
    """What a tool returned, as text and images: a str, a ToolOutput, an ImageContent, a list of
    str and ImageContent, None (empty), or anything JSON can write (as JSON text)."""
    if isinstance(value, ToolOutput):
        return value
    if value is None:
        return ToolOutput()
    if isinstance(value, str):
        return ToolOutput(text=value)
    if isinstance(value, ImageContent):
        return ToolOutput(images=[value])
    if isinstance(value, (list, tuple)) and any(isinstance(v, ImageContent) for v in value):
        texts = [v for v in value if isinstance(v, str)]
        images = [v for v in value if isinstance(v, ImageContent)]
        return ToolOutput(text="\n".join(texts), images=images)
    model = getattr(value, "model_dump_json", None)
    if callable(model):
        return ToolOutput(text=model())
    if _pydantic_model(type(value)) is not None:
        return ToolOutput(text=value.json())  # Pydantic 1
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return ToolOutput(text=json.dumps(value, ensure_ascii=False, default=_json_default))


def _json_default(value: Any) -> Any:
    """What JSON writes for a value it has no form for: an Enum member's value, else its text."""
    return value.value if isinstance(value, enum.Enum) else str(value)


def _approval(tool: str, value: str | dict[str, Any] | None) -> tuple[dict[str, Any] | None, ApprovalCheck | None]:
    """The approval spec the server reads, and the ``when`` function that stays here (the spec
    then says ``conditional``)."""
    if value is None:
        return None, None
    if isinstance(value, str):
        return {"title": value}, None
    spec = dict(value)
    when = spec.pop("when", None)
    if when is None:
        return spec, None
    if not callable(when):
        raise ValueError(f"tool {tool}: approval.when must be a function; got {type(when).__name__}")
    spec["conditional"] = True
    return spec, when


async def _check_approval(when: ApprovalCheck, arguments: dict[str, Any], context: ToolCallContext) -> bool:
    """Runs an approval's ``when`` with the call's arguments (and its context, when ``when`` takes
    two parameters): ``False`` runs the call without asking; anything else asks, so a ``when``
    that forgets to return does not skip the question. What it raises is raised."""
    params = inspect.signature(when).parameters.values()
    takes_context = any(p.kind == p.VAR_POSITIONAL for p in params) or (
        len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) >= 2
    )
    answer = when(arguments, context) if takes_context else when(arguments)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer is not False


class Tools:
    """A registry of tools, filled with the :meth:`register` decorator."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._listeners: list[Callable[[], None]] = []

    def register(
        self,
        fn: Handler | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters_schema: dict[str, Any] | None = None,
        needs_approval: str | dict[str, Any] | None = None,
        approval: str | dict[str, Any] | None = None,
        interruptible: bool = False,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        concurrency: int | None = None,
        display_title: str | None = None,
    ) -> Any:
        """Registers a function as a tool; usable as ``@tools.register`` or ``@tools.register(...)``.

        The parameters come from the function's type hints, a single Pydantic model parameter, or
        ``parameters_schema`` (told to the model as written; then arguments are not checked).
        ``timeout`` and ``idle_timeout`` are seconds.

        ``approval`` (or ``needs_approval``) makes the server ask the user before the tool runs:
        a title such as ``"Delete {what}?"``, or the approval spec as a dict. A ``when`` in the
        dict decides per call, here in the worker, whether to ask: ``when(arguments)`` or
        ``when(arguments, ctx)``, plain or async, gets the checked arguments (as the function
        gets them) and returns ``False`` to run the call without asking; anything else asks. A
        ``when`` that raises fails the call (``approval_check_failed``; the worker logs it).

        >>> tools = Tools()
        >>> @tools.register(description="Refund an order", approval={
        ...     "title": "Refund {amount} EUR?", "when": lambda args: args["amount"] > 100})
        ... async def refund(amount: int) -> str:
        ...     return "refunded"
        >>> tools.get("refund").spec["approval"]
        {'title': 'Refund {amount} EUR?', 'conditional': True}
        """

        def add(function: Handler) -> Handler:
            tool_name = name or function.__name__
            text = description or inspect.getdoc(function)
            if not text:
                raise ValueError(f"tool {tool_name} needs a description (or a docstring)")
            model = None
            hints: dict[str, Any] = {}
            if parameters_schema is not None:
                parameters = dict(parameters_schema)
            else:
                parameters, model, hints = _parameters_of(function)
            if concurrency is not None and concurrency < 1:
                raise ValueError(f"tool {tool_name}: concurrency must be 1 or more")
            approval_spec, when = _approval(tool_name, needs_approval if needs_approval is not None else approval)
            self._tools[tool_name] = Tool(
                name=tool_name,
                description=text,
                parameters=parameters,
                handler=function,
                interruptible=interruptible,
                timeout=timeout,
                idle_timeout=idle_timeout,
                approval=approval_spec,
                approval_when=when,
                display_title=display_title,
                concurrency=concurrency,
                model=model,
                validate=parameters_schema is None,
                hints=hints,
            )
            for listener in list(self._listeners):
                listener()
            return function

        return add(fn) if fn is not None else add

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def _subscribe(self, listener: Callable[[], None]) -> None:
        """Calls ``listener`` after each tool registered from now on (a worker hosting this
        registry tells the server)."""
        self._listeners.append(listener)

    def list(self) -> list[Tool]:
        return list(self._tools.values())

    def specs(self) -> list[dict[str, Any]]:
        return [tool.spec for tool in self._tools.values()]


def _parameters_of(function: Handler) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """The parameters schema of a function, the Pydantic model it takes (if that is its one
    parameter), and the type hint of each parameter."""
    signature = inspect.signature(function)
    hints = get_type_hints(function, include_extras=True)
    params = [p for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if len(params) == 1:
        model = _pydantic_model(hints.get(params[0].name))
        if model is not None:
            schema = json_schema_for(model)
            return schema, model, {params[0].name: model}
    defs = _Defs()
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in params:
        hint = hints.get(param.name, Any)
        schema = _schema_for(hint, defs)
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        else:
            default = param.default.value if isinstance(param.default, enum.Enum) else param.default
            try:
                json.dumps(default)
                schema = {**schema, "default": default}
            except (TypeError, ValueError):
                pass
        properties[param.name] = schema
    parameters = defs.attach({"type": "object", "properties": properties, "required": required})
    return parameters, None, {param.name: hints.get(param.name, Any) for param in params}
