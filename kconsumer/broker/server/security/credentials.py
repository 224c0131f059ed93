"""The users a SASL listener knows, stored the way Kafka stores SCRAM credentials: per mechanism a
random salt, the iteration count, StoredKey and ServerKey (RFC 5802), never the password.

PLAIN checks a password against the SCRAM-SHA-512 entry (the same salted, iterated derivation), so
the plain password is not kept for PLAIN either.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field

import scramp

#: Kafka's minimum for SCRAM (``ScramMechanism.minIterations``) and the kafka-configs default.
SCRAM_ITERATIONS = 4096
_SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class ScramCredential:
    """One user's credential for one SCRAM mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def as_auth_info(self) -> tuple[bytes, bytes, bytes, int]:
        """In the shape `scramp` servers look credentials up in."""
        return self.salt, self.stored_key, self.server_key, self.iterations


@dataclass(frozen=True)
class Users:
    """Users and their salted credentials; build with `Users.of({"alice": "alice-secret"})`.
    `set_password` changes them in place (a credential rotation: connections authenticate against
    the new one from then on)."""

    scram: dict[str, dict[str, ScramCredential]] = field(default_factory=dict)

    @classmethod
    def of(cls, passwords: Mapping[str, str], iterations: int = SCRAM_ITERATIONS) -> Users:
        """Derive every mechanism's credential for each user (the passwords are then dropped)."""
        users = cls()
        for user, password in passwords.items():
            users.set_password(user, password, iterations)
        return users

    def set_password(self, user: str, password: str, iterations: int = SCRAM_ITERATIONS) -> None:
        """Add `user` or replace its credentials (every mechanism)."""
        for mechanism in _SCRAM:
            info = scramp.ScramMechanism(mechanism).make_auth_info(password, iteration_count=iterations)
            self.scram.setdefault(mechanism, {})[user] = ScramCredential(*info)

    def names(self) -> frozenset[str]:
        """Every known user name."""
        return frozenset(name for table in self.scram.values() for name in table)

    def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        """The user's credential for a SCRAM mechanism (None: unknown user)."""
        return self.scram.get(mechanism, {}).get(user)

    def check_password(self, user: str, password: str) -> bool:
        """Whether `password` is the user's (derived and compared against the stored key, in
        constant time)."""
        credential = self.scram_credential("SCRAM-SHA-512", user)
        if credential is None:
            return False
        salted = hashlib.pbkdf2_hmac("sha512", password.encode(), credential.salt, credential.iterations)
        client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
        return hmac.compare_digest(hashlib.sha512(client_key).digest(), credential.stored_key)
