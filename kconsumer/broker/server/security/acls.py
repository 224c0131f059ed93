"""Simple ACLs: allow rules per principal, as Kafka's StandardAuthorizer applies them.

A rule allows `principal` (``User:alice``, or ``User:*`` for everyone) an `operation` on resources
of one type (``topic``, ``group`` or ``cluster``) whose name is `name` (``*``: any), or starts with
it when `prefixed`. As in Kafka, Read, Write, Delete and Alter imply Describe, and All allows every
operation. There are no deny rules: what no rule allows is denied. With no `Authorizer` at all
(the default) everything is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ....errors import ConfigError

OPERATIONS = ("Read", "Write", "Create", "Delete", "Alter", "Describe", "All")
RESOURCE_TYPES = ("topic", "group", "cluster")
#: Operations whose grant also allows Describe (Kafka's implied operations).
_IMPLIES_DESCRIBE = frozenset({"Read", "Write", "Delete", "Alter"})


@dataclass(frozen=True)
class Acl:
    """One allow rule (see the module docstring)."""

    principal: str
    operation: str
    resource_type: str
    name: str = "*"
    prefixed: bool = False

    def __post_init__(self) -> None:
        if ":" not in self.principal:
            raise ConfigError("acls", f"principal {self.principal!r} must look like 'User:alice'")
        if self.operation not in OPERATIONS:
            raise ConfigError("acls", f"operation {self.operation!r} is not one of {', '.join(OPERATIONS)}")
        if self.resource_type not in RESOURCE_TYPES:
            raise ConfigError(
                "acls", f"resource type {self.resource_type!r} is not one of {', '.join(RESOURCE_TYPES)}"
            )

    def allows(self, principal: str, operation: str, resource_type: str, name: str) -> bool:
        """Whether this rule allows the access."""
        if self.resource_type != resource_type:
            return False
        if self.principal != principal and self.principal != "User:*":
            return False
        if not (
            self.operation in ("All", operation)
            or (operation == "Describe" and self.operation in _IMPLIES_DESCRIBE)
        ):
            return False
        if self.name == "*":
            return True
        return name.startswith(self.name) if self.prefixed else name == self.name


class Authorizer:
    """Answers "may this principal do that": `allowed(principal, "Read", "group", "g1")`.

    `super_users` (principals such as ``User:admin``) may do everything, as Kafka's
    ``super.users``. A connection with no authenticated principal is ``User:ANONYMOUS``."""

    def __init__(self, acls: Iterable[Acl], super_users: Iterable[str] = ()) -> None:
        self.acls = tuple(acls)
        self.super_users = frozenset(super_users)

    def allowed(self, principal: str, operation: str, resource_type: str, name: str) -> bool:
        """Whether some rule allows the access."""
        if principal in self.super_users:
            return True
        return any(acl.allows(principal, operation, resource_type, name) for acl in self.acls)
