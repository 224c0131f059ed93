"""Wire-level scenarios of the cluster-wide APIs (Metadata, FindCoordinator, ApiVersions,
ListGroups) and of classic groups, the classic → consumer upgrade, and group deletion."""

from __future__ import annotations

import threading
import time

from members import ScriptedMember, converge
from scenario import scenario
from script import Script

from kconsumer.protocol.consumer_protocol import (
    ConsumerAssignment,
    ConsumerSubscription,
    ConsumerTopicPartitions,
    encode_consumer_protocol,
)
from kconsumer.protocol.messages.admin import (
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DeleteTopicState,
)
from kconsumer.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kconsumer.protocol.messages.classic_group import (
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from kconsumer.protocol.messages.list_groups import DeleteGroupsRequest, ListGroupsRequest
from kconsumer.protocol.messages.metadata import (
    FindCoordinatorRequest,
    MetadataRequest,
    MetadataRequestTopic,
)
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kconsumer.protocol.uuid import ZERO_UUID, Uuid
from kconsumer.testing.wire import WireClient

# -- Metadata ------------------------------------------------------------------------------------------


def _metadata(
    s: Script, label: str, topics: list[MetadataRequestTopic] | None, version: int = 12, **fields: object
) -> None:
    answer = s.send(MetadataRequest(topics=topics, **fields), version=version)
    plain = s.plain(answer)
    for broker in plain["brokers"]:
        broker.pop("rack", None)
    s.observe(label, plain)


@scenario()
def metadata_by_name(s: Script) -> None:
    s.topic("orders", 2)
    _metadata(s, "a known topic", [MetadataRequestTopic(name=s.t("orders"))])
    _metadata(
        s,
        "an unknown topic, auto-creation off",
        [MetadataRequestTopic(name=s.t("nope"))],
        allow_auto_topic_creation=True,
    )
    _metadata(s, "an invalid name", [MetadataRequestTopic(name="bad name!")])
    _metadata(s, "no topic (v1+)", [])
    _metadata(s, "every topic", None)


@scenario()
def metadata_by_topic_id(s: Script) -> None:
    orders = s.topic("orders", 2)
    _metadata(s, "an id with a null name", [MetadataRequestTopic(topic_id=orders, name=None)])
    _metadata(
        s, "an id with an empty name (the Java client)", [MetadataRequestTopic(topic_id=orders, name="")]
    )
    _metadata(s, "an unknown id", [MetadataRequestTopic(topic_id=Uuid.from_int(42), name=None)])
    _metadata(
        s,
        "an id and a name together",
        [
            MetadataRequestTopic(topic_id=orders, name=""),
            MetadataRequestTopic(topic_id=ZERO_UUID, name=s.t("orders")),
        ],
    )


#: The APIs the reference cluster serves that Apache Kafka 4.4 serves too (not its extensions).
KAFKA_4_4_APIS = (0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 36, 37, 42, 47, 68, 69)


# -- FindCoordinator, ApiVersions, ListGroups ----------------------------------------------------------


@scenario()
def find_coordinator_batched(s: Script) -> None:
    answer = s.send(FindCoordinatorRequest(coordinator_keys=["g1", "g2", ""], key_type=0), version=4)
    s.observe(
        "three keys, one empty", sorted((c["key"], c["error_code"]) for c in s.plain(answer)["coordinators"])
    )


@scenario()
def api_versions_ranges(s: Script) -> None:
    answer = s.send(
        ApiVersionsRequest(client_software_name="fidelity", client_software_version="1"), version=3
    )
    assert isinstance(answer, ApiVersionsResponse)
    s.observe("error", answer.error_code)
    kafka_serves = set(KAFKA_4_4_APIS)
    s.observe(
        "ranges of the APIs both serve",
        {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys if k.api_key in kafka_serves},
    )


@scenario()
def list_groups_with_filters(s: Script) -> None:
    s.topic("t", 1)
    a = ScriptedMember(s, "consumer-g", "A", topics=["t"])
    a.join()
    converge(s, "consumer-g", [a])
    classic = _classic_member(s, "classic-g", "C")
    classic.join_and_sync()

    def listed(label: str, **filters: list[str]) -> None:
        answer = s.send(ListGroupsRequest(**filters), version=5)
        groups = sorted(
            (g["group_id"], g["protocol_type"], g["group_state"], g["group_type"])
            for g in s.plain(answer)["groups"]
        )
        s.observe(label, groups)

    listed("every group")
    listed("consumer groups", types_filter=["consumer"])
    listed("classic groups", types_filter=["classic"])
    listed("stable groups", states_filter=["Stable"])
    listed("empty groups", states_filter=["Empty"])


# -- classic groups ------------------------------------------------------------------------------------


class ClassicMember:
    """A scripted classic member (JoinGroup v9, SyncGroup v5, range over one topic)."""

    def __init__(
        self, s: Script, group: str, label: str, topics: list[str], instance_id: str | None = None
    ) -> None:
        self.s, self.group, self.label, self.topics, self.instance_id = s, group, label, topics, instance_id
        self.member_id = ""
        self.generation = -1

    def join(self, label: str | None = None, via: WireClient | None = None) -> JoinGroupResponse:
        """JoinGroup (observed under `label`), on the script's connection or on `via` (another
        connection to the coordinator: the script's stays free while this one waits)."""
        metadata = encode_consumer_protocol(
            ConsumerSubscription(topics=[self.s.t(t) for t in self.topics]), 3
        )
        request = JoinGroupRequest(
            group_id=self.group,
            session_timeout_ms=6000,
            rebalance_timeout_ms=5000,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=metadata)],
        )
        answer = (
            self.s.send(request, group=self.group) if via is None else via.call(request, JoinGroupResponse)
        )
        assert isinstance(answer, JoinGroupResponse)
        if label is not None:
            plain = self.s.plain(answer)
            self.s.observe(label, plain)
        if answer.member_id and not self.member_id:
            self.member_id = answer.member_id
            self.s.name_member(answer.member_id, f"<{self.label}>")
        self.generation = answer.generation_id
        return answer

    def join_and_sync(
        self,
        label: str | None = None,
        takes: dict[str, list[int]] | None = None,
        user_data: bytes | None = None,
    ) -> None:
        """Join (again with the id if asked to) and sync; as the leader, give every member nothing,
        except itself the partitions of `takes` (logical topic → partitions) with the assignor's
        `user_data`."""
        answer = self.join(None if label is None else f"{label}: join")
        if answer.error_code:  # MEMBER_ID_REQUIRED: join again with the id
            answer = self.join(None if label is None else f"{label}: join with the id")
        self.sync(answer, label, takes, user_data)

    def sync(
        self,
        answer: JoinGroupResponse,
        label: str | None = None,
        takes: dict[str, list[int]] | None = None,
        user_data: bytes | None = None,
    ) -> None:
        """SyncGroup after `answer` (see `join_and_sync`)."""
        assignments = []
        if answer.leader == answer.member_id:
            mine = ConsumerAssignment(
                assigned_partitions=[
                    ConsumerTopicPartitions(topic=self.s.t(topic), partitions=parts)
                    for topic, parts in (takes or {}).items()
                ],
                user_data=user_data,
            )
            assignments = [
                SyncGroupRequestAssignment(
                    member_id=m.member_id,
                    assignment=encode_consumer_protocol(mine) if m.member_id == self.member_id else b"",
                )
                for m in answer.members
            ]
        sync = SyncGroupRequest(
            group_id=self.group,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=assignments,
        )
        reply = self.s.send(sync, group=self.group)
        if label is not None:
            self.s.observe(f"{label}: sync", reply)

    def heartbeat(self, label: str, generation: int | None = None) -> None:
        request = HeartbeatRequest(
            group_id=self.group,
            generation_id=self.generation if generation is None else generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
        )
        self.s.call(label, request, group=self.group)

    def leave(self, label: str) -> None:
        request = LeaveGroupRequest(
            group_id=self.group,
            members=[MemberIdentity(member_id=self.member_id, group_instance_id=self.instance_id)],
        )
        self.s.call(label, request, group=self.group)


