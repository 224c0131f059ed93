"""The invariant checks of the test harness fail when they should (so the integration tests that
rely on them can fail)."""

from __future__ import annotations

import pytest
from confluent_kafka import Message
from consumer_harness import Ledger

P0 = ("t", 0)


def record(offset: int, partition: int = 0) -> Message:
    return Message(topic="t", partition=partition, offset=offset, value=b"v")


def committed_at(value: int | None) -> Ledger:
    return Ledger(lambda keys: dict.fromkeys(keys, value))


def read_then_revoked_at_2() -> Ledger:
    """`a` read offsets 0 and 1 of P0, then gave it up committing 2 (committed from then on)."""
    ledger = committed_at(None)
    ledger.assigned("a", [P0])
    ledger.received("a", record(0))
    ledger.received("a", record(1))
    ledger.released("a", [P0], "revoked", {P0: 2})
    ledger._committed = lambda keys: dict.fromkeys(keys, 2)
    return ledger


def test_a_clean_history_passes() -> None:
    ledger = read_then_revoked_at_2()
    ledger.assigned("b", [P0])
    ledger.received("b", record(2))
    ledger.check({P0: [0, 1, 2]})


def test_a_record_of_a_partition_not_owned_fails() -> None:
    ledger = committed_at(None)
    ledger.received("a", record(0))
    with pytest.raises(AssertionError, match="without owning"):
        ledger.check()


def test_two_members_consuming_one_partition_fails() -> None:
    ledger = committed_at(None)
    ledger.assigned("a", [P0])
    ledger.received("a", record(0))
    ledger.assigned("b", [P0])
    ledger.received("b", record(1))
    ledger.received("a", record(2))  # a still thinks it owns it
    ledger.released("a", [P0], "lost")
    with pytest.raises(AssertionError, match="after another member consumed"):
        ledger.check()


def test_a_zombie_may_read_until_it_hears_when_the_test_makes_zombies() -> None:
    ledger = Ledger(zombies=True)
    ledger.assigned("a", [P0])
    ledger.received("a", record(0))
    ledger.assigned("b", [P0])
    ledger.received("b", record(1))
    ledger.received("a", record(2))  # a was removed while it could not reach the coordinator
    ledger.released("a", [P0], "lost")
    ledger.check()
    strict = Ledger(zombies=True)
    strict.assigned("a", [P0])
    strict.received("a", record(0))
    strict.assigned("b", [P0])
    strict.received("b", record(1))
    strict.received("a", record(2))
    strict.released("a", [P0], "revoked")  # not a zombie: it was told, cooperatively
    with pytest.raises(AssertionError, match="after"):
        strict.check()


def test_assigned_while_another_holds_it_is_only_fine_when_lost() -> None:
    for how, fails in (("lost", False), ("crashed", False), ("revoked", True)):
        ledger = committed_at(None)
        ledger.assigned("a", [P0])
        ledger.assigned("b", [P0])
        ledger.released("a", [P0], how)
        if fails:
            with pytest.raises(AssertionError, match="not lost"):
                ledger.check()
        else:
            ledger.check()


def test_a_missing_record_fails() -> None:
    ledger = committed_at(None)
    ledger.assigned("a", [P0])
    ledger.received("a", record(0))
    with pytest.raises(AssertionError, match="never consumed"):
        ledger.check({P0: [0, 1]})


def test_a_duplicate_below_the_committed_offset_fails() -> None:
    ledger = committed_at(None)
    ledger.assigned("a", [P0])
    for offset in range(4):
        ledger.received("a", record(offset))
    ledger.released("a", [P0], "lost")
    ledger._committed = lambda keys: dict.fromkeys(keys, 2)
    ledger.assigned("b", [P0])
    ledger.received("b", record(2))  # inside the uncommitted window: fine
    ledger.received("b", record(3))
    ledger.check({P0: [0, 1, 2, 3]})
    ledger.received("b", record(1))  # below what was committed
    with pytest.raises(AssertionError, match="although 2 was committed"):
        ledger.check()


def test_not_starting_at_the_committed_offset_fails() -> None:
    ledger = committed_at(3)
    ledger.assigned("a", [P0])
    ledger.received("a", record(4))
    with pytest.raises(AssertionError, match="not at the committed offset 3"):
        ledger.check()


def test_a_revocation_commit_not_found_by_the_next_owner_fails() -> None:
    ledger = committed_at(None)
    ledger.assigned("a", [P0])
    ledger.received("a", record(0))
    ledger.released("a", [P0], "revoked", {P0: 1})
    ledger.assigned("b", [P0])  # the committed offset is still None
    with pytest.raises(AssertionError, match="committed 1 when revoked"):
        ledger.check()


def test_the_same_record_twice_in_one_assignment_fails() -> None:
    ledger = committed_at(None)
    ledger.assigned("a", [P0])
    ledger.received("a", record(0))
    ledger.received("a", record(0))
    with pytest.raises(AssertionError, match="twice in one assignment"):
        ledger.check()


def test_a_failure_tells_the_history_of_the_partition_it_names() -> None:
    ledger = read_then_revoked_at_2()
    ledger.assigned("c", [P0])
    ledger.received("c", record(0))  # started over although 2 was committed
    with pytest.raises(AssertionError) as failure:
        ledger.check()
    story = str(failure.value)
    assert "again although 2 was committed" in story
    assert f"history of {P0}:" in story
    assert "a: 0.000 (committed None) to " in story and "revoked (committed 2), read 0..1 (2)" in story
    assert "c: " in story and "(committed 2) to open (committed None), read 0..0 (1)" in story


def test_a_re_read_in_one_assignment_fails_but_for_a_rereading_peer() -> None:
    for rereading, fails in ((set(), True), ({"peer"}, False)):
        ledger = Ledger(lambda keys: dict.fromkeys(keys), rereading_peers=rereading)
        ledger.assigned("peer", [P0])
        for offset in (0, 1, 0, 1, 2):  # librdkafka started the partition over
            ledger.received("peer", record(offset))
        if fails:
            with pytest.raises(AssertionError, match="twice in one assignment"):
                ledger.check({P0: [0, 1, 2]})
        else:
            ledger.check({P0: [0, 1, 2]})
            assert ledger.tolerated == [
                "peer received ('t', 0)@0 twice in one assignment",
                "peer received ('t', 0)@1 twice in one assignment",
            ]


def test_a_rereading_peer_still_may_not_lose_a_record() -> None:
    ledger = Ledger(lambda keys: dict.fromkeys(keys), rereading_peers={"peer"})
    ledger.assigned("peer", [P0])
    ledger.received("peer", record(0))
    ledger.received("peer", record(2))
    with pytest.raises(AssertionError, match="never consumed"):
        ledger.check({P0: [0, 1, 2]})
