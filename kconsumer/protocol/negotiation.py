"""API version negotiation (pure): which version of each API to speak with a broker.

Shared by every client of the codec (the consumer's asyncio runtime and the blocking test
client): send ApiVersions v3 first, fall back to v0 when the broker answers UNSUPPORTED_VERSION
(KIP-511), then use, per API, the highest version both sides implement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ErrorCode, KConsumerError
from .api import spec_for
from .messages.api_versions import ApiVersionsResponse

#: The ApiVersions version tried first (librdkafka and Kafka 2.4+ clients start at v3 too).
API_VERSIONS_FIRST_TRY = 3

#: A broker's version range per API key.
BrokerVersions = Mapping[int, tuple[int, int]]


class NoCommonVersionError(KConsumerError):
    """The broker lacks the API, or no version of it is implemented by both sides."""

    def __init__(self, api_key: int, message: str) -> None:
        self.api_key = api_key
        super().__init__(message)


def refused_api_versions(body: bytes, version: int) -> bool:
    """Whether an ApiVersions response body at `version` is the KIP-511 UNSUPPORTED_VERSION answer.

    The error code leads every version's body and is all the caller needs (it retries at v0);
    the rest is not parsed, because some brokers (librdkafka's mock cluster among them) write
    that answer in a mix of encodings.
    """
    return version > 0 and body[:2] == int(ErrorCode.UNSUPPORTED_VERSION).to_bytes(2, "big")


@dataclass(frozen=True)
class VersionsOutcome:
    """What an ApiVersions answer means: exactly one field is set."""

    #: The broker's version ranges: negotiation is over.
    versions: BrokerVersions | None = None
    #: Ask again at this version (0, after the broker refused a newer one: KIP-511).
    ask_again_at: int | None = None
    #: The broker answered with this error.
    error: ErrorCode | None = None


def api_versions_outcome(response: ApiVersionsResponse, tried_version: int) -> VersionsOutcome:
    """What an ApiVersions answer to a request at `tried_version` means (every client of the
    codec reads it here: the member session's dispatcher, the groups admin)."""
    code = ErrorCode.of(response.error_code)
    if code is ErrorCode.UNSUPPORTED_VERSION and tried_version > 0:
        return VersionsOutcome(ask_again_at=0)
    if code is not ErrorCode.NONE:
        return VersionsOutcome(error=code)
    return VersionsOutcome(versions=broker_versions(response))


def broker_versions(response: ApiVersionsResponse) -> dict[int, tuple[int, int]]:
    """The broker's (min, max) per API key, from its ApiVersions response."""
    return {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}


def common_version(api_key: int, versions: BrokerVersions, max_version: int | None = None) -> int:
    """The highest version of `api_key` both kconsumer and the broker implement, capped at
    `max_version`; NoCommonVersionError names the API and both ranges otherwise."""
    spec = spec_for(api_key)
    ours = spec.versions
    theirs = versions.get(api_key)
    if theirs is None:
        raise NoCommonVersionError(api_key, f"the broker does not implement {spec.name} (API key {api_key})")
    high = theirs[1] if ours.hi is None else min(theirs[1], ours.hi)
    if max_version is not None:
        high = min(high, max_version)
    low = max(theirs[0], ours.lo)
    if high < low:
        capped = f" (kconsumer uses at most v{max_version})" if max_version is not None else ""
        raise NoCommonVersionError(
            api_key,
            f"no common version of {spec.name}: the broker implements v{theirs[0]}-{theirs[1]}, "
            f"kconsumer v{ours}{capped}",
        )
    return high
