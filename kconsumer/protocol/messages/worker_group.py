"""kconsumer's worker-group APIs (docs/worker-protocol.md): the new group protocol for groups
whose unit of work is a connector or a task, not a partition. Served only by the reference
coordinator; every one is flexible from v0 (request header v2, response header v1).

ConnectGroupHeartbeat (32002) is a worker's membership and liveness; ConnectGroupPrepareAssignment
(32003) gives the worker chosen to assign the group's state; ConnectGroupInstallAssignment (32004)
installs what its assignor computed.
"""

from __future__ import annotations

from ...errors import ProtocolError
from ..schema import Message, Struct, field
from ..types import BYTES, INT8, INT16, INT32, STRING, Array, DecodeFailure, Reader

#: Advertised in ApiVersions by the reference coordinator only.
WORKER_HEARTBEAT_API_KEY = 32002
WORKER_PREPARE_ASSIGNMENT_API_KEY = 32003
WORKER_INSTALL_ASSIGNMENT_API_KEY = 32004


class ConnectorTaskId(Struct):
    """One task of a connector."""

    connector: str = field(STRING, "0+")
    task: int = field(INT32, "0+")


class ConnectorsAndTasks(Struct):
    """A set of units of work: connectors and tasks."""

    connectors: list[str] = field(Array(STRING), "0+")
    tasks: list[ConnectorTaskId] = field(Array(ConnectorTaskId), "0+")


def encode_units(units: ConnectorsAndTasks) -> bytes:
    """Units as DescribeGroups carries a worker's assignment: the struct, flexible v0 encoding."""
    return ConnectorsAndTasks._encode_at(units, 0, True)


def decode_units(data: bytes) -> ConnectorsAndTasks:
    """The inverse of `encode_units` (ProtocolError for bytes that do not decode)."""
    try:
        return ConnectorsAndTasks._decode_at(Reader(data), 0, True)
    except DecodeFailure as exc:
        raise ProtocolError("ConnectorsAndTasks", 0, ".".join(exc.path) or None, exc.reason) from None


class WorkerAssignor(Struct):
    """One client-side assignor a worker supports, with its metadata for it."""

    name: str = field(STRING, "0+")
    minimum_version: int = field(INT16, "0+")
    maximum_version: int = field(INT16, "0+")
    reason: int = field(INT8, "0+")
    metadata_version: int = field(INT16, "0+")
    metadata_bytes: bytes = field(BYTES, "0+")


class ConnectGroupHeartbeatRequest(Message, api_key=32002, valid="0", flexible="0+"):
    group_id: str = field(STRING, "0+")
    member_id: str = field(STRING, "0+")
    member_epoch: int = field(INT32, "0+")
    instance_id: str | None = field(STRING, "0+", nullable="0+", default=None)
    rebalance_timeout_ms: int = field(INT32, "0+", default=-1)
    server_assignor: str | None = field(STRING, "0+", nullable="0+", default=None)
    #: null = unchanged since the last heartbeat.
    client_assignors: list[WorkerAssignor] | None = field(
        Array(WorkerAssignor), "0+", nullable="0+", default=None
    )
    #: What the worker runs now; null = unchanged since the last heartbeat.
    owned: ConnectorsAndTasks | None = field(ConnectorsAndTasks, "0+", nullable="0+", default=None)


class WorkerAssignment(Struct):
    """The units a worker may run now, and what the assignor wrote for it."""

    error: int = field(INT8, "0+")
    units: ConnectorsAndTasks = field(ConnectorsAndTasks, "0+")
    metadata_version: int = field(INT16, "0+")
    metadata_bytes: bytes = field(BYTES, "0+")


class ConnectGroupHeartbeatResponse(Message, api_key=32002, valid="0", flexible="0+"):
    throttle_time_ms: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "0+", nullable="0+", default=None)
    member_epoch: int = field(INT32, "0+")
    heartbeat_interval_ms: int = field(INT32, "0+")
    assignment: WorkerAssignment | None = field(WorkerAssignment, "0+", nullable="0+", default=None)


class ConnectGroupPrepareAssignmentRequest(Message, api_key=32003, valid="0", flexible="0+"):
    group_id: str = field(STRING, "0+")
    member_id: str = field(STRING, "0+")
    member_epoch: int = field(INT32, "0+")


class PreparedWorker(Struct):
    """A worker as the assignor sees it."""

    member_id: str = field(STRING, "0+")
    member_epoch: int = field(INT32, "0+")
    instance_id: str | None = field(STRING, "0+", nullable="0+", default=None)
    reason: int = field(INT8, "0+")
    metadata_version: int = field(INT16, "0+")
    metadata_bytes: bytes = field(BYTES, "0+")
    #: What it runs now (its current assignment).
    owned: ConnectorsAndTasks = field(ConnectorsAndTasks, "0+")
    #: What the installed target gives it.
    target: ConnectorsAndTasks = field(ConnectorsAndTasks, "0+")


class ConnectGroupPrepareAssignmentResponse(Message, api_key=32003, valid="0", flexible="0+"):
    throttle_time_ms: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "0+", nullable="0+", default=None)
    group_epoch: int = field(INT32, "0+")
    assignor_name: str = field(STRING, "0+")
    members: list[PreparedWorker] = field(Array(PreparedWorker), "0+")
    #: What the previous computation asked to be kept (opaque to the coordinator).
    assignor_state_version: int = field(INT16, "0+")
    assignor_state: bytes = field(BYTES, "0+")


class InstalledWorker(Struct):
    member_id: str = field(STRING, "0+")
    units: ConnectorsAndTasks = field(ConnectorsAndTasks, "0+")
    metadata_version: int = field(INT16, "0+")
    metadata_bytes: bytes = field(BYTES, "0+")


class ConnectGroupInstallAssignmentRequest(Message, api_key=32004, valid="0", flexible="0+"):
    group_id: str = field(STRING, "0+")
    member_id: str = field(STRING, "0+")
    member_epoch: int = field(INT32, "0+")
    group_epoch: int = field(INT32, "0+")
    error: int = field(INT8, "0+")
    members: list[InstalledWorker] = field(Array(InstalledWorker), "0+")
    assignor_state_version: int = field(INT16, "0+")
    assignor_state: bytes = field(BYTES, "0+")


class ConnectGroupInstallAssignmentResponse(Message, api_key=32004, valid="0", flexible="0+"):
    throttle_time_ms: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "0+", nullable="0+", default=None)
