"""`SaslAuthenticator`: one connection's SASL state on a SASL listener, sans-IO.

Kafka's broker order (SaslServerAuthenticator): ApiVersions may come first; then SaslHandshake
names a mechanism; with handshake v1 the mechanism's tokens travel in SaslAuthenticate requests,
with v0 as raw frames. Anything else before authentication succeeds closes the connection, as does
a failed authentication (after its answer is sent) or a refused mechanism. Once authenticated, the
connection may re-authenticate (KIP-368: the same handshake and exchange again, same mechanism and
principal) at any time; when its session lifetime has passed without that, the next other request
closes it.

Transitions (one table, `_NEXT`):

=================  ===================  ================
state              event                next state
=================  ===================  ================
AWAIT_HANDSHAKE    handshake accepted   AWAIT_TOKEN
AWAIT_HANDSHAKE    handshake v0         AWAIT_RAW_TOKEN
AWAIT_TOKEN        token, more to come  AWAIT_TOKEN
AWAIT_TOKEN        token, succeeded     AUTHENTICATED
AWAIT_RAW_TOKEN    token, more to come  AWAIT_RAW_TOKEN
AWAIT_RAW_TOKEN    token, succeeded     AUTHENTICATED
AUTHENTICATED      handshake accepted   AWAIT_TOKEN (re-authentication)
=================  ===================  ================

Every other (state, event) pair, and every failure, closes the connection.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass

from ....errors import ErrorCode
from ....protocol.messages.sasl import SaslAuthenticateResponse, SaslHandshakeResponse
from .mechanisms import ServerMechanism, Step, server_mechanism
from .settings import SaslSettings


class SaslState(enum.Enum):
    AWAIT_HANDSHAKE = "await-handshake"
    AWAIT_TOKEN = "await-token"
    AWAIT_RAW_TOKEN = "await-raw-token"
    AUTHENTICATED = "authenticated"


class _Event(enum.Enum):
    HANDSHAKE = "handshake accepted"
    HANDSHAKE_V0 = "handshake v0"
    TOKEN_CONTINUES = "token, more to come"
    TOKEN_SUCCEEDED = "token, succeeded"


_S, _E = SaslState, _Event
_NEXT: dict[tuple[SaslState, _Event], SaslState] = {
    (_S.AWAIT_HANDSHAKE, _E.HANDSHAKE): _S.AWAIT_TOKEN,
    (_S.AWAIT_HANDSHAKE, _E.HANDSHAKE_V0): _S.AWAIT_RAW_TOKEN,
    (_S.AWAIT_TOKEN, _E.TOKEN_CONTINUES): _S.AWAIT_TOKEN,
    (_S.AWAIT_TOKEN, _E.TOKEN_SUCCEEDED): _S.AUTHENTICATED,
    (_S.AWAIT_RAW_TOKEN, _E.TOKEN_CONTINUES): _S.AWAIT_RAW_TOKEN,
    (_S.AWAIT_RAW_TOKEN, _E.TOKEN_SUCCEEDED): _S.AUTHENTICATED,
    (_S.AUTHENTICATED, _E.HANDSHAKE): _S.AWAIT_TOKEN,
}


@dataclass(frozen=True)
class Answer:
    """Send `response`; then close the connection if `close_reason` is set."""

    response: SaslHandshakeResponse | SaslAuthenticateResponse | bytes
    close_reason: str | None = None


class SaslAuthenticator:
    """One connection's SASL authentication (see the module docstring)."""

    def __init__(self, settings: SaslSettings, clock_ms: Callable[[], int] | None = None) -> None:
        self.settings = settings
        self.state = SaslState.AWAIT_HANDSHAKE
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._mechanism_name: str | None = None
        self._mechanism: ServerMechanism | None = None
        #: The authenticated user (kept across re-authentications, which must not change it).
        self.user: str | None = None
        #: How many times this connection authenticated (1 + re-authentications).
        self.authentications = 0
        self._session_ends_ms: int | None = None

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.AUTHENTICATED or self.user is not None

    @property
    def expects_raw_token(self) -> bool:
        """Whether the next frame is a raw SASL token (after a v0 handshake), not a request."""
        return self.state is SaslState.AWAIT_RAW_TOKEN

    def admit(self, api_name: str) -> str | None:
        """Why a request other than ApiVersions / SASL must close the connection (None: serve it)."""
        if self.state is not SaslState.AUTHENTICATED:
            if self.user is None:
                return f"{api_name} before SASL authentication completed"
            return f"{api_name} during SASL re-authentication"
        ends = self._session_ends_ms
        if ends is not None and self._clock_ms() >= ends:
            return f"{api_name} after the SASL session expired without re-authentication"
        return None

    def handshake(self, mechanism: str, version: int) -> Answer:
        """A SaslHandshake request."""
        enabled = list(self.settings.mechanisms)
        if mechanism not in enabled:
            return Answer(
                SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled),
                f"unsupported SASL mechanism {mechanism!r} (enabled: {', '.join(enabled)})",
            )
        if self.user is not None and mechanism != self._mechanism_name:
            return Answer(
                SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=enabled),
                f"re-authentication changed the SASL mechanism from {self._mechanism_name} to {mechanism}",
            )
        event = _Event.HANDSHAKE if version >= 1 else _Event.HANDSHAKE_V0
        if not self._move(event):
            return Answer(
                SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=enabled),
                f"unexpected SaslHandshake in state {self.state.value}",
            )
        self._mechanism_name = mechanism
        settings = self.settings
        self._mechanism = server_mechanism(mechanism, settings.users, settings.principal_claim)
        return Answer(SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=enabled))

    def authenticate(self, token: bytes) -> Answer:
        """A SaslAuthenticate request (handshake v1)."""
        if self.state is not SaslState.AWAIT_TOKEN or self._mechanism is None:
            reason = f"unexpected SaslAuthenticate in state {self.state.value}"
            return Answer(_failed(ErrorCode.ILLEGAL_SASL_STATE, reason), reason)
        step = self._mechanism.step(token)
        failure = self._conclude(step)
        if failure is not None:
            return Answer(_failed(ErrorCode.SASL_AUTHENTICATION_FAILED, failure), failure)
        lifetime = self._session_lifetime_ms() if step.principal is not None else 0
        return Answer(
            SaslAuthenticateResponse(
                error_code=ErrorCode.NONE, auth_bytes=step.challenge, session_lifetime_ms=lifetime
            )
        )

    def raw_token(self, token: bytes) -> Answer:
        """A raw token frame (handshake v0); the answer is a raw frame too."""
        assert self._mechanism is not None
        step = self._mechanism.step(token)
        failure = self._conclude(step)
        return Answer(step.challenge, failure)

    def _conclude(self, step: Step) -> str | None:
        """Apply a mechanism step to the state; the failure that closes the connection, if any."""
        if step.failure is not None:
            return step.failure
        if step.principal is None:
            self._move(_Event.TOKEN_CONTINUES)
            return None
        if self.user is not None and step.principal != self.user:
            return f"re-authentication changed the principal from User:{self.user} to User:{step.principal}"
        self._move(_Event.TOKEN_SUCCEEDED)
        self.user = step.principal
        self.authentications += 1
        now = self._clock_ms()
        ends = [now + self.settings.max_reauth_ms] if self.settings.max_reauth_ms else []
        if step.expires_ms is not None:
            ends.append(step.expires_ms)
        self._session_ends_ms = min(ends) if ends else None
        return None

    def _session_lifetime_ms(self) -> int:
        if self._session_ends_ms is None:
            return 0
        return max(1, self._session_ends_ms - self._clock_ms())

    def _move(self, event: _Event) -> bool:
        following = _NEXT.get((self.state, event))
        if following is None:
            return False
        self.state = following
        return True


def _failed(code: ErrorCode, message: str) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=code, error_message=message, auth_bytes=b"")
