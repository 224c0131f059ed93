"""ApiVersions (18).

The first request on every connection. v0-2 have an empty request body; v3 (the first flexible
version) lets the client name its software. The response is always read with response header v0
(KIP-511, see `kconsumer.protocol.api.ApiSpec.response_header_version`), and a broker answering
UNSUPPORTED_VERSION still lists its ApiVersions range so the client can retry lower. v4 only
changes the meaning of SupportedFeatures.MinVersion (it may be 0), not the bytes.
"""

from __future__ import annotations

from ..schema import Message, Struct, field
from ..types import BOOL, INT16, INT32, INT64, STRING, Array


class ApiVersionsRequest(Message, api_key=18, valid="0-4", flexible="3+"):
    """Asks a broker which versions of which APIs it implements."""

    client_software_name: str = field(STRING, "3+", ignorable=True)
    client_software_version: str = field(STRING, "3+", ignorable=True)


class ApiVersion(Struct):
    """The version range a broker implements for one API key."""

    api_key: int = field(INT16, "0+")
    min_version: int = field(INT16, "0+")
    max_version: int = field(INT16, "0+")


class SupportedFeatureKey(Struct):
    """A feature the broker can run, with the levels it understands."""

    name: str = field(STRING, "3+")
    min_version: int = field(INT16, "3+")
    max_version: int = field(INT16, "3+")


class FinalizedFeatureKey(Struct):
    """A feature level finalized for the whole cluster."""

    name: str = field(STRING, "3+")
    max_version_level: int = field(INT16, "3+")
    min_version_level: int = field(INT16, "3+")


class ApiVersionsResponse(Message, api_key=18, valid="0-4", flexible="3+"):
    """The API keys and version ranges a broker implements (plus feature levels from v3)."""

    error_code: int = field(INT16, "0+")
    api_keys: list[ApiVersion] = field(Array(ApiVersion), "0+")
    throttle_time_ms: int = field(INT32, "1+", ignorable=True)
    supported_features: list[SupportedFeatureKey] = field(
        Array(SupportedFeatureKey), "3+", tag=0, ignorable=True
    )
    finalized_features_epoch: int = field(INT64, "3+", default=-1, tag=1, ignorable=True)
    finalized_features: list[FinalizedFeatureKey] = field(
        Array(FinalizedFeatureKey), "3+", tag=2, ignorable=True
    )
    zk_migration_ready: bool = field(BOOL, "3+", default=False, tag=3, ignorable=True)

    def version_range(self, api_key: int) -> tuple[int, int] | None:
        """The (min, max) versions listed for `api_key`, or None when it is not listed."""
        for entry in self.api_keys:
            if entry.api_key == api_key:
                return entry.min_version, entry.max_version
        return None
