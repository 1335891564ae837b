"""Hosted calls without a network: redelivery, cancel, holds and their acknowledgement."""

import asyncio

import pytest

from patchbay import InMemoryIdempotencyStore, Tools, get_tool_call_context
from patchbay.hosted import HostedAgent, HostedCalls


def call(call_id="c1", tool="slow", attempt=1, **arguments):
    return {
        "type": "hosted.call",
        "callId": call_id,
        "attempt": attempt,
        "agent": "a",
        "sessionId": "s1",
        "tool": tool,
        "arguments": arguments,
        "user": {"id": "u1"},
        "conversation": [],
        "timeoutMs": 30_000,
    }


def make():
    sent = []
    runs = []
    tools = Tools()

    @tools.register(description="slow", interruptible=True)
    async def slow(ms: int = 50) -> str:
        runs.append(get_tool_call_context().id)
        await asyncio.sleep(ms / 1000)
        return "done"

    @tools.register(description="holds", interruptible=True)
    async def holds() -> str:
        await get_tool_call_context().disallow_interruptions()
        await asyncio.sleep(0.05)
        return "held"

    async def send(frame, durable):
        sent.append(frame)

    hosted = HostedCalls(send, InMemoryIdempotencyStore(), lambda: 5 * 1024 * 1024)
    hosted.agents["a"] = HostedAgent("a", {t.name: t for t in tools.list()})
    return hosted, sent, runs


def results(sent):
    return [(f["callId"], f["attempt"], f["result"]["outcome"]) for f in sent if f["type"] == "hosted.result"]


def test_a_call_delivered_again_runs_once_and_answers_the_newest_attempt():
    async def scenario():
        hosted, sent, runs = make()
        await hosted.call(call())
        await hosted.call(call(attempt=2))
        await hosted.idle()
        await hosted.call(call(attempt=3))  # finished: answered from the store
        return sent, runs

    sent, runs = asyncio.run(scenario())
    assert runs == ["c1"]
    assert results(sent) == [("c1", 2, "completed"), ("c1", 3, "completed")]


def test_a_cancel_before_the_tool_started_still_answers():
    async def scenario():
        hosted, sent, runs = make()
        await hosted.call(call(ms=5_000))
        await hosted.cancel({"callId": "c1", "reason": "interrupted", "attempt": 1})
        await hosted.idle()
        return sent, runs

    sent, runs = asyncio.run(scenario())
    assert results(sent) == [("c1", 1, "cancelled")]
    assert runs == []


def test_unknown_tools_and_bad_arguments_are_results():
    async def scenario():
        hosted, sent, _ = make()
        await hosted.call(call("c2", tool="nope"))
        await hosted.call(call("c3", ms="soon"))
        return sent

    sent = asyncio.run(scenario())
    assert results(sent) == [("c2", 1, "unknown_tool"), ("c3", 1, "invalid_arguments")]
    assert "ms: expected integer" in sent[1]["result"]["content"]["text"]


@pytest.mark.parametrize("accepted", [True, False])
def test_a_hold_waits_for_its_acknowledgement(accepted):
    async def scenario():
        hosted, sent, _ = make()
        await hosted.call(call("c4", tool="holds"))
        for _ in range(50):
            if any(f["type"] == "hosted.hold" for f in sent):
                break
            await asyncio.sleep(0.01)
        assert sent[-1] == {"type": "hosted.hold", "callId": "c4", "attempt": 1}
        hosted.hold_ack({"callId": "c4", "attempt": 1, "accepted": accepted, "reason": "cancelling"})
        await hosted.idle()
        return sent

    sent = asyncio.run(scenario())
    result = sent[-1]["result"]
    if accepted:
        assert (result["outcome"], result.get("held")) == ("completed", True)
    else:
        assert result["outcome"] == "cancelled"
        assert "cancelling" in result["error"]["message"]


def test_a_cancel_while_the_hold_waits_refuses_the_hold():
    async def scenario():
        hosted, sent, _ = make()
        await hosted.call(call("c5", tool="holds"))
        await asyncio.sleep(0.02)
        await hosted.cancel({"callId": "c5", "reason": "interrupted", "attempt": 1})
        await hosted.idle()
        return sent

    sent = asyncio.run(scenario())
    # The tool stops before its change: the call answers cancelled, and holds nothing.
    assert results(sent) == [("c5", 1, "cancelled")]
    assert "held" not in sent[-1]["result"]
