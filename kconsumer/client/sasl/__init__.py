"""SASL for the connections kconsumer opens itself: the settings (librdkafka's keys and meanings),
the client side of each mechanism (sans-IO), and the credentials `set_sasl_credentials` replaces."""

from .mechanisms import AuthenticationFailedError, ClientMechanism, OAuthToken, client_mechanism
from .settings import SaslCredentials, SaslSettings, sasl_settings

__all__ = [
    "AuthenticationFailedError",
    "ClientMechanism",
    "OAuthToken",
    "SaslCredentials",
    "SaslSettings",
    "client_mechanism",
    "sasl_settings",
]
