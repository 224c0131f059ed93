"""Request/response headers and framing, byte for byte (facts §2)."""

from __future__ import annotations

import struct

import pytest

from kconsumer.errors import ProtocolError
from kconsumer.protocol.api import (
    API_SPECS,
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_correlation_id,
    spec_for,
)
from kconsumer.protocol.headers import DEFAULT_MAX_FRAME_BYTES, FrameBuffer, frame, frame_size
from kconsumer.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from kconsumer.protocol.messages.consumer_group import ConsumerGroupDescribeRequest
from kconsumer.protocol.messages.metadata import MetadataRequest, MetadataResponse

# -- response headers --------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(5))
def test_api_versions_response_always_uses_header_v0(version: int) -> None:
    body = ApiVersionsResponse(api_keys=[ApiVersion(api_key=18, min_version=0, max_version=4)])
    framed = encode_response(body, version, correlation_id=0x01020304)
    size, correlation_id = struct.unpack(">ii", framed[:8])
    assert size == len(framed) - 4
    assert correlation_id == 0x01020304
    assert framed[8:] == body.encode(version)  # no tagged-field byte after the correlation id
    assert spec_for(ApiKey.API_VERSIONS).response_header_version(version) == 0
    assert decode_response(framed[4:], ApiKey.API_VERSIONS, version) == (0x01020304, body)


@pytest.mark.parametrize(("version", "tagged"), [(8, False), (9, True), (13, True)])
def test_other_responses_use_header_v1_when_flexible(version: int, tagged: bool) -> None:
    body = MetadataResponse()
    framed = encode_response(body, version, correlation_id=7)
    assert framed[4:8] == struct.pack(">i", 7)
    assert framed[8:] == (b"\x00" if tagged else b"") + body.encode(version)
    assert spec_for(ApiKey.METADATA).response_header_version(version) == (1 if tagged else 0)


def test_a_flexible_response_header_with_unknown_tags_is_read() -> None:
    body = MetadataResponse(cluster_id="c")
    # Correlation id, then a tagged-field section holding tag 5 with 3 bytes.
    payload = struct.pack(">i", 9) + b"\x01\x05\x03abc" + body.encode(12)
    assert decode_response(payload, ApiKey.METADATA, 12) == (9, body)
    assert peek_correlation_id(payload) == 9


def test_truncated_response_headers() -> None:
    with pytest.raises(ProtocolError) as info:
        decode_response(b"\x00\x00", ApiKey.METADATA, 1)
    assert info.value.api == "ResponseHeader"
    with pytest.raises(ProtocolError) as info:
        decode_response(struct.pack(">i", 1) + b"\x02\x00", ApiKey.METADATA, 12)
    assert info.value.api == "ResponseHeader" and info.value.field == "TaggedFields"
    with pytest.raises(ProtocolError):
        peek_correlation_id(b"\x00")


# -- request headers ---------------------------------------------------------------------------


def test_request_header_v2_keeps_the_int16_client_id() -> None:
    framed = encode_request(
        ApiVersionsRequest(client_software_name="n", client_software_version="v"), 3, 5, "abc"
    )
    expected_header = struct.pack(">hhih", 18, 3, 5, 3) + b"abc" + b"\x00"  # int16 length, then tags
    expected_body = b"\x02n" + b"\x02v" + b"\x00"  # compact strings in the flexible body
    assert framed == struct.pack(">i", len(expected_header + expected_body)) + expected_header + expected_body
    header, body = decode_request(framed[4:])
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (18, 3, 5, "abc")
    assert body == ApiVersionsRequest(client_software_name="n", client_software_version="v")


def test_request_header_v1_has_no_tags_and_a_null_client_id_is_minus_one() -> None:
    framed = encode_request(ApiVersionsRequest(), 0, 6, None)
    assert framed == struct.pack(">ihhih", 10, 18, 0, 6, -1)
    header, body = decode_request(framed[4:])
    assert header.client_id is None and body == ApiVersionsRequest()


def test_every_flexible_api_version_uses_request_header_v2() -> None:
    request = ConsumerGroupDescribeRequest(group_ids=["g"])
    framed = encode_request(request, 0, 1, "c")
    assert framed[4 + 2 + 2 + 4 + 2 + 1] == 0  # the header's tagged-field count after "c"
    for spec in API_SPECS.values():
        assert spec.request_header_version(spec.versions.lo) == (
            2 if spec.is_flexible(spec.versions.lo) else 1
        )


