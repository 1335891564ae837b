"""Patchbay for Python: a dispatch worker that hosts tools and takes work, and a session client.

>>> from patchbay import Dispatch, Tools, ToolOutput, get_tool_call_context
"""

from .client import AgentHandle, Client, ClientError, Reply, Session, Sessions
from .conversations import ConversationCacheLimits
from .dispatch import Channel, Dispatch, DispatchError, InboundCall, InboundMessage, StopResult, WorkContext
from .hosted import IdempotencyStore, InMemoryIdempotencyStore
from .normalize import ToolCallFormatError, normalize_tool_calls
from .protocol import DEFAULT_MAX_FRAME_BYTES, PROTOCOL_VERSION, FrameError, decode_frame, encode_frame
from .tools import (
    CallNotHeld,
    ImageContent,
    Tool,
    ToolCallContext,
    ToolError,
    ToolOutput,
    Tools,
    User,
    get_tool_call_context,
    json_schema_for,
)

__version__ = "0.1.0"

__all__ = [
    "AgentHandle",
    "Client",
    "ClientError",
    "Reply",
    "Session",
    "Sessions",
    "DEFAULT_MAX_FRAME_BYTES",
    "PROTOCOL_VERSION",
    "CallNotHeld",
    "Channel",
    "ConversationCacheLimits",
    "Dispatch",
    "DispatchError",
    "FrameError",
    "IdempotencyStore",
    "ImageContent",
    "InMemoryIdempotencyStore",
    "InboundCall",
    "InboundMessage",
    "StopResult",
    "Tool",
    "ToolCallContext",
    "ToolCallFormatError",
    "ToolError",
    "ToolOutput",
    "Tools",
    "User",
    "WorkContext",
    "decode_frame",
    "encode_frame",
    "get_tool_call_context",
    "json_schema_for",
    "normalize_tool_calls",
]
