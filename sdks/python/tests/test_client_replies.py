"""The session client's replies against a real server (the built package, scripted model) with
in-process tools: an event over 5 MiB (a tool's image), a gap in ``seq``, the tool events of a
reply in ``stream()``, messages over the protocol's limits, errors that name no request, and
``close()`` with sends still waiting."""

import asyncio
import json

import pytest

from patchbay.client import MAX_MESSAGE_TEXT_CHARS, Client, ClientError, Session
from patchbay.protocol import frame_schema
from _servers import KEY, SECRET, SERVER, TOOLS, script_server

START = """
const [serverUrl, toolsUrl, dataDir] = process.argv.slice(1);
const { createServer, silentLogger } = await import(serverUrl);
const { Tools, ToolOutput } = await import(toolsUrl);
const tools = new Tools()
  .register({
    name: "show_picture",
    description: "Shows a picture of the given size in MB",
    parameters: { type: "object", properties: { mb: { type: "number" } }, required: ["mb"] },
    run: async ({ mb }) => {
      const bytes = new Uint8Array(Math.round(mb * 1000 * 1000));
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 2654435761) >>> 24;
      bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      return new ToolOutput({ text: "the picture", images: [{ data: bytes }] });
    },
  })
  .register({
    name: "look_up",
    description: "Looks something up, with progress",
    parameters: { type: "object", properties: { what: { type: "string" } }, required: ["what"] },
    run: async ({ what }, signal, ctx) => {
      ctx.update(`looking up ${what}`);
      ctx.say(`One moment, looking up ${what}.`);
      await ctx.disallowInterruptions();
      await new Promise((resolve) => setTimeout(resolve, 20));
      return `found ${what}`;
    },
  })
  .register({
    name: "delete_thing",
    description: "Deletes a thing",
    parameters: { type: "object", properties: { what: { type: "string" } }, required: ["what"] },
    approval: { title: "Delete {what}?" },
    run: async ({ what }) => `deleted ${what}`,
  });
const server = await createServer({
  port: 0, dataDir, apiKey: %s, secret: %s, logger: silentLogger, tools,
  agents: { support: { model: { provider: "scripted", rules: [
    { match: "^a big picture$", toolCalls: [{ tool: "show_picture", arguments: { mb: 4.6 } }], reply: "Sent the picture." },
    { match: "^look up (?<what>.+)$", toolCalls: [{ tool: "look_up", arguments: { what: "{what}" } }], reply: "Result: {result}" },
    { match: "^delete (?<what>.+)$", toolCalls: [{ tool: "delete_thing", arguments: { what: "{what}" } }], reply: "Result: {result}" },
    { match: ".", reply: "ok" },
  ] } } },
});
console.log(server.url);
process.stdin.on("end", () => server.close().then(() => process.exit(0)));
process.stdin.resume();
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    script = START % (json.dumps(KEY), json.dumps(SECRET))
    yield from script_server(tmp_path_factory, "patchbay-replies", script, SERVER.as_uri(), TOOLS.as_uri())


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 40))


async def until(condition, what: str, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_an_event_over_5_mib_is_read(server):
    """A tool's 4.6 MB image makes a conversation.updated of about 6.1 MB: more than the server's
    maxFrameBytes (5 MiB), which bounds what it accepts, not what it sends."""

    async def scenario():
        async with Client(server, api_key=KEY, secret=SECRET) as client:
            session = await client.agent("support").sessions.create(user_id="u_big")
            socket = client._ws
            reply = await asyncio.wait_for(session.send("a big picture"), 20)
            return reply, session, client._ws is socket

    reply, session, same_socket = run(scenario())
    assert reply.text == "Sent the picture."
    assert same_socket, "the socket was dropped and replaced"
    (call,) = [item for item in session.conversation.values() if item["type"] == "tool_call"]
    assert call["result"]["outcome"] == "completed", call["result"]
    (image,) = call["result"]["content"]["images"]
    assert len(image["data"]) > 6_000_000


def test_a_gap_in_seq_is_filled_by_resuming_from_the_last_event(server):
    """An event lost on the way (dropped here before the client reads it) is asked for again:
    every event is applied once, in order."""

    async def scenario():
        async with Client(server, api_key=KEY, secret=SECRET) as client:
            session = await client.agent("support").sessions.create(user_id="u_gap")
            seen = []

            async def listen():
                async for event in session.events():
                    seen.append(event)

            listener = asyncio.ensure_future(listen())
            await asyncio.sleep(0)
            read, dropped = client._on_text, []

            def lossy(text):
                if not dropped and json.loads(text)["type"] == "text.delta":
                    dropped.append(text)
                    return
                read(text)

            client._on_text = lossy
            reply = await asyncio.wait_for(session.send("hello"), 10)
            await session.close()
            await listener
            return reply, seen, dropped

    reply, seen, dropped = run(scenario())
    assert dropped, "no text.delta was dropped"
    assert reply.text == "ok"
    seqs = [event["seq"] for event in seen]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    assert [event["type"] for event in seen].count("text.delta") == 1
    assert seen[-1]["type"] == "response.completed"


def test_a_hole_the_server_cannot_fill_is_reported_and_skipped():
    """When the replay of the resume skips the same events, the log lacks them: the client says
    so (on_error) and goes on, as the TypeScript client does, instead of stalling the session."""
    errors = []
    client = Client("http://127.0.0.1:9", api_key=KEY, secret=SECRET, on_error=errors.append)
    session = Session(client, {"id": "s_hole"})
    client._sessions[session.id] = session
    resumes = []

    def resume(resumed):  # what Client._resume does, without a socket
        resumes.append(resumed.last_seq)
        client._resumes[f"r_{len(resumes)}"] = resumed
        return f"r_{len(resumes)}"

    client._resume = resume

    def event(seq):
        return {"type": "response.thinking", "sessionId": "s_hole", "seq": seq, "responseId": "r_1", "reason": "model"}

    session._apply(event(1))
    session._apply(event(3))  # 2 is missing: resume from 1
    session._apply(event(4))  # still waiting for the replay
    assert (session.last_seq, resumes) == (1, [1])
    client._on_text(json.dumps({"type": "session.opened", "requestId": "r_1", "session": {"id": "s_hole", "agent": "support", "userId": "u", "createdAt": 1, "lastSeq": 4, "metadata": {}}}))
    session._apply(event(3))  # the replay skips 2 too
    session._apply(event(4))
    assert session.last_seq == 4 and resumes == [1]
    assert [(e.code, e.session_id) for e in errors] == [("protocol", "s_hole")]
    assert "events 2..2 of session s_hole are lost" in errors[0].message


def test_stream_yields_the_tool_events_of_its_reply(server):
    """Tool events name their call, not the response: stream() attributes them through the call's
    item (its responseId), so it yields every event of the turn, and nothing of another."""

    async def scenario():
        async with Client(server, api_key=KEY, secret=SECRET) as client:
            session = await client.agent("support").sessions.create(user_id="u_stream")
            everything = []

            async def listen():
                async for event in session.events():
                    everything.append(event)

            listener = asyncio.ensure_future(listen())
            await asyncio.sleep(0)

            async def collect(text, approve=False):
                events = []
                async for event in session.stream(text):
                    events.append(event)
                    if approve and event["type"] == "approval.requested":
                        await session.decide(event["approval"]["id"], True)
                return events

            looked_up = await asyncio.wait_for(collect("look up apples"), 10)
            deleted = await asyncio.wait_for(collect("delete the draft", approve=True), 10)
            await session.close()
            await listener
            return looked_up, deleted, everything

    looked_up, deleted, everything = run(scenario())
    kinds = [event["type"] for event in looked_up]
    for kind in ("message.created", "response.started", "tool.progress", "tool.say", "tool.held", "text.delta", "message.completed"):
        assert kind in kinds, (kind, kinds)
    assert kinds[-1] == "response.completed"
    calls = [e for e in looked_up if e["type"] == "conversation.updated" and e["item"]["type"] == "tool_call"]
    assert calls and calls[-1]["item"]["status"] == "completed"
    # Exactly the session's events of each turn, in order.
    assert looked_up + deleted == everything
    assert [e["seq"] for e in looked_up] == list(range(1, len(looked_up) + 1))
    deleted_kinds = [event["type"] for event in deleted]
    assert "approval.requested" in deleted_kinds and "approval.resolved" in deleted_kinds
    assert deleted[-1]["text"] == "Result: deleted the draft"


def test_the_text_limit_is_the_protocols():
    schema = frame_schema("client-to-server", "message.send")
    assert schema["properties"]["text"]["maxLength"] == MAX_MESSAGE_TEXT_CHARS


def test_messages_over_the_limits_are_refused_before_they_are_sent(server):
    """A text over 100 000 characters and a frame over welcome.maxFrameBytes raise at once, with
    the limit and the size. A frame over the server's headroom (maxResultFrameBytes + 1 MiB) would
    close the socket (1009) and the message would be lost, its send waiting forever."""

    async def scenario():
        errors = []
        async with Client(server, api_key=KEY, secret=SECRET, on_error=errors.append) as client:
            session = await client.agent("support").sessions.create(user_id="u_limits")
            socket = client._ws
            refused = []
            for images in ([], [5 * 1024 * 1024], [10 * 1024 * 1024]):
                text = "x" * (MAX_MESSAGE_TEXT_CHARS + 1) if not images else "what is this?"
                inline = [{"type": "image", "mimeType": "image/png", "data": "A" * size} for size in images]
                with pytest.raises(ClientError) as error:
                    await asyncio.wait_for(session.send(text, images=inline), 5)
                refused.append(error.value)
            with pytest.raises(ClientError):
                await asyncio.wait_for(anext(session.stream("y" * (MAX_MESSAGE_TEXT_CHARS + 1))), 5)
            # Just at the limit is fine, and the session is as usable as before, on the same socket.
            at_limit = await asyncio.wait_for(session.send("z" * MAX_MESSAGE_TEXT_CHARS), 10)
            return refused, at_limit, client._ws is socket, session._pending, errors

    (too_long, too_large, far_too_large), at_limit, same_socket, pending, errors = run(scenario())
    assert (too_long.code, too_long.path) == ("invalid_frame", "text")
    assert "100001 characters" in too_long.message and "100000" in too_long.message
    for error in (too_large, far_too_large):
        assert error.code == "frame_too_large"
        assert "5242880 bytes" in error.message and "maxFrameBytes" in error.message
    assert at_limit.text == "ok"
    assert same_socket and pending == {} and errors == []


def test_an_error_frame_that_names_no_request_is_reported(server):
    """An error frame that names no request or message of this client (here the answer to a frame
    without ids) is logged and given to on_error instead of dropped."""

    async def scenario():
        reported: asyncio.Queue = asyncio.Queue()

        async def on_error(error):
            await reported.put(error)

        async with Client(server, api_key=KEY, secret=SECRET, on_error=on_error) as client:
            session = await client.agent("support").sessions.create(user_id="u_errors")
            # Past the client's own checks.
            await client._ws.send(json.dumps({"type": "message.send", "text": "x" * (MAX_MESSAGE_TEXT_CHARS + 1)}))
            first = await asyncio.wait_for(reported.get(), 10)
            await client._ws.send(json.dumps({"type": "interrupt", "sessionId": session.id}))
            second = await asyncio.wait_for(reported.get(), 10)
            return first, second, session.id

    first, second, session_id = run(scenario())
    assert first.code == "invalid_frame" and first.session_id is None
    assert (second.code, second.path, second.session_id) == ("invalid_frame", "commandId", session_id)


def test_close_fails_the_sends_and_streams_that_wait(server):
    async def scenario():
        client = Client(server, api_key=KEY, secret=SECRET)
        agent = client.agent("support")
        first = await agent.sessions.create(user_id="u_close")
        second = await agent.sessions.create(user_id="u_close")
        third = await agent.sessions.create(user_id="u_close")
        # Each waits for an approval nobody gives.
        sending = asyncio.ensure_future(first.send("delete the draft"))

        async def consume(session):
            return [event async for event in session.stream("delete the copy")]

        streaming = asyncio.ensure_future(consume(second))
        detached = asyncio.ensure_future(third.send("delete the third"))
        await until(lambda: first.approvals and second.approvals and third.approvals, "the approvals")
        # Closing one session fails its own send only.
        await third.close()
        detached_error = await asyncio.wait_for(asyncio.gather(detached, return_exceptions=True), 5)
        assert not sending.done() and not streaming.done()
        await client.close()
        results = await asyncio.wait_for(asyncio.gather(sending, streaming, return_exceptions=True), 5)
        with pytest.raises(ClientError) as after:
            await asyncio.wait_for(first.send("hello"), 5)
        return detached_error[0], results, after.value

    detached, (sent, streamed), after = run(scenario())
    assert isinstance(detached, ClientError) and detached.code == "disconnected"
    assert "was closed" in detached.message
    for error in (sent, streamed, after):
        assert isinstance(error, ClientError), error
        assert error.code == "disconnected"
    assert sent.message == "the client was closed"
