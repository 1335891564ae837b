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


class SlowStore:
    """An idempotency store over a slow link: `set` takes a while before the result is in."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.entries: dict = {}

    async def get(self, key):
        return self.entries.get(key)

    async def set(self, key, value):
        await asyncio.sleep(self.delay)
        self.entries[key] = value


def test_a_call_delivered_again_while_its_result_is_being_stored_does_not_run_again():
    async def scenario():
        sent, runs = [], []
        tools = Tools()

        @tools.register(description="quick")
        async def quick() -> str:
            runs.append(get_tool_call_context().id)
            return "done"

        async def send(frame, durable):
            sent.append(frame)

        hosted = HostedCalls(send, SlowStore(0.2), lambda: 5 * 1024 * 1024)
        hosted.agents["a"] = HostedAgent("a", {t.name: t for t in tools.list()})
        await hosted.call(call(tool="quick"))
        await asyncio.sleep(0.05)  # the tool has ended; its result is on its way into the store
        assert "c1" in hosted.running  # so a hello after a reconnect still names it
        await hosted.call(call(tool="quick", attempt=2))
        await hosted.idle()
        await hosted.call(call(tool="quick", attempt=3))
        return sent, runs

    sent, runs = asyncio.run(scenario())
    assert runs == ["c1"]
    assert results(sent) == [("c1", 2, "completed"), ("c1", 3, "completed")]


class BrokenStore:
    async def get(self, key):
        raise ConnectionError("redis is down")

    async def set(self, key, value):
        raise ConnectionError("redis is down")


def test_a_store_that_fails_does_not_lose_the_result(caplog):
    async def scenario():
        sent = []

        async def send(frame, durable):
            sent.append(frame)

        hosted = HostedCalls(send, BrokenStore(), lambda: 5 * 1024 * 1024)
        hosted.agents["a"] = make()[0].agents["a"]
        await hosted.call(call(ms=1))
        await hosted.idle()
        await hosted.call(call(ms=1, attempt=2))  # answered from memory
        await hosted.idle()
        return sent

    sent = asyncio.run(scenario())
    assert results(sent) == [("c1", 1, "completed"), ("c1", 2, "completed")]
    assert "failed to keep the result of hosted call c1" in caplog.text


def failing_hosted(error: BaseException):
    sent = []
    tools = Tools()

    @tools.register(description="fails")
    async def fails() -> str:
        raise error

    async def send(frame, durable):
        sent.append(frame)

    hosted = HostedCalls(send, InMemoryIdempotencyStore(), lambda: 5 * 1024 * 1024)
    hosted.agents["a"] = HostedAgent("a", {t.name: t for t in tools.list()})
    return hosted, sent


def test_a_timeout_the_tool_raises_is_its_failure_and_is_logged(caplog):
    async def scenario():
        hosted, sent = failing_hosted(TimeoutError("rates.internal did not answer in 3 s"))
        await hosted.call(call(tool="fails"))
        await hosted.idle()
        return sent

    result = asyncio.run(scenario())[-1]["result"]
    assert result["outcome"] == "failed"
    assert result["content"]["text"] == "The tool fails failed: rates.internal did not answer in 3 s"
    assert "hosted call c1 (fails) of session s1 failed" in caplog.text
    assert "TimeoutError: rates.internal" in caplog.text


def test_the_worker_s_own_bound_times_a_call_out(monkeypatch):
    monkeypatch.setattr("patchbay.hosted.BACKSTOP_MARGIN", 0.0)

    async def scenario():
        hosted, sent, runs = make()
        frame = call(ms=5_000)
        frame["timeoutMs"] = 50
        await hosted.call(frame)
        await hosted.idle()
        return sent

    result = asyncio.run(scenario())[-1]["result"]
    assert (result["outcome"], result["error"]["code"]) == ("timed_out", "timed_out")


def test_idle_waits_for_calls_that_arrive_while_it_waits():
    async def scenario():
        hosted, sent, runs = make()
        await hosted.call(call("c1", ms=50))
        waiting = asyncio.ensure_future(hosted.idle())
        await asyncio.sleep(0.02)
        await hosted.call(call("c2", ms=100))
        await waiting
        return sent

    sent = asyncio.run(scenario())
    assert results(sent) == [("c1", 1, "completed"), ("c2", 1, "completed")]


def test_a_running_call_sees_the_attempt_of_a_delivery_that_joined_it():
    async def scenario():
        sent, seen = [], []
        tools = Tools()

        @tools.register(description="reads its attempt late")
        async def late() -> str:
            await asyncio.sleep(0.05)
            seen.append(get_tool_call_context().attempt)
            return "ok"

        async def send(frame, durable):
            sent.append(frame)

        hosted = HostedCalls(send, InMemoryIdempotencyStore(), lambda: 5 * 1024 * 1024)
        hosted.agents["a"] = HostedAgent("a", {t.name: t for t in tools.list()})
        await hosted.call(call(tool="late"))
        await asyncio.sleep(0.01)
        await hosted.call(call(tool="late", attempt=2))
        await hosted.idle()
        return sent, seen

    sent, seen = asyncio.run(scenario())
    assert seen == [2]
    assert results(sent) == [("c1", 2, "completed")]
