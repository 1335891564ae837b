"""The conversations a worker keeps between hosted calls (``worker.hello.conversationCache``).

A worker that asks for it gets each conversation item once per connection: a ``hosted.call`` then
carries ``conversationIds`` (the whole conversation, by id) and only the items new or changed
since the session's last call on the connection. The server decides what is kept; the worker
follows each frame in the order frames arrive. See "Conversations a worker keeps" in
``docs/protocol.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_SESSIONS = 100_000
MAX_BYTES = 1024 * 1024 * 1024

__all__ = ["ConversationCacheLimits", "KeptConversations"]


@dataclass(frozen=True)
class ConversationCacheLimits:
    """How much a worker keeps: at most ``sessions`` sessions and ``bytes`` bytes of items (JSON).

    >>> Dispatch(8, conversation_cache=ConversationCacheLimits(sessions=200))  # doctest: +SKIP
    """

    sessions: int = 1_000
    bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        for name, value, low, high in (
            ("sessions", self.sessions, 1, MAX_SESSIONS),
            ("bytes", self.bytes, 0, MAX_BYTES),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(f"conversation_cache.{name} must be an integer from {low} to {high}; got {value!r}")

    def to_wire(self) -> dict[str, int]:
        """The hello's ``conversationCache``."""
        return {"sessions": self.sessions, "bytes": self.bytes}


class KeptConversations:
    """What one connection keeps of each session's conversation. A new connection starts empty."""

    def __init__(self) -> None:
        # Each session's items by id, in conversation order (a changed item keeps its place).
        self._sessions: dict[str, dict[str, dict[str, Any]]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def read(self, frame: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The call's whole conversation, oldest first; keeps what the frame says to keep.

        ``None`` when the frame names an item not kept here: the two ends are out of step, and
        only a new connection (both ends empty) puts them back in step.
        """
        for session_id in frame.get("forgetSessions") or ():
            self._sessions.pop(session_id, None)
        session_id = frame["sessionId"]
        ids = frame.get("conversationIds")
        if ids is None:
            self._sessions.pop(session_id, None)
            return frame["conversation"]
        kept = self._sessions.setdefault(session_id, {})
        for item in frame["conversation"]:
            kept[item["id"]] = item
        conversation: list[dict[str, Any]] = []
        for item_id in ids:
            item = kept.get(item_id)
            if item is None:
                del self._sessions[session_id]
                return None
            conversation.append(item)
        if len(kept) != len(ids):
            # The items that left the window are the oldest: keep exactly those named.
            self._sessions[session_id] = {item["id"]: item for item in conversation}
        return conversation

    def clear(self) -> None:
        """Forgets everything (a new connection)."""
        self._sessions.clear()
