"""The sans-IO parts of SASL and ACLs: the broker's per-connection authenticator (its transition
table, re-authentication rules, session expiry), the mechanisms on both sides, the client's
settings checked at construction, and ACL matching."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from kconsumer import Consumer
from kconsumer.broker.server.security import Acl, Authorizer, SaslSettings, Users
from kconsumer.broker.server.security.authenticator import SaslAuthenticator, SaslState
from kconsumer.broker.server.security.mechanisms import OAuthBearerServer
from kconsumer.client.sasl import SaslCredentials, client_mechanism
from kconsumer.client.sasl.mechanisms import OAuthBearerClient, unsecured_token
from kconsumer.client.sasl.settings import SaslSettings as ClientSaslSettings
from kconsumer.client.sasl.settings import UnsecuredJwt
from kconsumer.errors import ConfigError, ErrorCode
from kconsumer.protocol.messages.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

USERS = Users.of({"alice": "alice-secret"}, iterations=4096)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def _authenticate(authenticator: SaslAuthenticator, mechanism: str, user: str, password: str) -> Any:
    answer = authenticator.handshake(mechanism, 1)
    assert isinstance(answer.response, SaslHandshakeResponse) and answer.close_reason is None
    client = client_mechanism(ClientSaslSettings(mechanism, SaslCredentials(user, password)))
    challenge = None
    while (token := client.step(challenge)) is not None:
        answer = authenticator.authenticate(token)
        assert isinstance(answer.response, SaslAuthenticateResponse)
        if answer.close_reason is not None:
            return answer
        challenge = answer.response.auth_bytes
    return answer


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_password_mechanism_authenticates_and_gives_the_session_a_lifetime(mechanism: str) -> None:
    clock = Clock()
    authenticator = SaslAuthenticator(SaslSettings((mechanism,), USERS, max_reauth_ms=5000), clock)
    assert authenticator.admit("Metadata") is not None, "nothing but ApiVersions/SASL before"
    answer = _authenticate(authenticator, mechanism, "alice", "alice-secret")
    assert answer.close_reason is None and answer.response.session_lifetime_ms == 5000
    assert authenticator.state is SaslState.AUTHENTICATED and authenticator.user == "alice"
    assert authenticator.admit("Metadata") is None
    clock.now += 5000
    assert "expired" in str(authenticator.admit("Metadata"))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_a_wrong_password_fails_and_closes(mechanism: str) -> None:
    authenticator = SaslAuthenticator(SaslSettings((mechanism,), USERS))
    answer = _authenticate(authenticator, mechanism, "alice", "wrong")
    assert answer.response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert answer.close_reason == answer.response.error_message
    assert authenticator.user is None


def test_an_unknown_mechanism_is_refused_with_the_enabled_ones() -> None:
    answer = SaslAuthenticator(SaslSettings(("PLAIN",), USERS)).handshake("GSSAPI", 1)
    assert answer.response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert answer.response.mechanisms == ["PLAIN"] and answer.close_reason is not None


def test_reauthentication_keeps_mechanism_and_principal() -> None:
    users = Users.of({"alice": "a", "bob": "b"})
    authenticator = SaslAuthenticator(SaslSettings(("PLAIN", "SCRAM-SHA-256"), users))
    assert _authenticate(authenticator, "PLAIN", "alice", "a").close_reason is None
    assert _authenticate(authenticator, "PLAIN", "alice", "a").close_reason is None
    assert authenticator.authentications == 2
    assert authenticator.handshake("SCRAM-SHA-256", 1).close_reason is not None
    other = SaslAuthenticator(SaslSettings(("PLAIN",), users))
    _authenticate(other, "PLAIN", "alice", "a")
    assert "principal" in str(_authenticate(other, "PLAIN", "bob", "b").close_reason)


def test_sasl_authenticate_before_the_handshake_is_illegal() -> None:
    answer = SaslAuthenticator(SaslSettings(("PLAIN",), USERS)).authenticate(b"\x00alice\x00x")
    assert answer.response.error_code == ErrorCode.ILLEGAL_SASL_STATE and answer.close_reason


def test_set_password_rotates_the_credential() -> None:
    users = Users.of({"alice": "old"})
    users.set_password("alice", "new")
    assert users.check_password("alice", "new") and not users.check_password("alice", "old")


def _jwt(header: dict[str, Any], claims: dict[str, Any], signature: str = "") -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part(header)}.{part(claims)}.{signature}"


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (_jwt({"alg": "HS256"}, {"sub": "alice", "exp": 2e9}), "unsecured"),
        (_jwt({"alg": "none"}, {"sub": "alice", "exp": 2e9}, "sig"), "unsecured"),
        (_jwt({"alg": "none"}, {"exp": 2e9}), "'sub'"),
        (_jwt({"alg": "none"}, {"sub": "alice", "exp": 1.0}), "expired"),
        ("not-a-jwt", "three"),
    ],
)
def test_oauthbearer_refuses_bad_tokens_with_the_rfc_error_challenge(token: str, reason: str) -> None:
    server = OAuthBearerServer(clock_s=lambda: 1e9)
    first = server.step(f"n,,\x01auth=Bearer {token}\x01\x01".encode())
    assert first.failure is None and json.loads(first.challenge) == {"status": "invalid_token"}
    final = server.step(b"\x01")  # the client's acknowledgement
    assert final.failure is not None and reason in final.failure


def test_oauthbearer_accepts_an_unsecured_jwt_until_it_expires() -> None:
    token = unsecured_token(UnsecuredJwt("alice", lifetime_s=60), now_s=1e9)
    client = OAuthBearerClient(token)
    server = OAuthBearerServer(clock_s=lambda: 1e9)
    step = server.step(client.step(None) or b"")
    assert step.principal == "alice" and step.expires_ms == int((1e9 + 60) * 1000)


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"sasl.mechanisms": "PLAIN", "sasl.password": "x"}, "sasl.username"),
        ({"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "x"}, "sasl.password"),
        ({"sasl.mechanism": "NTLM"}, "sasl.mechanism"),
        ({"sasl.mechanisms": "OAUTHBEARER"}, "oauth_cb"),
        ({"sasl.mechanisms": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc"}, "sasl.oauthbearer.method"),
        (
            {"sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True},
            "sasl.oauthbearer.config",
        ),
        (
            {
                "sasl.mechanisms": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": "principal=a lifeSeconds=never",
            },
            "sasl.oauthbearer.config",
        ),
        ({"sasl.mechanisms": "OAUTHBEARER", "oauth_cb": "not callable"}, "oauth_cb"),
    ],
)
def test_bad_sasl_settings_fail_at_construction(settings: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Consumer(
            {"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "security.protocol": "SASL_SSL", **settings}
        )
    assert raised.value.key == key


def test_acls_match_principal_operation_and_name() -> None:
    authorizer = Authorizer(
        [
            Acl("User:alice", "Read", "topic", "orders-", prefixed=True),
            Acl("User:*", "Describe", "group", "g"),
        ],
        super_users=["User:admin"],
    )
    assert authorizer.allowed("User:alice", "Read", "topic", "orders-eu")
    assert authorizer.allowed("User:alice", "Describe", "topic", "orders-eu"), "Read implies Describe"
    assert not authorizer.allowed("User:alice", "Write", "topic", "orders-eu")
    assert not authorizer.allowed("User:bob", "Read", "topic", "orders-eu")
    assert authorizer.allowed("User:bob", "Describe", "group", "g")
    assert not authorizer.allowed("User:bob", "Read", "group", "g")
    assert authorizer.allowed("User:admin", "Write", "cluster", "kafka-cluster")
    with pytest.raises(ConfigError):
        Acl("alice", "Read", "topic")
