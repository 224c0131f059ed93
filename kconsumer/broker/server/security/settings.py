"""How a SASL listener authenticates (`SaslSettings`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ....errors import ConfigError
from .credentials import Users

#: The mechanisms the reference cluster implements.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


@dataclass(frozen=True)
class SaslSettings:
    """The listener authenticates every connection with SASL before any other request.

    `mechanisms` are those enabled (``sasl.enabled.mechanisms``); `users` the PLAIN and SCRAM
    credentials; OAUTHBEARER accepts Kafka's unsecured JWTs (``alg: none``) whose `principal_claim`
    names the user and whose ``exp`` has not passed. `max_reauth_ms` is Kafka's
    ``connections.max.reauth.ms``: a session ends that long after authentication (sooner when an
    OAUTHBEARER token expires first) and the client must re-authenticate on the same connection
    before then, or the broker closes the connection at its next request. None: sessions last.
    """

    mechanisms: tuple[str, ...] = ("SCRAM-SHA-512",)
    users: Users = field(default_factory=Users)
    max_reauth_ms: int | None = None
    principal_claim: str = "sub"

    def __post_init__(self) -> None:
        if not self.mechanisms:
            raise ConfigError("sasl_mechanisms", "enable at least one mechanism")
        for mechanism in self.mechanisms:
            if mechanism not in SASL_MECHANISMS:
                raise ConfigError(
                    "sasl_mechanisms", f"{mechanism!r} is not one of {', '.join(SASL_MECHANISMS)}"
                )
        if self.max_reauth_ms is not None and self.max_reauth_ms <= 0:
            raise ConfigError("max_reauth_ms", "must be positive (or None: sessions never expire)")
