"""One client connection: read frames, decode, let the broker answer, write responses in order.

Like a Kafka broker, a connection's requests are handled one at a time, in arrival order (the next
frame is read only after the previous response is written); connections are independent of each
other. What cannot be answered closes this connection only, with a log line saying why:

* a frame whose size is negative or above the limit, or a header that does not decode;
* an unknown API key, or a version we do not implement (except ApiVersions: KIP-511 has the
  broker answer UNSUPPORTED_VERSION with its own ApiVersions range, in a v0 response, so the
  client can retry lower on the same connection);
* a body that does not decode (the `ProtocolError` names API, version and field). Bytes after
  a complete body are ignored, as Kafka ignores them (librdkafka sends some);
* on a SASL listener: any request but ApiVersions before authentication, a refused mechanism or
  failed authentication (after answering it), a request after the session lifetime ran out
  without re-authentication (`security.authenticator`).

An exception inside a handler is logged and answered UNKNOWN_SERVER_ERROR; if even that response
cannot be built or encoded, the connection is closed. The server itself keeps running.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, NamedTuple

from ...errors import ErrorCode, ProtocolError
from ...protocol.api import API_SPECS, ApiKey, ApiSpec
from ...protocol.headers import (
    RequestHeader,
    decode_request_header,
    encode_response_header,
    frame,
    frame_size,
    skip_tagged_fields,
)
from ...protocol.messages.fetch import FetchResponse
from ...protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from ...protocol.schema import Message
from ...protocol.types import Reader
from .broker import DROP, Broker, ClientSession, is_fire_and_forget
from .error_responses import api_versions_error, error_response
from .fetch_encoding import Buffer, encode_fetch_response
from .security.authenticator import SaslAuthenticator
from .security.settings import SaslSettings

logger = logging.getLogger("kconsumer.broker.server")

_INT32 = 4
#: How the codec reports bytes left after a message body.


class ConnectionInfo(NamedTuple):
    """One client connection as `ReferenceServer.connection_security` reports it."""

    peer: str
    client_id: str | None
    security_protocol: str
    #: ``User:alice``, ``User:CN=client`` or ``User:ANONYMOUS`` (see `Connection.principal`).
    principal: str
    #: SASL authentications on this connection (1 + re-authentications; 0 without SASL).
    authentications: int


class Connection:
    """Serves one accepted client connection until it closes (see the module docstring)."""

    def __init__(
        self,
        broker: Broker,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_frame_bytes: int,
        sasl: SaslSettings | None = None,
        node_id: int = 1,
        listener: str = "PLAINTEXT",
    ) -> None:
        self.broker = broker
        self.reader = reader
        self.writer = writer
        self.max_frame_bytes = max_frame_bytes
        peer = writer.get_extra_info("peername")
        host = str(peer[0]) if isinstance(peer, tuple) and peer else "unknown"
        self.peer = f"{host}:{peer[1]}" if isinstance(peer, tuple) and len(peer) > 1 else host
        self.client_id: str | None = None
        tls = writer.get_extra_info("ssl_object")
        #: The connection's security protocol as its listener speaks it.
        self.security_protocol = ("SASL_" if sasl else "") + ("PLAINTEXT" if tls is None else "SSL")
        self._certificate_subject = _subject(tls.getpeercert() if tls is not None else None)
        self.sasl = SaslAuthenticator(sasl) if sasl is not None else None
        #: The broker this connection reached.
        self.node_id = node_id
        self.session = ClientSession(
            client_host=f"/{host}",
            gone=self._gone,
            principal=lambda: self.principal,
            node_id=node_id,
            listener=listener,
        )

    @property
    def authentications(self) -> int:
        """How many times the connection authenticated with SASL (0: it does not use SASL)."""
        return self.sasl.authentications if self.sasl is not None else 0

    @property
    def principal(self) -> str:
        """Who the connection authenticated as, in Kafka's form: ``User:alice`` (SASL),
        ``User:CN=client`` (the certificate subject, mutual TLS) or ``User:ANONYMOUS``."""
        if self.sasl is not None and self.sasl.user is not None:
            return f"User:{self.sasl.user}"
        if self._certificate_subject is not None:
            return f"User:{self._certificate_subject}"
        return "User:ANONYMOUS"

    async def serve(self) -> None:
        """Answer requests until the client disconnects or sends something we cannot answer."""
        reader = self.reader
        try:
            while True:
                try:
                    prefix = await reader.readexactly(_INT32)
                except asyncio.IncompleteReadError as exc:
                    if exc.partial:
                        logger.warning("connection %s closed inside a frame size", self.peer)
                    return
                size = frame_size(prefix, self.max_frame_bytes)
                payload = await reader.readexactly(size)
                if not await self._process(payload):
                    return
        except ProtocolError as exc:
            logger.warning("closing connection %s (client %s): %s", self.peer, self.client_id, exc)
        except asyncio.IncompleteReadError:
            logger.warning("connection %s (client %s) closed inside a frame", self.peer, self.client_id)
        except (ConnectionError, OSError) as exc:
            logger.debug("connection %s lost: %s", self.peer, exc)
        finally:
            self.close()

    def _gone(self) -> bool:
        """Whether the client closed the connection (no pipelined request left to read either)."""
        return self.reader.at_eof() or self.writer.transport.is_closing()

    def close(self, abort: bool = False) -> None:
        """Close the connection (`abort`: at once, dropping unsent data)."""
        transport = self.writer.transport
        if abort:
            transport.abort()
        elif not transport.is_closing():
            transport.close()

    async def _process(self, payload: bytes) -> bool:
        """Handle one request frame; False closes the connection."""
        if self.sasl is not None and self.sasl.expects_raw_token:
            return await self._raw_sasl_token(payload)
        reader = Reader(payload)
        header = decode_request_header(reader)
        self.client_id = header.client_id
        spec = API_SPECS.get(header.api_key)
        if spec is None:
            raise ProtocolError(
                "RequestHeader",
                None,
                "RequestApiKey",
                f"unknown API key {header.api_key} (version {header.api_version}, "
                f"correlation id {header.correlation_id})",
            )
        version = header.api_version
        if version not in spec.versions:
            if header.api_key == ApiKey.API_VERSIONS:
                logger.info(
                    "connection %s (client %s) asked for ApiVersions v%d: answering UNSUPPORTED_VERSION",
                    self.peer,
                    header.client_id,
                    version,
                )
                await self._send(api_versions_error(ErrorCode.UNSUPPORTED_VERSION), 0, header)
                return True
            raise ProtocolError(
                spec.request.__name__, version, None, f"unsupported version (we implement {spec.versions})"
            )
        if spec.is_flexible(version):
            skip_tagged_fields(reader, "RequestHeader")
        request = self._decode_body(spec, payload, reader, version)
        if isinstance(request, (SaslHandshakeRequest, SaslAuthenticateRequest)):
            return await self._sasl_request(request, version, header)
        if self.sasl is not None and header.api_key != ApiKey.API_VERSIONS:
            refusal = self.sasl.admit(spec.name)
            if refusal is not None:
                logger.warning("closing connection %s (client %s): %s", self.peer, self.client_id, refusal)
                return False
        try:
            response = await self.broker.handle(self.session, header, request)
        except Exception:
            if is_fire_and_forget(request):
                logger.exception("%s v%d (acks=0) from %s failed; closing", spec.name, version, self.peer)
                return False
            logger.exception(
                "%s v%d from %s (client %s) failed; answering UNKNOWN_SERVER_ERROR",
                spec.name,
                version,
                self.peer,
                header.client_id,
            )
            response = error_response(request, version, ErrorCode.UNKNOWN_SERVER_ERROR)
        if response is DROP:
            self.close(abort=True)
            return False
        if response is None:
            return True
        assert isinstance(response, Message)
        try:
            return await self._send(response, version, header)
        except (ConnectionError, OSError):
            raise
        except Exception:
            logger.exception("could not encode the %s v%d response for %s", spec.name, version, self.peer)
            try:
                fallback = error_response(request, version, ErrorCode.UNKNOWN_SERVER_ERROR)
                return await self._send(fallback, version, header)
            except (ConnectionError, OSError):
                raise
            except Exception:
                logger.exception("could not even answer UNKNOWN_SERVER_ERROR; closing %s", self.peer)
                return False

    async def _sasl_request(
        self, request: SaslHandshakeRequest | SaslAuthenticateRequest, version: int, header: RequestHeader
    ) -> bool:
        """Answer a SASL request; False (after answering) when the connection must close."""
        response: SaslHandshakeResponse | SaslAuthenticateResponse
        if self.sasl is None:  # not a SASL listener: Kafka answers ILLEGAL_SASL_STATE
            code = ErrorCode.ILLEGAL_SASL_STATE
            if isinstance(request, SaslHandshakeRequest):
                response = SaslHandshakeResponse(error_code=code, mechanisms=[])
            else:
                response = SaslAuthenticateResponse(
                    error_code=code, error_message="this listener does not use SASL", auth_bytes=b""
                )
            return await self._send(response, version, header)
        if isinstance(request, SaslHandshakeRequest):
            answer = self.sasl.handshake(request.mechanism, version)
        else:
            answer = self.sasl.authenticate(request.auth_bytes)
        assert isinstance(answer.response, (SaslHandshakeResponse, SaslAuthenticateResponse))
        await self._send(answer.response, version, header)
        return self._after_sasl_answer(answer.close_reason)

    async def _raw_sasl_token(self, token: bytes) -> bool:
        """A SASL token framed without a request header (after SaslHandshake v0)."""
        assert self.sasl is not None
        answer = self.sasl.raw_token(token)
        assert isinstance(answer.response, bytes)
        if answer.close_reason is None:
            self.writer.write(frame(answer.response))
            await self.writer.drain()
        return self._after_sasl_answer(answer.close_reason)

    def _after_sasl_answer(self, close_reason: str | None) -> bool:
        if close_reason is not None:
            logger.warning(
                "closing connection %s (client %s): SASL: %s", self.peer, self.client_id, close_reason
            )
            return False
        if self.sasl is not None and self.sasl.state.value == "authenticated":
            logger.debug("connection %s authenticated as %s", self.peer, self.principal)
        return True

    def _decode_body(self, spec: ApiSpec, payload: bytes, reader: Reader, version: int) -> Message:
        """The request body. Bytes after it are ignored, as Kafka ignores them: librdkafka's
        Metadata v9+ request for all topics carries three (an unfinalized array count)."""
        body, trailing = spec.request.decode_prefix(reader, version)
        if trailing:
            logger.debug(
                "%s v%d from %s (client %s): ignoring %d trailing bytes",
                spec.name,
                version,
                self.peer,
                self.client_id,
                trailing,
            )
        return body

    async def _send(self, response: Message, version: int, header: RequestHeader) -> bool:
        spec = API_SPECS[response.API_KEY]
        body: list[Buffer]
        if isinstance(response, FetchResponse):
            body = encode_fetch_response(response, version)  # the stored batches, not copies
        else:
            body = [response.encode(version)]
        head = encode_response_header(header.correlation_id, spec.response_header_version(version) == 1)
        size = len(head)
        for part in body:
            size += len(part)
        writer = self.writer
        writer.write(size.to_bytes(4, "big") + head)
        for part in body:
            writer.write(part)
        await writer.drain()
        return True


def _subject(certificate: dict[str, Any] | None) -> str | None:
    """The RFC 4514 form (most specific first) of a peer certificate's subject, as Kafka's SSL
    principal ("CN=client"), or None without a certificate."""
    if not certificate:
        return None
    parts = [
        f"{_SHORT.get(name, name)}={value}" for rdn in certificate.get("subject", ()) for name, value in rdn
    ]
    return ",".join(reversed(parts)) or None


_SHORT = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU", "countryName": "C"}
