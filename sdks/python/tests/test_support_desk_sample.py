"""The Python worker of apps/support-desk against a real server with the sample's agent: it hosts
lookup_order over the SQLite orders table, and answers an SMS on the channel's own session."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from patchbay.client import Client

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "apps" / "support-desk"
ENV = {**os.environ, "PATCHBAY_API_KEY": "pk_desk", "PATCHBAY_API_SECRET": "sk_desk_secret_of_at_least_32_bytes"}


@pytest.fixture()
def desk(tmp_path):
    node = shutil.which("node")
    if node is None or not (REPO / "packages" / "server" / "dist").exists():
        pytest.fail("the sample test needs node and a built server (pnpm build)")
    server = subprocess.Popen(
        [node, str(REPO / "packages" / "server" / "bin" / "patchbay.js"), "serve", "--port", "0",
         "--config-dir", str(SAMPLE), "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV, text=True,
    )
    url = server.stdout.readline().strip().rsplit(" ", 1)[-1]
    worker = subprocess.Popen(
        [sys.executable, str(SAMPLE / "python" / "support_worker.py")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**ENV, "PATCHBAY_URL": url, "ORDERS_DB": str(tmp_path / "orders.sqlite")},
    )
    yield url, worker
    worker.terminate()
    try:
        worker.wait(15)
    finally:
        server.terminate()
        server.wait(10)


def test_the_python_worker_hosts_lookup_order_and_answers_a_channel(desk):
    url, worker = desk

    async def chat():
        async with Client(url, api_key="pk_desk", secret="sk_desk_secret_of_at_least_32_bytes") as client:
            session = await client.agent("support").sessions.create(user_id="u_ada")
            for _ in range(100):  # until the worker is connected and hosts the tool
                reply = await session.send("Where is order A1001?")
                if "shipped" in reply.text:
                    return reply.text
                await asyncio.sleep(0.1)
            return reply.text

    text = asyncio.run(asyncio.wait_for(chat(), 60))
    assert text == "Order A1001 is shipped: it left the warehouse and arrives Thursday"

    request = urllib.request.Request(
        f"{url}/v1/agents/support/inbound/messages",
        data=json.dumps({"channel": {"type": "sms", "id": "+15550100"}, "userId": "u_grace", "text": "Where is order B2001?"}).encode(),
        headers={"x-api-key": "pk_desk", "authorization": "Bearer sk_desk_secret_of_at_least_32_bytes", "content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202
        assert json.loads(response.read())["status"] in ("offered", "queued")
    # The worker opens the channel's session and the model replies there.
    headers = {"x-api-key": "pk_desk", "authorization": "Bearer sk_desk_secret_of_at_least_32_bytes"}

    def get(path):
        with urllib.request.urlopen(urllib.request.Request(f"{url}{path}", headers=headers), timeout=10) as r:
            return json.loads(r.read())

    deadline = time.time() + 20
    replies = []
    while time.time() < deadline and not replies:
        for info in get("/v1/agents/support/sessions?userId=u_grace")["sessions"]:
            items = get(f"/v1/sessions/{info['id']}")["conversation"]
            replies = [i["text"] for i in items if i["type"] == "message" and i["role"] == "assistant"]
        time.sleep(0.1)
    assert replies == ["Order B2001 is delivered: it was delivered on Monday"]
    # SIGTERM drains the worker; its log has the reply it sent on the SMS channel's session.
    worker.terminate()
    _, log = worker.communicate(timeout=20)
    assert "reply to sms +15550100: Order B2001 is delivered: it was delivered on Monday" in log
    assert worker.returncode == 0