def _classic_member(s: Script, group: str, label: str, instance_id: str | None = None) -> ClassicMember:
    return ClassicMember(s, group, label, ["t"], instance_id)


@scenario(initial_rebalance_delay_ms=0)
def classic_join_sync_heartbeat_leave(s: Script) -> None:
    s.topic("t", 2)
    member = _classic_member(s, "classic", "C")
    member.join("join without a member id")
    member.join_and_sync("join with the id")
    member.heartbeat("heartbeat")
    member.heartbeat("heartbeat of an old generation", generation=member.generation - 1)
    s.call("describe", DescribeGroupsRequest(groups=["classic"]), group="classic")
    member.leave("leave")
    s.call("describe after the leave", DescribeGroupsRequest(groups=["classic"]), group="classic")


@scenario(initial_rebalance_delay_ms=0)
def classic_group_described_while_rebalancing(s: Script) -> None:
    """DescribeGroups names the group's protocol and members' metadata only while it is Stable:
    during a rebalance (here CompletingRebalance, the only member rejoined) Kafka leaves them out."""
    s.topic("t", 2)
    member = _classic_member(s, "rebalancing", "C")
    member.join_and_sync("join and sync")
    answer = member.join("rejoin")
    s.call(
        "describe while completing the rebalance",
        DescribeGroupsRequest(groups=["rebalancing"]),
        group="rebalancing",
    )
    member.sync(answer, "sync again")
    s.call("describe once stable", DescribeGroupsRequest(groups=["rebalancing"]), group="rebalancing")


