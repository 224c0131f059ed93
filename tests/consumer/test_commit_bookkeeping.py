"""What the application core keeps about commits: the answer of a synchronous commit until its
caller takes it or stops waiting, nothing of asynchronous ones once they finished. (An
asynchronous commit per record once left every answer behind: memory grew for as long as the
consumer ran.)"""

from __future__ import annotations

import time
from typing import Any

from kconsumer.client.application.core import ApplicationCore
from kconsumer.client.application.ports import ApplicationSettings
from kconsumer.client.member.effects import CommitFinished
from kconsumer.client.member.events import CommitRequested, Event
from kconsumer.client.member.model import CommitReason, PartitionOffset, TopicIdPartition
from kconsumer.client.runtime.inbox import Inbox
from kconsumer.protocol.uuid import Uuid

PARTITION = TopicIdPartition(Uuid.from_int(1), "t", 0)


class _Member:
    group_id = "g"

    def __init__(self) -> None:
        self.posted: list[Event] = []

    def post(self, event: Event) -> None:
        self.posted.append(event)


def _app() -> tuple[ApplicationCore, _Member]:
    member = _Member()
    unused: Any = None
    core = ApplicationCore(unused, member, Inbox(), ApplicationSettings(), clock=time.monotonic)
    return core, member


def _answer(core: ApplicationCore, request: Event) -> None:
    """The member's answer to `request` (a CommitRequested), run as the application thread would."""
    assert isinstance(request, CommitRequested)
    reason = CommitReason.USER_SYNC if request.sync else CommitReason.USER_ASYNC
    offsets = tuple(request.offsets or ())
    core.queue.put(CommitFinished(1, reason, request.token, 7, (PARTITION,), offsets=offsets))
    core.run()


def _offsets(offset: int) -> tuple[PartitionOffset, ...]:
    return (PartitionOffset(PARTITION, offset),)


def test_finished_asynchronous_commits_leave_nothing_behind() -> None:
    core, member = _app()
    for offset in range(1000):
        assert core.send_commit(_offsets(offset), asynchronous=True) is None
    for request in member.posted:
        _answer(core, request)
    assert core.state.commits == {} and core.state.requested == {} and core.state.awaited_commits == set()


def test_a_synchronous_commits_answer_waits_for_its_caller() -> None:
    core, member = _app()
    token = core.send_commit(_offsets(5), asynchronous=False)
    assert token is not None and not core.commit_finished(token)
    _answer(core, member.posted[-1])
    assert core.commit_finished(token)
    assert [tp.offset for tp in core.finish_commit(token)] == [5]
    assert core.state.commits == {} and core.state.awaited_commits == set()


def test_the_answer_of_a_commit_its_caller_stopped_waiting_for_is_dropped() -> None:
    core, member = _app()
    token = core.send_commit(_offsets(5), asynchronous=False)
    assert token is not None
    core.forget_commit(token)  # the caller timed out, or its task was cancelled
    _answer(core, member.posted[-1])
    assert not core.commit_finished(token)
    assert core.state.commits == {} and core.state.requested == {}


def test_every_commit_gets_a_token_of_its_own() -> None:
    core, member = _app()
    core.send_commit(_offsets(1), asynchronous=True)
    core.send_commit(_offsets(2), asynchronous=False)
    tokens = [event.token for event in member.posted if isinstance(event, CommitRequested)]
    assert len(set(tokens)) == 2
