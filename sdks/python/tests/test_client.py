"""The session client against a real Patchbay server (the built CLI, scripted model, SQLite in a
temporary directory): create, send, stream, resume, approvals and decide, a worker's large result.
More in test_client_replies.py (limits, gaps, tool events in stream(), close())."""

import asyncio
import contextlib
import os

import pytest

from patchbay import Dispatch, ImageContent, ToolOutput
from patchbay.client import Client, ClientError
from _servers import KEY, SECRET, cli_server

AGENT = """
model:
  provider: scripted
  rules:
    - match: "^hello"
      reply: "Hello from the scripted model."
    - match: "^delete (?<what>.+)$"
      toolCalls: [{ tool: delete_thing, arguments: { what: "{what}" } }]
      reply: "Result: {result}"
      errorReply: "Not done: {result}"
    - match: "^show the picture$"
      toolCalls: [{ tool: show_picture, arguments: {} }]
      reply: "Here it is."
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from cli_server(tmp_path_factory, "patchbay", {"support": AGENT})


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


@contextlib.asynccontextmanager
async def running(dispatch):
    """The worker running and connected (within 4 s), then stopped."""
    worker = asyncio.create_task(dispatch.run())
    try:
        for _ in range(200):
            if dispatch.connections:
                break
            await asyncio.sleep(0.02)
        yield dispatch
    finally:
        await dispatch.stop(timeout=2)
        await worker


def test_create_send_and_stream(server):
    async def scenario():
        async with Client(server, api_key=KEY, secret=SECRET) as client:
            session = await client.agent("support").sessions.create(user_id="u_py")
            reply = await session.send("hello there")
            kinds = [e["type"] async for e in session.stream("hello again")]
            return session, reply, kinds

    session, reply, kinds = run(scenario())
    assert reply.text == "Hello from the scripted model."
    assert reply.reason == "stop"
    assert kinds[0] == "message.created" and kinds[-1] == "response.completed"
    assert "text.delta" in kinds
    assert session.info["userId"] == "u_py"


def test_resume_replays_what_was_missed(server):
    async def scenario():
        async with Client(server, api_key=KEY, secret=SECRET) as first:
            session = await first.agent("support").sessions.create(user_id="u_py")
            await session.send("hello")
            session_id, seen = session.id, session.last_seq
        async with Client(server, api_key=KEY, secret=SECRET) as second:
            resumed = await second.agent("support").sessions.resume(session_id, after_seq=0)
            for _ in range(100):
                if resumed.last_seq >= seen:
                    break
                await asyncio.sleep(0.02)
            return resumed, seen

    resumed, seen = run(scenario())
    assert resumed.last_seq == seen
    texts = [item.get("text") for item in resumed.conversation.values() if item["type"] == "message"]
    assert "Hello from the scripted model." in texts


def test_approvals_and_decide_with_a_python_worker_hosting_the_tool(server):
    async def scenario():
        agent = Client(server, api_key=KEY, secret=SECRET).agent("support")

        @agent.register(description="Delete a thing", needs_approval="Delete {what}?")
        async def delete_thing(what: str) -> str:
            return f"deleted {what}"

        dispatch = Dispatch(capacity=1, url=server, api_key=KEY, secret=SECRET, worker_id="w_py_test")
        dispatch.host(agent)
        async with running(dispatch):
            async with Client(server, api_key=KEY, secret=SECRET) as client:
                session = await client.agent("support").sessions.create(user_id="u_py")
                with pytest.raises(ClientError) as refused:
                    await session.decide("ap_nope", True)
                reply = asyncio.ensure_future(session.send("delete the draft"))
                for _ in range(200):
                    if session.approvals:
                        break
                    await asyncio.sleep(0.02)
                (approval,) = session.approvals.values()
                await session.decide(approval["id"], True)
                return approval, await reply, refused.value

    approval, reply, refused = run(scenario())
    assert approval["title"] == "Delete the draft?"
    assert reply.text == "Result: deleted the draft"
    assert refused.code == "not_found"


def test_a_conditional_approval_asks_only_for_the_calls_its_when_says_yes_to(server):
    async def scenario():
        agent = Client(server, api_key=KEY, secret=SECRET).agent("support")
        ran = []

        @agent.register(
            name="delete_thing",
            description="Delete a thing",
            approval={"title": "Delete {what}?", "when": lambda args, ctx: args["what"] != "the draft"},
        )
        async def delete_thing(what: str) -> str:
            ran.append(what)
            return f"deleted {what}"

        dispatch = Dispatch(url=server, api_key=KEY, secret=SECRET, worker_id="w_py_when")
        dispatch.host(agent)
        async with running(dispatch):
            async with Client(server, api_key=KEY, secret=SECRET) as client:
                session = await client.agent("support").sessions.create(user_id="u_py")
                seen = []

                async def answer(text, allowed):
                    reply = asyncio.ensure_future(session.send(text))
                    for _ in range(250):
                        if session.approvals or reply.done():
                            break
                        await asyncio.sleep(0.02)
                    for approval in list(session.approvals.values()):
                        seen.append(approval["title"])
                        await session.decide(approval["id"], allowed)
                    return (await reply).text

                replies = [
                    await answer("delete the draft", True),
                    await answer("delete prod", True),
                    await answer("delete the users", False),
                ]
                return replies, seen, ran

    replies, seen, ran = run(scenario())
    assert seen == ["Delete prod?", "Delete the users?"]
    assert ran == ["the draft", "prod"]
    assert replies[:2] == ["Result: deleted the draft", "Result: deleted prod"]
    assert replies[2].startswith("Not done: "), replies[2]
    assert "declined" in replies[2], replies[2]


def test_bad_credentials_are_refused(server):
    async def scenario():
        client = Client(server, api_key=KEY, secret="wrong", request_timeout=5)
        try:
            await client.connect()
        finally:
            await client.close()

    with pytest.raises(ClientError) as refused:
        run(scenario())
    assert refused.value.code == "unauthorized"


def test_a_reply_with_a_workers_large_image_arrives(server):
    """A hosted tool's 4.6 MB image (under the 8 MiB result limit) comes back in an event of about
    6.1 MB, over the 5 MiB the server accepts in one frame: the client reads it (up to 64 MiB)
    instead of closing its socket with 1009 and reconnecting forever."""

    async def scenario():
        agent = Client(server, api_key=KEY, secret=SECRET).agent("support")

        @agent.register(description="Show the picture")
        async def show_picture() -> ToolOutput:
            data = b"\x89PNG\r\n\x1a\n" + os.urandom(4_600_000)
            return ToolOutput(text="the picture", images=[ImageContent(data=data, mime="image/png")])

        dispatch = Dispatch(capacity=1, url=server, api_key=KEY, secret=SECRET, worker_id="w_py_picture")
        dispatch.host(agent)
        async with running(dispatch):
            async with Client(server, api_key=KEY, secret=SECRET) as client:
                session = await client.agent("support").sessions.create(user_id="u_py")
                socket = client._ws
                reply = await asyncio.wait_for(session.send("show the picture"), 20)
                return reply, session, client._ws is socket

    reply, session, same_socket = run(scenario())
    assert reply.text == "Here it is."
    assert same_socket, "the client's socket was closed and replaced"
    (call,) = [item for item in session.conversation.values() if item["type"] == "tool_call"]
    assert call["result"]["outcome"] == "completed", call["result"]
    (image,) = call["result"]["content"]["images"]
    assert len(image["data"]) > 6_000_000
