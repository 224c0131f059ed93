"""`GroupAdmin`: the group-administration requests of ``kconsumer groups``, over kconsumer's own
asyncio connections (so every security setting of the consumer works here too: TLS, SASL).

Each method sends what Kafka's own admin client sends for the same task, at the highest version
both sides implement: ListGroups to every broker (v5 filters by group type), ConsumerGroupDescribe
(DescribeGroups for classic groups, and for brokers without KIP-848), OffsetFetch, ListOffsets to
each partition's leader, OffsetCommit as an admin (generation -1, no member id: Kafka accepts it
only while the group has no members) and OffsetDelete. Requests to the group's coordinator are
retried as the member retries them (`client.member.errors.COORDINATOR_RETRIES`: found again after
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a transport failure, asked again while it loads)
until the deadline; API versions are negotiated as the member session does
(`protocol.negotiation.api_versions_outcome`); any other failure is a `GroupAdminError` with a
readable message.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from ..client.member.admin_requests import (
    admin_commit_request,
    all_offsets_request,
    api_versions_request,
    consumer_group_describe_request,
    describe_groups_request,
    list_groups_request,
    offset_delete_request,
)
from ..client.member.cluster import ClusterView, Key, parse_bootstrap
from ..client.member.effects import Node
from ..client.member.errors import COORDINATOR_RETRIES, HeartbeatAction
from ..client.runtime.authentication import SaslAuthenticator
from ..client.runtime.connection import Address, BrokerConnection, TransportError
from ..client.runtime.connections import Connections
from ..client.tls import connection_security
from ..errors import ErrorCode, KConsumerError
from ..protocol.api import ApiKey
from ..protocol.messages.api_versions import ApiVersionsResponse
from ..protocol.messages.classic_group import DescribeGroupsResponse
from ..protocol.messages.consumer_group import ConsumerGroupDescribeResponse
from ..protocol.messages.list_groups import ListGroupsResponse
from ..protocol.messages.list_offsets import ListOffsetsResponse
from ..protocol.messages.metadata import FindCoordinatorResponse, MetadataResponse
from ..protocol.messages.offsets import (
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
)
from ..protocol.negotiation import (
    API_VERSIONS_FIRST_TRY,
    BrokerVersions,
    NoCommonVersionError,
    api_versions_outcome,
    common_version,
)
from ..protocol.schema import Message
from .views import GroupListing, GroupView, PartitionLag, classic_view, consumer_view, lag_rows

M = TypeVar("M", bound=Message)

#: OffsetFetch and OffsetCommit by topic name (v10 uses topic ids, which an admin need not know).
BY_NAME_OFFSET_FETCH = 7
BY_NAME_OFFSET_COMMIT = 9
#: ListOffsets timestamps.
LATEST = -1
EARLIEST = -2
RETRY_BACKOFF_S = 0.2


class GroupAdminError(KConsumerError):
    """A group-administration request failed (the message says which and why)."""


class ApiUnsupportedError(GroupAdminError):
    """The broker lacks an API the request needs (or every version both sides implement)."""


class DescribeUnsupportedError(GroupAdminError):
    """The coordinator implements neither ConsumerGroupDescribe nor DescribeGroups (librdkafka's
    mock cluster): a group's members cannot be seen, only its offsets."""


