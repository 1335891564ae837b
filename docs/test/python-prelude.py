# Put before each Python sample of the documentation by docs/test/samples.test.ts: what a sample
# leaves to the reader (the server's address and credentials, a tool's spec, the user's own
# order service), as small stand-ins. The credentials come from the test's environment.
import os

SERVER = os.environ["SAMPLE_WS_URL"]
API_KEY = os.environ["SAMPLE_API_KEY"]
SECRET = os.environ["SAMPLE_API_SECRET"]
LOOKUP_ORDER_SPEC = {
    "name": "lookup_order",
    "description": "Look up an order by its number",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
}


class _Orders:
    async def find(self, order_id, idempotency_key=None):
        return {"order_id": order_id, "status": "shipped"}


orders = _Orders()


async def lookup_order(order_id, idempotency_key=None):
    return f"Order {order_id} is shipped."
