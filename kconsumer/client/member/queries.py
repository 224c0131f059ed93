"""The application's questions to the cluster, answered by the session (sans-IO): the group's
committed offsets (``Consumer.committed()``), commits outside the group (manual assignment) and
the offsets at timestamps (reset positions).

* **Committed offsets** and **commits outside the group**: topic names are turned into ids
  (Metadata when one is unknown), then an OffsetFetch or OffsetCommit without member id or epoch
  goes to the coordinator, so it works from any state. Retriable errors, coordinator moves and
  lost connections are retried after ``retry.backoff.ms`` until the query's deadline, as Kafka's
  ``committed()`` and ``commitSync()`` do; the answer is the last error code (with the offsets
  found, for a fetch), or a timeout.
* **Offsets at timestamps**: leaders are learnt from Metadata when unknown, one ListOffsets goes to
  each leader, and the answer holds every partition that succeeded by the deadline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import ErrorCode, KConsumerError
from ...protocol.uuid import ZERO_UUID
from .calls import CommitCall, ForQuery, ListOffsetsCall, MetadataCall, OffsetFetchCall
from .cluster import ClusterView, Key
from .effects import AnswerQuery, Node
from .errors import COORDINATOR_ERRORS
from .events import CommitOffsetsQuery, CommittedOffsetsQuery, OffsetsQuery
from .model import PartitionOffset, TopicIdPartition
from .steps import SessionStep


class QueryTimedOutError(KConsumerError):
    """A query got no answer by its deadline."""


@dataclass
class _Committed:
    """A query to the coordinator: a committed-offsets fetch or a commit outside the group."""

    query: CommittedOffsetsQuery | CommitOffsetsQuery
    retry_at: int | None = None
    last_error: ErrorCode = ErrorCode.NONE


@dataclass
class _Offsets:
    query: OffsetsQuery
    waiting: int = 0
    found: dict[Key, int] = field(default_factory=dict)


class Queries:
    """The queries in progress, by token."""

    def __init__(self, group_id: str, retry_backoff_ms: int) -> None:
        self._group_id = group_id
        self._backoff_ms = retry_backoff_ms
        self._committed: dict[int, _Committed] = {}
        self._offsets: dict[int, _Offsets] = {}

    # -- committed offsets, and commits outside the group ------------------------------------------

    def ask_group_offsets(
        self, query: CommittedOffsetsQuery | CommitOffsetsQuery, cluster: ClusterView
    ) -> SessionStep:
        """Start a committed-offsets query, or a commit outside the group."""
        self._committed[query.token] = _Committed(query)
        if isinstance(query, CommittedOffsetsQuery):
            topics = {topic for topic, _p in query.partitions}
        else:
            topics = {o.partition.topic for o in query.offsets if o.partition.topic_id == ZERO_UUID}
        missing = sorted(topic for topic in topics if topic not in cluster.topic_ids)
        if missing:
            return SessionStep(to_any=[MetadataCall(tuple(missing), None, ForQuery(query.token))])
        return self._fetch(query, cluster)

    def _fetch(self, query: CommittedOffsetsQuery | CommitOffsetsQuery, cluster: ClusterView) -> SessionStep:
        if isinstance(query, CommitOffsetsQuery):
            offsets = tuple(_identified(o, cluster) for o in query.offsets)
            commit = CommitCall(None, self._group_id, "", -1, None, offsets, token=query.token)
            return SessionStep(to_coordinator=[commit])
        partitions = tuple(
            TopicIdPartition(cluster.topic_ids.get(topic, ZERO_UUID), topic, partition)
            for topic, partition in query.partitions
        )
        call = OffsetFetchCall(self._group_id, None, -1, partitions, token=query.token)
        return SessionStep(to_coordinator=[call])

    def committed_result(
        self, token: int, code: ErrorCode, offsets: tuple[PartitionOffset, ...], now_ms: int
    ) -> SessionStep:
        """An OffsetFetch of query `token` answered (or failed, with `code`)."""
        return self._coordinator_result(token, code, now_ms, (code, offsets))

    def commit_result(self, token: int | None, code: ErrorCode, now_ms: int) -> SessionStep:
        """An OffsetCommit of query `token` answered (or failed, with `code`)."""
        return SessionStep() if token is None else self._coordinator_result(token, code, now_ms, code)

    def _coordinator_result(self, token: int, code: ErrorCode, now_ms: int, answer: object) -> SessionStep:
        state = self._committed.get(token)
        if state is None:
            return SessionStep()
        retriable = code.retriable or code in COORDINATOR_ERRORS
        if retriable and now_ms + self._backoff_ms < state.query.deadline_ms:
            state.retry_at, state.last_error = now_ms + self._backoff_ms, code
            return SessionStep()
        del self._committed[token]
        return SessionStep(effects=[AnswerQuery(token, answer)])

    # -- offsets at timestamps ------------------------------------------------------------------

    def ask_offsets(self, query: OffsetsQuery, cluster: ClusterView) -> SessionStep:
        """Start an offsets-at-timestamps query."""
        self._offsets[query.token] = _Offsets(query)
        missing = sorted({topic for topic, _p in query.timestamps if cluster.leader_of((topic, _p)) is None})
        if missing:
            return SessionStep(to_any=[MetadataCall(tuple(missing), None, ForQuery(query.token))])
        return self._list(query.token, cluster)

    def _list(self, token: int, cluster: ClusterView) -> SessionStep:
        state = self._offsets[token]
        by_leader: dict[Node, dict[Key, int]] = {}
        for key, timestamp in state.query.timestamps.items():
            leader = cluster.leader_of(key)
            if leader is not None:
                by_leader.setdefault(leader, {})[key] = timestamp
        if not by_leader:
            del self._offsets[token]
            return SessionStep(effects=[AnswerQuery(token, {})])
        state.waiting = len(by_leader)
        isolation = state.query.isolation_level
        return SessionStep(
            to_nodes=[(node, ListOffsetsCall(token, keys, isolation)) for node, keys in by_leader.items()]
        )

    def offsets_result(self, token: int, found: dict[Key, int]) -> SessionStep:
        """A leader's ListOffsets answered (`found` is empty when it failed)."""
        state = self._offsets.get(token)
        if state is None:
            return SessionStep()
        state.found.update(found)
        state.waiting -= 1
        if state.waiting > 0:
            return SessionStep()
        del self._offsets[token]
        return SessionStep(effects=[AnswerQuery(token, dict(state.found))])

    # -- shared ---------------------------------------------------------------------------------

    def metadata_learnt(self, token: int, cluster: ClusterView) -> SessionStep:
        """The Metadata a query asked for came back (or failed): go on with what is known."""
        committed = self._committed.get(token)
        if committed is not None:
            return self._fetch(committed.query, cluster)
        if token in self._offsets:
            return self._list(token, cluster)
        return SessionStep()

    def timers(self, now_ms: int, cluster: ClusterView) -> SessionStep:
        """Retries whose backoff ended; queries past their deadline are answered."""
        out = SessionStep()
        for token, state in list(self._committed.items()):
            if now_ms >= state.query.deadline_ms:
                del self._committed[token]
                what = "committed offsets" if isinstance(state.query, CommittedOffsetsQuery) else "commit"
                error = QueryTimedOutError(f"{what}: no answer in time ({state.last_error.name})")
                out.effects.append(AnswerQuery(token, error=error))
            elif state.retry_at is not None and now_ms >= state.retry_at:
                state.retry_at = None
                out.to_coordinator += self._fetch(state.query, cluster).to_coordinator
        for token, offsets in list(self._offsets.items()):
            if now_ms >= offsets.query.deadline_ms:
                del self._offsets[token]
                out.effects.append(AnswerQuery(token, dict(offsets.found)))
        return out

    def next_deadline(self) -> int | None:
        """When `timers` has something to do."""
        times = [s.query.deadline_ms for s in self._committed.values()]
        times += [s.retry_at for s in self._committed.values() if s.retry_at is not None]
        times += [s.query.deadline_ms for s in self._offsets.values()]
        return min(times) if times else None


def _identified(offset: PartitionOffset, cluster: ClusterView) -> PartitionOffset:
    """`offset` with its topic id from the cluster view when it was named only."""
    tp = offset.partition
    if tp.topic_id != ZERO_UUID:
        return offset
    known = TopicIdPartition(cluster.topic_ids.get(tp.topic, ZERO_UUID), tp.topic, tp.partition)
    return PartitionOffset(known, offset.offset, offset.leader_epoch, offset.metadata)
