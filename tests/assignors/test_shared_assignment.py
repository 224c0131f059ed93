"""The shared assignment layer's small pieces: version ranges, announcements and the selection
of an assignor and a computing member, "module:Class" loading, and the one assignment validator."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from kconsumer.assignment.announcements import (
    AnnouncedAssignor,
    AssignorOutput,
    computing_members,
    ranked_candidates,
)
from kconsumer.assignment.loading import (
    NotATargetError,
    TargetCreateError,
    TargetImportError,
    load_object,
)
from kconsumer.assignment.validation import (
    EVERY_PARTITION_ASSIGNED,
    EXACTLY_ONCE,
    GROUP_MEMBERS_ONLY,
    ONE_ENTRY_PER_MEMBER,
    GroupSnapshot,
    InvalidAssignmentError,
    validate_assignment,
)
from kconsumer.assignment.versions import VersionRange
from kconsumer.protocol.uuid import Uuid

T1, T2 = Uuid.from_int(1), Uuid.from_int(2)

# -- versions ------------------------------------------------------------------------------------------


def test_version_ranges() -> None:
    assert VersionRange(-1, 0).covers(-1) and not VersionRange(0, 2).covers(3)
    ranges = [VersionRange(0, 3), VersionRange(2, 5), VersionRange(1, 2)]
    assert VersionRange.common(ranges) == VersionRange(2, 2)
    assert VersionRange.common([VersionRange(0, 1), VersionRange(2, 3)]) is None
    assert VersionRange.common([]) is None
    assert str(VersionRange(0, 3)) == "[0, 3]"
    assert VersionRange(-1, 0).problem() is None and VersionRange(0, 32767).problem() is None
    for low, high in [(-2, 0), (1, 0), (-1, -1), (0, 32768)]:
        problem = VersionRange(low, high).problem()
        assert problem is not None and f"got {low}..{high}" in problem


# -- announcements -------------------------------------------------------------------------------------


def test_an_announced_assignor_checks_its_values() -> None:
    a = AnnouncedAssignor("sticky", 0, 2, 1, b"m", 3)
    assert a.versions == VersionRange(0, 2) and a.covers(2) and not a.covers(3)
    with pytest.raises(ValueError, match="needs a name"):
        AnnouncedAssignor("", 0, 0, 0)
    with pytest.raises(ValueError, match="minimum_version <= maximum_version"):
        AnnouncedAssignor("a", 2, 1, 1)
    with pytest.raises(ValueError, match=r"metadata version 3 is outside \[0, 2\]"):
        AnnouncedAssignor("a", 0, 2, 3)
    with pytest.raises(ValueError, match="int8"):
        AnnouncedAssignor("a", 0, 0, 0, reason=200)
    assert AssignorOutput() == AssignorOutput(0, 0, b"")


def test_candidates_are_the_names_everyone_lists_with_overlapping_ranges_best_ranked_first() -> None:
    a = [AnnouncedAssignor("x", 0, 1, 0), AnnouncedAssignor("y", 0, 0, 0), AnnouncedAssignor("z", 0, 0, 0)]
    b = [AnnouncedAssignor("y", 0, 0, 0), AnnouncedAssignor("x", 0, 1, 1), AnnouncedAssignor("w", 0, 0, 0)]
    assert ranked_candidates([a, b]) == ["x", "y"]  # both rank 1: by name; z and w are not common
    c = [AnnouncedAssignor("x", 2, 3, 2), AnnouncedAssignor("y", 0, 0, 0)]
    assert ranked_candidates([a, b, c]) == ["y"]  # x: [0, 1] and [2, 3] do not overlap
    assert ranked_candidates([]) == [] and ranked_candidates([a, []]) == []


def test_computing_members_cover_every_members_metadata_version() -> None:
    announced = {
        "m3": [AnnouncedAssignor("x", 0, 2, 2)],
        "m1": [AnnouncedAssignor("x", 0, 1, 0)],
        "m2": [AnnouncedAssignor("y", 0, 0, 0), AnnouncedAssignor("x", 0, 3, 1)],
    }
    assert computing_members(announced, "x") == ["m2", "m3"]  # m1 cannot read version 2
    assert computing_members(announced, "y") == []  # m1 and m3 lack it
    assert computing_members({}, "x") == []


# -- loading ---------------------------------------------------------------------------------------------


class NeedsArguments:
    def __init__(self, value: int) -> None:
        self.value = value


class Holder:
    instance = OrderedDict(a=1)


def test_load_object() -> None:
    assert load_object("collections:OrderedDict") == OrderedDict()
    assert load_object(f"{__name__}:Holder.instance") is Holder.instance  # an instance, as it is
    for text in ("collections", "collections:", ":OrderedDict"):
        with pytest.raises(NotATargetError, match="'module:Class'"):
            load_object(text)
    with pytest.raises(TargetImportError) as missing_module:
        load_object("no_such_module_xyz:Thing")
    assert isinstance(missing_module.value.__cause__, ImportError)
    with pytest.raises(TargetImportError, match="Missing"):
        load_object(f"{__name__}:Missing")
    with pytest.raises(TargetCreateError, match="value") as create:
        load_object(f"{__name__}:NeedsArguments")
    assert isinstance(create.value.__cause__, TypeError)


# -- the validator ---------------------------------------------------------------------------------------

GROUP = GroupSnapshot(5, {"a": frozenset({T1, T2}), "b": frozenset({T1})}, {T1: 2, T2: 1})


def rule_of(members: list[tuple[str, list[tuple[Uuid, list[int]]]]], group: GroupSnapshot = GROUP) -> str:
    with pytest.raises(InvalidAssignmentError) as error:
        validate_assignment(group, members)
    assert str(error.value) == f"Invalid assignment (rule: {error.value.rule}): {error.value.detail}"
    return error.value.rule


def test_a_valid_assignment_by_member() -> None:
    result = validate_assignment(GROUP, [("a", [(T1, [0]), (T2, [0]), (T1, [1])]), ("b", [])])
    assert result == {"a": {T1: frozenset({0, 1}), T2: frozenset({0})}, "b": {}}
    assert validate_assignment(GROUP, [("a", [(T1, [0, 1]), (T2, [0])])]) == {
        "a": {T1: frozenset({0, 1}), T2: frozenset({0})}
    }  # members left out get nothing


def test_the_rules() -> None:
    assert rule_of([("a", [(T1, [0, 0]), (T2, [0])]), ("b", [(T1, [1])])]) == EXACTLY_ONCE
    assert rule_of([("a", [(T1, [0, 1])]), ("a", [(T2, [0])])]) == ONE_ENTRY_PER_MEMBER
    assert rule_of([("a", [(T1, [0, 1])])]) == EVERY_PARTITION_ASSIGNED
    assert rule_of([("z", [])]) == GROUP_MEMBERS_ONLY


def test_an_unknown_member_is_named_with_the_epoch_when_known() -> None:
    with pytest.raises(InvalidAssignmentError, match=r"member z was not a member at epoch 5$"):
        validate_assignment(GROUP, [("z", [])])
    unknown_epoch = GroupSnapshot(None, GROUP.subscriptions, GROUP.partitions)
    with pytest.raises(InvalidAssignmentError, match=r"member z was not a member$"):
        validate_assignment(unknown_epoch, [("z", [])])
