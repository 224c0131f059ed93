"""The reference cluster's security, from `ReferenceCluster`'s arguments: certificates generated at
start for TLS listeners, SASL settings with the users' salted credentials, ACLs, and the client
settings (for confluent-kafka or kconsumer) that match them.
"""

from __future__ import annotations

import base64
import json
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..broker.server.config import TlsListener
from ..broker.server.security import Acl, Authorizer, SaslSettings, Users
from .certificates import Certificates, generate

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass
class ClusterSecurity:
    """What a cluster's listener requires, and the material clients need to meet it."""

    security_protocol: str
    certificates: Certificates | None
    tls: TlsListener | None
    sasl: SaslSettings | None
    authorizer: Authorizer | None
    passwords: Mapping[str, str]
    _directory: tempfile.TemporaryDirectory[str] | None = None

    @classmethod
    def build(
        cls,
        security_protocol: str = "PLAINTEXT",
        *,
        ssl_client_auth: bool = False,
        sasl_mechanisms: Iterable[str] = ("SCRAM-SHA-512",),
        users: Mapping[str, str] | None = None,
        acls: Iterable[Acl] | None = None,
        super_users: Iterable[str] = (),
        max_reauth_ms: int | None = None,
    ) -> ClusterSecurity:
        """The listener's security (see `ReferenceCluster`); ValueError for an unknown protocol."""
        protocol = security_protocol.upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"security_protocol: one of {', '.join(SECURITY_PROTOCOLS)}, got {security_protocol!r}"
            )
        directory = certificates = tls = None
        if protocol.endswith("SSL"):
            directory = tempfile.TemporaryDirectory(prefix="kconsumer-certificates-")
            certificates = generate(Path(directory.name))
            tls = TlsListener(
                str(certificates.server_certificate),
                str(certificates.server_key),
                str(certificates.ca) if ssl_client_auth else None,
            )
        passwords = dict(users or {})
        sasl = None
        if protocol.startswith("SASL"):
            sasl = SaslSettings(
                mechanisms=tuple(sasl_mechanisms), users=Users.of(passwords), max_reauth_ms=max_reauth_ms
            )
        authorizer = Authorizer(acls, super_users) if acls is not None else None
        return cls(protocol, certificates, tls, sasl, authorizer, passwords, directory)

    def client_settings(self, user: str | None = None, mechanism: str | None = None) -> dict[str, str]:
        """``security.protocol`` and the ``ssl.*`` / ``sasl.*`` settings a client needs (no
        bootstrap address). `user` picks whose credentials (default: the first user); `mechanism`
        one of the enabled mechanisms (default: the first). OAUTHBEARER gets librdkafka's unsecured
        JWT settings for the user."""
        settings: dict[str, str] = {}
        if self.security_protocol != "PLAINTEXT":
            settings["security.protocol"] = self.security_protocol
        certificates = self.certificates
        if certificates is not None:
            settings["ssl.ca.location"] = str(certificates.ca)
            if self.tls is not None and self.tls.client_ca is not None:
                settings["ssl.certificate.location"] = str(certificates.client_certificate)
                settings["ssl.key.location"] = str(certificates.client_key)
        if self.sasl is not None:
            chosen = mechanism or self.sasl.mechanisms[0]
            if chosen not in self.sasl.mechanisms:
                raise ValueError(
                    f"mechanism {chosen!r} is not enabled (enabled: {', '.join(self.sasl.mechanisms)})"
                )
            name = user if user is not None else next(iter(self.passwords), "admin")
            settings["sasl.mechanisms"] = chosen
            if chosen == "OAUTHBEARER":
                settings["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
                settings["sasl.oauthbearer.config"] = f"principal={name}"
            else:
                if name not in self.passwords:
                    raise ValueError(f"unknown user {name!r}")
                settings["sasl.username"] = name
                settings["sasl.password"] = self.passwords[name]
        return settings

    def close(self) -> None:
        """Delete the generated certificates."""
        if self._directory is not None:
            self._directory.cleanup()
            self._directory = None


def unsecured_jwt(principal: str, lifetime_s: float = 3600.0, claim: str = "sub") -> str:
    """An unsecured JWT (``alg: none``) for `principal` expiring in `lifetime_s`, as librdkafka's
    ``enable.sasl.oauthbearer.unsecure.jwt`` makes them (for `oauth_cb` tests)."""
    now = time.time()

    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part({claim: principal, 'iat': int(now), 'exp': now + lifetime_s})}."
