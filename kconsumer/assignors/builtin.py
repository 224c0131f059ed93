"""The built-in client-side assignors (see the package docstring)."""

from __future__ import annotations

from ..broker.coordinator.assignors import RangeAssignor as _ServerRange
from ..broker.coordinator.assignors import UniformAssignor as _ServerUniform
from ._adapter import ServerAlgorithmAssignor


class RangeAssignor(ServerAlgorithmAssignor):
    """``range``: for each topic, its subscribers (static members first, by instance id, then
    by member id) take contiguous ranges of partitions, so topics with the same partition count
    and subscribers are co-partitioned. Not sticky.

    >>> from kconsumer.assignor import *
    >>> member = lambda m: AssignmentMemberSpec(m, None, None, frozenset({"t"}), 0, MemberMetadata(0))
    >>> spec = AssignmentSpec({m: member(m) for m in "ab"}, {"t": AssignmentTopicMetadata("t", 5)})
    >>> {m: a.partitions for m, a in RangeAssignor().assign(spec).members.items()}
    {'a': {'t': (0, 1, 2)}, 'b': {'t': (3, 4)}}
    """

    name = "range"

    def __init__(self) -> None:
        super().__init__(_ServerRange())


class UniformAssignor(ServerAlgorithmAssignor):
    """``uniform``: balanced (member partition counts differ by at most one when subscriptions
    agree), then sticky: members keep as much of their current target as balance allows."""

    name = "uniform"

    def __init__(self) -> None:
        super().__init__(_ServerUniform())
