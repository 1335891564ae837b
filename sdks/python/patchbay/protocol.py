"""The Patchbay wire protocol (version 1): decoding frames the way every Patchbay peer does.

``decode_frame`` follows the order of ``docs/protocol.md``: size in UTF-8 bytes first, then JSON,
then an object with a string ``type``, then a type the channel has, then the fields against the
frame's JSON Schema (bundled in ``patchbay/schema``, a copy of ``packages/protocol/schema``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from ._validate import check

PROTOCOL_VERSION = 1
"""The protocol version this SDK speaks."""

DEFAULT_MAX_FRAME_BYTES = 5 * 1024 * 1024
"""The largest frame, in UTF-8 bytes, unless the server says otherwise (``maxFrameBytes``)."""

DEFAULT_MAX_RESULT_FRAME_BYTES = 8 * 1024 * 1024
"""The largest result frame (``tool.result``, ``hosted.result``): room for a 5 MiB image as base64."""

RESULT_FRAME_TYPES = frozenset({"tool.result", "hosted.result"})

Channel = Literal["client-to-server", "server-to-client", "worker-to-server", "server-to-worker"]
CHANNELS: tuple[Channel, ...] = ("client-to-server", "server-to-client", "worker-to-server", "server-to-worker")

__all__ = [
    "CHANNELS",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_RESULT_FRAME_BYTES",
    "RESULT_FRAME_TYPES",
    "PROTOCOL_VERSION",
    "Channel",
    "FrameError",
    "decode_frame",
    "encode_frame",
    "frame_schema",
]


class FrameError(Exception):
    """A frame that could not be decoded: ``code`` is the protocol's error code, ``path`` the field."""

    def __init__(self, code: str, message: str, path: str | None = None) -> None:
        super().__init__(f"{code}: {message}" + (f" (at {path})" if path else ""))
        self.code = code
        self.message = message
        self.path = path

    def to_wire(self) -> dict[str, Any]:
        """The ``error`` frame's fields."""
        return {"code": self.code, "message": self.message, **({"path": self.path} if self.path else {})}


@lru_cache(maxsize=4)
def _channel_forms(channel: Channel) -> dict[str, dict[str, Any]]:
    text = resources.files("patchbay").joinpath("schema", f"{channel}.schema.json").read_text("utf-8")
    schema = json.loads(text)
    forms: dict[str, dict[str, Any]] = {}
    for form in schema["oneOf"]:
        forms[form["properties"]["type"]["const"]] = form
    return forms


def frame_schema(channel: Channel, frame_type: str) -> dict[str, Any] | None:
    """The JSON Schema of one frame type of a channel, or None when the channel has no such type."""
    return _channel_forms(channel).get(frame_type)


def decode_frame(
    text: str | bytes,
    channel: Channel,
    max_bytes: int | None = None,
    max_result_bytes: int | None = None,
) -> dict[str, Any]:
    """Decodes one frame of ``channel``; raises :class:`FrameError` with the code and path.

    ``max_bytes`` bounds every frame (5 MiB by default); a result frame (``tool.result``,
    ``hosted.result``) may be as large as ``max_result_bytes`` (8 MiB when neither is given,
    else ``max_bytes``).

    >>> decode_frame('{"type":"ping"}', "server-to-worker")
    {'type': 'ping'}
    """
    limit = DEFAULT_MAX_FRAME_BYTES if max_bytes is None else max_bytes
    result_limit = max(
        limit,
        max_result_bytes if max_result_bytes is not None else (DEFAULT_MAX_RESULT_FRAME_BYTES if max_bytes is None else limit),
    )
    if isinstance(text, str):
        size = len(text.encode("utf-8", "surrogatepass"))
    else:
        size = len(text)
    if size > result_limit:
        raise FrameError("frame_too_large", f"the frame is {size} bytes; the limit is {result_limit}")
    # Over the limit of other frames: only a result may be this big.
    result_sized = size > limit
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise FrameError("invalid_json", f"the frame is not UTF-8: {error}") from None
    if result_sized and not any(name in text for name in RESULT_FRAME_TYPES):
        raise FrameError("frame_too_large", f"the frame is {size} bytes; the limit is {limit}")
    try:
        value = json.loads(text)
    except ValueError as error:
        raise FrameError("invalid_json", f"the frame is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise FrameError("invalid_frame", "a frame must be a JSON object")
    frame_type = value.get("type")
    if not isinstance(frame_type, str):
        raise FrameError("invalid_frame", "a frame needs a string field type", "type")
    if result_sized and frame_type not in RESULT_FRAME_TYPES:
        raise FrameError("frame_too_large", f"the frame is {size} bytes; the limit is {limit}")
    schema = frame_schema(channel, frame_type)
    if schema is None:
        raise FrameError("unknown_frame_type", f"{channel} has no frame type {frame_type!r}", "type")
    decoded, issues = check(schema, value)
    if issues:
        first = issues[0]
        raise FrameError("invalid_frame", f"{frame_type}: {first.dotted or 'frame'}: {first.message}", first.dotted or None)
    return decoded


def encode_frame(frame: dict[str, Any]) -> str:
    """The text of a frame: compact JSON, non-ASCII characters as they are."""
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False)
