"""The session client for Python backends: open and resume sessions over ``/v1/client``, send
messages and stream their events, answer approvals. One socket carries every session of the
client; when it drops, the client reconnects with backoff and resumes each session from the last
event it applied, so no event is lost or applied twice (an event that skips ahead in ``seq`` makes
it resume from the last one it has, too). Once a session's replay is applied, each message whose
send the replay does not show the server took is sent again with the same ``commandId`` (the
server runs a message once however often it arrives), as the TypeScript client does.

>>> async def main():
...     async with Client("http://127.0.0.1:8787", api_key="pk", secret="sk") as client:
...         session = await client.agent("support").sessions.create(user_id="u_1")
...         reply = await session.send("Where is order A1?")
...         print(reply.text)
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import random
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import websockets

from .protocol import (
    DEFAULT_MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    RESULT_FRAME_TYPES,
    FrameError,
    decode_frame,
    encode_frame,
)
from .tools import Tools

__all__ = [
    "MAX_INCOMING_FRAME_BYTES",
    "MAX_MESSAGE_TEXT_CHARS",
    "AgentHandle",
    "Client",
    "ClientError",
    "Reply",
    "Session",
    "Sessions",
]

log = logging.getLogger("patchbay.client")
_REFUSED = {"unauthorized", "protocol_version"}

MAX_INCOMING_FRAME_BYTES = 64 * 1024 * 1024
"""The largest frame the client reads. The server's frame limit bounds what it accepts, not what
it sends: an event that carries a tool result (``conversation.updated`` with a 5 MiB image as
base64) is larger than ``maxFrameBytes``. The protocol asks for ``maxResultFrameBytes`` + 64 KiB;
like the TypeScript client, this one reads up to 64 MiB."""

MAX_MESSAGE_TEXT_CHARS = 100_000
"""The longest ``message.send`` text, in characters (code points, Python's ``len``)."""


class ClientError(Exception):
    """A refused request or a failed reply, with the protocol's stable ``code`` (``disconnected``
    when the client or the session was closed first). ``session_id`` names the session an error
    the server sent was about, when it said."""

    def __init__(self, code: str, message: str, path: str | None = None, session_id: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.path = path
        self.session_id = session_id


@dataclass(frozen=True)
class Reply:
    """A finished reply: ``reason`` is ``stop``, ``interrupted``, ``max_rounds`` or ``answered_by_worker``."""

    text: str
    reason: str
    response_id: str


class _Pending:
    """One message sent: its events as they come, and its end."""

    def __init__(self, command_id: str, frame: dict[str, Any] | None = None) -> None:
        self.command_id = command_id
        self.frame = frame
        # The socket the ``message.send`` was last written on (None: not written yet).
        self.written_on: Any = None
        # An event of the session named the command: the server has the message (no resend).
        self.taken = False
        self.response_id: str | None = None
        self.events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.done: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        # Retrieved here, so one that nobody awaits (a stream left early) is not logged as lost.
        self.done.add_done_callback(lambda done: done.cancelled() or done.exception())


class Session:
    """One session: its events applied in ``seq`` order, its conversation and pending approvals."""

    def __init__(self, client: Client, info: dict[str, Any]) -> None:
        self._client = client
        self.info = info
        self.id: str = info["id"]
        self.last_seq = 0
        self.conversation: dict[str, dict[str, Any]] = {}
        self.approvals: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, _Pending] = {}
        self._by_response: dict[str, _Pending] = {}
        self._listeners: list[asyncio.Queue[dict[str, Any] | None]] = []
        # The request id of a resume sent to fill a gap in ``seq``, until the server answers it.
        self._refill: str | None = None
        # The ``last_seq`` such a resume was answered at: a gap there again is a hole in the log.
        self._refilled_at: int | None = None
        # Attached on the current socket and caught up with its replay: a send is written at once.
        # Otherwise it waits, and the catch-up after the reconnect writes it (see ``_catch_up``).
        self._caught_up = True
        # After a reconnect, the server's ``lastSeq`` when it answered the resume: events up to it
        # are the replay (None: no replay being waited for).
        self._replay_until: int | None = None
        self._catching_up: asyncio.Future[None] | None = None
        self.closed = False

    async def send(self, text: str, images: list[dict[str, Any]] | None = None) -> Reply:
        """Sends a user message and waits for the reply. For the events as they come, use :meth:`stream`.

        A message sent while the socket is down, or lost with a socket that dropped before the
        server took it, is sent (again) after the reconnect, with the same ``commandId``: it runs
        once.

        Raises :class:`ClientError` before sending a message the server would refuse (``invalid_frame``
        for a text over :data:`MAX_MESSAGE_TEXT_CHARS`, ``frame_too_large`` for a frame over the
        server's ``maxFrameBytes``), and ``disconnected`` when the session or client is closed first."""
        pending = await self._start(text, images)
        return await pending.done

    async def stream(self, text: str, images: list[dict[str, Any]] | None = None) -> AsyncIterator[dict[str, Any]]:
        """Sends a user message and yields the reply's events up to and including
        ``response.completed``; raises :class:`ClientError` on ``response.failed``.

        The events are the message's (``message.created``), the response's (``text.delta``,
        ``message.completed``, ...), and those of its tool calls: ``conversation.updated`` for a
        ``tool_call`` item, then every event that names the call (``tool.progress``, ``tool.say``,
        ``tool.held``, ``tool.call``, ``approval.requested``, ``approval.resolved``, ...)."""
        pending = await self._start(text, images)
        while True:
            event = await pending.events.get()
            if event is None:
                break
            yield event
        await pending.done

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Every session event from now on, in ``seq`` order, until the session is closed."""
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._listeners.append(queue)
        try:
            while True:
                event = await queue.get()
                if event is None:
                    return
                yield event
        finally:
            self._listeners.remove(queue)

    async def interrupt(self) -> None:
        """Stops the running turn (streaming, approvals, interruptible tool calls that are not held)."""
        await self._client._send({"type": "interrupt", "sessionId": self.id, "commandId": _id("c")})

    async def decide(self, approval_id: str, allowed: bool) -> None:
        """Answers an approval the session asks for (``session.approvals``)."""
        if approval_id not in self.approvals:
            raise ClientError("not_found", f"session {self.id} has no pending approval {approval_id}")
        await self._client._send(
            {"type": "approval.decide", "sessionId": self.id, "approvalId": approval_id, "allowed": allowed}
        )

    async def close(self) -> None:
        """Detaches this client from the session (the session lives on and can be resumed). A
        ``send()`` or ``stream()`` still waiting raises :class:`ClientError` ``disconnected``."""
        if self.closed:
            return
        self._shut(ClientError("disconnected", f"session {self.id} was closed", session_id=self.id))
        if not self._client._closed:
            await self._client._send({"type": "session.close", "sessionId": self.id})

    async def _start(self, text: str, images: list[dict[str, Any]] | None) -> _Pending:
        if self.closed:
            raise ClientError("disconnected", f"session {self.id} is closed", session_id=self.id)
        # The server answers a text over the limit with an error that names no command (it does
        # not read the ids of a frame that large), so the send would wait forever: refuse it here.
        if len(text) > MAX_MESSAGE_TEXT_CHARS:
            raise ClientError(
                "invalid_frame",
                f"the message text is {len(text)} characters; the limit of message.send text is {MAX_MESSAGE_TEXT_CHARS}",
                "text",
                session_id=self.id,
            )
        command_id = _id("c")
        frame: dict[str, Any] = {"type": "message.send", "sessionId": self.id, "commandId": command_id, "text": text}
        if images:
            frame["images"] = images
        self._client._check_usable()
        encoded = self._client._encode(frame)
        pending = _Pending(command_id, frame)
        self._pending[command_id] = pending
        ws = self._client._ws
        if not self._caught_up or ws is None:
            # Between sockets, or replaying after a reconnect: the catch-up writes it, after the
            # messages sent before it (see _catch_up).
            return pending
        pending.written_on = ws
        try:
            await ws.send(encoded)
        except (OSError, websockets.exceptions.WebSocketException) as error:
            # The socket went as it was written: the catch-up after the reconnect writes it again.
            log.info("session %s: message %s not written (%s); it is sent after the reconnect", self.id, command_id, error)
        except BaseException:
            self._pending.pop(command_id, None)
            raise
        return pending

    def _attached(self, last_seq: int) -> None:
        """The resume after a reconnect was answered; the events up to ``last_seq`` are its replay."""
        self._replay_until = last_seq
        self._check_caught_up()

    def _check_caught_up(self) -> None:
        if self._replay_until is None or self.last_seq < self._replay_until or self.closed:
            return
        self._replay_until = None
        ws = self._client._ws
        if ws is not None:
            # Kept: the loop holds only a weak reference to a task.
            self._catching_up = asyncio.ensure_future(self._catch_up(ws))

    async def _catch_up(self, ws: Any) -> None:
        """Attached again on ``ws`` and caught up with the replay: writes, in the order they were
        sent, the messages still waiting whose command no event showed the server took (a
        ``message.created`` or ``response.started`` naming it, in the replay or before the drop)
        and that were not written on this socket yet, with the same ``commandId``, so the server
        does not run one that did reach it twice. Then sends are written at once again. The
        TypeScript client does the same (``SessionChannel`` ``#becomeReady``)."""
        while not self.closed and self._client._ws is ws:
            waiting = next((p for p in self._pending.values() if not p.taken and p.written_on is not ws), None)
            if waiting is None:
                self._caught_up = True
                return
            assert waiting.frame is not None
            waiting.written_on = ws
            try:
                await ws.send(self._client._encode(waiting.frame))
            except ClientError as error:  # over the limits of the server it reconnected to
                self._fail(waiting.command_id, error)
            except (OSError, websockets.exceptions.WebSocketException) as error:
                # Gone again: the next reconnect's catch-up writes what is left.
                log.info("session %s: resending message %s failed: %s", self.id, waiting.command_id, error)
                return

    def _detached(self) -> None:
        """The socket went: sends wait for the catch-up after the reconnect."""
        self._caught_up = False
        self._replay_until = None

    def _fail(self, command_id: str, error: ClientError) -> bool:
        """Fails the message ``command_id``; whether it was one this session waits for."""
        pending = self._pending.pop(command_id, None)
        if pending is None:
            return False
        if pending.response_id:
            self._by_response.pop(pending.response_id, None)
        if not pending.done.done():
            pending.done.set_exception(error)
            pending.events.put_nowait(None)
        return True

    def _shut(self, error: ClientError) -> None:
        """The session is gone for this client: what waits fails with ``error``, listeners end."""
        self.closed = True
        if self._client._sessions.get(self.id) is self:
            del self._client._sessions[self.id]
        for command_id in list(self._pending):
            self._fail(command_id, error)
        for queue in self._listeners:
            queue.put_nowait(None)

    def _apply(self, event: dict[str, Any]) -> None:
        seq = event["seq"]
        if seq <= self.last_seq:
            return  # a duplicate around a resume
        if seq > self.last_seq + 1 and not self._gap(seq):
            return  # the resume that fills the gap replays it in order
        self.last_seq = seq
        kind = event["type"]
        if kind in ("message.created", "message.completed", "conversation.updated"):
            self.conversation[event["item"]["id"]] = event["item"]
        elif kind == "approval.requested":
            self.approvals[event["approval"]["id"]] = event["approval"]
        elif kind == "approval.resolved":
            self.approvals.pop(event["approvalId"], None)
        command_id = event.get("commandId")
        if command_id is not None and command_id in self._pending:
            self._pending[command_id].taken = True  # the server has it: not sent again
        pending = self._pending_for(event)
        if pending is not None:
            pending.events.put_nowait(event)
            if kind == "response.completed":
                self._finish(pending)
                pending.done.set_result(Reply(event["text"], event["reason"], event["responseId"]))
            elif kind == "response.failed":
                self._finish(pending)
                error = event["error"]
                pending.done.set_exception(ClientError(error["code"], error["message"]))
        for queue in self._listeners:
            queue.put_nowait(event)
        self._check_caught_up()

    def _gap(self, seq: int) -> bool:
        """An event skipped ahead of ``last_seq + 1``: events were missed. Like the TypeScript
        client, which fetches them from the event log, this one asks the server for them: it
        resumes the session from the last event it applied (the server replays the rest in order)
        and drops what arrives out of order meanwhile. Returns whether to apply the event anyway:
        only when the replay of such a resume skips the same events, so the log has a hole (the
        client reports it rather than stall the session)."""
        if self._refill is not None:
            return False
        if self._refilled_at != self.last_seq:
            log.info("session %s: event %d arrived after %d; resuming from %d", self.id, seq, self.last_seq, self.last_seq)
            self._refill = self._client._resume(self)
            return False
        self._client._report(
            ClientError("protocol", f"events {self.last_seq + 1}..{seq - 1} of session {self.id} are lost", session_id=self.id)
        )
        return True

    def _pending_for(self, event: dict[str, Any]) -> _Pending | None:
        """The message an event belongs to: by its ``commandId``; else by the response it names,
        at the top (``responseId``) or in its item (``message.completed``, ``conversation.updated``);
        else, for an event that names a tool call (``callId``, ``call.id``, ``approval.callId``)
        or an item (``itemId``), by the response of that item, seen earlier in the conversation.
        The TypeScript client attributes events the same way (by ``responseId``, and a call's
        events by the call's item)."""
        command_id = event.get("commandId")
        response_id = event.get("responseId")
        if command_id and command_id in self._pending:
            pending = self._pending[command_id]
            if response_id:
                pending.response_id = response_id
                self._by_response[response_id] = pending
            return pending
        if not response_id:
            item = event.get("item")
            if isinstance(item, dict):
                response_id = item.get("responseId")
        if not response_id:
            call_id = event.get("callId") or event.get("itemId")
            if call_id is None and isinstance(event.get("call"), dict):
                call_id = event["call"].get("id")
            if call_id is None and isinstance(event.get("approval"), dict):
                call_id = event["approval"].get("callId")
            named = self.conversation.get(call_id) if isinstance(call_id, str) else None
            if named is not None:
                response_id = named.get("responseId")
        return self._by_response.get(response_id) if response_id else None

    def _finish(self, pending: _Pending) -> None:
        self._pending.pop(pending.command_id, None)
        if pending.response_id:
            self._by_response.pop(pending.response_id, None)
        pending.events.put_nowait(None)


class Sessions:
    """The sessions of one agent."""

    def __init__(self, client: Client, agent: str) -> None:
        self._client = client
        self._agent = agent

    async def create(self, user_id: str | None = None, metadata: dict[str, Any] | None = None) -> Session:
        """Opens a new session (``user_id`` only with the API key: the user it acts for)."""
        frame: dict[str, Any] = {"type": "session.create", "agent": self._agent}
        if user_id is not None:
            frame["userId"] = user_id
        if metadata is not None:
            frame["metadata"] = metadata
        info = await self._client._request(frame)
        return self._client._sessions[info["id"]]

    async def resume(self, session_id: str, after_seq: int = 0) -> Session:
        """Attaches to an existing session; events after ``after_seq`` are replayed."""
        known = self._client._sessions.get(session_id)
        if known is not None:
            return known
        info = await self._client._request(
            {"type": "session.resume", "sessionId": session_id, "afterSeq": after_seq}, after_seq
        )
        return self._client._sessions[info["id"]]


class AgentHandle:
    """An agent by name: its sessions, and a :class:`Tools` registry a worker can host."""

    def __init__(self, client: Client, name: str) -> None:
        self.name = name
        self.tools = Tools()
        self.register = self.tools.register
        self.sessions = Sessions(client, name)


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class _Request:
    """A ``session.create`` or ``session.resume`` waiting for its ``session.opened``."""

    def __init__(self, frame: dict[str, Any]) -> None:
        self.frame = frame
        # Safe to write again after a reconnect: a resume is; a create is not (the server may
        # have made the session: only the caller can decide to try again).
        self.repeatable = frame["type"] == "session.resume"
        # The socket it was last written on (None: not written yet).
        self.written_on: Any = None
        self.future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.future.add_done_callback(lambda done: done.cancelled() or done.exception())

    def fail(self, error: ClientError) -> None:
        if not self.future.done():
            self.future.set_exception(error)


class Client:
    """A session client. Authenticates with the API key and secret (a backend acting for any user)
    or a user ``token``; ``url``, ``api_key`` and ``secret`` fall back to ``PATCHBAY_URL``,
    ``PATCHBAY_API_KEY`` and ``PATCHBAY_API_SECRET``.

    ``on_error`` is called (a function or a coroutine function) with each :class:`ClientError` that
    no pending call could be told about: an ``error`` frame that names no request or message of
    this client, events lost from a session's log. Each is logged (warning) too."""

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        secret: str | None = None,
        token: str | None = None,
        request_timeout: float = 10.0,
        backoff: tuple[float, float] = (0.25, 30.0),
        on_error: Callable[[ClientError], Any] | None = None,
    ) -> None:
        url = url or os.environ.get("PATCHBAY_URL")
        if not url:
            raise ClientError("invalid_options", "no server url: pass url= or set PATCHBAY_URL")
        base = url.rstrip("/")
        self._ws_url = ("ws" + base[4:] if base.startswith("http") else base) + "/v1/client"
        if token:
            self._auth: dict[str, Any] = {"kind": "user", "token": token}
        else:
            key = api_key or os.environ.get("PATCHBAY_API_KEY")
            sec = secret or os.environ.get("PATCHBAY_API_SECRET")
            if not key or not sec:
                raise ClientError("invalid_options", "pass token=, or api_key= and secret= (or set PATCHBAY_API_KEY and PATCHBAY_API_SECRET)")
            self._auth = {"kind": "api_key", "apiKey": key, "secret": sec}
        self._timeout = request_timeout
        self._backoff = backoff
        self._on_error = on_error
        self._sessions: dict[str, Session] = {}
        self._requests: dict[str, _Request] = {}
        self._after_seq: dict[str, int] = {}
        # Resumes of sessions this client has (after a reconnect, or to fill a gap), by request id.
        self._resumes: dict[str, Session] = {}
        # What the server's welcome said it accepts.
        self._max_frame_bytes = DEFAULT_MAX_FRAME_BYTES
        self._max_result_frame_bytes = DEFAULT_MAX_FRAME_BYTES
        self._ws: Any = None
        self._ready: asyncio.Event | None = None
        self._runner: asyncio.Task[None] | None = None
        self._closed = False
        self._failure: ClientError | None = None

    def agent(self, name: str) -> AgentHandle:
        return AgentHandle(self, name)

    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def connect(self) -> None:
        """Opens the socket (sending anything connects too)."""
        if self._closed:
            raise ClientError("disconnected", "the client was closed")
        if self._runner is None:
            self._ready = asyncio.Event()
            self._runner = asyncio.create_task(self._run())
        await self._wait_ready()

    async def close(self) -> None:
        """Closes the socket for good (the sessions live on and can be resumed by another client).
        Whatever still waits (``send()``, ``stream()``, a request) raises :class:`ClientError`
        ``disconnected``, and ``session.events()`` iterators end."""
        self._closed = True
        error = ClientError("disconnected", "the client was closed")
        for request in self._requests.values():
            request.fail(error)
        for session in list(self._sessions.values()):
            session._shut(error)
        if self._ws is not None:
            await self._ws.close()
        if self._runner is not None:
            self._runner.cancel()
            try:
                await self._runner
            except (asyncio.CancelledError, Exception):
                pass

    async def _wait_ready(self) -> None:
        assert self._ready is not None
        waiter = asyncio.ensure_future(self._ready.wait())
        done, _ = await asyncio.wait({waiter, self._runner}, timeout=self._timeout, return_when=asyncio.FIRST_COMPLETED)  # type: ignore[arg-type]
        if waiter not in done:
            waiter.cancel()
            if self._failure:
                raise self._failure
            raise ClientError("timeout", f"no connection to {self._ws_url} within {self._timeout} s")

    async def _socket(self) -> Any:
        """The open socket, once there is one (connecting first if need be)."""
        if self._closed:
            raise ClientError("disconnected", "the client was closed")
        if self._runner is None:
            await self.connect()
        while self._ws is None:
            await self._wait_ready()
        return self._ws

    def _check_usable(self) -> None:
        """Raises what makes the client unusable: closed, or refused by the server for good."""
        if self._closed:
            raise ClientError("disconnected", "the client was closed")
        if self._failure is not None and self._runner is not None and self._runner.done():
            raise self._failure

    async def _send(self, frame: dict[str, Any]) -> None:
        ws = await self._socket()
        await ws.send(self._encode(frame))

    def _encode(self, frame: dict[str, Any]) -> str:
        """The frame as sent, or :class:`ClientError` ``frame_too_large`` over the server's limit."""
        text = encode_frame(frame)
        # Over the limit the server answers frame_too_large without the frame's ids (or, far
        # over, closes the socket with 1009 and the frame is lost): refuse it here instead.
        result = frame["type"] in RESULT_FRAME_TYPES
        limit = self._max_result_frame_bytes if result else self._max_frame_bytes
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            hint = "; send large images as https URLs" if frame.get("images") else ""
            raise ClientError(
                "frame_too_large",
                f"the {frame['type']} frame is {size} bytes, over the server's limit of {limit} bytes"
                f" ({'maxResultFrameBytes' if result else 'maxFrameBytes'}){hint}",
                session_id=frame.get("sessionId"),
            )
        return text

    async def _request(self, frame: dict[str, Any], after_seq: int = 0) -> dict[str, Any]:
        """Sends a request and waits for its ``session.opened``. Across a drop, like the TypeScript
        client's ``PendingRequests``: one not written yet is written on the next socket; a resume
        written on the lost socket is written again on the next one (after the client's own
        sessions are resumed); a create written on it fails with ``disconnected`` ("was cut off"),
        since the server may or may not have made the session."""
        request_id = _id("r")
        request = _Request({**frame, "requestId": request_id})
        self._requests[request_id] = request
        self._after_seq[request_id] = after_seq
        try:
            ws = await self._socket()
            text = self._encode(request.frame)
            request.written_on = ws
            try:
                await ws.send(text)
            except (OSError, websockets.exceptions.WebSocketException) as error:
                if not request.repeatable:
                    raise ClientError("disconnected", f"{frame['type']} was cut off: {error}") from None
                # Written again on the next socket (see _run).
            return await asyncio.wait_for(request.future, self._timeout)
        except asyncio.TimeoutError:
            raise ClientError("timeout", f"{frame['type']} was not answered within {self._timeout} s") from None
        finally:
            self._requests.pop(request_id, None)
            self._after_seq.pop(request_id, None)

    def _adopt(self, info: dict[str, Any]) -> Session:
        session = self._sessions.get(info["id"])
        if session is None:
            session = Session(self, info)
            self._sessions[session.id] = session
        return session

    def _resume(self, session: Session) -> str:
        """Asks the server again for the events of ``session`` after its ``last_seq``; the request id."""
        request_id = _id("r")
        self._resumes[request_id] = session
        frame = {"type": "session.resume", "requestId": request_id, "sessionId": session.id, "afterSeq": session.last_seq}

        async def send() -> None:
            try:
                await self._send(frame)
            except (ClientError, OSError, websockets.exceptions.WebSocketException) as error:
                # The socket went: the reconnect resumes the session from its last event anyway.
                log.info("resuming session %s failed: %s", session.id, error)

        asyncio.ensure_future(send())
        return request_id

    def _report(self, error: ClientError) -> None:
        """An error no pending call can be told about: logged, and given to ``on_error``."""
        log.warning("patchbay client error: %s", error)
        if self._on_error is None:
            return
        try:
            result = self._on_error(error)
            if inspect.isawaitable(result):
                asyncio.ensure_future(result)
        except Exception:
            log.exception("on_error raised")

    async def _run(self) -> None:
        failures = 0
        while not self._closed:
            why = "the socket could not be opened"
            try:
                async with websockets.connect(self._ws_url, max_size=MAX_INCOMING_FRAME_BYTES, open_timeout=self._timeout) as ws:
                    await ws.send(encode_frame({"type": "hello", "protocol": PROTOCOL_VERSION, "auth": self._auth, "client": {"name": "patchbay-python", "version": "0.1.0"}}))
                    welcome = decode_frame(await asyncio.wait_for(ws.recv(), self._timeout), "server-to-client", MAX_INCOMING_FRAME_BYTES)
                    if welcome["type"] == "error":
                        error = ClientError(welcome["code"], welcome["message"])
                        if welcome["code"] in _REFUSED:
                            self._failure = error
                            # No socket comes again: what waits for one would wait forever.
                            for request in list(self._requests.values()):
                                request.fail(error)
                            for session in list(self._sessions.values()):
                                for command_id in list(session._pending):
                                    session._fail(command_id, error)
                            return
                        raise OSError(str(error))
                    self._max_frame_bytes = welcome["maxFrameBytes"]
                    self._max_result_frame_bytes = welcome.get("maxResultFrameBytes", welcome["maxFrameBytes"])
                    self._ws = ws
                    failures = 0
                    # Sessions opened before the drop come back from the last event applied.
                    self._resumes.clear()
                    for session in list(self._sessions.values()):
                        session._refill, session._refilled_at = None, None
                        request_id = _id("r")
                        self._resumes[request_id] = session
                        await ws.send(encode_frame({"type": "session.resume", "requestId": request_id, "sessionId": session.id, "afterSeq": session.last_seq}))
                    # Then the resumes asked for on the lost socket, again (a create is not: see _lost).
                    for request in list(self._requests.values()):
                        if request.repeatable and request.written_on is not None and request.written_on is not ws and not request.future.done():
                            request.written_on = ws
                            await ws.send(encode_frame(request.frame))
                    assert self._ready is not None
                    self._ready.set()
                    why = "the server closed the socket"
                    async for text in ws:
                        self._on_text(text)
            except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException, FrameError) as error:
                why = str(error) or type(error).__name__
                log.info("client socket lost: %s", error)
            finally:
                self._ws = None
                if self._ready is not None:
                    self._ready.clear()
                if not self._closed:
                    self._lost(why)
            if self._closed:
                return
            first, longest = self._backoff
            await asyncio.sleep(random.uniform(0, min(longest, first * 2**failures)))
            failures = min(failures + 1, 30)

    def _lost(self, why: str) -> None:
        """The socket went (``why``): each session's sends wait for its catch-up after the
        reconnect; a create written on it fails, cut off (the server may have made the session);
        a resume is written again on the next socket."""
        for session in self._sessions.values():
            session._detached()
        for request in list(self._requests.values()):
            if request.written_on is not None and not request.repeatable:
                request.fail(ClientError("disconnected", f"{request.frame['type']} was cut off: {why}"))

    def _on_text(self, text: str | bytes) -> None:
        try:
            # Not the server's maxFrameBytes: that bounds what it accepts, not the events it sends.
            frame = decode_frame(text, "server-to-client", MAX_INCOMING_FRAME_BYTES)
        except FrameError as error:
            if error.code == "unknown_frame_type":
                return  # a newer server's frame: ignored, as the protocol says
            log.warning("a frame from the server did not decode: %s", error)
            return
        kind = frame["type"]
        if kind == "session.opened":
            # Adopted here, before the replayed events that follow on the socket are read.
            known = frame["session"]["id"] in self._sessions
            session = self._adopt(frame["session"])
            if not known:
                session.last_seq = self._after_seq.get(frame["requestId"], 0)
            resumed = self._resumes.pop(frame["requestId"], None)
            if resumed is not None and resumed._refill == frame["requestId"]:
                resumed._refill, resumed._refilled_at = None, resumed.last_seq
            elif resumed is not None:
                # The resume after a reconnect: once its replay is applied, the sends it did not
                # show the server took are sent again.
                resumed._attached(frame["session"].get("lastSeq", 0))
            request = self._requests.get(frame["requestId"])
            if request is not None and not request.future.done():
                request.future.set_result(frame["session"])
        elif kind == "error":
            self._on_error_frame(frame)
        elif kind == "ping":
            asyncio.ensure_future(self._send({"type": "pong", **({"nonce": frame["nonce"]} if "nonce" in frame else {})}))
        elif "seq" in frame:
            session = self._sessions.get(frame["sessionId"])
            if session is not None:
                session._apply(frame)

    def _on_error_frame(self, frame: dict[str, Any]) -> None:
        """An ``error`` frame goes to the request or the message it names; one that names neither
        (a frame the server could not read the ids of, a refused resume) is reported, never dropped."""
        session_id = frame.get("sessionId")
        error = ClientError(frame["code"], frame["message"], frame.get("path"), session_id)
        request_id = frame.get("requestId")
        request = self._requests.get(request_id) if request_id else None
        if request is not None:
            request.fail(error)
            return
        resumed = self._resumes.pop(request_id, None) if request_id else None
        if resumed is not None:
            refill = resumed._refill == request_id
            if refill:
                resumed._refill = None
            if error.code == "not_found":
                # The session is gone (deleted): what waits on it would wait forever.
                resumed._shut(error)
            elif not refill:
                # The resume after a reconnect was refused: no replay comes. Its sends are written
                # anyway, and the server's answer to each (or its events) ends them.
                resumed._attached(resumed.last_seq)
            self._report(error)
            return
        command_id = frame.get("commandId")
        if command_id:
            named = self._sessions.get(session_id) if session_id else None
            for session in [named] if named is not None else list(self._sessions.values()):
                if session._fail(command_id, error):
                    return
        self._report(error)