class GroupAdmin:
    """Group administration against one cluster; use as ``async with GroupAdmin(...) as admin``."""

    def __init__(
        self, bootstrap_servers: str, settings: Mapping[str, Any] | None = None, timeout_s: float = 10.0
    ) -> None:
        settings = dict(settings or {})
        security = connection_security(settings)
        self.timeout_s = timeout_s
        self.cluster = ClusterView(parse_bootstrap(bootstrap_servers))
        self._connections = Connections(
            client_id=str(settings.get("client.id", "kconsumer-groups")),
            connect_timeout_s=timeout_s,
            request_timeout_s=timeout_s,
            tls=security.tls,
            sasl=SaslAuthenticator(security.sasl) if security.sasl is not None else None,
        )
        self._versions: dict[Address, BrokerVersions] = {}
        self._coordinators: dict[str, Node] = {}

    async def __aenter__(self) -> GroupAdmin:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._connections.close()

    # -- sending ---------------------------------------------------------------------------------

    async def _send(
        self,
        node: Node,
        api_key: int,
        build: Callable[[int], Message],
        max_version: int | None = None,
        timeout_s: float | None = None,
    ) -> tuple[Message, int]:
        """(response, version) of the request `build(version)` sent to `node` (answered within
        `timeout_s`, by default the admin's request timeout)."""
        address = Address(node.host, node.port)
        try:
            connection, versions = await self._connection(node)
            version = common_version(api_key, versions, max_version)
            return await connection.request(build(version), version, timeout_s), version
        except NoCommonVersionError as exc:
            raise ApiUnsupportedError(f"{address}: {exc}") from None
        except GroupAdminError:
            raise
        except KConsumerError as exc:  # TransportError, AuthenticationFailedError
            raise TransportError(f"{address}: {exc}") from exc

    async def _connection(self, node: Node) -> tuple[BrokerConnection, BrokerVersions]:
        """A connection to `node` and the API versions its broker implements."""
        address = Address(node.host, node.port)
        connection = await self._connections.get(address)
        versions = self._versions.get(address)
        if versions is None:
            versions = self._versions[address] = await self._negotiate(connection)
        return connection, versions

    @staticmethod
    async def _negotiate(connection: BrokerConnection) -> BrokerVersions:
        """ApiVersions as the member session's dispatcher asks it (`api_versions_outcome`)."""
        version = API_VERSIONS_FIRST_TRY
        while True:
            response = await connection.request(api_versions_request("groups"), version)
            assert isinstance(response, ApiVersionsResponse)
            outcome = api_versions_outcome(response, version)
            if outcome.versions is not None:
                return outcome.versions
            if outcome.ask_again_at is None:
                assert outcome.error is not None
                raise GroupAdminError(f"ApiVersions failed: {outcome.error.name}")
            version = outcome.ask_again_at

    async def _to_any(
        self, api_key: int, build: Callable[[int], Message], max_version: int | None = None
    ) -> tuple[Message, int]:
        """Send to the first broker that answers (known brokers, then the bootstrap addresses)."""
        failures = []
        for node in self.cluster.candidates():
            try:
                return await self._send(node, api_key, build, max_version)
            except TransportError as exc:
                failures.append(str(exc))
        raise GroupAdminError("no broker answered: " + "; ".join(failures))

    async def send_to_coordinator(
        self,
        group_id: str,
        api_key: int,
        build: Callable[[int], Message],
        timeout_s: float | None = None,
    ) -> Message:
        """One request to the group's coordinator (found first when unknown), the answer as it
        comes (within `timeout_s`, by default the admin's request timeout): judging its error is
        the caller's (`forget_coordinator` after NOT_COORDINATOR). Raises TransportError (the
        coordinator is found again next time) or GroupAdminError."""
        node = await self.coordinator(group_id)
        try:
            response, _version = await self._send(node, api_key, build, timeout_s=timeout_s)
        except TransportError:
            self._coordinators.pop(group_id, None)
            raise
        return response

    def forget_coordinator(self, group_id: str) -> None:
        """Find the group's coordinator again before the next request (it moved)."""
        self._coordinators.pop(group_id, None)

    async def _to_coordinator(
        self,
        group_id: str,
        api_key: int,
        build: Callable[[int], Message],
        error_of: Callable[[Message], int],
        max_version: int | None = None,
    ) -> tuple[Message, int]:
        """Send to the group's coordinator until the deadline, again after the answers the member
        retries too (`COORDINATOR_RETRIES`): to the coordinator found anew after it moved or could
        not be reached, to the same one while it loads."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                node = await self.coordinator(group_id)
                response, version = await self._send(node, api_key, build, max_version)
                code = ErrorCode.of(error_of(response))
            except TransportError as exc:
                code, response, version = ErrorCode.NETWORK_EXCEPTION, None, 0
                last = str(exc)
            else:
                last = code.name
            action = COORDINATOR_RETRIES.get(code)
            if action is None:
                assert response is not None
                return response, version
            if action is HeartbeatAction.FIND_COORDINATOR:
                self._coordinators.pop(group_id, None)
            if time.monotonic() >= deadline:
                raise GroupAdminError(f"the coordinator of group {group_id!r} did not answer: {last}")
            await asyncio.sleep(RETRY_BACKOFF_S)

    # -- cluster ---------------------------------------------------------------------------------

    async def refresh(self, topics: Iterable[str] | None = None) -> ClusterView:
        """Learn the brokers and `topics` (every topic when None)."""
        wanted = None if topics is None else list(topics)
        response, _ = await self._to_any(
            ApiKey.METADATA, lambda v: ClusterView.metadata_request(v, wanted, None)
        )
        assert isinstance(response, MetadataResponse)
        self.cluster.absorb(response)
        return self.cluster

    async def coordinator(self, group_id: str) -> Node:
        """The broker coordinating `group_id` (found with FindCoordinator, then remembered)."""
        known = self._coordinators.get(group_id)
        if known is not None:
            return known
        deadline = time.monotonic() + self.timeout_s
        while True:
            response, version = await self._to_any(
                ApiKey.FIND_COORDINATOR, lambda v: ClusterView.find_coordinator_request(v, group_id)
            )
            assert isinstance(response, FindCoordinatorResponse)
            found, code, message = ClusterView.coordinator_of(response, version)
            if found is not None:
                self._coordinators[group_id] = found
                return found
            if code not in COORDINATOR_RETRIES or time.monotonic() >= deadline:
                raise GroupAdminError(
                    f"FindCoordinator for group {group_id!r}: {code.name} {message or ''}".strip()
                )
            await asyncio.sleep(RETRY_BACKOFF_S)

    # -- groups ----------------------------------------------------------------------------------

    async def list_groups(self, types: Iterable[str] = (), states: Iterable[str] = ()) -> list[GroupListing]:
        """Every group of the cluster (asking each broker for the groups it coordinates),
        filtered by type (``consumer``, ``classic``, ``connect``) and state (case-insensitive),
        sorted by id."""
        wanted_types = {t.lower() for t in types}
        wanted_states = {s.lower() for s in states}
        await self.refresh([])
        listings: dict[str, GroupListing] = {}
        for node in list(self.cluster.brokers.values()) or list(self.cluster.bootstrap):
            response, version = await self._send(
                node,
                ApiKey.LIST_GROUPS,
                lambda v: list_groups_request(v, wanted_states, wanted_types),
            )
            assert isinstance(response, ListGroupsResponse)
            if response.error_code:
                raise GroupAdminError(f"ListGroups on {node}: {ErrorCode.of(response.error_code).name}")
            for group in response.groups:
                listing = GroupListing(
                    group_id=group.group_id,
                    # before v5 a broker has classic groups only (KIP-848 needs Kafka 4.0)
                    group_type=(group.group_type if version >= 5 else "classic").lower() or "classic",
                    state=group.group_state if version >= 4 else "",
                    protocol_type=group.protocol_type,
                )
                if wanted_types and listing.group_type not in wanted_types:
                    continue
                if wanted_states and listing.state.lower() not in wanted_states:
                    continue
                listings[listing.group_id] = listing
        return sorted(listings.values(), key=lambda listing: listing.group_id)

    async def describe(self, group_id: str) -> GroupView | None:
        """The group's type, state, epochs and members (None when it does not exist)."""
        versions = await self._coordinator_versions(group_id)
        if ApiKey.CONSUMER_GROUP_DESCRIBE not in versions and ApiKey.DESCRIBE_GROUPS not in versions:
            raise DescribeUnsupportedError(
                f"the coordinator of group {group_id!r} implements neither ConsumerGroupDescribe "
                "nor DescribeGroups: its members cannot be shown"
            )
        if ApiKey.CONSUMER_GROUP_DESCRIBE in versions:
            response, _ = await self._to_coordinator(
                group_id,
                ApiKey.CONSUMER_GROUP_DESCRIBE,
                lambda v: consumer_group_describe_request(group_id),
                lambda r: _first_group_error(r),
            )
            assert isinstance(response, ConsumerGroupDescribeResponse)
            described = response.groups[0]
            if described.error_code == ErrorCode.NONE:
                return consumer_view(described)
            if described.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
                raise _group_error(
                    "ConsumerGroupDescribe", group_id, described.error_code, described.error_message
                )
        response, _ = await self._to_coordinator(
            group_id,
            ApiKey.DESCRIBE_GROUPS,
            lambda v: describe_groups_request(group_id),
            lambda r: _first_group_error(r),
        )
        assert isinstance(response, DescribeGroupsResponse)
        classic = response.groups[0]
        if classic.error_code == ErrorCode.GROUP_ID_NOT_FOUND or (
            classic.error_code == ErrorCode.NONE and classic.group_state in ("Dead", "")
        ):
            return None
        if classic.error_code:
            raise _group_error("DescribeGroups", group_id, classic.error_code, classic.error_message)
        return classic_view(classic)

    async def describe_or_reason(self, group_id: str) -> tuple[GroupView | None, str | None]:
        """`describe`, or (None, why) when the coordinator cannot describe groups at all."""
        try:
            return await self.describe(group_id), None
        except DescribeUnsupportedError as exc:
            return None, str(exc)

    async def lag(self, group_id: str) -> tuple[GroupView | None, list[PartitionLag], str | None]:
        """The group (`describe_or_reason`: the view, or None and maybe why) and the lag of every
        partition it has a committed offset for or assigns."""
        view, reason = await self.describe_or_reason(group_id)
        committed = await self.committed(group_id)
        keys = [(r.topic, r.partition) for r in lag_rows(view, committed, {})]
        log_ends = await self.log_offsets(keys, LATEST) if keys else {}
        return view, lag_rows(view, committed, log_ends), reason

    async def _coordinator_versions(self, group_id: str) -> BrokerVersions:
        try:
            return (await self._connection(await self.coordinator(group_id)))[1]
        except TransportError as exc:
            raise GroupAdminError(f"the coordinator of group {group_id!r} cannot be reached: {exc}") from None

    # -- offsets ---------------------------------------------------------------------------------

    async def committed(self, group_id: str) -> dict[Key, int]:
        """The group's committed offsets (every partition it has one for).

        Asks for all of the group's offsets (null topics, KIP-88), except from a coordinator
        without the group admin APIs (librdkafka's mock cluster answers only named topics):
        there, for every partition of the cluster's topics."""
        counts: dict[str, int] | None = None
        if ApiKey.LIST_GROUPS not in await self._coordinator_versions(group_id):
            counts = dict((await self.refresh()).partition_counts)
        request = all_offsets_request(group_id, counts)
        response, _ = await self._to_coordinator(
            group_id,
            ApiKey.OFFSET_FETCH,
            _fixed(request),
            lambda r: getattr(r, "error_code", 0),
            max_version=BY_NAME_OFFSET_FETCH,
        )
        assert isinstance(response, OffsetFetchResponse)
        if response.error_code:
            raise _group_error("OffsetFetch", group_id, response.error_code, None)
        return {
            (topic.name, p.partition_index): p.committed_offset
            for topic in response.topics
            for p in topic.partitions
            if p.error_code == 0 and p.committed_offset >= 0
        }

    async def log_offsets(self, keys: Iterable[Key], timestamp: int) -> dict[Key, int]:
        """Per partition, the offset of `timestamp` (LATEST: the log end, EARLIEST: the log
        start, else the first record at or after that time in ms, the log end when none)."""
        keys = sorted(set(keys))
        await self.refresh({topic for topic, _ in keys})
        by_leader: dict[Node, dict[Key, int]] = {}
        for key in keys:
            leader = self.cluster.leader_of(key)
            if leader is None:
                raise GroupAdminError(f"partition {key[0]}-{key[1]} does not exist or has no leader")
            by_leader.setdefault(leader, {})[key] = timestamp
        found: dict[Key, int] = {}
        for leader, timestamps in by_leader.items():
            request = ClusterView.list_offsets_request(timestamps, 0)
            response, _ = await self._send(leader, ApiKey.LIST_OFFSETS, _fixed(request))
            assert isinstance(response, ListOffsetsResponse)
            found.update(ClusterView.offsets_of(response))
        missing = [key for key in keys if key not in found]
        if missing and timestamp >= 0:  # no record that late: the log end
            found.update(await self.log_offsets(missing, LATEST))
        elif missing:
            raise GroupAdminError(
                f"ListOffsets found no offset for {', '.join(f'{t}-{p}' for t, p in missing)}"
            )
        return found

    async def commit(self, group_id: str, offsets: Mapping[Key, int]) -> dict[Key, ErrorCode]:
        """Commit `offsets` as an admin (Kafka accepts it only while the group has no members)."""
        request = admin_commit_request(group_id, offsets)
        response, _ = await self._to_coordinator(
            group_id,
            ApiKey.OFFSET_COMMIT,
            _fixed(request),
            lambda r: _first_partition_error(r),
            max_version=BY_NAME_OFFSET_COMMIT,
        )
        assert isinstance(response, OffsetCommitResponse)
        return {
            (topic.name, p.partition_index): ErrorCode.of(p.error_code)
            for topic in response.topics
            for p in topic.partitions
        }

    async def delete_offsets(self, group_id: str, keys: Iterable[Key]) -> dict[Key, ErrorCode]:
        """Delete the group's committed offsets of `keys` (OffsetDelete). A whole-request
        refusal (unknown group, non-empty group of another protocol) is a GroupAdminError."""
        request = offset_delete_request(group_id, keys)
        response, _ = await self._to_coordinator(
            group_id, ApiKey.OFFSET_DELETE, _fixed(request), lambda r: getattr(r, "error_code", 0)
        )
        assert isinstance(response, OffsetDeleteResponse)
        if response.error_code:
            raise _group_error("OffsetDelete", group_id, response.error_code, None)
        return {
            (topic.name, p.partition_index): ErrorCode.of(p.error_code)
            for topic in response.topics
            for p in topic.partitions
        }


def _fixed(request: Message) -> Callable[[int], Message]:
    """A request builder that sends `request` at whatever version was negotiated."""
    return lambda _version: request


def _first_group_error(response: Message) -> int:
    groups = getattr(response, "groups", [])
    return int(groups[0].error_code) if groups else 0


def _first_partition_error(response: Message) -> int:
    for topic in getattr(response, "topics", []):
        for partition in topic.partitions:
            if partition.error_code:
                return int(partition.error_code)
    return 0


def _group_error(api: str, group_id: str, code: int, message: str | None) -> GroupAdminError:
    name = ErrorCode.of(code).name
    return GroupAdminError(
        f"{api} for group {group_id!r} failed: {name}" + (f" ({message})" if message else "")
    )
