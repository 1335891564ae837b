"""The session client for Python backends: open and resume sessions over ``/v1/client``, send
messages and stream their events, answer approvals. One socket carries every session of the
client; when it drops, the client reconnects with backoff and resumes each session from the last
event it applied, so no event is lost or applied twice.

>>> async def main():
...     async with Client("http://127.0.0.1:8787", api_key="pk", secret="sk") as client:
...         session = await client.agent("support").sessions.create(user_id="u_1")
...         reply = await session.send("Where is order A1?")
...         print(reply.text)
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import websockets

from .protocol import DEFAULT_MAX_FRAME_BYTES, PROTOCOL_VERSION, FrameError, decode_frame, encode_frame
from .tools import Tools

__all__ = ["AgentHandle", "Client", "ClientError", "Reply", "Session", "Sessions"]

log = logging.getLogger("patchbay.client")
_REFUSED = {"unauthorized", "protocol_version"}


class ClientError(Exception):
    """A refused request or a failed reply, with the protocol's stable ``code``."""

    def __init__(self, code: str, message: str, path: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.path = path


@dataclass(frozen=True)
class Reply:
    """A finished reply: ``reason`` is ``stop``, ``interrupted``, ``max_rounds`` or ``answered_by_worker``."""

    text: str
    reason: str
    response_id: str


class _Pending:
    """One message sent: its events as they come, and its end."""

    def __init__(self, command_id: str) -> None:
        self.command_id = command_id
        self.response_id: str | None = None
        self.events: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.done: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()


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
        self.closed = False

    async def send(self, text: str, images: list[dict[str, Any]] | None = None) -> Reply:
        """Sends a user message and waits for the reply. For the events as they come, use :meth:`stream`."""
        pending = await self._start(text, images)
        return await pending.done

    async def stream(self, text: str, images: list[dict[str, Any]] | None = None) -> AsyncIterator[dict[str, Any]]:
        """Sends a user message and yields the reply's events (``text.delta``, tool events, ...)
        up to and including ``response.completed``; raises :class:`ClientError` on ``response.failed``."""
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
        """Detaches this client from the session (the session lives on and can be resumed)."""
        self.closed = True
        self._client._sessions.pop(self.id, None)
        await self._client._send({"type": "session.close", "sessionId": self.id})
        for queue in self._listeners:
            queue.put_nowait(None)

    async def _start(self, text: str, images: list[dict[str, Any]] | None) -> _Pending:
        pending = _Pending(_id("c"))
        self._pending[pending.command_id] = pending
        frame: dict[str, Any] = {"type": "message.send", "sessionId": self.id, "commandId": pending.command_id, "text": text}
        if images:
            frame["images"] = images
        await self._client._send(frame)
        return pending

    def _fail(self, command_id: str, error: ClientError) -> None:
        pending = self._pending.pop(command_id, None)
        if pending and not pending.done.done():
            pending.done.set_exception(error)
            pending.events.put_nowait(None)

    def _apply(self, event: dict[str, Any]) -> None:
        if event["seq"] <= self.last_seq:
            return  # a duplicate around a resume
        self.last_seq = event["seq"]
        kind = event["type"]
        if kind in ("message.created", "message.completed", "conversation.updated"):
            self.conversation[event["item"]["id"]] = event["item"]
        elif kind == "approval.requested":
            self.approvals[event["approval"]["id"]] = event["approval"]
        elif kind == "approval.resolved":
            self.approvals.pop(event["approvalId"], None)
        pending = None
        command_id = event.get("commandId")
        if command_id and command_id in self._pending:
            pending = self._pending[command_id]
            if event.get("responseId"):
                pending.response_id = event["responseId"]
                self._by_response[event["responseId"]] = pending
        elif event.get("responseId"):
            pending = self._by_response.get(event["responseId"])
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


class Client:
    """A session client. Authenticates with the API key and secret (a backend acting for any user)
    or a user ``token``; ``url``, ``api_key`` and ``secret`` fall back to ``PATCHBAY_URL``,
    ``PATCHBAY_API_KEY`` and ``PATCHBAY_API_SECRET``."""

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        secret: str | None = None,
        token: str | None = None,
        request_timeout: float = 10.0,
        backoff: tuple[float, float] = (0.25, 30.0),
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
        self._sessions: dict[str, Session] = {}
        self._requests: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._after_seq: dict[str, int] = {}
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
        if self._runner is None:
            self._ready = asyncio.Event()
            self._runner = asyncio.create_task(self._run())
        await self._wait_ready()

    async def close(self) -> None:
        self._closed = True
        if self._ws is not None:
            await self._ws.close()
        if self._runner is not None:
            self._runner.cancel()
            try:
                await self._runner
            except (asyncio.CancelledError, Exception):
                pass
        for session in self._sessions.values():
            for queue in session._listeners:
                queue.put_nowait(None)

    async def _wait_ready(self) -> None:
        assert self._ready is not None
        waiter = asyncio.ensure_future(self._ready.wait())
        done, _ = await asyncio.wait({waiter, self._runner}, timeout=self._timeout, return_when=asyncio.FIRST_COMPLETED)  # type: ignore[arg-type]
        if waiter not in done:
            waiter.cancel()
            if self._failure:
                raise self._failure
            raise ClientError("timeout", f"no connection to {self._ws_url} within {self._timeout} s")

    async def _send(self, frame: dict[str, Any]) -> None:
        if self._runner is None:
            await self.connect()
        if self._ws is None:
            await self._wait_ready()
        await self._ws.send(encode_frame(frame))

    async def _request(self, frame: dict[str, Any], after_seq: int = 0) -> dict[str, Any]:
        request_id = _id("r")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._requests[request_id] = future
        self._after_seq[request_id] = after_seq
        try:
            await self._send({**frame, "requestId": request_id})
            return await asyncio.wait_for(future, self._timeout)
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

    async def _run(self) -> None:
        failures = 0
        while not self._closed:
            try:
                async with websockets.connect(
                    self._ws_url, max_size=DEFAULT_MAX_FRAME_BYTES + 64 * 1024, open_timeout=self._timeout
                ) as ws:
                    await ws.send(encode_frame({"type": "hello", "protocol": PROTOCOL_VERSION, "auth": self._auth, "client": {"name": "patchbay-python", "version": "0.1.0"}}))
                    welcome = decode_frame(await asyncio.wait_for(ws.recv(), self._timeout), "server-to-client")
                    if welcome["type"] == "error":
                        error = ClientError(welcome["code"], welcome["message"])
                        if welcome["code"] in _REFUSED:
                            self._failure = error
                            return
                        raise OSError(str(error))
                    self._ws = ws
                    failures = 0
                    # Sessions opened before the drop come back from the last event applied.
                    for session in list(self._sessions.values()):
                        await ws.send(encode_frame({"type": "session.resume", "requestId": _id("r"), "sessionId": session.id, "afterSeq": session.last_seq}))
                    assert self._ready is not None
                    self._ready.set()
                    async for text in ws:
                        self._on_text(text)
            except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException, FrameError) as error:
                log.info("client socket lost: %s", error)
            finally:
                self._ws = None
                if self._ready is not None:
                    self._ready.clear()
            if self._closed:
                return
            first, longest = self._backoff
            await asyncio.sleep(random.uniform(0, min(longest, first * 2**failures)))
            failures = min(failures + 1, 30)

    def _on_text(self, text: str | bytes) -> None:
        try:
            frame = decode_frame(text, "server-to-client")
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
            future = self._requests.get(frame["requestId"])
            if future and not future.done():
                future.set_result(frame["session"])
        elif kind == "error":
            error = ClientError(frame["code"], frame["message"], frame.get("path"))
            request = self._requests.get(frame.get("requestId", ""))
            if request and not request.done():
                request.set_exception(error)
            session = self._sessions.get(frame.get("sessionId", ""))
            if session and frame.get("commandId"):
                session._fail(frame["commandId"], error)
        elif kind == "ping":
            asyncio.ensure_future(self._send({"type": "pong", **({"nonce": frame["nonce"]} if "nonce" in frame else {})}))
        elif "seq" in frame:
            session = self._sessions.get(frame["sessionId"])
            if session is not None:
                session._apply(frame)
