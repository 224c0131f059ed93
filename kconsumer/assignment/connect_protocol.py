"""Kafka Connect's classic group protocol: the bytes Connect workers put in JoinGroup metadata
(a worker's state) and SyncGroup assignments (docs/worker-protocol.md §9).

Connect names three protocols in its JoinGroup, most preferred first: ``sessioned`` (version 2),
``compatible`` (version 1, incremental cooperative) and ``default`` (version 0, eager). Every
blob starts with its int16 version; versions 1 and 2 have the same fields.

* A worker's state: its REST url, the config-topic offset it has read up to and (version 1+)
  its *allocation*, what it runs now, as an assignment blob (null when it runs nothing).
* An assignment: an error, the leader's member id and url, the config offset the leader
  assigned at, the connectors and tasks given, and (version 1+) those revoked and a delay after
  which the worker should rejoin. Each list entry is a connector name and task numbers, task
  -1 standing for the connector itself. Under the incremental protocols an assignment carries
  only what is *new*: the worker adds it to what it runs, less what is revoked.

kconsumer's classic worker writes versions 1 and 2; the reference coordinator reads all three
(a worker group converted from a classic group learns what each worker runs from them).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TypeVar

from ..errors import ProtocolError
from ..protocol.schema import Struct, field
from ..protocol.types import BYTES, INT16, INT32, INT64, STRING, Array, DecodeFailure, Reader
from .work_units import NO_UNITS, WorkUnits

#: The protocol type of Connect's classic groups.
CONNECT_PROTOCOL_TYPE = "connect"
#: Protocol names and the version each writes.
SESSIONED, COMPATIBLE, EAGER = "sessioned", "compatible", "default"
PROTOCOL_VERSIONS = {SESSIONED: 2, COMPATIBLE: 1, EAGER: 0}
#: The task number that stands for the connector itself.
CONNECTOR_TASK = -1
#: The highest version whose fields this module knows (2 only adds a meaning to 1's fields).
_FIELDS_VERSION = 1

S = TypeVar("S", bound=Struct)


class _ConnectorAssignment(Struct):
    connector: str = field(STRING, "0+")
    tasks: list[int] = field(Array(INT32), "0+")


class _WorkerState(Struct):
    url: str = field(STRING, "0+")
    config_offset: int = field(INT64, "0+")
    allocation: bytes | None = field(BYTES, "1+", nullable="1+", default=None)


class _Assignment(Struct):
    error: int = field(INT16, "0+")
    leader: str = field(STRING, "0+")
    leader_url: str = field(STRING, "0+")
    config_offset: int = field(INT64, "0+")
    assignment: list[_ConnectorAssignment] | None = field(Array(_ConnectorAssignment), "0+", nullable="1+")
    revoked: list[_ConnectorAssignment] | None = field(
        Array(_ConnectorAssignment), "1+", nullable="1+", default=None
    )
    delay: int = field(INT32, "1+", default=0)


@dataclass(frozen=True)
class ConnectAssignment:
    """A SyncGroup assignment of Connect's protocol."""

    assigned: WorkUnits = NO_UNITS
    revoked: WorkUnits = NO_UNITS
    leader: str = ""
    leader_url: str = ""
    config_offset: int = -1
    delay_ms: int = 0
    error: int = 0


@dataclass(frozen=True)
class ConnectWorkerState:
    """A worker's JoinGroup metadata in Connect's protocol (`runs`: its allocation)."""

    url: str = ""
    config_offset: int = -1
    runs: WorkUnits = NO_UNITS


def _entries(units: WorkUnits) -> list[_ConnectorAssignment]:
    tasks: dict[str, list[int]] = {name: [CONNECTOR_TASK] for name in units.connectors}
    for connector, task in units.tasks:
        tasks.setdefault(connector, []).append(task)
    return [_ConnectorAssignment(connector=c, tasks=sorted(t)) for c, t in sorted(tasks.items())]


def _units(entries: list[_ConnectorAssignment] | None) -> WorkUnits:
    entries = entries or []
    connectors = [e.connector for e in entries if CONNECTOR_TASK in e.tasks]
    tasks = [(e.connector, t) for e in entries for t in e.tasks if t != CONNECTOR_TASK]
    return WorkUnits.of(connectors, tasks)


def _encode(value: Struct, version: int) -> bytes:
    if version not in PROTOCOL_VERSIONS.values():
        raise ValueError(f"Connect protocol version {version} (0-2)")
    return INT16.encoder(False)(version) + type(value)._encode_at(value, min(version, _FIELDS_VERSION), False)


def _decode(kind: type[S], data: bytes) -> tuple[S, int]:
    reader = Reader(data)
    try:
        version = INT16.decoder(False)(reader)
        if version < 0:
            raise DecodeFailure(f"negative version {version}", ["Version"])
        return kind._decode_at(reader, min(version, _FIELDS_VERSION), False), version
    except DecodeFailure as exc:
        raise ProtocolError(kind.__name__, None, ".".join(exc.path) or None, exc.reason) from None


def encode_assignment(assignment: ConnectAssignment, version: int = 1) -> bytes:
    """The SyncGroup bytes of `assignment` at `version`."""
    return _encode(
        _Assignment(
            error=assignment.error,
            leader=assignment.leader,
            leader_url=assignment.leader_url,
            config_offset=assignment.config_offset,
            assignment=_entries(assignment.assigned),
            revoked=_entries(assignment.revoked),
            delay=assignment.delay_ms,
        ),
        version,
    )


def decode_assignment(data: bytes) -> ConnectAssignment:
    """A SyncGroup assignment (raises ProtocolError for bytes that do not decode)."""
    decoded = _decode(_Assignment, data)[0]
    return ConnectAssignment(
        assigned=_units(decoded.assignment),
        revoked=_units(decoded.revoked),
        leader=decoded.leader,
        leader_url=decoded.leader_url,
        config_offset=decoded.config_offset,
        delay_ms=decoded.delay,
        error=decoded.error,
    )


def encode_worker_state(state: ConnectWorkerState, version: int = 1) -> bytes:
    """JoinGroup metadata at `version` (version 0 carries no allocation)."""
    allocation = None
    if version >= 1 and state.runs:
        allocation = encode_assignment(
            ConnectAssignment(assigned=state.runs, config_offset=state.config_offset), version
        )
    return _encode(
        _WorkerState(url=state.url, config_offset=state.config_offset, allocation=allocation), version
    )


def decode_worker_state(data: bytes) -> ConnectWorkerState:
    """JoinGroup metadata (raises ProtocolError for bytes that do not decode)."""
    decoded = _decode(_WorkerState, data)[0]
    runs = NO_UNITS if decoded.allocation is None else decode_assignment(decoded.allocation).assigned
    return ConnectWorkerState(url=decoded.url, config_offset=decoded.config_offset, runs=runs)


def work_offset(work: WorkUnits) -> int:
    """A config offset naming a declared work (a non-negative int64): kconsumer's classic
    workers have no config topic, so they announce and compare this instead."""
    digest = hashlib.sha256("\n".join(work).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
