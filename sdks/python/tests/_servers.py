"""Real Patchbay servers for the client tests, each in a Node process of its own on 127.0.0.1
with SQLite in a temporary directory: the built CLI with agent files (:func:`cli_server`), or a
script that calls ``createServer`` for what the CLI cannot set up (:func:`script_server`). Both
are generators for a module-scoped fixture: they yield the server's URL and stop it after."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CLI = REPO / "packages" / "server" / "bin" / "patchbay.js"
SERVER = REPO / "packages" / "server" / "dist" / "index.js"
TOOLS = REPO / "packages" / "tools" / "dist" / "index.js"
KEY, SECRET = "pk_py", "sk_py_secret_of_at_least_32_bytes_long"


def _node() -> str:
    node = shutil.which("node")
    if node is None or not SERVER.exists():
        pytest.fail("the client tests need node and a built server (pnpm build)")
    return node


def _stop(proc: subprocess.Popen[str]) -> None:
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def cli_server(tmp_path_factory: pytest.TempPathFactory, name: str, agents: dict[str, str]) -> Iterator[str]:
    """``patchbay serve`` with ``agents`` (name to YAML) as its agent files and :data:`KEY` and
    :data:`SECRET` as its credentials."""
    node = _node()
    base = tmp_path_factory.mktemp(name)
    (base / "agents").mkdir()
    for agent, yaml in agents.items():
        (base / "agents" / f"{agent}.yaml").write_text(yaml)
    env = {**os.environ, "PATCHBAY_API_KEY": KEY, "PATCHBAY_API_SECRET": SECRET}
    proc = subprocess.Popen(
        [node, str(CLI), "serve", "--port", "0", "--config-dir", str(base), "--data-dir", str(base / "data")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    assert "listening on" in line, line
    yield line.strip().rsplit(" ", 1)[-1]
    proc.terminate()
    _stop(proc)


def script_server(tmp_path_factory: pytest.TempPathFactory, name: str, script: str, *args: str) -> Iterator[str]:
    """``script`` (an ES module) run by Node with ``args`` and then a data directory as its
    arguments; it prints the server's URL on its first line and closes the server when its stdin
    ends."""
    node = _node()
    data = tmp_path_factory.mktemp(name)
    proc = subprocess.Popen(
        [node, "--input-type=module", "-e", script, *args, str(data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = proc.stdout.readline().strip() if proc.stdout else ""
    assert url.startswith("http://"), url
    yield url
    if proc.stdin:
        proc.stdin.close()
    _stop(proc)
