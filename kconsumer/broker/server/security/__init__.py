"""The reference cluster's security: SASL authentication of a connection (PLAIN, SCRAM-SHA-256/512,
OAUTHBEARER with unsecured JWTs), the users it knows, and simple ACLs. TLS itself is the listener's
(`..config.TlsListener`)."""

from .acls import Acl, Authorizer
from .credentials import Users
from .settings import SASL_MECHANISMS, SaslSettings

__all__ = ["SASL_MECHANISMS", "Acl", "Authorizer", "SaslSettings", "Users"]
