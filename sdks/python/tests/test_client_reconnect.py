"""The session client across a dropped socket, against a real server (the built CLI, scripted
model) behind a TCP proxy in the test that reads the client's WebSocket frames and cuts the
connection at one of them: a message.send lost with the socket is sent again after the reconnect
(same commandId) and its turn runs once, whether or not the frame reached the server; a
session.create cut off fails with ``disconnected``; a session.resume is asked again."""

import asyncio
import json
import struct
from urllib.parse import urlsplit

import pytest

from patchbay.client import Client, ClientError
from _servers import KEY, SECRET, cli_server

AGENT = """
model:
  provider: scripted
  rules:
    - match: "^hello"
      reply: "Hello from the scripted model."
    - match: "."
      reply: "ok"
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from cli_server(tmp_path_factory, "patchbay-reconnect", {"support": AGENT})


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 40))


class Link:
    """One client connection through the proxy: the client's side and the server's."""

    def __init__(self, index, client_writer, server_writer):
        self.index = index
        self.client_writer = client_writer
        self.server_writer = server_writer
        # Set: what the server sends is not passed on (the client never reads it).
        self.deaf = False

    def forward(self, raw: bytes) -> None:
        self.server_writer.write(raw)

    def cut_client(self) -> None:
        """Drops the client's side at once (a reset): the client sees its socket lost."""
        self.client_writer.transport.abort()

    def cut(self) -> None:
        self.cut_client()
        self.server_writer.transport.abort()


class Proxy:
    """A TCP proxy that passes everything on, reads each WebSocket frame the client sends (masked,
    uncompressed: the server does not offer permessage-deflate) and asks ``policy(link, frame,
    raw)`` what to do with it: it returns whether to pass the frame on, and may cut the link."""

    def __init__(self, server_url: str, policy) -> None:
        parts = urlsplit(server_url)
        self.host, self.port = parts.hostname, parts.port
        self.policy = policy
        self.links: list[Link] = []
        self.frames: list[tuple[int, dict]] = []  # (link index, frame) of every frame the client wrote
        self.tasks: set[asyncio.Task] = set()

    async def __aenter__(self) -> "Proxy":
        self.listener = await asyncio.start_server(self.accept, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.listener.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *_) -> None:
        self.listener.close()
        for link in self.links:
            link.cut()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.listener.wait_closed()

    def sends(self, command_id: str) -> list[int]:
        """The links the client wrote a message.send of ``command_id`` on."""
        return [index for index, frame in self.frames if frame.get("type") == "message.send" and frame.get("commandId") == command_id]

    async def accept(self, client_reader, client_writer) -> None:
        server_reader, server_writer = await asyncio.open_connection(self.host, self.port)
        link = Link(len(self.links), client_writer, server_writer)
        self.links.append(link)
        for pump in (self.upstream(link, client_reader), self.downstream(link, server_reader)):
            task = asyncio.ensure_future(pump)
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def downstream(self, link: Link, reader) -> None:
        try:
            while chunk := await reader.read(65536):
                if not link.deaf:
                    link.client_writer.write(chunk)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            link.client_writer.transport.abort()

    async def upstream(self, link: Link, reader) -> None:
        try:
            link.forward(await reader.readuntil(b"\r\n\r\n"))  # the HTTP upgrade
            while True:
                head = await reader.readexactly(2)
                size, rest = head[1] & 0x7F, b""
                if size == 126:
                    rest = await reader.readexactly(2)
                    size = struct.unpack("!H", rest)[0]
                elif size == 127:
                    rest = await reader.readexactly(8)
                    size = struct.unpack("!Q", rest)[0]
                mask = await reader.readexactly(4) if head[1] & 0x80 else b""
                payload = await reader.readexactly(size)
                raw = head + rest + mask + payload
                if mask:
                    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
                frame = json.loads(payload) if head[0] & 0x0F == 1 else {}
                self.frames.append((link.index, frame))
                if await self.policy(link, frame, raw):
                    link.forward(raw)
        except (OSError, asyncio.IncompleteReadError, ConnectionError):
            pass


