"""What ``Consumer.commit()`` sends, as confluent-kafka decides it, and the error when that is
nothing.

Without ``offsets``/``message``, a commit covers every partition the member has (inside
``on_revoke`` the ones being revoked too) at its position, or with
``enable.auto.offset.store=false`` at what ``store_offsets()`` stored, and, as librdkafka, only
where that is ahead of what the member last committed or found committed: committing again, or
backwards after storing an older offset, is ``_NO_OFFSET``. Explicit offsets are committed as
given (logical ones left out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from confluent_kafka import KafkaError, TopicPartition

from .app_thread import AppThread
from .member.model import PartitionOffset, TopicIdPartition
from .offset_arguments import commit_offsets


def offsets_to_commit(
    app: AppThread,
    offsets: Sequence[TopicPartition] | None,
    topic_id_partition: Callable[[str, int], TopicIdPartition],
) -> tuple[PartitionOffset, ...]:
    """The offsets a group commit carries (see the module docstring)."""
    if offsets is not None:
        return commit_offsets(offsets, topic_id_partition)
    owned = app.commit_offsets(app.state.committable())
    return tuple(o for key, o in owned.items() if o.offset > (app.committed_offset(key) or -1))


def nothing_to_commit(app: AppThread, offsets: Sequence[TopicPartition] | None) -> KafkaError:
    """Why a commit carries nothing: the assignment is being lost, or no offset is new."""
    if offsets is None and app.state.losing:
        return KafkaError(
            KafkaError._ASSIGNMENT_LOST, "Commit failed: Local: Group partition assignment lost"
        )
    return KafkaError(KafkaError._NO_OFFSET, "Commit failed: Local: No offset stored")
