"""Test and tooling helpers: the blocking wire client (`wire`), and the in-process reference
cluster and simulation harness."""

from __future__ import annotations

from ..broker.server.security import Acl
from .cluster import GroupDescription, MemberDescription, ReferenceCluster

__all__ = ["Acl", "GroupDescription", "MemberDescription", "ReferenceCluster"]