async def next_reply_is_once(session, command_id: str, events: list) -> None:
    """Sends one more message and waits for its reply: a second turn of ``command_id`` would
    have come before it. Then asserts that the command's turn ran once."""
    after = await asyncio.wait_for(session.send("and after that"), 10)
    assert after.text == "ok"
    created = [e for e in events if e["type"] == "message.created" and e.get("commandId") == command_id]
    completed = [e for e in events if e["type"] == "response.completed" and e.get("commandId") == command_id]
    assert len(created) == 1, created
    assert len(completed) == 1, completed


def listen(session) -> list:
    events: list = []

    async def collect():
        async for event in session.events():
            events.append(event)

    asyncio.ensure_future(collect())
    return events


@pytest.mark.parametrize("way", ["send", "stream"])
def test_a_send_lost_with_the_socket_is_sent_again_after_the_reconnect(server, way):
    """The message.send never reaches the server: the socket drops as the client writes it. After
    the reconnect and the session's replay (which does not show the message) it is sent again with
    the same commandId, and the send gets its reply."""

    async def scenario():
        async def policy(link, frame, raw):
            if frame.get("type") == "message.send" and frame["text"] == "hello there" and link.index == 0:
                link.cut()
                return False
            return True

        async with Proxy(server, policy) as proxy:
            async with Client(proxy.url, api_key=KEY, secret=SECRET, backoff=(0.05, 0.2)) as client:
                session = await client.agent("support").sessions.create(user_id="u_lost")
                events = listen(session)
                if way == "send":
                    reply = await asyncio.wait_for(session.send("hello there"), 10)
                    text = reply.text
                else:
                    streamed = await asyncio.wait_for(_collect(session.stream("hello there")), 10)
                    assert streamed[0]["type"] == "message.created" and streamed[-1]["type"] == "response.completed"
                    text = streamed[-1]["text"]
                (command_id,) = {f["commandId"] for _, f in proxy.frames if f.get("text") == "hello there"}
                await next_reply_is_once(session, command_id, events)
                texts = [i.get("text") for i in session.conversation.values() if i.get("role") == "user"]
                return text, proxy.sends(command_id), texts

    text, links, texts = run(scenario())
    assert text == "Hello from the scripted model."
    assert links == [0, 1], links  # lost on the first socket, sent again on the second
    assert texts.count("hello there") == 1


async def _collect(stream):
    return [event async for event in stream]


def test_a_send_that_reached_the_server_is_not_run_twice(server):
    """The frame did reach the server, but late: the client's side of the socket drops as it is
    written, the server gets it on the old connection just as the client sends it again on the
    new one. The server runs it once (it knows the commandId); the send gets its reply."""

    async def scenario():
        held: dict = {}
        created = asyncio.Event()

        async def policy(link, frame, raw):
            if frame.get("type") != "message.send" or frame["text"] != "hello late":
                return True
            if link.index == 0:
                # Kept: the old connection's server side stays open; the client's side drops.
                held["link"], held["raw"] = link, raw
                link.cut_client()
                return False
            # The client sent it again: first the server gets the first one, then this one.
            held["link"].forward(held["raw"])
            await asyncio.wait_for(created.wait(), 10)
            return True

        async with Proxy(server, policy) as proxy:
            async with Client(proxy.url, api_key=KEY, secret=SECRET, backoff=(0.05, 0.2)) as client:
                session = await client.agent("support").sessions.create(user_id="u_late")
                events = listen(session)

                async def watch():
                    async for event in session.events():
                        if event["type"] == "message.created" and event["item"].get("text") == "hello late":
                            created.set()

                watcher = asyncio.ensure_future(watch())
                reply = await asyncio.wait_for(session.send("hello late"), 10)
                watcher.cancel()
                (command_id,) = {f["commandId"] for _, f in proxy.frames if f.get("text") == "hello late"}
                await next_reply_is_once(session, command_id, events)
                return reply, proxy.sends(command_id)

    reply, links = run(scenario())
    assert reply.text == "Hello from the scripted model."
    assert links == [0, 1], links  # written on both sockets, and the server got both


