"""Hosted tool calls on a worker: run each call once per call id, answer redeliveries from the
running call or the idempotency store, cancel on request, hold, and turn every outcome into a
protocol ``ToolResult``. Internal to :class:`patchbay.Dispatch`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .tools import CallNotHeld, Tool, ToolCallContext, ToolError, User, _check_approval, _set_context, to_output

__all__ = ["HostedAgent", "IdempotencyStore", "InMemoryIdempotencyStore"]

log = logging.getLogger("patchbay.dispatch")

_CANCEL_TEXT = {
    "interrupted": "The call was cancelled: the user interrupted.",
    "timed_out": "The call was cancelled: it ran out of time.",
    "session_closed": "The call was cancelled: the session closed.",
    "stopped": "The call was cancelled: the worker stopped.",
}


class IdempotencyStore(Protocol):
    """Where a worker keeps finished results by call id, so a call delivered again is answered
    without running twice. Share one store (Redis, a database) between worker processes to
    cover a call redelivered to another instance."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def set(self, key: str, value: dict[str, Any]) -> None: ...


class InMemoryIdempotencyStore:
    """The default store: the most recent ``max_entries`` results of this process."""

    def __init__(self, max_entries: int = 10_000) -> None:
        self._entries: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._max = max_entries

    async def get(self, key: str) -> dict[str, Any] | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    async def set(self, key: str, value: dict[str, Any]) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)


@dataclass
class HostedAgent:
    """An agent whose tools this worker hosts."""

    name: str
    tools: dict[str, Tool]
    tool_timeout: float | None = None
    max_concurrent_calls: int = 16
    sessions: dict[str, asyncio.Semaphore] = field(default_factory=dict)


@dataclass
class _Running:
    call_id: str
    tool: str
    attempt: int
    interruptible: bool
    task: asyncio.Task[None] | None = None
    """The tool's own run: the one task a cancel stops (the call's task always reports)."""
    run: asyncio.Task[Any] | None = None
    held: bool = False
    cancel_reason: str | None = None
    expired: bool = False
    """The worker's own bound (the server's timeout plus 5 s) ran out: the server is not there to cancel it."""
    hold_reply: asyncio.Future[dict[str, Any]] | None = None
    approval_reply: asyncio.Future[dict[str, Any]] | None = None
    """Set while a conditional approval this worker asked for (``hosted.approval``) waits for its ack."""
    context: ToolCallContext | None = None


BACKSTOP_MARGIN = 5.0
"""Seconds past the server's timeout after which a worker stops a call on its own."""
_ANSWERED_KEPT = 1_000
"""How many recent results a worker keeps in memory, whatever its idempotency store."""


def _error_code(error: BaseException) -> str:
    """The ``code`` attribute of an exception when it is a non-empty string, else ``tool_error``."""
    code = getattr(error, "code", None)
    return code if isinstance(code, str) and code else "tool_error"


def _failed(outcome: str, text: str, code: str, message: str | None = None) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "content": {"text": text, "images": []},
        "error": {"code": code, "message": message or text},
    }


Send = Callable[[dict[str, Any], bool], Awaitable[None]]


