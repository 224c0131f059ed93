"""The client side of each SASL mechanism, sans-IO: `step(challenge)` takes the broker's last
answer (None before the first token) and returns the next token to send, or None when the
exchange is complete on the client's side. A broker that proves itself wrong (a SCRAM server
signature that does not verify) raises `AuthenticationFailedError`.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from ...errors import KConsumerError
from .settings import SaslSettings, UnsecuredJwt


class AuthenticationFailedError(KConsumerError):
    """SASL authentication failed (the broker's message, or the client's reason)."""


@dataclass(frozen=True)
class OAuthToken:
    """An OAUTHBEARER token, when it expires (epoch seconds) and its SASL extensions."""

    value: str
    expires_s: float
    extensions: Mapping[str, str]


class ClientMechanism(Protocol):
    """One authentication's client side."""

    def step(self, challenge: bytes | None) -> bytes | None: ...


class PlainClient:
    """PLAIN: one token, ``NUL user NUL password``."""

    def __init__(self, username: str, password: str) -> None:
        self._token = b"\x00" + username.encode() + b"\x00" + password.encode()
        self._sent = False

    def step(self, challenge: bytes | None) -> bytes | None:
        if self._sent:
            return None
        self._sent = True
        return self._token


class ScramClient:
    """SCRAM-SHA-256/512 (through `scramp`), verifying the server's signature."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        import scramp  # here, not at module level: only SCRAM users pay its import (about 50 ms)

        self._scram_error = scramp.ScramException
        self._client = scramp.ScramClient([mechanism], username, password)
        self._round = 0

    def step(self, challenge: bytes | None) -> bytes | None:
        self._round += 1
        try:
            if self._round == 1:
                first: str = self._client.get_client_first()
                return first.encode()
            if self._round == 2:
                assert challenge is not None
                self._client.set_server_first(challenge.decode())
                final: str = self._client.get_client_final()
                return final.encode()
            assert challenge is not None
            self._client.set_server_final(challenge.decode())
        except (self._scram_error, UnicodeDecodeError, ValueError) as exc:
            raise AuthenticationFailedError(f"SCRAM exchange failed: {exc}") from None
        return None


class OAuthBearerClient:
    """OAUTHBEARER (RFC 7628): the token in the initial response; an error challenge from the
    broker is acknowledged (it then fails the authentication with its message)."""

    def __init__(self, token: OAuthToken) -> None:
        extensions = "".join(f"{name}={value}\x01" for name, value in token.extensions.items())
        self._initial = f"n,,\x01auth=Bearer {token.value}\x01{extensions}\x01".encode()
        self._round = 0

    def step(self, challenge: bytes | None) -> bytes | None:
        self._round += 1
        if self._round == 1:
            return self._initial
        if challenge:  # the broker's JSON error: acknowledge, its failure answer follows
            return b"\x01" if self._round == 2 else None
        return None


def client_mechanism(settings: SaslSettings, token: OAuthToken | None = None) -> ClientMechanism:
    """A fresh client side for one authentication with the current credentials."""
    if settings.mechanism == "OAUTHBEARER":
        assert token is not None
        return OAuthBearerClient(token)
    username, password = settings.credentials.get()
    assert username is not None and password is not None
    if settings.mechanism == "PLAIN":
        return PlainClient(username, password)
    return ScramClient(settings.mechanism, username, password)


def unsecured_token(jwt: UnsecuredJwt, now_s: float | None = None) -> OAuthToken:
    """An unsecured JWT (``alg: none``, no signature) as librdkafka builds it for
    ``enable.sasl.oauthbearer.unsecure.jwt``."""
    issued = time.time() if now_s is None else now_s
    claims: dict[str, object] = {
        jwt.principal_claim: jwt.principal,
        "iat": round(issued, 3),
        "exp": round(issued + jwt.lifetime_s, 3),
    }
    if jwt.scope:
        claims[jwt.scope_claim] = list(jwt.scope)
    value = f"{_b64(json.dumps({'alg': 'none'}))}.{_b64(json.dumps(claims))}."
    return OAuthToken(value, issued + jwt.lifetime_s, dict(jwt.extensions))


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()
