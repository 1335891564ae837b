"""Conditional approval on a worker (``approval={"title": ..., "when": ...}``), without a network:
``when`` decides here, a yes asks the server (``hosted.approval``) and the tool runs only on its
``allowed`` ack; redeliveries, reconnects, interrupts and a ``when`` that raises. The same against
a real server: test_client.py."""

import asyncio
import enum
import logging

import pytest

from patchbay import InMemoryIdempotencyStore, Tools, get_tool_call_context
from patchbay.hosted import HostedAgent, HostedCalls


class Kind(enum.Enum):
    draft = "draft"
    live = "live"


def call(call_id="c1", attempt=1, **arguments):
    return {
        "type": "hosted.call",
        "callId": call_id,
        "attempt": attempt,
        "agent": "a",
        "sessionId": "s1",
        "tool": arguments.pop("tool", "delete"),
        "arguments": arguments,
        "user": {"id": "u1"},
        "conversation": [],
        "timeoutMs": 30_000,
    }


def make(when):
    sent, runs, asked = [], [], []
    tools = Tools()

    def check(args, ctx):
        asked.append((args, ctx.session_id, ctx.attempt))
        return when(args)

    # Not interruptible: an interrupt would not stop it once it runs.
    @tools.register(description="Delete a thing", approval={"title": "Delete {what}?", "when": check})
    async def delete(what: str, kind: Kind = Kind.draft) -> str:
        runs.append((what, get_tool_call_context().attempt))
        return f"deleted {what}"

    async def send(frame, durable):
        sent.append(frame)

    hosted = HostedCalls(send, InMemoryIdempotencyStore(), lambda: 5 * 1024 * 1024)
    hosted.agents["a"] = HostedAgent("a", {t.name: t for t in tools.list()})
    return hosted, sent, runs, asked


def results(sent):
    return [(f["callId"], f["attempt"], f["result"]["outcome"]) for f in sent if f["type"] == "hosted.result"]


def questions(sent):
    return [(f["callId"], f["attempt"]) for f in sent if f["type"] == "hosted.approval"]


async def asked_for(sent, n=1):
    for _ in range(100):
        if len(questions(sent)) >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"no hosted.approval in {sent}")


def test_the_spec_says_conditional_and_keeps_when_here():
    tools = Tools()

    @tools.register(description="d", approval={"title": "Go?", "when": lambda args: True})
    async def go() -> str:
        return "ok"

    tool = tools.get("go")
    assert tool.spec["approval"] == {"title": "Go?", "conditional": True}
    assert callable(tool.approval_when)
    with pytest.raises(ValueError, match=r"tool bad: approval.when must be a function; got str"):
        tools.register(lambda: None, name="bad", description="d", approval={"title": "Go?", "when": "yes"})


def test_a_call_when_says_no_to_runs_without_asking():
    async def scenario():
        hosted, sent, runs, asked = make(lambda args: args["kind"] is not Kind.draft)
        await hosted.call(call(what="notes"))
        await hosted.idle()
        return sent, runs, asked

    sent, runs, asked = asyncio.run(scenario())
    assert questions(sent) == []
    assert results(sent) == [("c1", 1, "completed")]
    assert runs == [("notes", 1)]
    # `when` got the arguments as the function does (the default filled in, the Enum member) and the call.
    assert asked == [({"what": "notes", "kind": Kind.draft}, "s1", 1)]


def test_a_yes_asks_the_server_and_runs_only_once_allowed():
    async def scenario():
        hosted, sent, runs, _ = make(lambda args: True)
        await hosted.call(call(what="prod", kind="live"))
        await asked_for(sent)
        await asyncio.sleep(0.02)
        ran_before = list(runs)
        # An ack for another delivery is not this question's answer.
        hosted.approval_ack({"callId": "c1", "attempt": 2, "outcome": "allowed"})
        await asyncio.sleep(0.02)
        ran_after_stale = list(runs)
        hosted.approval_ack({"callId": "c1", "attempt": 1, "outcome": "allowed"})
        await hosted.idle()
        return sent, runs, ran_before, ran_after_stale

    sent, runs, ran_before, ran_after_stale = asyncio.run(scenario())
    assert questions(sent) == [("c1", 1)]
    assert ran_before == [] and ran_after_stale == []
    assert runs == [("prod", 1)]
    assert results(sent) == [("c1", 1, "completed")]


@pytest.mark.parametrize(
    ("outcome", "ended", "code"),
    [("declined", "declined", "declined"), ("expired", "approval_expired", "approval_expired"), ("cancelled", "cancelled", "cancelled")],
)
def test_a_question_that_does_not_allow_ends_the_call_without_running_it(outcome, ended, code):
    async def scenario():
        hosted, sent, runs, _ = make(lambda args: True)
        await hosted.call(call(what="prod"))
        await asked_for(sent)
        hosted.approval_ack({"callId": "c1", "attempt": 1, "outcome": outcome, "reason": "not today"})
        await hosted.idle()
        return sent, runs

    sent, runs = asyncio.run(scenario())
    assert runs == []
    result = sent[-1]["result"]
    assert (result["outcome"], result["error"]["code"]) == (ended, code)
    assert result["content"]["text"] == f"The tool delete did not run: its approval ended {outcome}."
    assert result["error"]["message"] == f"approval {outcome}: not today"


