"""`WireClient` against scripted local servers: negotiation, fallback, correlation, timeouts, errors."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from kconsumer.errors import ErrorCode, ProtocolError
from kconsumer.protocol.api import API_SPECS, ApiKey, decode_request, encode_response
from kconsumer.protocol.headers import RequestHeader
from kconsumer.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from kconsumer.protocol.messages.list_groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from kconsumer.protocol.messages.metadata import MetadataRequest, MetadataResponse, MetadataResponseBroker
from kconsumer.protocol.messages.produce import ProduceRequest
from kconsumer.protocol.schema import Message
from kconsumer.testing.wire import WireClient, WireError, WireTimeoutError

#: A handler gets the decoded request and returns the raw bytes to send back (b"" = nothing).
Handler = Callable[[RequestHeader, Message], bytes]


class ScriptedServer:
    """A one-connection-at-a-time loopback server that answers with a handler; records requests."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[tuple[RequestHeader, Message]] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(5)
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with conn:
                self._handle(conn)

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        buffer = b""
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            buffer += data
            while len(buffer) >= 4:
                (size,) = struct.unpack(">i", buffer[:4])
                if len(buffer) < 4 + size:
                    break
                payload, buffer = buffer[4 : 4 + size], buffer[4 + size :]
                header, body = decode_request(payload)
                self.requests.append((header, body))
                try:
                    reply = self.handler(header, body)
                except ConnectionError:
                    return  # hang up
                if reply:
                    conn.sendall(reply)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        self._thread.join(timeout=5)


def our_api_versions(max_overrides: dict[int, int] | None = None) -> ApiVersionsResponse:
    overrides = max_overrides or {}
    keys = [
        ApiVersion(
            api_key=key, min_version=spec.versions.lo, max_version=overrides.get(key, spec.versions.hi or 0)
        )
        for key, spec in sorted(API_SPECS.items())
    ]
    return ApiVersionsResponse(api_keys=keys)


def standard_handler(header: RequestHeader, body: Message) -> bytes:
    if isinstance(body, ApiVersionsRequest):
        return encode_response(our_api_versions(), header.api_version, header.correlation_id)
    if isinstance(body, MetadataRequest):
        response = MetadataResponse(brokers=[MetadataResponseBroker(node_id=1, host="h", port=9)])
        return encode_response(response, header.api_version, header.correlation_id)
    if isinstance(body, ListGroupsRequest):
        response = ListGroupsResponse(groups=[ListedGroup(group_id="g", protocol_type="consumer")])
        return encode_response(response, header.api_version, header.correlation_id)
    if isinstance(body, ProduceRequest) and body.acks == 0:
        return b""
    raise AssertionError(f"unexpected {body!r}")


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(handler: Handler) -> ScriptedServer:
        server = ScriptedServer(handler)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def test_negotiates_with_api_versions_v3_and_uses_the_highest_common_version(
    serve: Callable[[Handler], ScriptedServer],
) -> None:
    server = serve(standard_handler)
    with WireClient.connect("127.0.0.1", server.port, software_name="tests", software_version="9") as client:
        assert client.api_versions_version == 3
        first_header, first = server.requests[0]
        assert first_header.api_key == ApiKey.API_VERSIONS and first_header.api_version == 3
        assert isinstance(first, ApiVersionsRequest)
        assert (first.client_software_name, first.client_software_version) == ("tests", "9")
        assert client.version_for(ApiKey.METADATA) == 13
        assert client.version_for(ApiKey.METADATA, max_version=12) == 12
        response = client.request(MetadataRequest(topics=None))
        assert isinstance(response, MetadataResponse) and response.brokers[0].port == 9
        assert server.requests[-1][0].api_version == 13
        listed = client.call(ListGroupsRequest(), ListGroupsResponse, version=4)
        assert listed.groups[0].group_id == "g"
        assert [h.correlation_id for h, _ in server.requests] == [1, 2, 3]
        assert {h.client_id for h, _ in server.requests} == {"kconsumer-wire"}


def test_falls_back_to_api_versions_v0_on_unsupported_version(
    serve: Callable[[Handler], ScriptedServer],
) -> None:
    def old_broker(header: RequestHeader, body: Message) -> bytes:
        if header.api_version >= 3:
            # KIP-511: a v0 body (header v0) listing the ApiVersions range the broker has.
            refusal = ApiVersionsResponse(
                error_code=ErrorCode.UNSUPPORTED_VERSION,
                api_keys=[ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=2)],
            )
            return encode_response(refusal, 0, header.correlation_id)
        versions = our_api_versions({ApiKey.API_VERSIONS: 2, ApiKey.METADATA: 8})
        return encode_response(versions, header.api_version, header.correlation_id)

    server = serve(old_broker)
    with WireClient.connect("127.0.0.1", server.port) as client:
        assert client.api_versions_version == 0
        assert [h.api_version for h, _ in server.requests] == [3, 0]
        assert client.version_for(ApiKey.METADATA) == 8
        assert client.supports(ApiKey.METADATA, 8) and not client.supports(ApiKey.METADATA, 9)


