"""The conformance worker of the Python SDK: hosts the kit's tools (packages/conformance/README.md)
and handles messages and calls as the kit expects. Configured by PATCHBAY_URL, PATCHBAY_API_KEY,
PATCHBAY_API_SECRET, PATCHBAY_WORKER_ID and PATCHBAY_CAPACITY; SIGTERM drains it.

    /usr/bin/python3 sdks/python/examples/conformance_worker.py
"""

import asyncio
import base64
import json
import os
import signal
import sys
from pathlib import Path
from typing import Annotated

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from patchbay import (  # noqa: E402
    Dispatch,
    ImageContent,
    InboundCall,
    InboundMessage,
    ToolOutput,
    Tools,
    get_tool_call_context,
)

WORKER_ID = os.environ.get("PATCHBAY_WORKER_ID", "conformance-py")
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class Agent:
    """The agent whose tools this worker hosts."""

    name = "conformance"
    tools = Tools()


tools = Agent.tools
runs: dict[str, int] = {}


@tools.register(description="Echo the text")
async def echo(text: str) -> str:
    return f"echo:{text}"


@tools.register(description="Describe the call")
async def describe_call() -> str:
    ctx = get_tool_call_context()
    return json.dumps(
        {"callId": ctx.id, "attempt": ctx.attempt, "sessionId": ctx.session_id, "userId": ctx.user.id, "workerId": WORKER_ID}
    )


@tools.register(description="What the conversation holds")
async def recall(n: int) -> str:
    items = get_tool_call_context().conversation
    return json.dumps(
        [[item["id"], item["text"] if item["type"] == "message" else item["status"]] for item in items],
        separators=(",", ":"),
    )


@tools.register(
    description="Report progress",
    parameters_schema={
        "type": "object",
        "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["steps"],
    },
)
async def report(steps: int) -> str:
    ctx = get_tool_call_context()
    for i in range(1, steps + 1):
        await ctx.update(f"step {i} of {steps}")
        await asyncio.sleep(0.05)
    await ctx.say("Exactly these words.")
    return f"reported {steps} steps"


@tools.register(description="Wait", interruptible=True)
async def wait(ms: Annotated[int, "milliseconds"]) -> str:
    ctx = get_tool_call_context()
    runs[ctx.id] = runs.get(ctx.id, 0) + 1
    await asyncio.sleep(ms / 1000)
    return f"waited {ms} ms on {WORKER_ID}, runs={runs[ctx.id]}"


@tools.register(description="Hold, then wait", interruptible=True)
async def hold_then_wait(ms: int) -> str:
    await get_tool_call_context().disallow_interruptions()
    await asyncio.sleep(ms / 1000)
    return f"held and waited {ms} ms"


@tools.register(description="Sleep past the timeout", timeout=1)
async def sleepy() -> str:
    await asyncio.sleep(30)
    return "never"


@tools.register(description="Fail")
async def fail() -> str:
    raise RuntimeError("deliberate failure")


@tools.register(
    description="Pay an amount",
    approval={"title": "Pay {amount}?", "when": lambda args: args["amount"] > 100},
)
async def pay(amount: int) -> str:
    return f"paid {amount}"


@tools.register(description="An image")
async def image() -> ToolOutput:
    return ToolOutput(text="a 1x1 png", images=[ImageContent(data=PNG, mime="image/png")])


async def main() -> int:
    dispatch = Dispatch(
        capacity=int(os.environ.get("PATCHBAY_CAPACITY", "4")), worker_id=WORKER_ID, backoff=(0.1, 1.0)
    )

    @dispatch.on_message
    async def on_message(message: InboundMessage) -> None:
        if message.text.startswith("fail"):
            raise RuntimeError("deliberate failure")
        if message.text.startswith("hold "):
            await asyncio.sleep(int(message.text.split()[1]) / 1000)
        if message.session_id:
            await dispatch.answer(message)

    @dispatch.on_call
    async def on_call(call: InboundCall) -> None:
        return None

    dispatch.host(Agent)
    stopped: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def drain() -> None:
        async def go() -> None:
            result = await dispatch.stop(timeout=10)
            if not stopped.done():
                stopped.set_result(0 if result.drained else 1)

        asyncio.ensure_future(go())

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, drain)
    try:
        await dispatch.run()
    except Exception as error:
        print(f"{getattr(error, 'code', 'error')}: {error}", file=sys.stderr)
        return 1
    return await stopped if dispatch._stopping else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
