"""A small blocking Kafka client for tests and tools: one socket, one request at a time.

::

    with WireClient.connect("127.0.0.1", 9092) as client:
        metadata = client.request(MetadataRequest(topics=None))   # highest common version
        describe = client.request(ConsumerGroupDescribeRequest(group_ids=["g"]), version=1)

Connecting negotiates versions with ApiVersions v3 (falling back to v0 when the broker answers
UNSUPPORTED_VERSION, as Kafka brokers older than 2.4 and some mocks do); after that each request
goes out at the highest version both kconsumer (`kconsumer.protocol.api.API_SPECS`) and the broker
implement, unless a version is given. Every socket operation has a deadline, responses are matched
by correlation id, and every failure is a `WireError` that names the broker, API and version.
It is not the consumer's runtime (that one is asyncio); it is for tests, the CLI and benchmarks.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

from ..errors import ErrorCode, KConsumerError, ProtocolError
from ..protocol.api import decode_response_prefix, encode_request, spec_for
from ..protocol.headers import DEFAULT_MAX_FRAME_BYTES, frame_size
from ..protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from ..protocol.messages.produce import ProduceRequest
from ..protocol.negotiation import (
    API_VERSIONS_FIRST_TRY,
    NoCommonVersionError,
    broker_versions,
    common_version,
    refused_api_versions,
)
from ..protocol.schema import Message

R = TypeVar("R", bound=Message)
M = TypeVar("M")

DEFAULT_TIMEOUT_S = 10.0


class WireError(KConsumerError):
    """A connection, timeout, framing or version-negotiation failure of `WireClient`."""


class WireTimeoutError(WireError, TimeoutError):
    """No (complete) response arrived before the deadline."""


class WireClient:
    """A blocking connection to one broker; see the module docstring."""

    def __init__(
        self,
        sock: socket.socket,
        address: tuple[str, int],
        *,
        client_id: str | None = "kconsumer-wire",
        timeout: float = DEFAULT_TIMEOUT_S,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        allow_trailing_bytes: bool = False,
    ) -> None:
        self._sock: socket.socket | None = sock
        self.address = address
        self.client_id = client_id
        self.timeout = timeout
        self.max_frame_bytes = max_frame_bytes
        #: Accept responses with bytes after the body (a peer's padding bug), counting them in
        #: `trailing_bytes`; off by default: a strict client notices codec mismatches.
        self.allow_trailing_bytes = allow_trailing_bytes
        #: (API name and version, bytes ignored) of every response accepted with trailing bytes.
        self.trailing_bytes: list[tuple[str, int]] = []
        self._next_correlation_id = 1
        #: The broker's version range per API key (empty until `negotiate` ran).
        self.broker_versions: dict[int, tuple[int, int]] = {}
        #: The ApiVersions version the negotiation ended up using (3, or 0 after a fallback).
        self.api_versions_version: int | None = None
        #: The broker's full ApiVersions response.
        self.api_versions_response: ApiVersionsResponse | None = None

    # -- life cycle ----------------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None = "kconsumer-wire",
        timeout: float = DEFAULT_TIMEOUT_S,
        negotiate: bool = True,
        software_name: str = "kconsumer-wire",
        software_version: str = "0.1.0",
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        allow_trailing_bytes: bool = False,
    ) -> WireClient:
        """Open a connection (and, unless `negotiate` is false, learn the broker's API versions)."""
        address = (host, port)
        try:
            sock = socket.create_connection(address, timeout=timeout)
        except OSError as exc:
            raise WireError(f"cannot connect to {host}:{port}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client = cls(
            sock,
            address,
            client_id=client_id,
            timeout=timeout,
            max_frame_bytes=max_frame_bytes,
            allow_trailing_bytes=allow_trailing_bytes,
        )
        if negotiate:
            try:
                client.negotiate(software_name, software_version)
            except BaseException:
                client.close()
                raise
        return client

    def close(self) -> None:
        """Close the socket (idempotent)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    @property
    def closed(self) -> bool:
        """Whether the connection is closed (by `close` or after a failure)."""
        return self._sock is None

    def __enter__(self) -> WireClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"WireClient({self._where()}, {state})"

    # -- versions ------------------------------------------------------------------------------

    def negotiate(
        self, software_name: str = "kconsumer-wire", software_version: str = "0.1.0"
    ) -> ApiVersionsResponse:
        """Send ApiVersions (v3, then v0 if the broker refuses v3) and remember the broker's ranges."""
        request = ApiVersionsRequest(
            client_software_name=software_name, client_software_version=software_version
        )
        response = self._api_versions(request, API_VERSIONS_FIRST_TRY)
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION:
            response = self._api_versions(ApiVersionsRequest(), 0)
        if response.error_code != ErrorCode.NONE:
            raise WireError(
                f"{self._where()}: ApiVersions v{self.api_versions_version} failed with "
                f"{ErrorCode.of(response.error_code).name}"
            )
        self.api_versions_response = response
        self.broker_versions = broker_versions(response)
        return response

    def _api_versions(self, request: ApiVersionsRequest, version: int) -> ApiVersionsResponse:
        self.api_versions_version = version
        correlation_id = self.send(request, version)
        payload = self._receive(correlation_id, f"ApiVersions v{version}")
        # KIP-511: a broker that does not implement `version` answers UNSUPPORTED_VERSION with a
        # v0 body (the header is v0 either way). The error code leads every version's body, and
        # it is all we need: the caller retries at v0. (librdkafka's mock cluster writes that
        # answer in a mix of both encodings, so the rest is not parsed.)
        body = payload[4:]
        if refused_api_versions(body, version):
            return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
        return self._decode(lambda: ApiVersionsResponse.decode(body, version), f"ApiVersions v{version}")

    def supports(self, api_key: int, version: int | None = None) -> bool:
        """Whether the broker lists `api_key` (at `version`, if given) in its ApiVersions."""
        listed = self.broker_versions.get(api_key)
        if listed is None:
            return False
        return version is None or listed[0] <= version <= listed[1]

    def version_for(self, api_key: int, max_version: int | None = None) -> int:
        """The highest version of `api_key` both sides implement (capped at `max_version`)."""
        if not self.broker_versions:
            name = spec_for(api_key).name
            raise WireError(f"{self._where()}: versions not negotiated yet; pass a version for {name}")
        try:
            return common_version(api_key, self.broker_versions, max_version)
        except NoCommonVersionError as exc:
            raise WireError(f"{self._where()}: {exc}") from None

    # -- requests ------------------------------------------------------------------------------

    def request(
        self, message: Message, version: int | None = None, *, timeout: float | None = None
    ) -> Message:
        """Send `message` and wait for its response (at `version`, or the negotiated one)."""
        if isinstance(message, ProduceRequest) and message.acks == 0:
            raise ValueError("a Produce request with acks=0 gets no response: use send()")
        if version is None:
            version = self.version_for(message.API_KEY)
        correlation_id = self.send(message, version)
        name = f"{spec_for(message.API_KEY).name} v{version}"
        payload = self._receive(correlation_id, name, timeout)
        return self._decode(lambda: self._decode_response(payload, message.API_KEY, version, name), name)

    def _decode_response(self, payload: bytes, api_key: int, version: int, name: str) -> Message:
        _cid, body, trailing = decode_response_prefix(payload, api_key, version)
        if trailing:
            if not self.allow_trailing_bytes:
                raise ProtocolError(
                    type(body).__name__, version, None, f"{trailing} unexpected trailing bytes"
                )
            self.trailing_bytes.append((name, trailing))
        return body

    def call(self, message: Message, expect: type[R], version: int | None = None) -> R:
        """`request`, typed: the response must be an `expect`."""
        response = self.request(message, version)
        if not isinstance(response, expect):  # pragma: no cover - decode_response guarantees it
            raise WireError(f"expected {expect.__name__}, got {type(response).__name__}")
        return response

    def send(self, message: Message, version: int) -> int:
        """Send `message` at `version` without waiting; returns its correlation id."""
        sock = self._socket()
        correlation_id = self._next_correlation_id
        data = encode_request(message, version, correlation_id, self.client_id)  # ProtocolError if invalid
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        try:
            sock.settimeout(self.timeout)
            sock.sendall(data)
        except OSError as exc:
            self.close()
            name = f"{spec_for(message.API_KEY).name} v{version}"
            raise WireError(f"{self._where()}: sending {name} failed: {exc}") from exc
        return correlation_id

    # -- internals -----------------------------------------------------------------------------

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise WireError(f"{self._where()}: the connection is closed")
        return self._sock

    def _where(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    def _receive(self, correlation_id: int, what: str, timeout: float | None = None) -> bytes:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        prefix = self._read_exactly(4, deadline, what)
        try:
            size = frame_size(prefix, self.max_frame_bytes)
        except ProtocolError as exc:
            self.close()
            raise WireError(f"{self._where()}: bad response frame for {what}: {exc}") from exc
        payload = self._read_exactly(size, deadline, what)
        if size < 4:
            self.close()
            raise WireError(f"{self._where()}: {size}-byte response to {what} has no header")
        received = int.from_bytes(payload[:4], "big", signed=True)
        if received != correlation_id:
            self.close()
            raise WireError(
                f"{self._where()}: response to {what} carries correlation id {received}, "
                f"expected {correlation_id}"
            )
        return payload

    def _read_exactly(self, count: int, deadline: float, what: str) -> bytes:
        sock = self._socket()
        chunks: list[bytes] = []
        missing = count
        while missing:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise WireTimeoutError(f"{self._where()}: no complete response to {what} in time")
            try:
                sock.settimeout(left)
                chunk = sock.recv(min(missing, 1 << 20))
            except TimeoutError as exc:
                self.close()
                raise WireTimeoutError(f"{self._where()}: no complete response to {what} in time") from exc
            except OSError as exc:
                self.close()
                raise WireError(f"{self._where()}: receiving the response to {what} failed: {exc}") from exc
            if not chunk:
                self.close()
                raise WireError(f"{self._where()}: the broker closed the connection before answering {what}")
            chunks.append(chunk)
            missing -= len(chunk)
        return b"".join(chunks)

    def _decode(self, decode: Callable[[], M], what: str) -> M:
        try:
            return decode()
        except ProtocolError as exc:
            self.close()
            raise WireError(f"{self._where()}: cannot decode the response to {what}: {exc}") from exc
