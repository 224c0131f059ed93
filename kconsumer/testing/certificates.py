"""Certificates for the reference cluster's TLS listener, generated at start (no private key is
ever part of the repository): a certificate authority, a server certificate for 127.0.0.1 and
localhost signed by it, and a client certificate for mutual TLS, written as PEM files to a
directory of the caller's (normally a temporary one)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

#: How long the generated certificates are valid (they live as long as a test run).
VALIDITY = datetime.timedelta(days=2)


@dataclass(frozen=True)
class Certificates:
    """Paths of the PEM files `generate` wrote."""

    ca: Path
    server_certificate: Path
    server_key: Path
    client_certificate: Path
    client_key: Path
    #: The client certificate's subject, the principal a mutual-TLS listener sees.
    client_subject: str


def generate(directory: Path, client_name: str = "client") -> Certificates:
    """Write a CA, a server certificate (127.0.0.1, localhost) and a client certificate (common
    name `client_name`) to `directory`."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kconsumer reference cluster CA")])
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(*_CA_USAGE), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = (
        _builder(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]),
            ca_name,
            server_key.public_key(),
            now,
        )
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, client_name)])
    client = (
        _builder(client_subject, ca_name, client_key.public_key(), now)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    paths = Certificates(
        ca=_write(directory / "ca.pem", ca.public_bytes(serialization.Encoding.PEM)),
        server_certificate=_write(directory / "server.pem", server.public_bytes(serialization.Encoding.PEM)),
        server_key=_write(directory / "server.key", _key_bytes(server_key)),
        client_certificate=_write(directory / "client.pem", client.public_bytes(serialization.Encoding.PEM)),
        client_key=_write(directory / "client.key", _key_bytes(client_key)),
        client_subject=client_subject.rfc4514_string(),
    )
    return paths


#: digital_signature, content_commitment, key_encipherment, data_encipherment, key_agreement,
#: key_cert_sign, crl_sign, encipher_only, decipher_only.
_CA_USAGE = (True, False, False, False, False, True, True, False, False)


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey, now: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def _key_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path