def test_a_send_the_replay_shows_is_not_sent_again(server):
    """The frame reached the server and its turn ran, but the socket dropped before the client
    read any of it: the replay after the reconnect shows the message (message.created with its
    commandId), so it is not sent again, and the send completes from the replay."""

    async def scenario():
        sent = asyncio.Event()

        async def policy(link, frame, raw):
            if frame.get("type") == "message.send" and frame["text"] == "hello seen" and link.index == 0:
                link.deaf = True  # the client reads nothing more on this socket
                sent.set()
            return True

        async with Proxy(server, policy) as proxy:
            async with Client(proxy.url, api_key=KEY, secret=SECRET, backoff=(0.05, 0.2)) as client, Client(
                server, api_key=KEY, secret=SECRET
            ) as observer:
                session = await client.agent("support").sessions.create(user_id="u_seen")
                events = listen(session)
                watched = await observer.agent("support").sessions.resume(session.id)
                seen = listen(watched)
                replying = asyncio.ensure_future(session.send("hello seen"))
                await asyncio.wait_for(sent.wait(), 10)
                for _ in range(500):  # the server ran the turn (the observer saw it end)
                    if any(e["type"] == "response.completed" for e in seen):
                        break
                    await asyncio.sleep(0.02)
                assert not replying.done()
                proxy.links[0].cut()
                reply = await asyncio.wait_for(replying, 10)
                (command_id,) = {f["commandId"] for _, f in proxy.frames if f.get("text") == "hello seen"}
                await next_reply_is_once(session, command_id, events)
                return reply, proxy.sends(command_id)

    reply, links = run(scenario())
    assert reply.text == "Hello from the scripted model."
    assert links == [0], links


def test_a_session_create_cut_off_fails_with_disconnected(server):
    """A session.create written on a socket that drops is not sent again (the server may have
    made the session): it fails at once with disconnected, as the TypeScript client's does; the
    client goes on working on the next socket."""

    async def scenario():
        async def policy(link, frame, raw):
            if frame.get("type") == "session.create" and link.index == 0:
                link.cut()
                return False
            return True

        async with Proxy(server, policy) as proxy:
            async with Client(proxy.url, api_key=KEY, secret=SECRET, backoff=(0.05, 0.2), request_timeout=8) as client:
                started = asyncio.get_running_loop().time()
                with pytest.raises(ClientError) as cut:
                    await client.agent("support").sessions.create(user_id="u_cut")
                waited = asyncio.get_running_loop().time() - started
                session = await client.agent("support").sessions.create(user_id="u_cut")
                reply = await asyncio.wait_for(session.send("hello again"), 10)
                creates = [index for index, frame in proxy.frames if frame.get("type") == "session.create"]
                return cut.value, waited, reply, creates

    error, waited, reply, creates = run(scenario())
    assert error.code == "disconnected" and "session.create was cut off" in error.message, error
    assert waited < 5, waited
    assert reply.text == "Hello from the scripted model."
    assert creates == [0, 1], creates


def test_a_session_resume_cut_off_is_asked_again(server):
    """A session.resume is safe to repeat: written on a socket that drops, it is written again on
    the next one and resolves."""

    async def scenario():
        async with Client(server, api_key=KEY, secret=SECRET) as direct:
            made = await direct.agent("support").sessions.create(user_id="u_resume")
            await direct.agent("support").sessions.create(user_id="u_resume")
            await made.send("hello")
            seen = made.last_seq

        async def policy(link, frame, raw):
            if frame.get("type") == "session.resume" and link.index == 0:
                link.cut()
                return False
            return True

        async with Proxy(server, policy) as proxy:
            async with Client(proxy.url, api_key=KEY, secret=SECRET, backoff=(0.05, 0.2), request_timeout=8) as client:
                resumed = await client.agent("support").sessions.resume(made.id)
                for _ in range(250):
                    if resumed.last_seq >= seen:
                        break
                    await asyncio.sleep(0.02)
                resumes = [(index, frame["requestId"]) for index, frame in proxy.frames if frame.get("type") == "session.resume"]
                return resumed, seen, resumes

    resumed, seen, resumes = run(scenario())
    assert resumed.last_seq == seen
    assert [index for index, _ in resumes] == [0, 1] and resumes[0][1] == resumes[1][1], resumes
