"""The session client and the server's heartbeat (docs/protocol.md, Heartbeats): the server sends
a JSON ping with a nonce every heartbeatIntervalMs and drops a socket on which nothing arrived for
two intervals (4408). A real server (the built package, scripted model) with 100 ms heartbeats."""

import asyncio
import json

import pytest
import websockets

from patchbay.client import Client
from _servers import KEY, SECRET, SERVER, script_server

START = """
import { createServer, silentLogger } from %s;
const server = await createServer({
  port: 0, dataDir: process.argv[1], apiKey: %s, secret: %s, logger: silentLogger,
  clientSocket: { heartbeatIntervalMs: 100 },
  agents: { support: { model: { provider: "scripted", rules: [{ match: ".", reply: "still here" }] } } },
});
console.log(server.url);
process.stdin.on("end", () => server.close().then(() => process.exit(0)));
process.stdin.resume();
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    script = START % (json.dumps(SERVER.as_uri()), json.dumps(KEY), json.dumps(SECRET))
    yield from script_server(tmp_path_factory, "patchbay-heartbeat", script)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_the_client_answers_json_pings_and_keeps_its_socket(server):
    async def scenario():
        async with Client(server, api_key=KEY, secret=SECRET) as client:
            session = await client.agent("support").sessions.create(user_id="u_beat")
            socket = client._ws
            # Ten intervals: a client that did not answer would have been dropped (and reconnected).
            await asyncio.sleep(1.0)
            still = client._ws is socket
            reply = await session.send("are you there")
            return still, reply.text

    still, text = run(scenario())
    assert still, "the socket was dropped and replaced although the client answers pings"
    assert text == "still here"


def test_a_peer_that_does_not_answer_is_dropped_with_4408(server):
    async def scenario():
        url = server.replace("http", "ws", 1) + "/v1/client"
        async with websockets.connect(url) as ws:
            hello = {"type": "hello", "protocol": 1, "auth": {"kind": "api_key", "apiKey": KEY, "secret": SECRET}}
            await ws.send(json.dumps(hello))
            pings = []
            try:
                async for text in ws:
                    frame = json.loads(text)
                    if frame["type"] == "ping":
                        pings.append(frame.get("nonce"))
            except websockets.exceptions.ConnectionClosed:
                pass
            return ws.close_code, pings

    code, pings = run(scenario())
    assert code in (4408, 1006)
    assert pings and all(nonce and nonce.startswith("s") for nonce in pings)