def _classic_commit(s: Script, label: str, group: str, generation: int, member_id: str) -> None:
    """OffsetCommit v9 (by name, as classic clients send it) of t-0."""
    partition = OffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_metadata="")
    request = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        topics=[OffsetCommitRequestTopic(name=s.t("t"), partitions=[partition])],
    )
    s.call(label, request, group=group, version=9)


@scenario(initial_rebalance_delay_ms=0)
def classic_offset_commits_through_a_rebalance(s: Script) -> None:
    """A classic member's OffsetCommit in each state of its group: at the current generation while
    Stable and while the group prepares a rebalance (a second member's JoinGroup waits, on a
    connection of its own, for the first to rejoin), then with the older and the new generation
    while the group awaits the leader's SyncGroup, and once Stable again; from a stranger and from
    an admin (no member, generation -1) while the group has members."""
    group = "commits"
    s.topic("t", 2)
    c = _classic_member(s, group, "C")
    c.join_and_sync("C joins and syncs")
    first = c.generation
    _classic_commit(s, "stable: current generation", group, first, c.member_id)
    _classic_commit(s, "stable: older generation", group, first - 1, c.member_id)
    _classic_commit(s, "stable: unknown member", group, first, "stranger")
    _classic_commit(s, "stable: no member", group, -1, "")
    d = _classic_member(s, group, "D")
    side = WireClient.connect(*s.coordinator(group).address, client_id="fidelity")
    answers: list[JoinGroupResponse] = []

    def join_d() -> None:
        d.join(via=side)  # MEMBER_ID_REQUIRED
        answers.append(d.join(via=side))  # waits for C

    joining = threading.Thread(target=join_d, daemon=True)
    joining.start()
    try:
        s.until("a rebalance", lambda: _classic_state(s, group) == "PreparingRebalance")
        _classic_commit(s, "preparing a rebalance: current generation", group, first, c.member_id)
        c.heartbeat("C's heartbeat while preparing")
        answer = c.join("C rejoins")
        joining.join(30)
        assert answers, "D's JoinGroup was not answered"
        s.observe("D's join", answers[0])
        _classic_commit(s, "completing the rebalance: older generation", group, first, c.member_id)
        _classic_commit(s, "completing the rebalance: new generation", group, c.generation, c.member_id)
        c.sync(answer, "C as leader")
        _classic_commit(s, "stable again: new generation", group, c.generation, c.member_id)
    finally:
        side.close()
    d.leave("D leaves")
    c.leave("C leaves")


def _classic_state(s: Script, group: str) -> str:
    described = s.send(DescribeGroupsRequest(groups=[group]), group=group)
    return str(s.plain(described)["groups"][0]["group_state"])


