"""The stream's offset format, batch ranges and admission control (no Spark needed)."""

from __future__ import annotations

import json

import pytest

from kconsumer.spark.offsets import OffsetRange, SourceOffset, admit, batch_ranges


def test_offsets_round_trip_through_json_deterministically() -> None:
    offset = SourceOffset({("b", 1): 7, ("a", 0): 3, ("a", 10): 5}, {("b", 1): 2})
    text = json.dumps(offset.to_json())
    assert text == json.dumps(SourceOffset({("a", 10): 5, ("b", 1): 7, ("a", 0): 3}, {("b", 1): 2}).to_json())
    assert json.loads(text) == {"offsets": {"a": {"0": 3, "10": 5}, "b": {"1": 7}}, "starts": {"b": {"1": 2}}}
    assert SourceOffset.from_json(json.loads(text)) == offset
    assert SourceOffset.from_json({}) == SourceOffset() == SourceOffset.from_json(None)


def test_malformed_offsets_are_rejected() -> None:
    with pytest.raises(ValueError, match="offsets"):
        SourceOffset.from_json({"offsets": [1, 2]})
    with pytest.raises(ValueError):
        SourceOffset.from_json({"offsets": {"t": {"x": 1}}})


def test_ranges_continue_from_the_previous_batch_or_start_where_assigned() -> None:
    previous = SourceOffset({("t", 0): 10, ("t", 1): 20, ("t", 2): 5})
    # t-2 was revoked (absent), t-3 newly assigned at 40, t-1 revoked and assigned again at 30.
    end = SourceOffset({("t", 0): 15, ("t", 1): 31, ("t", 3): 45}, starts={("t", 3): 40, ("t", 1): 30})
    assert batch_ranges(previous, end) == [
        OffsetRange("t", 0, 10, 15),
        OffsetRange("t", 1, 30, 31),
        OffsetRange("t", 3, 40, 45),
    ]
    # Empty ranges are left out.
    assert batch_ranges(previous, SourceOffset({("t", 0): 10})) == []


def test_a_partition_without_a_start_is_a_corrupt_offset() -> None:
    with pytest.raises(ValueError, match="no start for t-9"):
        batch_ranges(SourceOffset(), SourceOffset({("t", 9): 3}))


def test_admit_everything_without_a_limit() -> None:
    starts = {("t", 0): 0, ("t", 1): 10}
    assert admit(starts, {("t", 0): 5, ("t", 1): 30}, None) == {("t", 0): 5, ("t", 1): 30}
    # Never below the start (a log behind the start: nothing to read).
    assert admit(starts, {("t", 0): 5, ("t", 1): 3}, None) == {("t", 0): 5, ("t", 1): 10}


def test_admit_shares_the_limit_in_proportion_to_backlog() -> None:
    starts = {("t", 0): 0, ("t", 1): 0, ("t", 2): 0}
    latest = {("t", 0): 100, ("t", 1): 50, ("t", 2): 0}
    ends = admit(starts, latest, 30)
    assert sum(ends.values()) == 30
    assert ends == {("t", 0): 20, ("t", 1): 10, ("t", 2): 0}
    # Remainders go to the largest backlogs; the limit is exact.
    ends = admit({("a", 0): 0, ("a", 1): 0, ("a", 2): 0}, {("a", 0): 7, ("a", 1): 7, ("a", 2): 7}, 10)
    assert sum(ends.values()) == 10 and all(3 <= v <= 4 for v in ends.values())
    # A limit of one still moves.
    assert sum(admit(starts, latest, 1).values()) == 1
    # Under the limit: everything.
    assert admit(starts, latest, 1000) == latest


def test_ranges_are_packed_into_about_one_task_per_slot_balanced_by_records() -> None:
    from kconsumer.spark.offsets import pack

    ranges = [OffsetRange("t", p, 0, size) for p, size in enumerate([50, 10, 40, 30, 20, 60])]
    # No more ranges than slots (or no slot count): one task per range, as Spark's Kafka source.
    assert pack(ranges[:2], 2) == [(ranges[0],), (ranges[1],)]
    assert pack(ranges, None) == pack(ranges, 0) == [(r,) for r in ranges]
    tasks = pack(ranges, 2)
    assert len(tasks) == 2
    assert sorted(r.partition for task in tasks for r in task) == list(range(6))
    assert sorted(sum(r.size for r in task) for task in tasks) == [100, 110]
    # The same ranges, in any order, always give the same tasks (a replayed batch reads the same).
    assert pack(list(reversed(ranges)), 2) == tasks
    assert pack(ranges, 3) == [(ranges[1], ranges[5]), (ranges[0], ranges[4]), (ranges[2], ranges[3])]


def test_a_big_batch_keeps_tasks_of_at_most_about_a_million_records() -> None:
    from kconsumer.spark.offsets import PACKED_TASK_RECORDS, pack

    big = [OffsetRange("t", p, 0, PACKED_TASK_RECORDS // 2) for p in range(8)]
    assert len(pack(big, 2)) == 4  # 4,000,000 records: four tasks of two ranges, not two of four
    huge = [OffsetRange("t", p, 0, 3 * PACKED_TASK_RECORDS) for p in range(8)]
    assert pack(huge, 2) == [(r,) for r in huge]  # one range alone is over the bound: one task each
