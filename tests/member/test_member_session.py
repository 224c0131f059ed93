"""The member session: coordinator discovery and capabilities, version negotiation, the requests it
builds from the core's work, its routing of answers and failures, and the application's queries.
Sans-IO: a scripted cluster answers on a manual clock (`session_driver`)."""

from __future__ import annotations

from typing import Any

from member_driver import response

from kconsumer.broker.server.metadata import api_versions_response
from kconsumer.client.member import MemberConfig, MemberState, Node, PartitionOffset, TopicIdPartition
from kconsumer.client.member.calls import CommitCall
from kconsumer.client.member.effects import (
    AnswerQuery,
    CollectPositions,
    CommitFinished,
    ReportError,
    StartFetching,
)
from kconsumer.client.member.events import (
    CommitRequested,
    CommittedOffsetsQuery,
    OffsetsQuery,
    PositionsCollected,
    Subscribe,
)
from kconsumer.client.member.queries import QueryTimedOutError
from kconsumer.errors import ErrorCode
from kconsumer.protocol.api import ApiKey
from kconsumer.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kconsumer.protocol.messages.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from kconsumer.protocol.messages.metadata import FindCoordinatorRequest, MetadataRequest
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from kconsumer.protocol.uuid import ZERO_UUID
from kconsumer.testing.cluster_answers import find_coordinator_answer
from kconsumer.testing.scripted_session import BOOTSTRAP, COORDINATOR, LEADER, TOPICS, SessionDriver

FOO_ID = TOPICS["foo"].topic_id


def driver(**config: Any) -> SessionDriver:
    config.setdefault("group_id", "g")
    return SessionDriver(MemberConfig(**config), held={ConsumerGroupHeartbeatRequest})


def joined(d: SessionDriver, assignment: dict[str, list[int]] | None = None) -> None:
    """Subscribe to foo and answer the join with epoch 1 and `assignment` (foo-0, foo-1 by default)."""
    d.answers.setdefault(OffsetFetchRequest, lambda request, version: fetched({}))
    d.send(Subscribe(topics=("foo",)))
    (join,) = d.held_of(ConsumerGroupHeartbeatRequest)
    d.reply(join, response(1, assignment or {"foo": [0, 1]}, member_id=None, interval=5_000))
    assert d.session.state is MemberState.ACKNOWLEDGING or d.held_of(ConsumerGroupHeartbeatRequest)


def fetched(offsets: dict[int, int]) -> OffsetFetchResponse:
    return OffsetFetchResponse(
        groups=[
            OffsetFetchResponseGroup(
                group_id="g",
                topics=[
                    OffsetFetchResponseTopics(
                        topic_id=FOO_ID,
                        partitions=[
                            OffsetFetchResponsePartitions(partition_index=p, committed_offset=o, error_code=0)
                            for p, o in offsets.items()
                        ],
                    )
                ],
            )
        ]
    )