@scenario(initial_rebalance_delay_ms=0)
def classic_group_upgraded_by_a_consumer_member(s: Script) -> None:
    """A consumer-protocol member joins a classic group that has a member: Kafka converts the
    group (online migration); the classic member keeps working through its old APIs."""
    s.topic("t", 2)
    classic = _classic_member(s, "migrating", "C")
    classic.join_and_sync()
    newcomer = ScriptedMember(s, "migrating", "N", topics=["t"])
    joined = newcomer.join()
    # Which of two equal members gets which partition is each assignor's tie-break (by member id,
    # random here): the shares are compared, not the partitions.
    s.observe(
        "a consumer member joins the classic group",
        (joined.error_code, joined.member_epoch, len(newcomer.owned.get(s.topic_id("t"), []))),
    )
    described = s.plain(s.send(_describe_request("migrating"), group="migrating"))["groups"][0]
    s.observe(
        "ConsumerGroupDescribe after the join",
        {
            "state": described["group_state"],
            "epochs": (described["group_epoch"], described["assignment_epoch"]),
            "members": sorted(
                (m["member_type"], m["member_epoch"], _count(m["assignment"]), _count(m["target_assignment"]))
                for m in described["members"]
            ),
        },
    )
    classic.heartbeat("the classic member's heartbeat")


@scenario(initial_rebalance_delay_ms=0)
def classic_group_not_upgraded_while_an_assignment_carries_user_data(s: Script) -> None:
    """The leader's assignment carries its assignor's own bytes (librdkafka's cooperative-sticky
    leader writes some once its members have had an assignment): Kafka refuses to convert the
    group, since the consumer protocol would lose them, and the classic member goes on."""
    s.topic("t", 2)
    classic = _classic_member(s, "custom", "C")
    classic.join_and_sync(takes={"t": [0, 1]}, user_data=b"\x00\x00\x00\x01")
    newcomer = ScriptedMember(s, "custom", "N", topics=["t"])
    joined = newcomer.join()
    s.observe("a consumer member joins the classic group", (joined.error_code, joined.member_epoch))
    classic.heartbeat("the classic member's heartbeat")
    described = s.send(DescribeGroupsRequest(groups=["custom"]), group="custom")
    s.observe("DescribeGroups after the refusal", _classic_view(s, described))


@scenario(initial_rebalance_delay_ms=0)
def classic_group_converted_after_its_topic_grew(s: Script) -> None:
    """A classic member holds both partitions of its topic; the topic grows to three while the
    group is still classic; a consumer-protocol member whose regex matches nothing joins and
    converts the group. Does the converted group's target take the third partition?"""
    s.topic("t", 2)
    classic = _classic_member(s, "grown", "C")
    classic.join_and_sync(takes={"t": [0, 1]})
    s.grow("t", 3)
    newcomer = ScriptedMember(s, "grown", "N", regex="x.*")
    newcomer.join()
    for _ in range(20):  # the regex's resolution comes meanwhile
        newcomer.beat()
        s.send(
            HeartbeatRequest(group_id="grown", generation_id=classic.generation, member_id=classic.member_id),
            group="grown",
        )
        time.sleep(0.1)
    _observe_shares(s, "the converted group after the regex resolved", "grown")
    # A classic client sees the third partition in its metadata and joins again.
    classic.join_and_sync(takes={"t": [0, 1]})
    newcomer.beat()
    _observe_shares(s, "after the classic member joined again", "grown")


def _observe_shares(s: Script, label: str, group: str) -> None:
    """The group's epochs and, per member, its type and how many partitions it holds and has as
    its target (which member holds which depends on the random member ids)."""
    described = s.plain(s.send(_describe_request(group), group=group))["groups"][0]
    s.observe(
        label,
        {
            "epochs": (described["group_epoch"], described["assignment_epoch"]),
            "members": sorted(
                (m["member_type"], _count(m["assignment"]), _count(m["target_assignment"]))
                for m in described["members"]
            ),
        },
    )


