"""The support-desk worker in Python, beside the TypeScript one (../src/support-worker.ts): it
hosts lookup_order over the same SQLite orders table for every session of the `support` agent,
sees each message first (the agent has `dispatch: { text: enabled }`) and lets the model answer,
and answers messages from a channel on the channel's own session.

    export PATCHBAY_URL=http://127.0.0.1:8787 PATCHBAY_API_KEY=pk_dev PATCHBAY_API_SECRET=...
    /usr/bin/python3 apps/support-desk/python/support_worker.py

Only the standard library and the Patchbay Python SDK (sdks/python, needing `websockets`).
SIGINT or SIGTERM drains it.
"""

import asyncio
import logging
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Annotated

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "sdks" / "python"))

from patchbay import Client, Dispatch, InboundMessage, ToolError, get_tool_call_context  # noqa: E402

SEED = [
    ("A1001", "u_ada", "shipped", "it left the warehouse and arrives Thursday", 2),
    ("A1002", "u_ada", "processing", "it is being packed today", 1),
    ("B2001", "u_grace", "delivered", "it was delivered on Monday", 3),
    ("C3001", "u_linus", "cancelled", "it was cancelled and refunded", 1),
]


def open_orders(path: str) -> sqlite3.Connection:
    """The orders table the TypeScript worker uses too: created and seeded on first open."""
    db = sqlite3.connect(path, check_same_thread=False)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode = WAL")
    db.execute(
        "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, customer TEXT NOT NULL,"
        " status TEXT NOT NULL, detail TEXT NOT NULL, items INTEGER NOT NULL)"
    )
    db.executemany("INSERT OR IGNORE INTO orders VALUES (?, ?, ?, ?, ?)", SEED)
    db.commit()
    return db


def create_support_worker(client: Client, orders: sqlite3.Connection, capacity: int = 4) -> Dispatch:
    log = logging.getLogger("support-desk")
    dispatch = Dispatch(capacity=capacity, client=client)
    support = client.agent("support")

    @support.register(description="Look up an order by its number: its status and when it arrives.", interruptible=True)
    async def lookup_order(order_id: Annotated[str, "the order number, e.g. A1001"]) -> dict:
        ctx = get_tool_call_context()
        await ctx.update(f"Looking up order {order_id}")
        row = orders.execute("SELECT * FROM orders WHERE id = ? COLLATE NOCASE", (order_id,)).fetchone()
        log.info("lookup_order %s (call %s, attempt %s) for %s", order_id, ctx.id, ctx.attempt, ctx.user.id)
        if row is None:
            raise ToolError(f"There is no order {order_id}. Ask the customer to check the number.")
        return {"order_id": row["id"], "status": row["status"], "detail": row["detail"], "items": row["items"]}

    dispatch.host(support, tool_timeout=30)

    @dispatch.on_message
    async def written(message: InboundMessage) -> None:
        if message.session_id:
            log.info("message from %s on session %s: %r", message.user.id, message.session_id, message.text)
            await dispatch.answer(message)
            return
        session = await dispatch.session_for(message)
        reply = await session.send(message.text)
        log.info("reply to %s %s: %s", message.channel.type, message.channel.id, reply.text)

    return dispatch


async def main() -> int:
    logging.basicConfig(level=logging.INFO, format="[python worker] %(message)s")
    client = Client()
    orders = open_orders(os.environ.get("ORDERS_DB", str(Path(__file__).resolve().parent.parent / "orders.sqlite")))
    dispatch = create_support_worker(client, orders, int(os.environ.get("WORKER_CAPACITY", "4")))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(dispatch.stop(timeout=10)))
    try:
        await dispatch.run()
    except Exception as error:
        print(f"{getattr(error, 'code', 'error')}: {error}", file=sys.stderr)
        return 1
    finally:
        await client.close()
        orders.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