def committed_ok(request: OffsetCommitRequest, version: int) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                topic_id=t.topic_id,
                partitions=[
                    OffsetCommitResponsePartition(partition_index=p.partition_index) for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


# -- coordinator discovery and capabilities ------------------------------------------------------------


def test_the_first_heartbeat_finds_and_negotiates_the_coordinator() -> None:
    d = driver()
    d.send(Subscribe(topics=("foo",)))
    # FindCoordinator through the bootstrap broker (after its ApiVersions), then ApiVersions with
    # the coordinator, then the heartbeat to it.
    assert [(type(e.request).__name__, e.node) for e in d.log] == [
        ("ApiVersionsRequest", BOOTSTRAP[0]),
        ("MetadataRequest", BOOTSTRAP[0]),
        ("FindCoordinatorRequest", BOOTSTRAP[0]),
        ("ApiVersionsRequest", COORDINATOR),
        ("ConsumerGroupHeartbeatRequest", COORDINATOR),
    ]
    (hb,) = d.held_of(ConsumerGroupHeartbeatRequest)
    assert hb.effect.version == 1 and d.session.coordinator == COORDINATOR
    assert d.requests(ApiVersionsRequest)[0].client_software_name == "kconsumer"


def test_not_coordinator_makes_the_next_request_look_it_up_again() -> None:
    d = driver()
    joined(d)
    d.advance(5_000)
    (hb,) = d.held_of(ConsumerGroupHeartbeatRequest)
    d.reply(hb, ConsumerGroupHeartbeatResponse(error_code=int(ErrorCode.NOT_COORDINATOR)))
    assert d.session.coordinator is None
    d.advance(1_000)  # after the backoff
    assert len(d.requests(FindCoordinatorRequest)) == 2 and d.held_of(ConsumerGroupHeartbeatRequest)


def test_a_lost_coordinator_connection_is_renegotiated() -> None:
    d = driver()
    joined(d)
    d.advance(5_000)
    (hb,) = d.held_of(ConsumerGroupHeartbeatRequest)
    d.reply(hb, ErrorCode.NETWORK_EXCEPTION)
    assert d.session.coordinator is None and d.session.state is MemberState.STABLE
    d.advance(1_000)
    assert d.sent_to(ApiVersionsRequest).count(COORDINATOR) == 2, "a new connection asks again"
    assert d.held_of(ConsumerGroupHeartbeatRequest)[0].effect.node == COORDINATOR


def test_a_refused_api_versions_v3_is_retried_at_v0() -> None:
    d = driver()
    refused = ApiVersionsResponse(error_code=int(ErrorCode.UNSUPPORTED_VERSION))
    d.answers[ApiVersionsRequest] = lambda request, version: (
        refused if version == 3 else api_versions_response()
    )
    d.send(Subscribe(topics=("foo",)))
    assert [e.version for e in d.log if isinstance(e.request, ApiVersionsRequest)][:2] == [3, 0]
    assert d.held_of(ConsumerGroupHeartbeatRequest)


def test_a_broker_without_kip848_fails_the_member() -> None:
    d = driver()
    old = api_versions_response()
    old.api_keys = [k for k in old.api_keys if k.api_key != ApiKey.CONSUMER_GROUP_HEARTBEAT]
    d.answers[ApiVersionsRequest] = lambda request, version: old
    d.send(Subscribe(topics=("foo",)))
    assert d.session.state is MemberState.FATAL
    (error,) = [w for w in d.app if isinstance(w, ReportError)]
    assert error.fatal and "KIP-848" in str(error.error)


def test_the_coordinator_without_assignor_apis_is_told_to_the_core() -> None:
    from kconsumer.client.member import ClientAssignor

    d = driver(client_assignors=(ClientAssignor("mine", 0, 0, 0),))
    plain = api_versions_response()
    plain.api_keys = [k for k in plain.api_keys if k.api_key < 32000]
    d.answers[ApiVersionsRequest] = lambda request, version: plain
    d.send(Subscribe(topics=("foo",)))
    assert d.session.state is MemberState.FATAL
    (error,) = [w for w in d.app if isinstance(w, ReportError)]
    assert "group.remote.assignor" in str(error.error)


def test_any_broker_requests_move_on_to_the_next_address() -> None:
    dead, alive = Node("dead", 1, -1), Node("alive", 2, -2)
    d = SessionDriver(
        MemberConfig(group_id="g"), held={ConsumerGroupHeartbeatRequest}, bootstrap=(dead, alive)
    )
    answer = d.answers[ApiVersionsRequest]
    d.answers[ApiVersionsRequest] = lambda request, version: (
        ErrorCode.NETWORK_EXCEPTION if d.log[-1].node == dead else answer(request, version)
    )
    d.send(Subscribe(topics=("foo",)))
    assert d.sent_to(FindCoordinatorRequest) == [alive]
    assert d.held_of(ConsumerGroupHeartbeatRequest)


def test_no_reachable_broker_fails_the_heartbeat_and_retries_later() -> None:
    d = driver()
    d.answers[ApiVersionsRequest] = lambda request, version: ErrorCode.NETWORK_EXCEPTION
    d.send(Subscribe(topics=("foo",)))
    assert d.session.state is MemberState.JOINING and not d.held_of(ConsumerGroupHeartbeatRequest)
    tried = len(d.log)
    d.advance(50)
    assert len(d.log) == tried, "backing off"
    d.advance(1_000)
    assert len(d.log) > tried


# -- the core's work ---------------------------------------------------------------------------------


def test_commit_of_the_positions_goes_through_the_application_thread() -> None:
    d = driver()
    d.answers[OffsetCommitRequest] = committed_ok
    joined(d)
    assert len(d.of(StartFetching)) == 1
    d.send(CommitRequested(token=1, offsets=None, sync=True))
    (collect,) = d.of(CollectPositions)
    assert [tp.partition for tp in collect.partitions] == [0, 1]
    positions = tuple(PartitionOffset(tp, 10 + tp.partition) for tp in collect.partitions)
    d.send(PositionsCollected(collect.request_id, positions))
    (commit,) = d.requests(OffsetCommitRequest)
    assert commit.member_id and commit.generation_id_or_member_epoch == 1
    assert [(t.topic_id, [p.committed_offset for p in t.partitions]) for t in commit.topics] == [
        (FOO_ID, [10, 11])
    ]
    (done,) = d.of(CommitFinished)
    assert done.token == 1 and done.error is None


def test_a_commit_leaves_with_the_epoch_of_the_moment_it_is_sent() -> None:
    """The epoch moves on while the application reads the positions: the commit carries the new
    one (an older one would only be refused STALE_MEMBER_EPOCH), as Kafka's consumer builds it
    when it sends. Not for a partition the member no longer owns: the coordinator checks the
    epoch, not the owner, so that commit keeps its epoch and its refusal drops the partition."""
    d = driver()
    d.answers[OffsetCommitRequest] = committed_ok
    joined(d)
    d.send(CommitRequested(token=1, offsets=None, sync=True))
    (collect,) = d.of(CollectPositions)
    d.advance(5_000)
    (beat,) = d.held_of(ConsumerGroupHeartbeatRequest)
    d.reply(beat, response(2, {"foo": [0, 1]}, interval=5_000))
    assert d.session.member_epoch == 2
    d.send(PositionsCollected(collect.request_id, tuple(PartitionOffset(tp, 5) for tp in collect.partitions)))
    (commit,) = d.requests(OffsetCommitRequest)
    assert commit.generation_id_or_member_epoch == 2

    call = CommitCall(None, "g", "m", 2, None, (PartitionOffset(TopicIdPartition(FOO_ID, "foo", 1), 5),))
    call.follow("m", 3, frozenset({(FOO_ID, 0)}))
    assert call.member_epoch == 2  # foo-1 is not the member's any more
    call.follow("m", 3, frozenset({(FOO_ID, 0), (FOO_ID, 1)}))
    assert call.member_epoch == 3


def test_calls_waiting_for_a_coordinator_lost_meanwhile_look_it_up_again() -> None:
    """A commit queued while the coordinator's connection was being negotiated again, and then
    another request on the old connection fails: the coordinator is forgotten, and must be looked
    up again for the queued commit (it used to wait for good: mixed simulation seed 1038, where
    the queued call was a classic member's LeaveGroup)."""
    d = driver()
    joined(d)
    d.held |= {OffsetCommitRequest, ApiVersionsRequest}
    partition = TopicIdPartition(FOO_ID, "foo", 0)
    for token in (1, 2):  # two commits in flight on the coordinator's connection
        d.send(CommitRequested(token=token, offsets=(PartitionOffset(partition, token),), sync=False))
    first, second = d.held_of(OffsetCommitRequest)
    d.reply(first, ErrorCode.NETWORK_EXCEPTION)  # the connection is gone: the coordinator forgotten
    d.send(CommitRequested(token=3, offsets=(PartitionOffset(partition, 3),), sync=False))
    (versions,) = d.held_of(ApiVersionsRequest)  # found again, being negotiated; commit 3 waits
    d.reply(second, ErrorCode.NETWORK_EXCEPTION)  # the old connection's other request fails
    d.reply(versions, api_versions_response())
    lookups = len(d.requests(FindCoordinatorRequest))
    assert lookups == 3, "the coordinator is looked up again for the waiting commit"
    for sent in d.held_of(ApiVersionsRequest):
        d.reply(sent, api_versions_response())
    assert [c.topics[0].partitions[0].committed_offset for c in d.requests(OffsetCommitRequest)][-1] == 3


def test_a_late_answer_of_a_replaced_coordinator_does_not_forget_the_new_one() -> None:
    """Issue seed 2105828: a heartbeat and a commit in flight to coordinator A; the heartbeat is
    answered NOT_COORDINATOR and the member finds B, whose versions are being negotiated (the next
    heartbeat waits for them); then the commit's NOT_COORDINATOR arrives from A. It used to wipe B
    out: once B's versions arrived nothing sent the waiting heartbeat, and nothing looked the
    coordinator up again (a leaving member stayed LEAVING for good)."""
    d = driver()
    joined(d)
    d.held |= {OffsetCommitRequest, ApiVersionsRequest}
    partition = TopicIdPartition(FOO_ID, "foo", 0)
    d.send(CommitRequested(token=1, offsets=(PartitionOffset(partition, 1),), sync=False))
    (late_commit,) = d.held_of(OffsetCommitRequest)
    moved = Node("coord-b", 9095, 9)
    d.answers[FindCoordinatorRequest] = lambda request, version: find_coordinator_answer(
        request, version, moved
    )
    for beat in d.held_of(ConsumerGroupHeartbeatRequest):
        d.reply(beat, ErrorCode.NOT_COORDINATOR)
    d.advance(5_000)  # the next heartbeat waits for B's versions
    (negotiation,) = d.held_of(ApiVersionsRequest)
    d.reply(late_commit, ErrorCode.NOT_COORDINATOR)  # A's late answer
    d.held -= {ApiVersionsRequest}
    d.reply(negotiation, api_versions_response())
    d.advance(5_000)
    assert moved in d.sent_to(ConsumerGroupHeartbeatRequest), "the waiting heartbeat went to B"


def test_offsets_named_by_topic_only_get_their_ids() -> None:
    d = driver()
    d.answers[OffsetCommitRequest] = committed_ok
    joined(d)
    by_name = TopicIdPartition(ZERO_UUID, "foo", 1)
    d.send(CommitRequested(token=2, offsets=(PartitionOffset(by_name, 5),), sync=False))
    (commit,) = d.requests(OffsetCommitRequest)
    assert commit.topics[0].topic_id == FOO_ID and commit.topics[0].partitions[0].committed_offset == 5


# -- queries -----------------------------------------------------------------------------------------


def test_committed_offsets_query_learns_ids_and_retries_until_answered() -> None:
    d = driver()
    answers = iter([fetched({0: 5}), fetched({0: 5})])
    loading = OffsetFetchResponse(
        groups=[
            OffsetFetchResponseGroup(group_id="g", error_code=int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
        ]
    )
    calls: list[Any] = []

    def fetch(request: OffsetFetchRequest, version: int) -> Any:
        calls.append(request)
        return loading if len(calls) == 1 else next(answers)

    d.answers[OffsetFetchRequest] = fetch
    d.send(CommittedOffsetsQuery(token=7, partitions=(("foo", 0),), deadline_ms=d.now + 10_000))
    assert len(calls) == 1 and not d.of(AnswerQuery, d.other)
    group = calls[0].groups[0]
    assert group.member_id is None and group.member_epoch == -1 and group.topics[0].topic_id == FOO_ID
    out = d.advance(200)  # retry.backoff.ms
    (answer,) = [e for e in out if isinstance(e, AnswerQuery)]
    code, offsets = answer.result
    assert code is ErrorCode.NONE and [(o.partition.topic, o.offset) for o in offsets] == [("foo", 5)]


def test_committed_offsets_query_gives_up_with_the_last_error_at_its_deadline() -> None:
    d = driver()
    d.answers[OffsetFetchRequest] = lambda request, version: ErrorCode.REQUEST_TIMED_OUT
    d.send(CommittedOffsetsQuery(token=8, partitions=(("foo", 0),), deadline_ms=d.now + 1_000))
    out: list[Any] = []
    for _ in range(20):
        out += d.advance(100)
    (answer,) = [e for e in out if isinstance(e, AnswerQuery)]
    assert answer.result == (ErrorCode.REQUEST_TIMED_OUT, ()) and answer.error is None
    assert len(d.requests(OffsetFetchRequest)) >= 4, "retried after each backoff"


def test_committed_offsets_query_without_any_answer_times_out() -> None:
    d = driver()
    d.held.add(OffsetFetchRequest)
    d.send(CommittedOffsetsQuery(token=8, partitions=(("foo", 0),), deadline_ms=d.now + 1_000))
    (answer,) = [e for e in d.advance(1_000) if isinstance(e, AnswerQuery)]
    assert isinstance(answer.error, QueryTimedOutError)


def test_offsets_query_asks_each_partition_leader() -> None:
    d = driver()

    def listed(request: ListOffsetsRequest, version: int) -> ListOffsetsResponse:
        return ListOffsetsResponse(
            topics=[
                ListOffsetsTopicResponse(
                    name=t.name,
                    partitions=[
                        ListOffsetsPartitionResponse(
                            partition_index=p.partition_index, offset=100 + p.partition_index
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ]
        )

    d.answers[ListOffsetsRequest] = listed
    out = d.send(
        OffsetsQuery(
            token=9, timestamps={("foo", 0): -1, ("foo", 1): -2}, isolation_level=1, deadline_ms=d.now + 5_000
        )
    )
    assert d.sent_to(ListOffsetsRequest) == [LEADER]
    assert d.requests(ListOffsetsRequest)[0].isolation_level == 1
    (answer,) = [e for e in out if isinstance(e, AnswerQuery)]
    assert answer.result == {("foo", 0): 100, ("foo", 1): 101}
    assert d.sent_to(MetadataRequest) == [BOOTSTRAP[0]]