@scenario(initial_rebalance_delay_ms=0)
def converted_group_downgraded_when_the_last_consumer_member_leaves(s: Script) -> None:
    s.topic("t", 2)
    classic = _classic_member(s, "migrating", "C")
    classic.join_and_sync()
    newcomer = ScriptedMember(s, "migrating", "N", topics=["t"])
    newcomer.join()
    newcomer.leave("the last consumer-protocol member leaves")
    s.call("ConsumerGroupDescribe after the leave", _describe_request("migrating"), group="migrating")
    classic.heartbeat("the classic member's heartbeat after the downgrade")
    described = s.send(DescribeGroupsRequest(groups=["migrating"]), group="migrating")
    s.observe("DescribeGroups after the downgrade", _classic_view(s, described))


def _count(assignment: dict[str, list[dict[str, object]]]) -> int:
    return sum(len(t["partitions"]) for t in assignment["topic_partitions"])  # type: ignore[arg-type]


def _classic_view(s: Script, described: object) -> object:
    """The classic group's protocol and members (its state and generation follow the rejoin's timing)."""
    (group,) = s.plain(described)["groups"]
    return {
        "protocol_type": group["protocol_type"],
        "members": sorted(m["member_id"] for m in group["members"]),
    }


@scenario(initial_rebalance_delay_ms=0)
def classic_member_joins_a_consumer_group(s: Script) -> None:
    s.topic("t", 2)
    a = ScriptedMember(s, "mixed", "A", topics=["t"])
    a.join()
    converge(s, "mixed", [a])
    classic = _classic_member(s, "mixed", "C")
    classic.join("a classic member joins a consumer group")


def _describe_request(group: str) -> object:
    from kconsumer.protocol.messages.consumer_group import ConsumerGroupDescribeRequest

    return ConsumerGroupDescribeRequest(group_ids=[group])


@scenario()
def delete_groups(s: Script) -> None:
    s.topic("t", 1)
    a = ScriptedMember(s, "busy", "A", topics=["t"])
    a.join()
    converge(s, "busy", [a])
    b = ScriptedMember(s, "left", "B", topics=["t"])
    b.join()
    converge(s, "left", [b])
    b.leave()
    for label, group in (
        ("an unknown group", "nobody"),
        ("a group with a member", "busy"),
        ("an empty group", "left"),
    ):
        s.call(label, DeleteGroupsRequest(groups_names=[group]), group=group)
    s.call("the deleted group is gone", _describe_request("left"), group="left")


@scenario()
def find_coordinator_and_metadata_old_versions(s: Script) -> None:
    s.topic("orders", 1)
    answer = s.send(FindCoordinatorRequest(key="g1", key_type=0), version=3)
    s.observe("FindCoordinator v3", (answer.error_code, answer.node_id))
    _metadata(s, "Metadata v1, no topic", [], version=1)
    _metadata(s, "Metadata v4 by name", [MetadataRequestTopic(name=s.t("orders"))], version=4)
    _metadata(s, "Metadata v11 by name", [MetadataRequestTopic(name=s.t("orders"))], version=11)


@scenario()
def admin_topic_requests(s: Script) -> None:
    s.topic("exists", 1)

    def create(label: str, name: str, partitions: int) -> None:
        topic = CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=-1, assignments=[], configs=[]
        )
        answer = s.send(CreateTopicsRequest(topics=[topic], timeout_ms=30_000))
        s.observe(label, [(t["error_code"], t["error_message"]) for t in s.plain(answer)["topics"]])

    create("an existing topic", s.t("exists"), 1)
    create("zero partitions", s.t("zero"), 0)
    create("an invalid name", "bad name!", 1)
    answer = s.send(DeleteTopicsRequest(topics=[DeleteTopicState(name=s.t("absent"))], timeout_ms=30_000))
    s.observe("deleting an unknown topic", [r["error_code"] for r in s.plain(answer)["responses"]])
    grow = CreatePartitionsRequest(
        topics=[CreatePartitionsTopic(name=s.t("exists"), count=1, assignments=None)],
        timeout_ms=30_000,
        validate_only=False,
    )
    answer = s.send(grow)
    s.observe("growing to the same count", [r["error_code"] for r in s.plain(answer)["results"]])