class _Ended(Exception):
    """The call ended before its tool ran (its conditional approval did not allow it)."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result["outcome"])
        self.result = result


class HostedCalls:
    """The calls this worker runs for the agents it hosts."""

    def __init__(self, send: Send, store: IdempotencyStore, max_frame_bytes: Callable[[], int]) -> None:
        self._send = send
        self._store = store
        self._max_frame_bytes = max_frame_bytes
        self.agents: dict[str, HostedAgent] = {}
        self.running: dict[str, _Running] = {}
        self._tool_limits: dict[tuple[str, str], asyncio.Semaphore] = {}
        # Results of the most recent calls, kept here the moment they are known: a call delivered
        # again after its result left, when the store failed to keep it (Redis down), is answered
        # from here instead of running again.
        self._answered: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._idle_waiters: list[asyncio.Future[None]] = []

    def specs(self) -> list[dict[str, Any]]:
        hosts = []
        for agent in self.agents.values():
            host: dict[str, Any] = {"agent": agent.name, "tools": [t.spec for t in agent.tools.values()]}
            if agent.tool_timeout is not None:
                host["toolTimeoutMs"] = max(1, round(agent.tool_timeout * 1000))
            hosts.append(host)
        return hosts

    async def call(self, frame: dict[str, Any]) -> None:
        call_id, attempt = frame["callId"], frame["attempt"]
        running = self.running.get(call_id)
        if running:
            # Delivered again while it runs here: the result will answer the newest attempt.
            running.attempt = max(running.attempt, attempt)
            if running.context is not None:
                running.context.attempt = running.attempt
            if running.held:
                await self._send({"type": "hosted.hold", "callId": call_id, "attempt": running.attempt}, True)
            if running.approval_reply is not None and not running.approval_reply.done():
                # The question is asked again for the new delivery: the server answers the same one.
                await self._send_approval(running)
            return
        stored = await self._stored(call_id)
        if stored is not None:
            await self._result(call_id, attempt, stored)
            return
        agent = self.agents.get(frame["agent"])
        tool = agent.tools.get(frame["tool"]) if agent else None
        if agent is None or tool is None:
            result = _failed(
                "unknown_tool",
                f"The tool {frame['tool']} is not hosted for agent {frame['agent']} on this worker.",
                "unknown_tool",
            )
            await self._result(call_id, attempt, result)
            return
        arguments, problem = tool.check_arguments(frame["arguments"])
        if problem is not None:
            result = _failed(
                "invalid_arguments",
                f"Invalid arguments for {tool.name}:\n{problem}",
                "invalid_arguments",
            )
            self._remember(call_id, result)
            await self._keep(call_id, result)
            await self._result(call_id, attempt, result)
            return
        entry = _Running(call_id, tool.name, attempt, tool.interruptible)
        self.running[call_id] = entry
        entry.task = asyncio.create_task(self._run(entry, agent, tool, frame, arguments))

    async def cancel(self, frame: dict[str, Any]) -> None:
        call_id, reason = frame["callId"], frame["reason"]
        running = self.running.get(call_id)
        if running is None:
            # Finished already: the cancel is answered with the result it had.
            stored = await self._stored(call_id)
            if stored is not None:
                await self._result(call_id, frame.get("attempt", 1), stored)
            return
        if running.approval_reply is not None and not running.approval_reply.done():
            # Still waiting for the user: the call has not run, so any cancel ends it, an
            # interrupt of a tool that is not interruptible too.
            running.cancel_reason = reason
            running.approval_reply.set_result({"outcome": "cancelled"})
            return
        if reason == "interrupted" and (not running.interruptible or running.held):
            return  # it runs on; its real result answers
        running.cancel_reason = reason
        if running.hold_reply and not running.hold_reply.done():
            running.hold_reply.set_result({"accepted": False, "reason": f"cancel under way ({reason})"})
        if running.run:
            running.run.cancel()

    def hold_ack(self, frame: dict[str, Any]) -> None:
        running = self.running.get(frame["callId"])
        if running and running.hold_reply and not running.hold_reply.done():
            running.hold_reply.set_result(frame)

    def approval_ack(self, frame: dict[str, Any]) -> None:
        """``hosted.approval.ack``: how the question this worker asked ended, for the attempt
        that asked (an ack for an older delivery is not this call's answer any more)."""
        running = self.running.get(frame["callId"])
        reply = running.approval_reply if running else None
        if running and reply is not None and not reply.done() and frame["attempt"] == running.attempt:
            reply.set_result(frame)

    async def reattached(self) -> None:
        """After a reconnect: asks again the questions still waiting (an ack sent to the old socket
        was lost with it; the server answers again with the same question's outcome)."""
        for running in list(self.running.values()):
            if running.approval_reply is not None and not running.approval_reply.done():
                await self._send_approval(running)

    def cancel_all(self, reason: str = "stopped") -> None:
        for running in self.running.values():
            running.cancel_reason = running.cancel_reason or reason
            if running.approval_reply is not None and not running.approval_reply.done():
                running.approval_reply.set_result({"outcome": "cancelled"})
            if running.run:
                running.run.cancel()

    async def idle(self) -> None:
        """Returns once no call runs, counting calls that arrive while it waits (a draining
        worker still runs the hosted calls the server sends it)."""
        while self.running:
            waiter = asyncio.get_running_loop().create_future()
            self._idle_waiters.append(waiter)
            await waiter

    def _left(self, call_id: str) -> None:
        self.running.pop(call_id, None)
        if self.running:
            return
        waiters, self._idle_waiters = self._idle_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _stored(self, call_id: str) -> dict[str, Any] | None:
        answered = self._answered.get(call_id)
        if answered is not None:
            return answered
        try:
            return await self._store.get(call_id)
        except Exception:
            log.exception("the idempotency store failed to read hosted call %s; running it", call_id)
            return None

    def _remember(self, call_id: str, result: dict[str, Any]) -> None:
        self._answered[call_id] = result
        self._answered.move_to_end(call_id)
        while len(self._answered) > _ANSWERED_KEPT:
            self._answered.popitem(last=False)

    async def _keep(self, call_id: str, result: dict[str, Any]) -> None:
        try:
            await self._store.set(call_id, result)
        except Exception:
            # The result still answers; only a redelivery to another worker could run it again.
            log.exception("the idempotency store failed to keep the result of hosted call %s", call_id)

    async def _result(self, call_id: str, attempt: int, result: dict[str, Any]) -> None:
        await self._send({"type": "hosted.result", "callId": call_id, "attempt": attempt, "result": result}, True)

    async def _send_approval(self, entry: _Running) -> None:
        await self._send({"type": "hosted.approval", "callId": entry.call_id, "attempt": entry.attempt}, True)

    async def _approve(
        self, entry: _Running, tool: Tool, arguments: dict[str, Any], context: ToolCallContext
    ) -> dict[str, Any] | None:
        """A conditional approval (the tool's ``when``): ``None`` when the call may run, else the
        result it ended with. ``when`` sees the call without the ways to talk back, since the call
        has not started; a yes asks the server (``hosted.approval``) and waits for its ack."""
        assert tool.approval_when is not None
        asking = dataclasses.replace(context, _update=None, _say=None, _hold=None)
        answer: dict[str, Any] = {}
        try:
            asks = await _check_approval(tool.approval_when, arguments, asking)
        except Exception as error:  # the developer's log has it whole; the model a short sentence
            log.exception(
                "approval.when of tool %s threw for hosted call %s of session %s",
                tool.name,
                entry.call_id,
                context.session_id,
            )
            text = f"The tool {tool.name} did not run: whether to ask the user could not be decided."
            return _failed("failed", text, "approval_check_failed", repr(error))
        if entry.cancel_reason is None and asks:
            entry.approval_reply = asyncio.get_running_loop().create_future()
            await self._send_approval(entry)
            answer = await entry.approval_reply
            outcome = str(answer.get("outcome", "cancelled"))
        else:
            outcome = "allowed"
        if entry.cancel_reason is not None:
            reason = entry.cancel_reason
            return _failed("cancelled", _CANCEL_TEXT.get(reason, f"The call was cancelled ({reason})."), "cancelled")
        if outcome == "allowed":
            return None
        ended, code = {
            "declined": ("declined", "declined"),
            "expired": ("approval_expired", "approval_expired"),
            "cancelled": ("cancelled", "cancelled"),
        }.get(outcome, ("declined", f"approval_{outcome}"))
        reason = answer.get("reason")
        message = f"approval {outcome}" + (f": {reason}" if reason else "")
        return _failed(ended, f"The tool {tool.name} did not run: its approval ended {outcome}.", code, message)

    async def _hold(self, entry: _Running) -> None:
        if entry.cancel_reason is not None:
            raise CallNotHeld(entry.call_id, f"a cancel is under way ({entry.cancel_reason})")
        if entry.held:
            return
        entry.hold_reply = asyncio.get_running_loop().create_future()
        await self._send({"type": "hosted.hold", "callId": entry.call_id, "attempt": entry.attempt}, True)
        try:
            reply = await asyncio.wait_for(asyncio.shield(entry.hold_reply), 10)
        except asyncio.TimeoutError:
            raise CallNotHeld(entry.call_id, "the server did not acknowledge the hold within 10 s") from None
        if not reply.get("accepted"):
            raise CallNotHeld(entry.call_id, str(reply.get("reason") or "the server refused the hold"))
        entry.held = True

    async def _run(
        self, entry: _Running, agent: HostedAgent, tool: Tool, frame: dict[str, Any], arguments: dict[str, Any]
    ) -> None:
        call_id = entry.call_id
        user = frame["user"]

        async def update(text: str) -> None:
            await self._send({"type": "hosted.progress", "callId": call_id, "text": text}, False)

        async def say(text: str) -> None:
            await self._send({"type": "hosted.say", "callId": call_id, "text": text}, False)

        context = ToolCallContext(
            id=call_id,
            name=tool.name,
            session_id=frame["sessionId"],
            user=User(id=user["id"], name=user.get("name")),
            attempt=frame["attempt"],
            conversation=frame["conversation"],
            _update=update,
            _say=say,
            _hold=lambda: self._hold(entry),
        )
        entry.context = context
        # The server's clock decides when a call times out (it sends hosted.cancel then); this
        # bound only stops a call that outlives every message from it.
        backstop = frame["timeoutMs"] / 1000 + BACKSTOP_MARGIN
        session_limit = agent.sessions.setdefault(frame["sessionId"], asyncio.Semaphore(agent.max_concurrent_calls))
        tool_limit = self._tool_limits.setdefault(
            (agent.name, tool.name), asyncio.Semaphore(tool.concurrency or 1_000_000)
        )

        def expire() -> None:
            entry.expired = True
            if entry.run:
                entry.run.cancel()

        async def invoke() -> Any:
            _set_context(context)
            async with session_limit, tool_limit:
                # A timer of its own, not `wait_for`: a TimeoutError the tool raises itself (an
                # HTTP client's) is the tool's failure, not this bound.
                timer = asyncio.get_running_loop().call_later(backstop, expire)
                try:
                    return await tool.invoke(arguments)
                finally:
                    timer.cancel()

        # Asked before the call takes a slot of its session or tool, as the call has not started.
        ended = None
        if tool.approval_when is not None and entry.cancel_reason is None:
            ended = await self._approve(entry, tool, arguments, context)
        try:
            if ended is not None:
                raise _Ended(ended)
            if entry.cancel_reason is not None:
                raise asyncio.CancelledError  # cancelled before it could start
            # The tool runs in a task of its own, so a cancel stops the tool and never the task
            # that reports its result (a task cancelled before it starts would report nothing).
            entry.run = asyncio.create_task(invoke())
            # Its outcome is read below; a cancel racing it must not leave an unread exception.
            entry.run.add_done_callback(lambda t: t.cancelled() or t.exception())
            value = await asyncio.shield(entry.run)
            output = to_output(value).to_wire()
            result: dict[str, Any] = {"outcome": "completed", "content": output}
        except asyncio.CancelledError:
            if entry.expired and entry.cancel_reason is None:
                result = _failed("timed_out", f"The tool {tool.name} ran out of time.", "timed_out")
            else:
                reason = entry.cancel_reason or "stopped"
                result = _failed("cancelled", _CANCEL_TEXT.get(reason, f"The call was cancelled ({reason})."), "cancelled")
        except _Ended as ending:
            result = ending.result
        except CallNotHeld as error:
            reason = entry.cancel_reason or "interrupted"
            result = _failed("cancelled", _CANCEL_TEXT.get(reason, str(error)), "cancelled", str(error))
        except ToolError as error:
            result = _failed("failed", f"The tool {tool.name} failed: {error.message}", error.code, error.message)
        except Exception as error:  # every error of a tool becomes a result the model can read
            # The developer's log has it whole, with the session and the call. (The server blanks
            # credentials in a failed result's words before the model or a client sees them.)
            log.exception("hosted call %s (%s) of session %s failed", call_id, tool.name, frame["sessionId"])
            result = _failed("failed", f"The tool {tool.name} failed: {error}", _error_code(error), repr(error))
        if entry.held:
            result["held"] = True
        result = self._bounded(tool.name, result)
        if len(agent.sessions) > 1_000:
            agent.sessions = {k: v for k, v in agent.sessions.items() if v.locked()}
        # It stays in `running` until its result is sent: a delivery of it again meanwhile joins
        # it (the result answers the newest attempt), and a hello lists it. The memo covers a
        # store that failed to keep it.
        self._remember(call_id, result)
        try:
            await self._keep(call_id, result)
            await self._result(call_id, entry.attempt, result)
        finally:
            self._left(call_id)

    def _bounded(self, tool: str, result: dict[str, Any]) -> dict[str, Any]:
        """A result whose frame would be over the server's limit becomes a failure saying so."""
        import json

        size = len(json.dumps(result, ensure_ascii=False).encode("utf-8")) + 200
        limit = self._max_frame_bytes()
        if size <= limit:
            return result
        text = f"The result of {tool} is {size} bytes; the limit of one frame is {limit}. Return less, or images as https URLs."
        return _failed("failed", text, "result_too_large")
