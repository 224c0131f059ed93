"""What the application core needs from the world around it, as three small interfaces.

The core decides; its drivers do. `Consumer` and `AIOConsumer` plug in the librdkafka fetch
handle (`kconsumer.client.fetch.Fetcher`), the member runtime's background thread
(`MemberRuntime`) and its thread-safe work queue; the simulation plugs in simulated fetching
over its simulated topics, its simulated member process and a plain deque. Everything the
core does to fetching, to the member and to the work queue goes through these methods, so the
simulation exercises the same decisions the shipped consumers make.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..member.effects import ApplicationWork
from ..member.events import Event
from ..member.model import PartitionOffset, TopicIdPartition
from ..member.state import MemberState

Key = tuple[str, int]


class FetchPath(Protocol):
    """Where records come from. Partitions are named by (topic, partition), as librdkafka does."""

    def positions(self, partitions: Iterable[Key]) -> dict[Key, tuple[int, int | None]]:
        """(next offset the application will get, its leader epoch) of the fetched partitions
        among `partitions` that have a position."""

    def start(self, starts: Sequence[PartitionOffset]) -> None:
        """Start fetching each partition at its offset: an offset, or librdkafka's logical
        OFFSET_BEGINNING (-2) / OFFSET_END (-1) when no explicit offset could be found."""

    def stop(self, partitions: Sequence[TopicIdPartition]) -> None:
        """Stop fetching `partitions`; records not yet handed out are dropped."""

    def learn_topics(self, topics: set[str]) -> None:
        """Load the metadata of topics about to be fetched (may block briefly)."""


class MemberLink(Protocol):
    """The member (session) this application thread belongs to."""

    @property
    def group_id(self) -> str:
        """The consumer group's id."""

    @property
    def state(self) -> MemberState:
        """Where the member is in the group."""

    def post(self, event: Event) -> None:
        """Hand `event` to the member, handled after the application's current step."""

    def lookup_offsets(self, wanted: dict[Key, int], isolation: int, timeout_s: float) -> dict[Key, int]:
        """ListOffsets: the offset of each partition at `wanted`'s timestamp (-2 earliest, -1
        latest) for `isolation` (0 read uncommitted, 1 read committed). Raises on failure."""


class WorkQueue(Protocol):
    """The member's work for the application thread, in order (`kconsumer.client.runtime.inbox.Inbox`:
    several threads may wait on it)."""

    def get_nowait(self) -> ApplicationWork:
        """The next piece of work; raises `queue.Empty` when there is none."""

    def get(self, block: bool = True, timeout: float | None = None) -> ApplicationWork:
        """The next piece of work, waiting up to `timeout` seconds; raises `queue.Empty`."""

    def qsize(self) -> int:
        """How many pieces of work are queued."""

    def empty(self) -> bool:
        """Whether nothing is queued."""


@dataclass(frozen=True)
class ApplicationSettings:
    """The consumer settings the application core reads."""

    #: enable.auto.offset.store: commits carry the fetch positions (else what was stored).
    auto_store: bool = True
    #: isolation.level=read_committed: a reset to the latest offset is the last stable one.
    read_committed: bool = True
    #: Longest time starting partitions wait for their reset positions (ListOffsets).
    reset_lookup_timeout_s: float = 5.0