def test_a_broker_error_from_api_versions_is_reported(serve: Callable[[Handler], ScriptedServer]) -> None:
    def broken(header: RequestHeader, body: Message) -> bytes:
        return encode_response(ApiVersionsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED), 3, 1)

    server = serve(broken)
    with pytest.raises(WireError, match="CLUSTER_AUTHORIZATION_FAILED"):
        WireClient.connect("127.0.0.1", server.port)


def test_version_errors_name_the_api(serve: Callable[[Handler], ScriptedServer]) -> None:
    def narrow(header: RequestHeader, body: Message) -> bytes:
        versions = ApiVersionsResponse(
            api_keys=[
                ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=3),
                ApiVersion(api_key=ApiKey.OFFSET_COMMIT, min_version=11, max_version=12),
            ]
        )
        return encode_response(versions, header.api_version, header.correlation_id)

    server = serve(narrow)
    with WireClient.connect("127.0.0.1", server.port) as client:
        with pytest.raises(WireError, match="does not implement Metadata"):
            client.request(MetadataRequest())
        with pytest.raises(
            WireError, match=r"no common version of OffsetCommit: the broker implements v11-12"
        ):
            client.version_for(ApiKey.OFFSET_COMMIT)
    with (
        WireClient.connect("127.0.0.1", server.port, negotiate=False) as unnegotiated,
        pytest.raises(WireError, match="not negotiated"),
    ):
        unnegotiated.version_for(ApiKey.METADATA)


def test_correlation_id_mismatch_is_an_error_and_closes(serve: Callable[[Handler], ScriptedServer]) -> None:
    def confused(header: RequestHeader, body: Message) -> bytes:
        if isinstance(body, ApiVersionsRequest):
            return standard_handler(header, body)
        return encode_response(MetadataResponse(), header.api_version, header.correlation_id + 5)

    server = serve(confused)
    client = WireClient.connect("127.0.0.1", server.port)
    with pytest.raises(WireError, match=r"correlation id 7, expected 2"):
        client.request(MetadataRequest(), version=1)
    assert client.closed
    with pytest.raises(WireError, match="closed"):
        client.request(MetadataRequest(), version=1)


def test_a_silent_broker_times_out_quickly(serve: Callable[[Handler], ScriptedServer]) -> None:
    def silent(header: RequestHeader, body: Message) -> bytes:
        return b"" if isinstance(body, MetadataRequest) else standard_handler(header, body)

    server = serve(silent)
    client = WireClient.connect("127.0.0.1", server.port, timeout=5)
    started = time.monotonic()
    with pytest.raises(WireTimeoutError, match=r"Metadata v13"):
        client.request(MetadataRequest(), timeout=0.2)
    assert time.monotonic() - started < 2
    assert client.closed


def test_a_half_sent_response_times_out_too(serve: Callable[[Handler], ScriptedServer]) -> None:
    def stutter(header: RequestHeader, body: Message) -> bytes:
        if isinstance(body, ApiVersionsRequest):
            return standard_handler(header, body)
        return encode_response(MetadataResponse(), header.api_version, header.correlation_id)[:-3]

    server = serve(stutter)
    with WireClient.connect("127.0.0.1", server.port) as client, pytest.raises(WireTimeoutError):
        client.request(MetadataRequest(), timeout=0.3)


def test_closed_connections_and_bad_frames(serve: Callable[[Handler], ScriptedServer]) -> None:
    def hang_up(header: RequestHeader, body: Message) -> bytes:
        if isinstance(body, ApiVersionsRequest):
            return standard_handler(header, body)
        raise ConnectionError("the server thread closes the connection")

    server = serve(hang_up)
    with (
        WireClient.connect("127.0.0.1", server.port) as client,
        pytest.raises(WireError, match="closed the connection"),
    ):
        client.request(MetadataRequest())

    def huge(header: RequestHeader, body: Message) -> bytes:
        return struct.pack(">i", 2**30)

    server = serve(huge)
    with pytest.raises(WireError, match="exceeds"):
        WireClient.connect("127.0.0.1", server.port, max_frame_bytes=1 << 20)

    def garbage(header: RequestHeader, body: Message) -> bytes:
        payload = struct.pack(">i", header.correlation_id) + b"\x00\x00\xff"
        return struct.pack(">i", len(payload)) + payload

    server = serve(garbage)
    with pytest.raises(WireError, match="cannot decode the response to ApiVersions v3"):
        WireClient.connect("127.0.0.1", server.port)


def test_nothing_listens(serve: Callable[[Handler], ScriptedServer]) -> None:
    server = serve(standard_handler)
    port = server.port
    server.close()
    with pytest.raises(WireError, match=f"cannot connect to 127.0.0.1:{port}"):
        WireClient.connect("127.0.0.1", port, timeout=1)


def test_acks_zero_produce_is_sent_without_waiting(serve: Callable[[Handler], ScriptedServer]) -> None:
    server = serve(standard_handler)
    with WireClient.connect("127.0.0.1", server.port) as client:
        fire_and_forget = ProduceRequest(acks=0, timeout_ms=100)
        with pytest.raises(ValueError, match="acks=0"):
            client.request(fire_and_forget)
        correlation_id = client.send(fire_and_forget, 9)
        assert correlation_id == 2
        with pytest.raises(ProtocolError):  # invalid for the version: nothing is sent
            client.send(ProduceRequest(acks=0), 2)
