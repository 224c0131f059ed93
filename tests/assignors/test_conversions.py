"""The pure conversions of client-side assignment (`kconsumer.assignment.conversions`): a
PrepareAssignment response to an `AssignmentSpec` by topic name, a `GroupAssignment` back to the
InstallAssignment members by topic id, the previous target, and topic names in error messages."""

from __future__ import annotations

import pytest
from prepared_messages import GONE, OLD, T, prepare_response, prepared_member

from kconsumer import AssignorFailedError, GroupAssignment, MemberAssignment
from kconsumer.assignment.conversions import (
    build_spec,
    install_members,
    name_topic_ids,
    previous_target,
    unknown_topic_ids,
)
from kconsumer.protocol.messages.consumer_group import TopicPartitions


def test_build_spec_names_topics_and_keeps_member_state() -> None:
    response = prepare_response(
        prepared_member("a", {T: [3, 1], OLD: [0]}, version=1, data=b"A", reason=2),
        prepared_member("b", {GONE: [5]}),
    )
    assert unknown_topic_ids(response, {OLD: "old"}) == [GONE]
    spec = build_spec("g", response, {OLD: "old"}).spec
    assert (spec.group_id, spec.group_epoch, spec.assignor_name) == ("g", 7, "scripted")
    assert spec.topics == {"t": spec.topics["t"]} and spec.topics["t"].num_partitions == 4
    a, b = spec.members["a"], spec.members["b"]
    assert (a.subscribed_topics, a.rack_id, a.reason, a.member_epoch) == (frozenset({"t"}), "r1", 2, 4)
    assert (a.metadata.version, a.metadata.data) == (1, b"A")
    assert a.target_partitions == {"old": (0,), "t": (1, 3)}
    assert b.target_partitions == {}  # a topic no one can name any more is left out


def test_install_members_converts_back_to_ids() -> None:
    prepared = build_spec("g", prepare_response(prepared_member("a", version=2), prepared_member("b")), {})
    result = GroupAssignment(
        error=3,
        members={
            "b": MemberAssignment({"t": [1, 0]}, b"B", version=1),
            "a": MemberAssignment({"t": [2, 3]}, b"A"),
            "stranger": MemberAssignment(),
        },
    )
    error, members = install_members(prepared, result)
    assert error == 3
    assert [(m.member_id, m.metadata_version, m.metadata_bytes) for m in members] == [
        ("a", 2, b"A"),  # its own metadata version by default
        ("b", 1, b"B"),
        ("stranger", 0, b""),  # the coordinator rejects it, naming the rule
    ]
    assert [[(tp.topic_id, tp.partitions) for tp in m.topic_partitions] for m in members] == [
        [(T, [2, 3])],
        [(T, [0, 1])],
        [],
    ]


def test_install_members_rejects_what_cannot_be_sent() -> None:
    prepared = build_spec("g", prepare_response(prepared_member("a")), {})
    with pytest.raises(AssignorFailedError, match=r"only subscribed topics.*'elsewhere'"):
        install_members(prepared, GroupAssignment(members={"a": MemberAssignment({"elsewhere": [0]})}))
    with pytest.raises(AssignorFailedError, match="must return a GroupAssignment, got dict"):
        install_members(prepared, {"a": {"t": [0]}})


def test_previous_target_only_when_still_valid() -> None:
    valid = prepare_response(
        prepared_member("a", {T: [0, 1]}), prepared_member("b", {T: [2, 3]}), prepared_member("c")
    )
    members = previous_target(build_spec("g", valid, {}))
    assert members is not None and [(m.member_id, m.topic_partitions) for m in members] == [
        ("a", [TopicPartitions(topic_id=T, partitions=[0, 1])]),
        ("b", [TopicPartitions(topic_id=T, partitions=[2, 3])]),
        ("c", []),
    ]
    member_left = prepare_response(prepared_member("a", {T: [0, 1]}))
    assert previous_target(build_spec("g", member_left, {})) is None
    grown = prepare_response(prepared_member("a", {T: [0, 1, 2, 3]}), partitions=6)
    assert previous_target(build_spec("g", grown, {})) is None


def test_name_topic_ids() -> None:
    assert name_topic_ids(f"{T}-0 is assigned twice", {T: "t"}) == f"{T} ('t')-0 is assigned twice"
    assert name_topic_ids(None, {T: "t"}) is None
