"""TLS for the connections kconsumer opens itself (coordinator discovery, heartbeats, commits,
offset and metadata requests), from the same librdkafka settings the fetch handle gets, with
librdkafka's meanings and defaults:

=========================================  ==========================================================
``security.protocol``                      PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL (TLS
                                           for SSL and SASL_SSL; SASL itself: `kconsumer.client.sasl`)
``ssl.ca.location`` / ``ssl.ca.pem``       the CAs to trust (a file or a directory / PEM text);
                                           none: the system's trust store
``ssl.certificate.location`` / ``.pem``    the client certificate (mutual TLS), with
``ssl.key.location`` / ``.pem``            its key and ``ssl.key.password``
``enable.ssl.certificate.verification``    true (default); false trusts any certificate
``ssl.endpoint.identification.algorithm``  ``https`` (default): the certificate must name the host;
                                           ``none``: it need not
``ssl.cipher.suites``                      OpenSSL cipher list
=========================================  ==========================================================

Everything is checked when the consumer is constructed: a missing or unreadable file, a wrong key
password, an unknown value raise `ConfigError` naming the key.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .config import boolean_setting
from .sasl import SaslSettings, sasl_settings

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ConnectionSecurity:
    """How kconsumer's own connections are secured: TLS and SASL (either may be None)."""

    tls: ssl.SSLContext | None = None
    sasl: SaslSettings | None = None


def connection_security(settings: Mapping[str, Any]) -> ConnectionSecurity:
    """TLS and SASL of ``security.protocol`` from the application's settings (ConfigError naming
    the key for anything that cannot work)."""
    protocol = str(settings.get("security.protocol", "PLAINTEXT")).upper()
    return ConnectionSecurity(tls_context(settings), sasl_settings(settings, protocol))


def tls_context(settings: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The TLS context of kconsumer's own connections (None: plaintext); `settings` are the
    librdkafka settings the application gave (see the module docstring)."""
    protocol = str(settings.get("security.protocol", "PLAINTEXT")).upper()
    if protocol not in _PROTOCOLS:
        raise ConfigError("security.protocol", f"must be one of {', '.join(_PROTOCOLS)}, got {protocol!r}")
    if not protocol.endswith("SSL"):
        return None
    context = _trusting(settings)
    _verification(context, settings)
    _client_certificate(context, settings)
    ciphers = settings.get("ssl.cipher.suites")
    if ciphers:
        try:
            context.set_ciphers(str(ciphers))
        except ssl.SSLError as exc:
            raise ConfigError("ssl.cipher.suites", f"no usable cipher in {ciphers!r}: {exc}") from None
    return context


def _trusting(settings: Mapping[str, Any]) -> ssl.SSLContext:
    location, pem = settings.get("ssl.ca.location"), settings.get("ssl.ca.pem")
    if location is None and pem is None:
        return ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if location is not None:
        path = str(location)
        try:
            if os.path.isdir(path):
                context.load_verify_locations(capath=path)
            else:
                context.load_verify_locations(cafile=path)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                "ssl.ca.location", f"cannot load CA certificates from {path!r}: {exc}"
            ) from None
    if pem is not None:
        try:
            context.load_verify_locations(cadata=str(pem))
        except (ValueError, ssl.SSLError) as exc:
            raise ConfigError("ssl.ca.pem", f"not PEM CA certificates: {exc}") from None
    return context


def _verification(context: ssl.SSLContext, settings: Mapping[str, Any]) -> None:
    verify = boolean_setting(
        "enable.ssl.certificate.verification", settings.get("enable.ssl.certificate.verification", True)
    )
    algorithm = str(settings.get("ssl.endpoint.identification.algorithm", "https")).lower()
    if algorithm not in ("https", "none"):
        raise ConfigError(
            "ssl.endpoint.identification.algorithm", f"must be https or none, got {algorithm!r}"
        )
    context.check_hostname = verify and algorithm == "https"
    context.verify_mode = ssl.CERT_REQUIRED if verify else ssl.CERT_NONE


def _client_certificate(context: ssl.SSLContext, settings: Mapping[str, Any]) -> None:
    certificate = _pem_or_file(settings, "ssl.certificate.location", "ssl.certificate.pem")
    key = _pem_or_file(settings, "ssl.key.location", "ssl.key.pem")
    if certificate is None and key is None:
        return
    if certificate is None:
        raise ConfigError("ssl.certificate.location", "a client key needs its certificate")
    password = settings.get("ssl.key.password")
    try:
        with _as_files(certificate, key) as (certificate_path, key_path):
            context.load_cert_chain(certificate_path, key_path, None if password is None else str(password))
    except ssl.SSLError as exc:
        key_name = "ssl.key.password" if password is not None else "ssl.key.location"
        raise ConfigError(key_name, f"cannot use the client certificate and key: {exc}") from None
    except OSError as exc:
        raise ConfigError(
            "ssl.certificate.location", f"cannot read the client certificate or key: {exc}"
        ) from None


def _pem_or_file(settings: Mapping[str, Any], location_key: str, pem_key: str) -> tuple[str, str] | None:
    """("file", path) or ("pem", text) of a setting given either way."""
    if settings.get(location_key) is not None:
        path = str(settings[location_key])
        if not os.access(path, os.R_OK):
            raise ConfigError(location_key, f"cannot read {path!r}")
        return ("file", path)
    if settings.get(pem_key) is not None:
        return ("pem", str(settings[pem_key]))
    return None


class _as_files:
    """Context manager: the certificate and key as file paths (PEM text goes to private temporary
    files, removed at exit), as `SSLContext.load_cert_chain` wants them."""

    def __init__(self, certificate: tuple[str, str], key: tuple[str, str] | None) -> None:
        self._items = [certificate, key]
        self._temporary: list[str] = []

    def __enter__(self) -> tuple[str, str | None]:
        paths: list[str | None] = []
        for item in self._items:
            if item is None:
                paths.append(None)
            elif item[0] == "file":
                paths.append(item[1])
            else:
                handle, path = tempfile.mkstemp(suffix=".pem")
                with os.fdopen(handle, "w") as out:
                    out.write(item[1])
                self._temporary.append(path)
                paths.append(path)
        assert paths[0] is not None
        return paths[0], paths[1]

    def __exit__(self, *exc: object) -> None:
        for path in self._temporary:
            os.unlink(path)
