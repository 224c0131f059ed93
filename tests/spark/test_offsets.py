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