def test_a_when_that_raises_fails_the_call_and_is_logged(caplog):
    def broken(args):
        raise KeyError("limits")

    async def scenario():
        hosted, sent, runs, _ = make(broken)
        with caplog.at_level(logging.ERROR, logger="patchbay.dispatch"):
            await hosted.call(call(what="prod"))
            await hosted.idle()
        return sent, runs

    sent, runs = asyncio.run(scenario())
    assert runs == [] and questions(sent) == []
    result = sent[-1]["result"]
    assert (result["outcome"], result["error"]["code"]) == ("failed", "approval_check_failed")
    assert result["content"]["text"] == "The tool delete did not run: whether to ask the user could not be decided."
    assert "approval.when of tool delete threw for hosted call c1 of session s1" in caplog.text
    assert "KeyError: 'limits'" in caplog.text


def test_an_async_when_and_a_when_without_context_both_decide():
    async def scenario():
        sent, runs = [], []
        tools = Tools()

        async def later(args, ctx):
            await asyncio.sleep(0.01)
            return args["n"] > 1

        @tools.register(description="d", approval={"title": "Go?", "when": later})
        async def a(n: int) -> str:
            runs.append(("a", n))
            return "a"

        @tools.register(description="d", approval={"title": "Go?", "when": lambda args: args["n"] > 1})
        async def b(n: int) -> str:
            runs.append(("b", n))
            return "b"

        async def send(frame, durable):
            sent.append(frame)

        hosted = HostedCalls(send, InMemoryIdempotencyStore(), lambda: 5 * 1024 * 1024)
        hosted.agents["a"] = HostedAgent("a", {t.name: t for t in tools.list()})
        for i, (tool, n) in enumerate([("a", 1), ("a", 2), ("b", 1), ("b", 2)]):
            await hosted.call(call(f"c{i}", tool=tool, n=n))
        await asked_for(sent, 2)
        await asyncio.sleep(0.02)
        return sent, runs, hosted

    sent, runs, hosted = asyncio.run(scenario())
    assert sorted(questions(sent)) == [("c1", 1), ("c3", 1)]
    assert sorted(runs) == [("a", 1), ("b", 1)]


def test_an_interrupt_while_the_question_waits_ends_a_tool_that_is_not_interruptible():
    async def scenario():
        hosted, sent, runs, _ = make(lambda args: True)
        await hosted.call(call(what="prod"))
        await asked_for(sent)
        await hosted.cancel({"callId": "c1", "reason": "interrupted", "attempt": 1})
        await hosted.idle()
        # A late ack changes nothing.
        hosted.approval_ack({"callId": "c1", "attempt": 1, "outcome": "allowed"})
        await asyncio.sleep(0.02)
        return sent, runs

    sent, runs = asyncio.run(scenario())
    assert runs == []
    assert results(sent) == [("c1", 1, "cancelled")]
    assert sent[-1]["result"]["content"]["text"] == "The call was cancelled: the user interrupted."


def test_a_delivery_while_the_question_waits_asks_again_and_the_tool_sees_the_newest_attempt():
    async def scenario():
        hosted, sent, runs, _ = make(lambda args: True)
        await hosted.call(call(what="prod"))
        await asked_for(sent)
        await hosted.call(call(what="prod", attempt=2))
        await asked_for(sent, 2)
        # The first delivery's answer no longer counts; the newest one's does.
        hosted.approval_ack({"callId": "c1", "attempt": 1, "outcome": "declined"})
        await asyncio.sleep(0.02)
        hosted.approval_ack({"callId": "c1", "attempt": 2, "outcome": "allowed"})
        await hosted.idle()
        return sent, runs

    sent, runs = asyncio.run(scenario())
    assert questions(sent) == [("c1", 1), ("c1", 2)]
    assert runs == [("prod", 2)]
    assert results(sent) == [("c1", 2, "completed")]


def test_a_reconnect_asks_the_waiting_questions_again():
    async def scenario():
        hosted, sent, runs, _ = make(lambda args: True)
        await hosted.call(call(what="prod"))
        await asked_for(sent)
        await hosted.reattached()
        again = questions(sent)
        hosted.approval_ack({"callId": "c1", "attempt": 1, "outcome": "allowed"})
        await hosted.idle()
        await hosted.reattached()  # nothing waits any more
        return sent, runs, again

    sent, runs, again = asyncio.run(scenario())
    assert again == [("c1", 1), ("c1", 1)]
    assert questions(sent) == again
    assert runs == [("prod", 1)]


def test_stopping_the_worker_ends_a_waiting_question():
    async def scenario():
        hosted, sent, runs, _ = make(lambda args: True)
        await hosted.call(call(what="prod"))
        await asked_for(sent)
        hosted.cancel_all()
        await hosted.idle()
        return sent, runs

    sent, runs = asyncio.run(scenario())
    assert runs == []
    assert results(sent) == [("c1", 1, "cancelled")]
