"""SASL settings with librdkafka's keys, meanings and defaults, checked at construction:

=========================================  ==========================================================
``sasl.mechanisms`` (``sasl.mechanism``)   PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER;
                                           librdkafka's default GSSAPI (Kerberos) is refused with a
                                           ConfigError (not supported yet), never silently skipped
``sasl.username`` / ``sasl.password``      PLAIN and SCRAM credentials (required for them);
                                           `Consumer.set_sasl_credentials` replaces them for every
                                           later authentication
``oauth_cb``                               OAUTHBEARER: ``oauth_cb(sasl.oauthbearer.config)`` returns
                                           ``(token, expiry_epoch_seconds[, principal, extensions])``
``enable.sasl.oauthbearer.unsecure.jwt``   OAUTHBEARER without `oauth_cb`: an unsecured JWT built
                                           from ``sasl.oauthbearer.config`` (``principal=...``
                                           required; ``principalClaimName``, ``scope``,
                                           ``scopeClaimName``, ``lifeSeconds`` (3600),
                                           ``extension_NAME=value``), for tests
``sasl.oauthbearer.method``                ``default`` only (OIDC is refused: not supported yet)
=========================================  ==========================================================
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError
from ..config import boolean_setting

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class SaslCredentials:
    """``sasl.username`` / ``sasl.password``, replaceable from any thread
    (`Consumer.set_sasl_credentials`); each authentication reads the current pair."""

    def __init__(self, username: str | None, password: str | None) -> None:
        self._lock = threading.Lock()
        self._pair = (username, password)

    def get(self) -> tuple[str | None, str | None]:
        with self._lock:
            return self._pair

    def set(self, username: str, password: str) -> None:
        with self._lock:
            self._pair = (username, password)


@dataclass(frozen=True)
class UnsecuredJwt:
    """How to build librdkafka's unsecured JWT (``enable.sasl.oauthbearer.unsecure.jwt``)."""

    principal: str
    principal_claim: str = "sub"
    scope: tuple[str, ...] = ()
    scope_claim: str = "scope"
    lifetime_s: int = 3600
    extensions: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SaslSettings:
    """How kconsumer's own connections authenticate (None for non-SASL protocols)."""

    mechanism: str
    credentials: SaslCredentials
    #: OAUTHBEARER: the application's ``oauth_cb`` and the ``sasl.oauthbearer.config`` it is given.
    oauth_cb: Callable[[str], Any] | None = None
    oauthbearer_config: str = ""
    unsecured_jwt: UnsecuredJwt | None = None


def sasl_settings(settings: Mapping[str, Any], protocol: str) -> SaslSettings | None:
    """The SASL settings of `protocol` (None unless SASL_PLAINTEXT / SASL_SSL); ConfigError naming
    the key for what cannot work."""
    if not protocol.startswith("SASL"):
        return None
    key = "sasl.mechanisms" if "sasl.mechanisms" in settings else "sasl.mechanism"
    mechanism = str(settings.get(key, "GSSAPI")).strip().upper()
    if mechanism == "GSSAPI":
        raise ConfigError(
            key,
            "GSSAPI (Kerberos, librdkafka's default mechanism) is not supported by kconsumer yet: set "
            f"{key} to one of {', '.join(MECHANISMS)}",
        )
    if mechanism not in MECHANISMS:
        raise ConfigError(key, f"unknown SASL mechanism {mechanism!r}: one of {', '.join(MECHANISMS)}")
    username, password = settings.get("sasl.username"), settings.get("sasl.password")
    credentials = SaslCredentials(
        None if username is None else str(username), None if password is None else str(password)
    )
    if mechanism != "OAUTHBEARER":
        for name, value in (("sasl.username", username), ("sasl.password", password)):
            if not value:
                raise ConfigError(name, f"required for SASL mechanism {mechanism}")
        return SaslSettings(mechanism, credentials)
    return _oauthbearer(settings, credentials)


def _oauthbearer(settings: Mapping[str, Any], credentials: SaslCredentials) -> SaslSettings:
    method = str(settings.get("sasl.oauthbearer.method", "default")).lower()
    if method != "default":
        raise ConfigError(
            "sasl.oauthbearer.method",
            f"{method!r} is not supported by kconsumer yet: use 'default' with an oauth_cb that "
            "fetches the tokens",
        )
    config = str(settings.get("sasl.oauthbearer.config", "") or "")
    oauth_cb = settings.get("oauth_cb")
    if oauth_cb is not None:
        if not callable(oauth_cb):
            raise ConfigError("oauth_cb", "must be callable: oauth_cb(config) -> (token, expiry_seconds)")
        return SaslSettings("OAUTHBEARER", credentials, oauth_cb=oauth_cb, oauthbearer_config=config)
    unsecure = boolean_setting(
        "enable.sasl.oauthbearer.unsecure.jwt", settings.get("enable.sasl.oauthbearer.unsecure.jwt", False)
    )
    if not unsecure:
        raise ConfigError(
            "oauth_cb",
            "SASL mechanism OAUTHBEARER needs a token: set oauth_cb, or enable.sasl.oauthbearer.unsecure.jwt "
            "(unsecured tokens, for tests)",
        )
    return SaslSettings(
        "OAUTHBEARER", credentials, oauthbearer_config=config, unsecured_jwt=_unsecured_jwt(config)
    )


def _unsecured_jwt(config: str) -> UnsecuredJwt:
    """librdkafka's ``sasl.oauthbearer.config`` for unsecured JWTs: space-separated name=value."""
    values: dict[str, str] = {}
    extensions: dict[str, str] = {}
    for item in config.split():
        name, sep, value = item.partition("=")
        if not sep or not value:
            raise ConfigError("sasl.oauthbearer.config", f"expected name=value, got {item!r}")
        if name.startswith("extension_"):
            extensions[name.removeprefix("extension_")] = value
        else:
            values[name] = value
    unknown = set(values) - {"principal", "principalClaimName", "scope", "scopeClaimName", "lifeSeconds"}
    if unknown:
        raise ConfigError("sasl.oauthbearer.config", f"unknown setting(s) {', '.join(sorted(unknown))}")
    if "principal" not in values:
        raise ConfigError("sasl.oauthbearer.config", "needs principal=<name> for unsecured JWTs")
    try:
        lifetime = int(values.get("lifeSeconds", "3600"))
    except ValueError:
        lifetime = 0
    if lifetime <= 0:
        raise ConfigError("sasl.oauthbearer.config", "lifeSeconds must be a positive integer")
    return UnsecuredJwt(
        values["principal"],
        values.get("principalClaimName", "sub"),
        tuple(values["scope"].split(",")) if "scope" in values else (),
        values.get("scopeClaimName", "scope"),
        lifetime,
        extensions,
    )
