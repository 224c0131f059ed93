"""One asyncio connection to one broker: pipelined requests, timeouts.

Requests are written at once and matched to responses by correlation id (a broker answers a
connection's requests in order). Any transport failure, timeout or undecodable response closes
the connection and fails every request in flight with a `TransportError`; the caller reconnects.
Which version to send is the caller's decision (the member session negotiates with ApiVersions,
whose KIP-511 refusal, written in the v0 layout, is read here as an UNSUPPORTED_VERSION answer).

With SASL the connection authenticates right after it opens (`authentication.SaslAuthenticator`)
and, when the broker gives the session a lifetime (KIP-368), again at 90 % of it: requests made
meanwhile wait until re-authentication is done; a failed re-authentication closes the connection.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ...errors import ErrorCode, KConsumerError, ProtocolError
from ...protocol.api import ApiKey, decode_response, encode_request, spec_for
from ...protocol.headers import DEFAULT_MAX_FRAME_BYTES, frame_size
from ...protocol.messages.api_versions import ApiVersionsResponse
from ...protocol.negotiation import refused_api_versions
from ...protocol.schema import Message

if TYPE_CHECKING:
    from .authentication import SaslAuthenticator

log = logging.getLogger("kconsumer.client.runtime")

#: Share of the broker's session lifetime after which a connection re-authenticates.
REAUTHENTICATE_SHARE = 0.9

R = TypeVar("R", bound=Message)


class TransportError(KConsumerError):
    """The connection failed, closed or timed out; the request may or may not have been processed."""


class RequestTimeoutError(TransportError, TimeoutError):
    """No response within ``request.timeout.ms``."""


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class _Pending:
    api_key: int
    version: int
    future: asyncio.Future[Message]


class BrokerConnection:
    """A connection to a broker; create it with `BrokerConnection.open`."""

    def __init__(
        self,
        address: Address,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client_id: str,
        request_timeout_s: float,
    ) -> None:
        self.address = address
        self.client_id = client_id
        self.request_timeout_s = request_timeout_s
        self._reader = reader
        self._writer = writer
        self._pending: dict[int, _Pending] = {}
        self._next_id = 0
        self._closed: TransportError | None = None
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())
        #: Set while requests may go out (cleared during re-authentication).
        self._open_for_requests = asyncio.Event()
        self._open_for_requests.set()
        self._reauthentication: asyncio.TimerHandle | None = None
        #: SASL authentications done on this connection (0 without SASL).
        self.authentications = 0

    @classmethod
    async def open(
        cls,
        address: Address,
        client_id: str,
        connect_timeout_s: float,
        request_timeout_s: float,
        tls: ssl.SSLContext | None = None,
        sasl: SaslAuthenticator | None = None,
    ) -> BrokerConnection:
        """Connect, with TLS when `tls` is given (TransportError when the broker cannot be reached
        in time or the TLS handshake fails: an untrusted certificate, a host it does not name),
        then authenticate with `sasl` (AuthenticationFailedError, after closing, when it fails)."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    address.host,
                    address.port,
                    ssl=tls,
                    server_hostname=address.host if tls is not None else None,
                ),
                connect_timeout_s,
            )
        except (OSError, asyncio.TimeoutError) as exc:
            raise TransportError(f"cannot connect to {address}: {exc or type(exc).__name__}") from None
        connection = cls(address, reader, writer, client_id, request_timeout_s)
        if sasl is not None:
            try:
                await connection._authenticate(sasl)
            except BaseException:
                connection.close()
                raise
        return connection

    async def _authenticate(self, sasl: SaslAuthenticator) -> None:
        lifetime_ms = await sasl.authenticate(self)
        self.authentications += 1
        log.debug(
            "%s: SASL %s authenticated (session lifetime %d ms)",
            self.address,
            sasl.settings.mechanism,
            lifetime_ms,
        )
        if lifetime_ms > 0:
            delay = lifetime_ms * REAUTHENTICATE_SHARE / 1000
            self._reauthentication = asyncio.get_running_loop().call_later(
                delay, lambda: asyncio.ensure_future(self._reauthenticate(sasl))
            )

    async def _reauthenticate(self, sasl: SaslAuthenticator) -> None:
        """KIP-368: hold new requests, let those in flight finish, authenticate again."""
        if self._closed is not None:
            return
        self._open_for_requests.clear()
        try:
            in_flight = [pending.future for pending in self._pending.values()]
            if in_flight:
                await asyncio.wait(in_flight, timeout=self.request_timeout_s)
            await self._authenticate(sasl)
        except Exception as exc:  # AuthenticationFailedError, TransportError
            log.warning("%s: SASL re-authentication failed, closing the connection: %s", self.address, exc)
            self._fail(TransportError(f"{self.address}: SASL re-authentication failed: {exc}"))
        finally:
            self._open_for_requests.set()

    # -- requests --------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed is not None

    async def request(self, message: R, version: int, timeout_s: float | None = None) -> Message:
        """Send `message` at `version` and await its response (after a re-authentication in
        progress, if any) for `timeout_s` (default ``request.timeout.ms``)."""
        if not self._open_for_requests.is_set():
            await self._open_for_requests.wait()
        return await self._send(message, version, timeout_s)

    async def sasl_request(self, message: Message, version: int) -> Message:
        """A request of the SASL exchange itself (never held back by re-authentication)."""
        return await self._send(message, version)

    async def _send(self, message: Message, version: int, timeout_s: float | None = None) -> Message:
        if self._closed is not None:
            raise self._closed
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        correlation_id = self._next_id
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        # A request abandoned after its timeout may still fail later: retrieve that exception.
        future.add_done_callback(lambda f: None if f.cancelled() else f.exception())
        key = message.API_KEY
        raw_api_versions = key == ApiKey.API_VERSIONS  # its refusal must be read raw (KIP-511)
        self._pending[correlation_id] = _Pending(key, -version - 1 if raw_api_versions else version, future)
        try:
            self._writer.write(encode_request(message, version, correlation_id, self.client_id))
            await self._writer.drain()
        except (OSError, RuntimeError) as exc:
            self._fail(TransportError(f"{self.address}: send failed: {exc}"))
        timeout_s = self.request_timeout_s if timeout_s is None else max(timeout_s, self.request_timeout_s)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except asyncio.TimeoutError:
            name = spec_for(key).name
            self._fail(RequestTimeoutError(f"{self.address}: {name} v{version} timed out"))
            raise RequestTimeoutError(
                f"{self.address}: {name} v{version} timed out after {timeout_s}s"
            ) from None

    async def _read_loop(self) -> None:
        try:
            while True:
                prefix = await self._reader.readexactly(4)
                payload = await self._reader.readexactly(frame_size(prefix, DEFAULT_MAX_FRAME_BYTES))
                correlation_id = int.from_bytes(payload[:4], "big", signed=True)
                pending = self._pending.pop(correlation_id, None)
                if pending is None:
                    raise TransportError(f"{self.address}: unexpected correlation id {correlation_id}")
                version = pending.version
                if version < 0:  # ApiVersions at -version-1, with the KIP-511 check
                    version = -version - 1
                    if refused_api_versions(payload[4:], version):
                        if not pending.future.done():
                            pending.future.set_result(
                                ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
                            )
                        continue
                try:
                    _cid, response = decode_response(payload, pending.api_key, version)
                except ProtocolError as exc:
                    error = TransportError(f"{self.address}: undecodable response: {exc}")
                    if not pending.future.done():
                        pending.future.set_exception(error)
                    raise error from None
                if not pending.future.done():
                    pending.future.set_result(response)
        except asyncio.IncompleteReadError:
            self._fail(TransportError(f"{self.address}: connection closed by the broker"))
        except ProtocolError as exc:
            self._fail(TransportError(f"{self.address}: undecodable response: {exc}"))
        except TransportError as exc:
            self._fail(exc)
        except OSError as exc:
            self._fail(TransportError(f"{self.address}: {exc}"))
        except asyncio.CancelledError:
            self._fail(TransportError(f"{self.address}: connection closed"))
            raise

    def _fail(self, error: TransportError) -> None:
        if self._closed is None:
            self._closed = error
            log.debug("connection to %s closed: %s", self.address, error)
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(error)
        self._pending.clear()
        if self._reauthentication is not None:
            self._reauthentication.cancel()
        self._open_for_requests.set()  # waiting requests then fail with the closing error
        self._writer.close()
        if not self._reader_task.done() and self._reader_task is not asyncio.current_task():
            self._reader_task.cancel()

    def close(self) -> None:
        """Close the connection; requests in flight fail with TransportError."""
        self._fail(TransportError(f"{self.address}: connection closed"))
