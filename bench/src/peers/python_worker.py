"""The bench's Python worker: hosts lookup_order for the `support` agent with the Python SDK
(sdks/python), the way bench/src/peers/worker.ts does with @patchbay/dispatch, and returns the
same text. argv: <server base url>; the credentials come from the environment."""

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sdks" / "python"))

from patchbay import Dispatch, Tools  # noqa: E402


class Support:
    name = "support"
    tools = Tools()


@Support.tools.register(name="lookup_order", description="Look up an order by its number.")
async def lookup_order(order_id: str) -> str:
    return json.dumps({"order_id": order_id, "status": "shipped", "eta": "2 days"}, separators=(",", ":"))


async def main() -> None:
    dispatch = Dispatch(capacity=8, url=sys.argv[1], worker_id="bench-python")
    dispatch.host(Support, tool_timeout=60)
    await dispatch.run()


asyncio.run(main())
