"""One chokepoint for the member's state machines: a table of allowed predecessors per state,
checked on every change. The member's state (`state.MEMBER_TRANSITIONS`) and the classic
protocol's conversation phase (`classic_exchange.PHASE_TRANSITIONS`) both change only through
`TransitionTable.check`; a change the table does not list raises `IllegalTransitionError`."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Generic, TypeVar

from ...errors import KConsumerError

E = TypeVar("E", bound=enum.Enum)


class IllegalTransitionError(KConsumerError, RuntimeError):
    """A state change a table does not allow: a bug in the member core or in its driver."""

    def __init__(self, machine: str, current: enum.Enum, target: enum.Enum, allowed: str) -> None:
        self.current = current
        self.target = target
        super().__init__(
            f"illegal {machine} transition {current.value} -> {target.value} "
            f"({target.value} may only follow: {allowed})"
        )


class TransitionTable(Generic[E]):
    """The allowed predecessors of every state of one machine (staying is always allowed)."""

    def __init__(self, machine: str, predecessors: Mapping[E, frozenset[E]]) -> None:
        self.machine = machine
        self.predecessors = predecessors

    def allows(self, current: E, target: E) -> bool:
        """True when the machine may go from `current` to `target` (same state included)."""
        return current is target or current in self.predecessors[target]

    def check(self, current: E, target: E) -> E:
        """`target`, if the table allows ``current -> target``; else IllegalTransitionError."""
        if not self.allows(current, target):
            allowed = ", ".join(sorted(str(s.value) for s in self.predecessors[target])) or "none"
            raise IllegalTransitionError(self.machine, current, target, allowed)
        return target
