"""The server side of each SASL mechanism, sans-IO: `step(token)` takes the client's next token and
says what to answer (`Step`). One instance per authentication.

* PLAIN (RFC 4616): one token ``authzid NUL user NUL password``; an authzid other than the user is
  refused, as Kafka refuses it.
* SCRAM-SHA-256/512 (RFC 5802/7677, through `scramp`): client-first → server-first, client-final →
  server-final.
* OAUTHBEARER (RFC 7628) with Kafka's unsecured JWT validation: the token's header must say
  ``alg: none``, its signature part must be empty, its payload must name the principal
  (``sub`` unless configured otherwise) and carry an ``exp`` in the future. A bad token is answered
  with the RFC's JSON error challenge; the client acknowledges it and authentication fails.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from dataclasses import dataclass
from typing import Any, Protocol

import scramp

from .credentials import Users

FAILED_PASSWORD = "Authentication failed: Invalid username or password"


@dataclass(frozen=True)
class Step:
    """What to answer one client token with. `failure` set: authentication failed (answer it and
    close); `principal` set: it succeeded, for that user, until `expires_ms` (epoch ms) if given."""

    challenge: bytes = b""
    failure: str | None = None
    principal: str | None = None
    expires_ms: int | None = None


class ServerMechanism(Protocol):
    """One authentication's server side."""

    def step(self, token: bytes) -> Step: ...


class PlainServer:
    """PLAIN: the password checked against the user's stored credential."""

    def __init__(self, users: Users) -> None:
        self._users = users

    def step(self, token: bytes) -> Step:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            return Step(failure="Authentication failed: invalid SASL/PLAIN request: expected 3 tokens")
        authzid, user, password = (part.decode("utf-8", "replace") for part in parts)
        if not user or not password:
            return Step(failure="Authentication failed: username and password must not be empty")
        if authzid and authzid != user:
            return Step(
                failure="Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if not self._users.check_password(user, password):
            return Step(failure=FAILED_PASSWORD)
        return Step(principal=user)


class ScramServer:
    """SCRAM-SHA-256 or -512 over the stored salted credentials."""

    def __init__(self, mechanism: str, users: Users) -> None:
        self._mechanism = mechanism
        self._users = users
        self._server = scramp.ScramMechanism(mechanism).make_server(self._lookup)
        self._user: str | None = None
        self._round = 0

    def _lookup(self, user: str) -> tuple[bytes, bytes, bytes, int]:
        credential = self._users.scram_credential(self._mechanism, user)
        if credential is None:
            raise scramp.ScramException("unknown user")
        self._user = user
        return credential.as_auth_info()

    def step(self, token: bytes) -> Step:
        self._round += 1
        failure = (
            "Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {self._mechanism}"
        )
        try:
            message = token.decode("utf-8")
            if self._round == 1:
                self._server.set_client_first(message)
                return Step(challenge=self._server.get_server_first().encode())
            if self._round == 2:
                self._server.set_client_final(message)
                assert self._user is not None
                return Step(challenge=self._server.get_server_final().encode(), principal=self._user)
        except (scramp.ScramException, UnicodeDecodeError, ValueError, KeyError, IndexError):
            return Step(failure=failure)
        return Step(failure=f"Authentication failed: unexpected {self._mechanism} message")


class OAuthBearerServer:
    """OAUTHBEARER with unsecured JWTs (Kafka's default validator, meant for tests)."""

    def __init__(self, principal_claim: str = "sub", clock_s: Any = time.time) -> None:
        self._principal_claim = principal_claim
        self._clock_s = clock_s
        self._refusal: str | None = None

    def step(self, token: bytes) -> Step:
        if self._refusal is not None:  # the client's acknowledgement of our error challenge
            return Step(failure=f"Authentication failed: {self._refusal}")
        try:
            principal, expires_ms = self._validate(token)
        except ValueError as exc:
            self._refusal = str(exc)
            return Step(challenge=json.dumps({"status": "invalid_token"}).encode())
        return Step(principal=principal, expires_ms=expires_ms)

    def _validate(self, message: bytes) -> tuple[str, int]:
        fields = message.split(b"\x01")
        if not fields or not fields[0].startswith(b"n,"):
            raise ValueError("invalid OAUTHBEARER initial client response")
        auth = next((f for f in fields[1:] if f.startswith(b"auth=")), None)
        if auth is None or not auth[5:].lower().startswith(b"bearer "):
            raise ValueError("no 'auth=Bearer <token>' in the OAUTHBEARER client response")
        jws = auth[12:].decode("ascii", "replace").strip()
        parts = jws.split(".")
        if len(parts) != 3:
            raise ValueError("the token is not a compact JWS (three dot-separated parts)")
        header, payload = _json_part(parts[0], "header"), _json_part(parts[1], "payload")
        if header.get("alg") != "none" or parts[2]:
            raise ValueError("only unsecured JWTs (alg 'none', no signature) are accepted")
        principal = payload.get(self._principal_claim)
        if not isinstance(principal, str) or not principal:
            raise ValueError(f"the token has no {self._principal_claim!r} claim naming the principal")
        expires = payload.get("exp")
        if not isinstance(expires, (int, float)):
            raise ValueError("the token has no numeric 'exp' claim")
        if expires <= self._clock_s():
            raise ValueError("the token has expired")
        return principal, int(expires * 1000)


def _json_part(part: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ValueError(f"the token's {what} is not base64url-encoded JSON") from None
    if not isinstance(value, dict):
        raise ValueError(f"the token's {what} is not a JSON object")
    return value


def server_mechanism(name: str, users: Users, principal_claim: str) -> ServerMechanism:
    """A fresh server side of mechanism `name` (one of the enabled ones)."""
    if name == "PLAIN":
        return PlainServer(users)
    if name.startswith("SCRAM-"):
        return ScramServer(name, users)
    return OAuthBearerServer(principal_claim)