def test_request_header_tagged_fields_are_skipped() -> None:
    body = MetadataRequest(topics=None).encode(12)
    payload = struct.pack(">hhih", 3, 12, 1, 1) + b"x" + b"\x01\x00\x02hi" + body
    header, decoded = decode_request(payload)
    assert header.client_id == "x" and decoded == MetadataRequest(topics=None)


def test_decode_request_rejects_an_unknown_api_key_by_name() -> None:
    payload = struct.pack(">hhih", 999, 0, 1, -1)
    with pytest.raises(ProtocolError) as info:
        decode_request(payload)
    assert info.value.api == "RequestHeader" and info.value.field == "RequestApiKey"
    assert "unknown API key 999" in str(info.value)


@pytest.mark.parametrize(
    ("api_key", "version", "message", "implemented"),
    [
        (ApiKey.PRODUCE, 2, "ProduceRequest", "3-13"),  # removed in Kafka 4.0
        (ApiKey.FETCH, 3, "FetchRequest", "4-18"),
        (ApiKey.FETCH, 19, "FetchRequest", "4-18"),
        (ApiKey.API_VERSIONS, 5, "ApiVersionsRequest", "0-4"),  # unreleased KIP-1242 version
        (ApiKey.LIST_OFFSETS, 0, "ListOffsetsRequest", "1-11"),
        (ApiKey.CONSUMER_GROUP_HEARTBEAT, 2, "ConsumerGroupHeartbeatRequest", "0-1"),
    ],
)
def test_decode_request_rejects_an_unsupported_version_by_name(
    api_key: int, version: int, message: str, implemented: str
) -> None:
    payload = struct.pack(">hhih", api_key, version, 1, -1) + b"\x00" * 8
    with pytest.raises(ProtocolError) as info:
        decode_request(payload)
    assert info.value.api == message and info.value.version == version
    assert implemented in info.value.reason
    assert f"{message} v{version}" in str(info.value)


@pytest.mark.parametrize("cut", range(10))
def test_truncated_request_headers(cut: int) -> None:
    payload = struct.pack(">hhih", 3, 12, 1, 4) + b"abcd"
    with pytest.raises(ProtocolError) as info:
        decode_request(payload[:cut])
    assert info.value.api == "RequestHeader"


def test_client_id_longer_than_the_frame() -> None:
    with pytest.raises(ProtocolError) as info:
        decode_request(struct.pack(">hhih", 3, 1, 1, 50) + b"short")
    assert info.value.api == "RequestHeader" and info.value.field == "ClientId"


# -- framing -----------------------------------------------------------------------------------


def test_frame_prefixes_the_size() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frame_size(b"\x00\x00\x00\x03") == 3


@pytest.mark.parametrize("size", [-1, -(2**31)])
def test_negative_frame_sizes_are_refused(size: int) -> None:
    with pytest.raises(ProtocolError) as info:
        frame_size(struct.pack(">i", size))
    assert info.value.api == "Frame" and info.value.field == "Size" and "negative" in info.value.reason


def test_oversized_frames_are_refused() -> None:
    assert frame_size(struct.pack(">i", DEFAULT_MAX_FRAME_BYTES)) == DEFAULT_MAX_FRAME_BYTES
    with pytest.raises(ProtocolError) as info:
        frame_size(struct.pack(">i", DEFAULT_MAX_FRAME_BYTES + 1))
    assert info.value.field == "Size" and "exceeds" in info.value.reason
    with pytest.raises(ProtocolError):
        frame_size(struct.pack(">i", 1025), max_bytes=1024)


def test_frame_buffer_reassembles_split_frames_and_refuses_bad_sizes() -> None:
    stream = frame(b"first") + frame(b"") + frame(b"third one")
    buffer = FrameBuffer()
    frames: list[bytes] = []
    for i in range(len(stream)):
        frames += buffer.feed(stream[i : i + 1])
    assert frames == [b"first", b"", b"third one"]
    assert FrameBuffer().feed(stream) == frames

    with pytest.raises(ProtocolError):
        FrameBuffer().feed(struct.pack(">i", -5))
    with pytest.raises(ProtocolError):
        FrameBuffer(max_bytes=10).feed(struct.pack(">i", 11) + b"x")
