"""What members announce about their client-side assignors, what they are told back, and what
the announcements select (docs/assignor-protocol.md §1 and §5).

Every member lists its local assignors in its heartbeats (`AnnouncedAssignor`, one entry of the
heartbeat's ClientAssignors). From those lists the coordinator picks the assignor the group uses
(`ranked_candidates`) and a member that can compute with it (`computing_members`). What the
assignor then computed for each member besides its partitions (`AssignorOutput`) is stored with the
target assignment and comes back in the member's heartbeat response (AssignmentMetadata).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .versions import VersionRange


@dataclass(frozen=True)
class AnnouncedAssignor:
    """A local (client-side) assignor as a member announces it.

    `name`, `minimum_version` and `maximum_version` come from the configured assignor; `reason`,
    `metadata_version` and `metadata_bytes` are its current member metadata. Raises ValueError for
    values the coordinator would refuse (no name, an invalid range, a metadata version outside
    it, a reason that is not an int8).
    """

    name: str
    minimum_version: int
    maximum_version: int
    metadata_version: int
    metadata_bytes: bytes = b""
    reason: int = 0

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a client assignor needs a name")
        problem = self.versions.problem()
        if problem is not None:
            raise ValueError(f"assignor {self.name}: {problem}")
        if not self.covers(self.metadata_version):
            raise ValueError(
                f"assignor {self.name}: metadata version {self.metadata_version} is outside {self.versions}"
            )
        if not -128 <= self.reason <= 127:
            raise ValueError(f"assignor {self.name}: reason {self.reason} is not an int8")

    @property
    def versions(self) -> VersionRange:
        """The metadata versions the assignor reads."""
        return VersionRange(self.minimum_version, self.maximum_version)

    def covers(self, version: int) -> bool:
        """Whether the assignor reads member metadata of `version`."""
        return self.versions.covers(version)


@dataclass(frozen=True)
class AssignorOutput:
    """What a client-side assignor computed for one member besides its partitions: the
    assignor-level `error` (the same for every member; 0: none) and the assignment metadata it
    wrote for the member (`metadata_version`, `metadata_bytes`)."""

    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""


def ranked_candidates(announced: Sequence[Sequence[AnnouncedAssignor]]) -> list[str]:
    """The client-side assignors a group whose members announce `announced` (one list per member,
    most preferred first) can use: the names every member lists, with overlapping version ranges,
    best first (smallest sum of the members' list positions, then name)."""
    if not announced:
        return []
    common = set.intersection(*({a.name for a in assignors} for assignors in announced))
    ranked: list[tuple[int, str]] = []
    for name in common:
        found = [next((i, a) for i, a in enumerate(assignors) if a.name == name) for assignors in announced]
        if VersionRange.common(a.versions for _, a in found) is not None:
            ranked.append((sum(i for i, _ in found), name))
    return [name for _rank, name in sorted(ranked)]


def computing_members(announced: Mapping[str, Sequence[AnnouncedAssignor]], name: str) -> list[str]:
    """The ids (sorted) of the members that can compute with assignor `name`: those whose
    version range covers every member's metadata version for it. None when some member of
    `announced` (assignors by member id) does not list `name`."""
    chosen: dict[str, AnnouncedAssignor] = {}
    for member_id, assignors in announced.items():
        assignor = next((a for a in assignors if a.name == name), None)
        if assignor is None:
            return []
        chosen[member_id] = assignor
    if not chosen:
        return []
    versions = [a.metadata_version for a in chosen.values()]
    lowest, highest = min(versions), max(versions)
    return [m for m in sorted(chosen) if chosen[m].covers(lowest) and chosen[m].covers(highest)]
