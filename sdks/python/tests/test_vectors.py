"""The shared protocol vectors (packages/protocol/vectors), and the bundled schema's freshness."""

import json
from pathlib import Path

import pytest

from patchbay.normalize import ToolCallFormatError, normalize_tool_calls
from patchbay.protocol import FrameError, decode_frame

REPO = Path(__file__).resolve().parents[3]
VECTORS = REPO / "packages" / "protocol" / "vectors"
SCHEMA = REPO / "packages" / "protocol" / "schema"


def load(name):
    return json.loads((VECTORS / name).read_text("utf-8"))["vectors"]


def text_of(vector):
    return vector["text"] if "text" in vector else json.dumps(vector["frame"], ensure_ascii=False)


def limits(vector):
    return {"max_bytes": vector.get("maxBytes"), "max_result_bytes": vector.get("maxResultBytes")}


@pytest.mark.parametrize("vector", load("frames.valid.json"), ids=lambda v: v["name"])
def test_valid_frames_decode(vector):
    decoded = decode_frame(text_of(vector), vector["channel"], **limits(vector))
    assert decoded == vector.get("decoded", vector.get("frame"))


@pytest.mark.parametrize("vector", load("frames.invalid.json"), ids=lambda v: v["name"])
def test_invalid_frames_are_refused(vector):
    with pytest.raises(FrameError) as caught:
        decode_frame(text_of(vector), vector["channel"], **limits(vector))
    assert (caught.value.code, caught.value.path) == (vector["error"]["code"], vector["error"]["path"])


@pytest.mark.parametrize("vector", load("tool-calls.json"), ids=lambda v: v["name"])
def test_tool_calls_normalize(vector):
    if "error" in vector:
        with pytest.raises(ToolCallFormatError) as caught:
            normalize_tool_calls(vector["input"])
        assert caught.value.code == vector["error"]["code"]
        assert caught.value.index == vector["error"]["index"]
        return
    calls = normalize_tool_calls(vector["input"])
    expected = vector["output"]
    assert len(calls) == len(expected)
    for call, want in zip(calls, expected):
        if "argumentsError" in want:
            assert call["argumentsError"].startswith(want["argumentsError"])
            call = {**call, "argumentsError": want["argumentsError"]}
        assert call == want


@pytest.mark.parametrize("channel", ["client-to-server", "server-to-client", "worker-to-server", "server-to-worker"])
def test_bundled_schema_is_the_protocol_package_s(channel):
    bundled = Path(__file__).resolve().parents[1] / "patchbay" / "schema" / f"{channel}.schema.json"
    assert json.loads(bundled.read_text("utf-8")) == json.loads(
        (SCHEMA / f"{channel}.schema.json").read_text("utf-8")
    ), "run sdks/python/scripts/sync-schema.sh after regenerating the protocol's JSON Schema"
