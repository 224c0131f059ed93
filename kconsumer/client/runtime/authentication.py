"""SASL authentication of one connection, as librdkafka does it: ApiVersions (to pick the
SaslAuthenticate version), SaslHandshake v1 naming the mechanism, then the mechanism's tokens in
SaslAuthenticate requests. The broker's answer gives the session lifetime (KIP-368); the connection
re-authenticates at 90 % of it (`BrokerConnection`), with the credentials current then.

OAUTHBEARER tokens come from the application's ``oauth_cb`` (called on a worker thread, so a slow
token endpoint never stalls heartbeats) or are built as unsecured JWTs; a token is reused until 80 %
of its lifetime has passed, as librdkafka refreshes it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...errors import ErrorCode
from ...protocol.api import ApiKey
from ...protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from ...protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from ..sasl import AuthenticationFailedError, OAuthToken, SaslSettings, client_mechanism
from ..sasl.mechanisms import unsecured_token

if TYPE_CHECKING:
    from .connection import BrokerConnection

#: Newest versions kconsumer speaks.
_HANDSHAKE_VERSION = 1
_AUTHENTICATE_VERSION = 2
#: A token is refreshed once this share of its lifetime has passed (librdkafka's 80 %).
TOKEN_REFRESH_SHARE = 0.8


class SaslAuthenticator:
    """Authenticates kconsumer's connections with the consumer's SASL settings."""

    def __init__(self, settings: SaslSettings) -> None:
        self.settings = settings
        self._token: OAuthToken | None = None
        self._token_refresh_s = 0.0

    async def authenticate(self, connection: BrokerConnection) -> int:
        """Authenticate `connection` (first time or again); the session lifetime in ms (0: none).
        Raises AuthenticationFailedError with the broker's message, or TransportError."""
        authenticate_version = await self._authenticate_version(connection)
        mechanism = self.settings.mechanism
        handshake = await connection.sasl_request(
            SaslHandshakeRequest(mechanism=mechanism), _HANDSHAKE_VERSION
        )
        assert isinstance(handshake, SaslHandshakeResponse)
        if handshake.error_code != ErrorCode.NONE:
            raise AuthenticationFailedError(
                f"{connection.address}: the broker does not enable SASL mechanism {mechanism} "
                f"(it enables: {', '.join(handshake.mechanisms) or 'none'}; "
                f"{ErrorCode.of(handshake.error_code).name})"
            )
        token = await self._oauth_token() if mechanism == "OAUTHBEARER" else None
        exchange = client_mechanism(self.settings, token)
        challenge: bytes | None = None
        lifetime_ms = 0
        while (outgoing := exchange.step(challenge)) is not None:
            answer = await connection.sasl_request(
                SaslAuthenticateRequest(auth_bytes=outgoing), authenticate_version
            )
            assert isinstance(answer, SaslAuthenticateResponse)
            if answer.error_code != ErrorCode.NONE:
                raise AuthenticationFailedError(
                    f"{connection.address}: SASL authentication failed: "
                    f"{answer.error_message or ErrorCode.of(answer.error_code).name}"
                )
            challenge = answer.auth_bytes
            lifetime_ms = answer.session_lifetime_ms
        return lifetime_ms

    async def _authenticate_version(self, connection: BrokerConnection) -> int:
        answer = await connection.sasl_request(ApiVersionsRequest(), 0)
        assert isinstance(answer, ApiVersionsResponse)
        ranges = {key.api_key: key.max_version for key in answer.api_keys}
        if ApiKey.SASL_AUTHENTICATE not in ranges or ranges.get(ApiKey.SASL_HANDSHAKE, -1) < 1:
            raise AuthenticationFailedError(
                f"{connection.address}: the broker does not offer SaslHandshake v1 and SaslAuthenticate "
                "(Kafka 1.0 or later)"
            )
        return min(_AUTHENTICATE_VERSION, ranges[ApiKey.SASL_AUTHENTICATE])

    async def _oauth_token(self) -> OAuthToken:
        now = time.time()
        if self._token is not None and now < self._token_refresh_s:
            return self._token
        settings = self.settings
        if settings.unsecured_jwt is not None:
            token = unsecured_token(settings.unsecured_jwt, now)
        else:
            assert settings.oauth_cb is not None
            try:
                result = await asyncio.to_thread(settings.oauth_cb, settings.oauthbearer_config)
            except Exception as exc:
                raise AuthenticationFailedError(f"oauth_cb failed: {type(exc).__name__}: {exc}") from None
            token = _token_from_callback(result)
        self._token = token
        self._token_refresh_s = now + max(0.0, token.expires_s - now) * TOKEN_REFRESH_SHARE
        return token


def _token_from_callback(result: Any) -> OAuthToken:
    """confluent-kafka's ``oauth_cb`` result: (token, expiry epoch seconds[, principal, extensions])."""
    if not isinstance(result, tuple) or len(result) not in (2, 4):
        raise AuthenticationFailedError(
            "oauth_cb must return (token, expiry_seconds) or (token, expiry_seconds, principal, extensions)"
        )
    value, expires = result[0], result[1]
    extensions: Mapping[str, str] = result[3] if len(result) == 4 and result[3] else {}
    if not isinstance(value, str) or not value or not isinstance(expires, (int, float)):
        raise AuthenticationFailedError("oauth_cb returned no token or no numeric expiry")
    return OAuthToken(value, float(expires), {str(k): str(v) for k, v in extensions.items()})
