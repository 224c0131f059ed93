"""Kafka Connect's classic group protocol as kconsumer writes and reads it
(`kconsumer.assignment.connect_protocol`): worker states and assignments, each version, and a
clear error for bytes that do not decode. The bytes real Connect workers write are read in
tests/connect (a Kafka Connect 4.4 cluster on the reference cluster)."""

from __future__ import annotations

import struct

import pytest

from kconsumer.assignment.connect_protocol import (
    ConnectAssignment,
    ConnectWorkerState,
    decode_assignment,
    decode_worker_state,
    encode_assignment,
    encode_worker_state,
    work_offset,
)
from kconsumer.assignment.work_units import WorkUnits
from kconsumer.errors import ProtocolError

UNITS = WorkUnits.of(["c"], [("c", 0), ("c", 2), ("d", 1)])


@pytest.mark.parametrize("version", [1, 2])
def test_an_assignment_round_trips(version: int) -> None:
    assignment = ConnectAssignment(
        assigned=UNITS,
        revoked=WorkUnits.of(["e"], [("e", 0)]),
        leader="m1",
        leader_url="http://w1:8083/",
        config_offset=42,
        delay_ms=5_000,
    )
    data = encode_assignment(assignment, version)
    assert struct.unpack(">h", data[:2]) == (version,)
    assert decode_assignment(data) == assignment


def test_the_connector_itself_is_task_minus_one() -> None:
    data = encode_assignment(ConnectAssignment(assigned=WorkUnits.of(["c"], [("c", 0)])), 1)
    # version, error, leader "", leader url "", config offset, one entry: "c" with tasks [-1, 0]
    expected = struct.pack(">hhhhqi", 1, 0, 0, 0, -1, 1) + struct.pack(">h", 1) + b"c"
    expected += struct.pack(">iii", 2, -1, 0) + struct.pack(">i", 0) + struct.pack(">i", 0)
    assert data == expected


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_worker_state_round_trips(version: int) -> None:
    state = ConnectWorkerState(url="http://w1:8083/", config_offset=7, runs=UNITS)
    decoded = decode_worker_state(encode_worker_state(state, version))
    # Version 0 (eager) carries no allocation: what a worker runs is not announced.
    assert decoded == (state if version else ConnectWorkerState("http://w1:8083/", 7))


def test_a_worker_that_runs_nothing_sends_a_null_allocation() -> None:
    data = encode_worker_state(ConnectWorkerState("u", 3), 2)
    assert data.endswith(struct.pack(">i", -1))
    assert decode_worker_state(data).runs == WorkUnits()


def test_a_newer_version_is_read_by_the_fields_it_shares() -> None:
    data = encode_assignment(ConnectAssignment(assigned=UNITS, delay_ms=9), 1)
    newer = struct.pack(">h", 5) + data[2:] + b"fields of a later version"
    assert decode_assignment(newer).assigned == UNITS


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00", b"\x00\x01\x00\x00\x00\x05ab", b"\xff\xff" + b"\x00" * 20],
    ids=["empty", "half a version", "short string", "negative version"],
)
def test_bytes_that_do_not_decode_raise_a_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_assignment(data)
    with pytest.raises(ProtocolError):
        decode_worker_state(data)


def test_the_work_offset_names_the_declared_work() -> None:
    assert work_offset(UNITS) == work_offset(WorkUnits.of(["c"], [("c", 2), ("c", 0), ("d", 1)]))
    assert work_offset(UNITS) != work_offset(UNITS | WorkUnits.of(["x"]))
    assert 0 <= work_offset(UNITS) < 2**63
