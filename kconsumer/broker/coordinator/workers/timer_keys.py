"""The keys of a worker group's timers: a worker's session and revocation deadlines, and the
chosen worker's assignment deadline."""

from __future__ import annotations


def session_timer(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("worker-session", group_id, member_id)


def revocation_timer(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A worker told to stop units must confirm within its rebalance timeout."""
    return ("worker-rebalance", group_id, member_id)


def assignment_timer(group_id: str) -> tuple[str, str]:
    """The chosen worker must install an assignment within its rebalance timeout."""
    return ("worker-assignment", group_id)
