"""The dispatch worker: connects out to the server's ``/v1/worker``, takes messages and incoming
calls, hosts agents' tools, and reconnects with backoff, telling the server what it still runs.

>>> dispatch = Dispatch(capacity=8, url="http://127.0.0.1:8787", api_key="pk", secret="sk")
>>> @dispatch.on_message
... async def written(message: InboundMessage) -> None:
...     if message.session_id:
...         await dispatch.answer(message)
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import random
import socket
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import websockets

from .conversations import ConversationCacheLimits, KeptConversations
from .hosted import HostedAgent, HostedCalls, IdempotencyStore, InMemoryIdempotencyStore
from .protocol import (
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_RESULT_FRAME_BYTES,
    PROTOCOL_VERSION,
    FrameError,
    decode_frame,
    encode_frame,
)
from .tools import Tool, User

__all__ = [
    "Channel",
    "Dispatch",
    "DispatchError",
    "InboundCall",
    "InboundMessage",
    "StopResult",
    "WorkContext",
]

log = logging.getLogger("patchbay.dispatch")


class DispatchError(Exception):
    """A worker error with a stable ``code`` (``unauthorized``, ``protocol_version``, ``invalid_options``, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Channel:
    """Where a message came from when it has no session yet (an SMS number, a chat room)."""

    type: str
    id: str


@dataclass(frozen=True)
class InboundMessage:
    """A message offered to this worker."""

    id: str
    agent: str
    session_id: str | None
    channel: Channel | None
    user: User
    text: str
    created_at: int
    metadata: dict[str, Any]


@dataclass(frozen=True)
class InboundCall:
    """The signalling of an incoming phone call offered to this worker."""

    id: str
    agent: str
    from_: str
    to: str
    custom_data: dict[str, Any]
    created_at: int


@dataclass(frozen=True)
class WorkContext:
    """What a handler is given besides the work: its id and the delivery attempt."""

    work_id: str
    attempt: int


@dataclass(frozen=True)
class StopResult:
    """What :meth:`Dispatch.stop` could not finish in time."""

    drained: bool
    unfinished_work: list[str] = field(default_factory=list)
    unfinished_calls: list[str] = field(default_factory=list)


Handler = Callable[..., Awaitable[Any]]
_REFUSED = {"unauthorized", "protocol_version"}


def _worker_url(url: str) -> str:
    url = url.rstrip("/")
    if url.startswith("http"):
        url = "ws" + url[4:]
    return url if url.endswith("/v1/worker") else f"{url}/v1/worker"


def _client_credentials(client: Any) -> tuple[str | None, str | None, str | None]:
    """The server URL (http) and the API key and secret of a :class:`patchbay.Client`, for a
    worker given ``client=``; ``None`` for what it does not have (a client with a user token has
    no key: a worker cannot connect as a user)."""
    if client is None:
        return None, None, None
    ws_url = getattr(client, "_ws_url", None)
    url = None
    if isinstance(ws_url, str):
        base = ws_url.removesuffix("/v1/client")
        url = "http" + base[2:] if base.startswith("ws") else base
    auth = getattr(client, "_auth", None)
    if isinstance(auth, dict) and auth.get("kind") == "api_key":
        return url, auth.get("apiKey"), auth.get("secret")
    return url, None, None


def _call_handler(handler: Handler, work: Any, context: WorkContext) -> Awaitable[Any]:
    params = [p for p in inspect.signature(handler).parameters.values() if p.kind != p.VAR_KEYWORD]
    return handler(work, context) if len(params) >= 2 else handler(work)


class Dispatch:
    """A dispatch worker. ``url``, ``api_key`` and ``secret`` fall back to ``PATCHBAY_URL``,
    ``PATCHBAY_API_KEY`` and ``PATCHBAY_API_SECRET``.

    ``capacity`` is how many messages and calls it handles at once (hosted tool calls do not
    count). ``backoff`` is the first and the longest reconnect delay in seconds (full jitter).
    ``idempotency_store`` keeps finished hosted results by call id (default: in memory).
    ``conversation_cache`` keeps sessions' recent conversations between hosted calls, so the
    server sends each item once (default 1,000 sessions, 64 MiB; ``None``: every call carries its
    conversation whole). Tools read the whole conversation either way.
    """

    def __init__(
        self,
        capacity: int = 0,
        *,
        url: str | None = None,
        api_key: str | None = None,
        secret: str | None = None,
        worker_id: str | None = None,
        backoff: tuple[float, float] = (0.25, 30.0),
        connect_timeout: float = 10.0,
        idempotency_store: IdempotencyStore | None = None,
        receive_frame_bytes: int = 16 * 1024 * 1024,
        client: Any = None,
        conversation_cache: ConversationCacheLimits | None = ConversationCacheLimits(),
    ) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 0:
            raise DispatchError("invalid_options", f"capacity must be an integer of 0 or more; got {capacity!r}")
        self.capacity = capacity
        # A client given: the worker connects to the same server with the same key and secret,
        # unless they are passed here.
        client_url, client_key, client_secret = _client_credentials(client)
        url = url or client_url or os.environ.get("PATCHBAY_URL")
        if not url:
            raise DispatchError("invalid_options", "no server url: pass url= or client=, or set PATCHBAY_URL")
        self.url = url
        self._ws_url = _worker_url(url)
        self._api_key = api_key or client_key or os.environ.get("PATCHBAY_API_KEY") or ""
        self._secret = secret or client_secret or os.environ.get("PATCHBAY_API_SECRET") or ""
        if not self._api_key or not self._secret:
            raise DispatchError(
                "invalid_options",
                "pass api_key= and secret=, or a client= that has them, or set PATCHBAY_API_KEY and PATCHBAY_API_SECRET",
            )
        self.worker_id = worker_id or f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        self._backoff = backoff
        self._connect_timeout = connect_timeout
        # What this worker reads, said in worker.hello.maxFrameBytes: the server sends nothing
        # larger. `websockets` reads 1 MiB unless max_size says otherwise, so both are set here.
        self._receive_bytes = receive_frame_bytes
        # What the server accepts from this worker (worker.ready): results may be larger.
        self._max_frame_bytes = DEFAULT_MAX_FRAME_BYTES
        self._max_result_bytes = DEFAULT_MAX_RESULT_FRAME_BYTES
        self._client = client
        # Conversations kept between hosted calls, so the server sends each item once (None: every
        # call carries its conversation whole).
        self._conversation_cache = conversation_cache
        self._kept = KeptConversations()
        self._on_message: Handler | None = None
        self._on_call: Handler | None = None
        self._hosted = HostedCalls(
            self._send, idempotency_store or InMemoryIdempotencyStore(), lambda: self._max_result_bytes
        )
        self._active: dict[str, asyncio.Task[None]] = {}
        self._done: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._message_work: dict[str, str] = {}
        self._channel_sessions: OrderedDict[str, str] = OrderedDict()
        self._ws: Any = None
        self._queue: list[dict[str, Any]] = []
        self._phase = "idle"
        self._stop_event = asyncio.Event()
        self._stopping: asyncio.Task[StopResult] | None = None
        self._heartbeat_ms = 15_000
        self._background: set[asyncio.Task[None]] = set()
        self.connections = 0

    # Registration, before run() -------------------------------------------------------------

    def on_message(self, handler: Handler) -> Handler:
        """Registers the message handler (a decorator): ``async def handler(message[, work])``."""
        self._must_not_run("on_message")
        self._on_message = handler
        return handler

    def on_call(self, handler: Handler) -> Handler:
        """Registers the incoming-call handler (a decorator): ``async def handler(call[, work])``."""
        self._must_not_run("on_call")
        self._on_call = handler
        return handler

    def wait_for_message(self) -> Callable[[Handler], Handler]:
        """The seed's spelling: ``@dispatch.wait_for_message()``."""
        return self.on_message

    def wait_for_call(self) -> Callable[[Handler], Handler]:
        """The seed's spelling: ``@dispatch.wait_for_call()``."""
        return self.on_call

    def host(self, agent: Any, tool_timeout: float | None = None, max_concurrent_calls: int = 16) -> Dispatch:
        """Hosts an agent's tools for every session of it. ``agent`` has a ``name`` and ``tools``
        (a :class:`patchbay.Tools`, as ``Client().agent(name)`` gives). ``tool_timeout`` (seconds)
        is the longest the server waits for one call."""
        self._must_not_run("host")
        name = getattr(agent, "name", None)
        tools = getattr(agent, "tools", None)
        if not isinstance(name, str) or not name or tools is None:
            raise DispatchError("invalid_options", "host(agent): the agent needs a name and tools")
        if tool_timeout is not None and tool_timeout <= 0:
            raise DispatchError("invalid_options", f"host({name}): tool_timeout must be positive")
        listed: list[Tool] = tools.list()
        hosted = HostedAgent(
            name=name,
            tools={t.name: t for t in listed},
            tool_timeout=tool_timeout,
            max_concurrent_calls=max_concurrent_calls,
        )
        self._hosted.agents[name] = hosted
        # A tool registered on the registry later (after run()) is hosted too: the server hears
        # `worker.hosts`, the whole list again, and offers it from the next turn on.
        subscribe = getattr(tools, "_subscribe", None)
        if callable(subscribe):
            subscribe(lambda: self._tools_changed(hosted, tools))
        return self

    def _tools_changed(self, hosted: HostedAgent, tools: Any) -> None:
        hosted.tools = {t.name: t for t in tools.list()}
        if self._phase == "idle":
            return  # not started: the first hello carries them
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # registered from outside the worker's loop: the next hello carries them
        # Durable: between a hello (with the old list) and the server's worker.ready the socket is
        # not ours yet, and the frame waits for it; after a reconnect it repeats what the hello says.
        task = loop.create_task(self._send({"type": "worker.hosts", "hosts": self._hosted.specs()}, True))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # Work --------------------------------------------------------------------------------------

    async def answer(self, message: InboundMessage) -> None:
        """Lets the model reply to a message that has a session (the user sees the agent think meanwhile)."""
        if not message.session_id:
            raise DispatchError("no_session", f"message {message.id} has no session to answer on; use session_for")
        frame: dict[str, Any] = {"type": "answer", "sessionId": message.session_id, "messageId": message.id}
        work_id = self._message_work.get(message.id)
        if work_id:
            frame["workId"] = work_id
        await self._send(frame, True)

    async def session_for(self, message: InboundMessage, agent: str | None = None) -> Any:
        """The session answering a message's channel: the one this worker opened for the channel
        before, or a new one. Needs ``client=`` (a :class:`patchbay.Client`)."""
        if message.session_id:
            raise DispatchError("has_session", f"message {message.id} already belongs to session {message.session_id}")
        if self._client is None:
            raise DispatchError("invalid_options", "session_for needs Dispatch(client=Client(...))")
        if message.channel is None:
            raise DispatchError("no_channel", f"message {message.id} has neither a session nor a channel")
        key = f"{message.agent}\x00{message.channel.type}\x00{message.channel.id}"
        handle = self._client.agent(agent or message.agent)
        known = self._channel_sessions.get(key)
        if known:
            self._channel_sessions.move_to_end(key)
            return await handle.sessions.resume(known)
        session = await handle.sessions.create(
            user_id=message.user.id,
            metadata={"channel": {"type": message.channel.type, "id": message.channel.id}},
        )
        self._channel_sessions[key] = session.id
        while len(self._channel_sessions) > 10_000:
            self._channel_sessions.popitem(last=False)
        return session

    get_or_create_agent = session_for

    # Running -------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Connects and serves until :meth:`stop`; reconnects with backoff when the socket drops.
        Raises :class:`DispatchError` when the server refuses the worker (key, secret, version)."""
        if self._phase != "idle":
            raise DispatchError("already_running", "run() was already called")
        if not self._on_message and not self._on_call and not self._hosted.agents:
            raise DispatchError("nothing_to_run", "register on_message or on_call, or host an agent, before run()")
        if (self._on_message or self._on_call) and self.capacity == 0:
            raise DispatchError(
                "invalid_options",
                "capacity: a worker with on_message or on_call needs one (how many messages and calls run at once), "
                "e.g. Dispatch(capacity=8); only a worker that just hosts tools may leave it at 0",
            )
        self._phase = "running"
        failures = 0
        try:
            while not self._stop_event.is_set():
                try:
                    await self._connect_once()
                    failures = 0
                except DispatchError:
                    raise
                except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as error:
                    log.info("worker socket lost: %s", error)
                if self._stop_event.is_set():
                    break
                first, longest = self._backoff
                delay = random.uniform(0, min(longest, first * 2**failures))
                failures = min(failures + 1, 30)
                try:
                    await asyncio.wait_for(self._stop_event.wait(), delay)
                except asyncio.TimeoutError:
                    pass
        finally:
            if self._phase != "draining":
                self._phase = "stopped"

    async def stop(self, timeout: float = 30.0) -> StopResult:
        """Stops taking work (capacity 0), lets running work and calls finish for up to
        ``timeout`` seconds, cancels the rest, and closes the socket."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._drain(timeout))
        return await self._stopping

    async def _drain(self, timeout: float) -> StopResult:
        self._phase = "draining"
        await self._send_load()
        # Capacity 0 stops the offers of work; hosted calls do not count against capacity, so the
        # server may still send some, and those run and are waited for too.
        finished = asyncio.ensure_future(self._finished())
        done, _ = await asyncio.wait([finished], timeout=timeout)
        drained = bool(done)
        if not drained:
            finished.cancel()
        result = StopResult(drained, list(self._active), list(self._hosted.running))
        if not drained:
            for task in self._active.values():
                task.cancel()
            self._hosted.cancel_all()
            await asyncio.sleep(0.2)
        self._stop_event.set()
        if self._ws is not None:
            await self._ws.close(1000, "worker stopped")
        self._phase = "stopped"
        return result

    async def _finished(self) -> None:
        """Returns once no work and no hosted call runs."""
        while self._active or self._hosted.running:
            if self._active:
                await asyncio.wait(list(self._active.values()))
            await self._hosted.idle()

    def _must_not_run(self, method: str) -> None:
        if self._phase != "idle":
            raise DispatchError("already_running", f"{method}() must be called before run()")

    def _hello(self) -> dict[str, Any]:
        return {
            "type": "worker.hello",
            "protocol": PROTOCOL_VERSION,
            "apiKey": self._api_key,
            "secret": self._secret,
            "workerId": self.worker_id,
            "capacity": 0 if self._phase == "draining" else self.capacity,
            "handles": {"messages": self._on_message is not None, "calls": self._on_call is not None},
            "hosts": self._hosted.specs(),
            "running": {"work": list(self._active), "calls": list(self._hosted.running)},
            "maxFrameBytes": self._receive_bytes,
            **({"conversationCache": self._conversation_cache.to_wire()} if self._conversation_cache else {}),
        }

    async def _connect_once(self) -> None:
        async with websockets.connect(
            self._ws_url,
            max_size=self._receive_bytes,
            ping_interval=None,
            open_timeout=self._connect_timeout,
            close_timeout=2,
        ) as ws:
            await ws.send(encode_frame(self._hello()))
            first = decode_frame(
                await asyncio.wait_for(ws.recv(), self._connect_timeout), "server-to-worker", self._receive_bytes
            )
            if first["type"] == "error":
                if first["code"] in _REFUSED:
                    raise DispatchError(first["code"], first["message"])
                raise websockets.exceptions.InvalidHandshake(f"server error {first['code']}: {first['message']}")
            if first["type"] != "worker.ready":
                raise websockets.exceptions.InvalidHandshake(f"expected worker.ready, got {first['type']}")
            self._heartbeat_ms = first["heartbeatIntervalMs"]
            self._max_frame_bytes = first["maxFrameBytes"]
            self._max_result_bytes = first.get("maxResultFrameBytes", first["maxFrameBytes"])
            self._ws = ws
            # The server keeps nothing of the last connection's conversations either.
            self._kept.clear()
            self.connections += 1
            log.info("worker %s connected (%s)", self.worker_id, self._ws_url)
            queued, self._queue = self._queue, []
            for frame in queued:
                await self._send(frame, True)
            await self._hosted.reattached()
            await self._send_load()
            last_heard = time.monotonic()
            heartbeat = asyncio.create_task(self._heartbeat(ws, lambda: last_heard))
            try:
                async for text in ws:
                    last_heard = time.monotonic()
                    await self._on_text(text)
            finally:
                heartbeat.cancel()
                self._ws = None

    async def _heartbeat(self, ws: Any, last_heard: Callable[[], float]) -> None:
        interval = self._heartbeat_ms / 1000
        nonce = 0
        while True:
            await asyncio.sleep(interval / 2)
            if time.monotonic() - last_heard() > 2 * interval:
                log.warning("nothing from the server for two heartbeat intervals; reconnecting")
                ws.transport.abort()
                return
            nonce += 1
            if nonce % 2 == 0:
                await self._send({"type": "ping", "nonce": f"w{nonce}"}, False)

    async def _on_text(self, text: str | bytes) -> None:
        try:
            frame = decode_frame(text, "server-to-worker", self._receive_bytes)
        except FrameError as error:
            log.warning("a frame from the server did not decode: %s", error)
            return
        kind = frame["type"]
        if kind == "ping":
            await self._send({"type": "pong", **({"nonce": frame["nonce"]} if "nonce" in frame else {})}, False)
        elif kind == "hosted.call":
            conversation = self._kept.read(frame)
            if conversation is None:
                # Only a new connection, which starts both ends empty, puts them back in step; the
                # server delivers the call again then.
                log.warning("hosted.call %s names a conversation item this worker does not keep; reconnecting", frame["callId"])
                if self._ws is not None:
                    self._ws.transport.abort()
                return
            frame["conversation"] = conversation
            await self._hosted.call(frame)
        elif kind == "hosted.cancel":
            await self._hosted.cancel(frame)
        elif kind == "hosted.hold.ack":
            self._hosted.hold_ack(frame)
        elif kind == "hosted.approval.ack":
            self._hosted.approval_ack(frame)
        elif kind == "work.offered":
            await self._offer(frame)
        elif kind == "error":
            log.warning("server error %s: %s", frame["code"], frame["message"])

    async def _send(self, frame: dict[str, Any], durable: bool) -> None:
        ws = self._ws
        if ws is None:
            # Results, acceptances and holds wait for the next socket; progress is dropped.
            if durable:
                self._queue.append(frame)
            return
        try:
            await ws.send(encode_frame(frame))
        except websockets.exceptions.ConnectionClosed:
            if durable:
                self._queue.append(frame)

    async def _send_load(self) -> None:
        capacity = 0 if self._phase == "draining" else self.capacity
        await self._send({"type": "load", "active": len(self._active), "capacity": capacity}, False)

    async def _offer(self, frame: dict[str, Any]) -> None:
        work_id, attempt, work = frame["workId"], frame["attempt"], frame["work"]
        if work_id in self._active:
            await self._send({"type": "work.accepted", "workId": work_id}, True)
            return
        if work_id in self._done:
            await self._send(self._done[work_id], True)
            return

        async def refuse(code: str, message: str) -> None:
            await self._send({"type": "work.done", "workId": work_id, "error": {"code": code, "message": message}}, True)

        if self._phase != "running":
            return await refuse("draining", "the worker is stopping")
        if len(self._active) >= self.capacity:
            return await refuse("at_capacity", f"the worker is full ({len(self._active)}/{self.capacity})")
        handler = self._on_message if work["kind"] == "message" else self._on_call
        if handler is None:
            return await refuse("no_handler", f"the worker has no {work['kind']} handler")
        if work["kind"] == "message":
            m = work["message"]
            item: Any = InboundMessage(
                id=m["id"],
                agent=m["agent"],
                session_id=m["sessionId"],
                channel=Channel(m["channel"]["type"], m["channel"]["id"]) if m["channel"] else None,
                user=User(id=m["user"]["id"], name=m["user"].get("name")),
                text=m["text"],
                created_at=m["createdAt"],
                metadata=m["metadata"],
            )
            self._message_work[item.id] = work_id
        else:
            c = work["call"]
            item = InboundCall(c["id"], c["agent"], c["from"], c["to"], c["customData"], c["createdAt"])
        await self._send({"type": "work.accepted", "workId": work_id}, True)
        self._active[work_id] = asyncio.create_task(self._work(handler, item, WorkContext(work_id, attempt)))
        await self._send_load()

    async def _work(self, handler: Handler, item: Any, context: WorkContext) -> None:
        error: dict[str, str] | None = None
        try:
            await _call_handler(handler, item, context)
        except asyncio.CancelledError:
            error = {"code": "stopped", "message": "the worker stopped before the handler finished"}
        except Exception as thrown:  # a handler's failure is reported, not raised
            log.exception("handler for %s failed", context.work_id)
            code = getattr(thrown, "code", None)
            error = {"code": code if isinstance(code, str) and code else "handler_failed", "message": str(thrown)}
        done: dict[str, Any] = {"type": "work.done", "workId": context.work_id, **({"error": error} if error else {})}
        self._active.pop(context.work_id, None)
        if isinstance(item, InboundMessage):
            self._message_work.pop(item.id, None)
        self._done[context.work_id] = done
        while len(self._done) > 10_000:
            self._done.popitem(last=False)
        await self._send(done, True)
        await self._send_load()
