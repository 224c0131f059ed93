"""The computation the coordinator asked one worker of a worker group for (soft state, kept
beside the group's durable state: after a failover the next heartbeat asks again)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WorkerRun:
    """An assignment the coordinator asked one worker to compute (soft state: after a failover
    the next heartbeat asks again)."""

    assignor: str
    chosen: str
    requested_epoch: int
    deadline_ms: int
    #: Workers already asked for this epoch (an expired deadline asks another one first).
    tried: set[str] = field(default_factory=set)
    #: Whether the chosen worker fetched the group (its heartbeats stop asking it to compute).
    prepared: bool = False
    #: Its member epoch when it prepared: its install may carry it (its heartbeats go on while
    #: it computes and may move it to a newer epoch meanwhile).
    prepared_epoch: int | None = None
    #: The instance id of each static worker the prepare listed: an install naming one that was
    #: replaced since (same instance id, new member id) gives its part to the replacement.
    instances: dict[str, str] = field(default_factory=dict)
