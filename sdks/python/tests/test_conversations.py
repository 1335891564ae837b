"""The conversations a worker keeps between hosted calls, and what its hello asks for."""

import pytest

from patchbay import ConversationCacheLimits, Dispatch
from patchbay.conversations import KeptConversations


def message(item_id, text=None):
    return {"type": "message", "id": item_id, "role": "user", "text": text or item_id, "status": "completed", "createdAt": 1}


def call(session_id, conversation, **extra):
    return {
        "type": "hosted.call",
        "callId": "c1",
        "attempt": 1,
        "agent": "a",
        "sessionId": session_id,
        "tool": "t",
        "arguments": {},
        "user": {"id": "u1"},
        "conversation": conversation,
        "timeoutMs": 1_000,
        **extra,
    }


def test_rebuilds_the_whole_conversation_from_the_items_sent_and_those_kept():
    kept = KeptConversations()
    m1, m2, m3 = message("m1"), message("m2"), message("m3")
    assert kept.read(call("s1", [m1, m2], conversationIds=["m1", "m2"])) == [m1, m2]
    m2b = message("m2", "edited")
    assert kept.read(call("s1", [m3, m2b], conversationIds=["m1", "m2", "m3"])) == [m1, m2b, m3]
    # Nothing sent, the window slid: m1 leaves on this side too.
    assert kept.read(call("s1", [], conversationIds=["m2", "m3"])) == [m2b, m3]
    assert kept.read(call("s1", [], conversationIds=["m1"])) is None
    assert len(kept) == 0


def test_forgets_what_the_frame_says_and_a_whole_frame_drops_its_session():
    kept = KeptConversations()
    kept.read(call("s1", [message("a")], conversationIds=["a"]))
    kept.read(call("s2", [message("b")], conversationIds=["b"]))
    assert kept.read(call("s3", [message("c")], conversationIds=["c"], forgetSessions=["s1"])) == [message("c")]
    assert kept.read(call("s1", [], conversationIds=["a"])) is None
    assert kept.read(call("s2", [message("d")])) == [message("d")]
    assert kept.read(call("s2", [], conversationIds=["b"])) is None
    kept.read(call("s4", [message("e")], conversationIds=["e"]))
    kept.clear()
    assert len(kept) == 0


def test_the_hello_asks_for_the_limits_or_nothing():
    options = {"url": "http://127.0.0.1:1", "api_key": "k", "secret": "s"}
    assert Dispatch(1, **options)._hello()["conversationCache"] == {"sessions": 1_000, "bytes": 64 * 1024 * 1024}
    own = Dispatch(1, conversation_cache=ConversationCacheLimits(sessions=5), **options)
    assert own._hello()["conversationCache"] == {"sessions": 5, "bytes": 64 * 1024 * 1024}
    assert "conversationCache" not in Dispatch(1, conversation_cache=None, **options)._hello()


@pytest.mark.parametrize("limits", [{"sessions": 0}, {"sessions": 1.5}, {"bytes": -1}, {"sessions": True}])
def test_limits_out_of_range_name_the_field(limits):
    with pytest.raises(ValueError, match=r"conversation_cache\.(sessions|bytes) must be"):
        ConversationCacheLimits(**limits)
