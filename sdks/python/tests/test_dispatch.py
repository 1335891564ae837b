"""The worker's options and its drain, without a network: frames meant for a socket that is not
there wait in its queue, where the tests read them."""

import asyncio

import pytest

from patchbay import Client, Dispatch, DispatchError, Tools

KEY = {"url": "http://127.0.0.1:9", "api_key": "pk_test", "secret": "s" * 40}


def hosted_call(call_id, ms):
    return {
        "type": "hosted.call",
        "callId": call_id,
        "attempt": 1,
        "agent": "a",
        "sessionId": "s1",
        "tool": "slow",
        "arguments": {"ms": ms},
        "user": {"id": "u1"},
        "conversation": [],
        "timeoutMs": 30_000,
    }


class Agent:
    def __init__(self) -> None:
        self.name = "a"
        self.tools = Tools()

        @self.tools.register(description="slow")
        async def slow(ms: int) -> str:
            await asyncio.sleep(ms / 1000)
            return "done"


def results(frames):
    return [(f["callId"], f["result"]["outcome"]) for f in frames if f["type"] == "hosted.result"]


def test_stop_waits_for_hosted_calls_that_arrive_while_it_drains():
    async def scenario():
        dispatch = Dispatch(**KEY).host(Agent())
        dispatch._phase = "running"
        await dispatch._hosted.call(hosted_call("c1", 100))
        stopping = asyncio.ensure_future(dispatch.stop(timeout=5))
        await asyncio.sleep(0.03)
        # Hosted calls do not count against capacity: the server may still send one.
        await dispatch._hosted.call(hosted_call("c2", 200))
        return await stopping, dispatch._queue

    result, queued = asyncio.run(scenario())
    assert (result.drained, result.unfinished_calls) == (True, [])
    assert results(queued) == [("c1", "completed"), ("c2", "completed")]


def test_stop_out_of_time_names_the_calls_it_cancelled():
    async def scenario():
        dispatch = Dispatch(**KEY).host(Agent())
        dispatch._phase = "running"
        await dispatch._hosted.call(hosted_call("c1", 5_000))
        return await dispatch.stop(timeout=0.1), dispatch._queue

    result, queued = asyncio.run(scenario())
    assert (result.drained, result.unfinished_calls) == (False, ["c1"])
    assert results(queued) == [("c1", "cancelled")]


def test_a_worker_takes_the_server_and_credentials_of_its_client(monkeypatch):
    for name in ("PATCHBAY_URL", "PATCHBAY_API_KEY", "PATCHBAY_API_SECRET"):
        monkeypatch.delenv(name, raising=False)
    client = Client("https://agents.example.com/", api_key="pk_c", secret="c" * 40)
    dispatch = Dispatch(8, client=client)
    assert dispatch.url == "https://agents.example.com"
    assert dispatch._ws_url == "wss://agents.example.com/v1/worker"
    assert (dispatch._api_key, dispatch._secret) == ("pk_c", "c" * 40)
    # What is passed here wins over the client's.
    assert Dispatch(8, client=client, api_key="pk_own", secret="o" * 40)._api_key == "pk_own"
    with pytest.raises(DispatchError, match="api_key= and secret="):
        Dispatch(8, client=Client("http://127.0.0.1:9", token="user-token"))


def test_a_worker_that_only_hosts_tools_needs_no_capacity():
    dispatch = Dispatch(**KEY).host(Agent())
    assert dispatch.capacity == 0
    assert dispatch._hello()["capacity"] == 0
    with pytest.raises(DispatchError, match="capacity must be an integer of 0 or more; got -1"):
        Dispatch(-1, **KEY)


def test_a_message_handler_needs_capacity():
    dispatch = Dispatch(**KEY)

    @dispatch.on_message
    async def handle(message):
        pass

    with pytest.raises(DispatchError) as refused:
        asyncio.run(dispatch.run())
    assert refused.value.code == "invalid_options"
    assert "needs one" in refused.value.message


class FakeSocket:
    def __init__(self) -> None:
        self.frames: list = []

    async def send(self, text):
        import json

        self.frames.append(json.loads(text))


def test_a_tool_registered_after_the_worker_connected_is_offered_with_worker_hosts():
    async def scenario():
        agent = Agent()
        dispatch = Dispatch(**KEY).host(agent)
        assert [t["name"] for t in dispatch._hello()["hosts"][0]["tools"]] == ["slow"]
        dispatch._phase = "running"
        dispatch._ws = socket = FakeSocket()

        @agent.tools.register(description="registered late")
        async def late() -> str:
            return "late"

        await asyncio.sleep(0)  # the frame goes out from a task
        await asyncio.sleep(0)
        # It runs when called, too.
        await dispatch._hosted.call({**hosted_call("c1", 0), "tool": "late", "arguments": {}})
        await dispatch._hosted.idle()
        return socket.frames

    frames = asyncio.run(scenario())
    hosts = [f for f in frames if f["type"] == "worker.hosts"]
    assert [[t["name"] for t in h["tools"]] for h in hosts[0]["hosts"]] == [["slow", "late"]]
    assert results(frames) == [("c1", "completed")]


def test_a_tool_registered_while_the_hello_waits_for_its_answer_is_told_once_connected():
    async def scenario():
        agent = Agent()
        dispatch = Dispatch(**KEY).host(agent)
        dispatch._phase = "running"  # the hello went out; worker.ready has not come back yet

        @agent.tools.register(description="registered late")
        async def late() -> str:
            return "late"

        await asyncio.sleep(0)
        return dispatch._queue

    queued = asyncio.run(scenario())
    assert [[t["name"] for t in h["tools"]] for f in queued if f["type"] == "worker.hosts" for h in f["hosts"]] == [
        ["slow", "late"]
    ]
