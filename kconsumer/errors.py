"""Kafka error codes and the exceptions kconsumer raises.

`ErrorCode` holds Kafka's numbers (``clients/.../protocol/Errors.java``; identical in Kafka 4.0-4.3),
whether each is retriable (its Java exception extends ``RetriableException``), and the exception
class each maps to (`ErrorCode.exception`). `error_for` builds that exception.

Besides broker errors, this module defines `ProtocolError` (bytes that do not decode or a value that
does not encode) and `ConfigError` (invalid configuration, raised at construction).
"""

from __future__ import annotations

import enum


class KConsumerError(Exception):
    """Base class of every exception kconsumer raises itself."""


class ConfigError(KConsumerError, ValueError):
    """An invalid configuration key or value. The message names the key."""

    def __init__(self, key: str, reason: str) -> None:
        self.key = key
        self.reason = reason
        super().__init__(f"invalid configuration {key!r}: {reason}")


class ProtocolError(KConsumerError):
    """Bytes that do not decode as the message they claim to be, or a value that cannot be encoded.

    `api` is the message (for example ``ConsumerGroupHeartbeatRequest``), `version` its version and
    `field` the dotted path of the field where decoding failed (``Topics[2].Partitions``), or
    ``None`` when the failure is not inside a field (a frame or header, trailing bytes).
    """

    def __init__(self, api: str, version: int | None, field: str | None, reason: str) -> None:
        self.api = api
        self.version = version
        self.field = field
        self.reason = reason
        where = api if version is None else f"{api} v{version}"
        if field:
            where += f" field {field}"
        super().__init__(f"{where}: {reason}")


class KafkaApiError(KConsumerError):
    """An error code returned by a broker or coordinator, with its message if any."""

    retriable: bool = False

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        self.code = code
        self.message = message
        text = code.name if not message else f"{code.name}: {message}"
        super().__init__(text)


class RetriableError(KafkaApiError):
    """A transient error: the same request may succeed later."""

    retriable = True


class InvalidMetadataError(RetriableError):
    """The client's metadata is stale (unknown topic or partition, leader moved): refresh it."""


class CoordinatorMovedError(RetriableError):
    """The coordinator is not available here: find it again and retry."""


class AuthorizationError(KafkaApiError):
    """The principal lacks an ACL for this operation."""


class GroupMembershipError(KafkaApiError):
    """An error about the member's place in its group (fenced, unknown, stale epoch, ...)."""


class FencedMemberEpochError(GroupMembershipError):
    """The member's epoch is fenced: it must abandon its partitions and rejoin with epoch 0."""


class UnknownMemberIdError(GroupMembershipError):
    """The coordinator does not know the member: it must abandon its partitions and rejoin."""


class StaleMemberEpochError(GroupMembershipError):
    """The member epoch is stale: retry after the next heartbeat gave the current epoch."""


class IllegalGenerationError(GroupMembershipError):
    """Classic-protocol generation mismatch (also used by old OffsetCommit versions)."""


class FencedInstanceIdError(GroupMembershipError):
    """Another process uses the same ``group.instance.id``."""


class UnreleasedInstanceIdError(GroupMembershipError):
    """The ``group.instance.id`` is still held by a member that has not left."""


class GroupMaxSizeReachedError(GroupMembershipError):
    """The group has reached ``group.consumer.max.size``."""


class UnsupportedAssignorError(KafkaApiError):
    """The requested server-side assignor is not configured on the coordinator."""


class InvalidRegularExpressionError(KafkaApiError):
    """The subscription pattern is not a valid RE2 regular expression."""


class InvalidRequestError(KafkaApiError):
    """The coordinator rejected the request as malformed; its message says which rule."""


class UnsupportedVersionError(KafkaApiError):
    """The broker does not support the API or version (or the consumer protocol is disabled)."""


class GroupIdNotFoundError(KafkaApiError):
    """The group does not exist (or is not a consumer group)."""


class OffsetOutOfRangeError(KafkaApiError):
    """The requested offset is outside the partition's log."""


class _Spec:
    __slots__ = ("exception", "retriable")

    def __init__(self, retriable: bool, exception: type[KafkaApiError]) -> None:
        self.retriable = retriable
        self.exception = exception


_R = RetriableError
_M = InvalidMetadataError
_C = CoordinatorMovedError
_A = AuthorizationError
_E = KafkaApiError


class ErrorCode(enum.IntEnum):
    """Kafka's error codes, with `retriable` and the `exception` class each maps to."""

    _spec: _Spec

    def __new__(cls, code: int, retriable: bool = False, exception: type[KafkaApiError] = _E) -> ErrorCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member._spec = _Spec(retriable, exception)
        return member

    @property
    def retriable(self) -> bool:
        """True when the Java exception for this code extends ``RetriableException``."""
        return self._spec.retriable

    @property
    def exception(self) -> type[KafkaApiError]:
        """The `KafkaApiError` subclass raised for this code."""
        return self._spec.exception

    @classmethod
    def of(cls, code: int) -> ErrorCode:
        """The member for `code`; unknown codes map to UNKNOWN_SERVER_ERROR."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1, False, OffsetOutOfRangeError
    CORRUPT_MESSAGE = 2, True, _R
    UNKNOWN_TOPIC_OR_PARTITION = 3, True, _M
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5, True, _M
    NOT_LEADER_OR_FOLLOWER = 6, True, _M
    REQUEST_TIMED_OUT = 7, True, _R
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9, True, _M
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13, True, _M
    COORDINATOR_LOAD_IN_PROGRESS = 14, True, _R
    COORDINATOR_NOT_AVAILABLE = 15, True, _C
    NOT_COORDINATOR = 16, True, _C
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19, True, _R
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20, True, _R
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22, False, IllegalGenerationError
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25, False, UnknownMemberIdError
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29, False, _A
    GROUP_AUTHORIZATION_FAILED = 30, False, _A
    CLUSTER_AUTHORIZATION_FAILED = 31, False, _A
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35, False, UnsupportedVersionError
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41, True, _R
    INVALID_REQUEST = 42, False, InvalidRequestError
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51, True, _R
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53, False, _A
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56, True, _M
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65, False, _A
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69, False, GroupIdNotFoundError
    FETCH_SESSION_ID_NOT_FOUND = 70, True, _R
    INVALID_FETCH_SESSION_EPOCH = 71, True, _R
    LISTENER_NOT_FOUND = 72, True, _M
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74, True, _M
    UNKNOWN_LEADER_EPOCH = 75, True, _R
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78, True, _R
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80, True, _M
    GROUP_MAX_SIZE_REACHED = 81, False, GroupMaxSizeReachedError
    FENCED_INSTANCE_ID = 82, False, FencedInstanceIdError
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83, True, _M
    ELECTION_NOT_NEEDED = 84, True, _M
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88, True, _R
    THROTTLING_QUOTA_EXCEEDED = 89, True, _R
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    UNKNOWN_TOPIC_ID = 100, True, _M
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103, True, _M
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106, True, _R
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110, False, FencedMemberEpochError
    UNRELEASED_INSTANCE_ID = 111, False, UnreleasedInstanceIdError
    UNSUPPORTED_ASSIGNOR = 112, False, UnsupportedAssignorError
    STALE_MEMBER_EPOCH = 113, False, StaleMemberEpochError
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122, True, _R
    INVALID_SHARE_SESSION_EPOCH = 123, True, _R
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128, False, InvalidRegularExpressionError
    REBOOTSTRAP_REQUIRED = 129
    #: kconsumer's worker-group protocol (docs/worker-protocol.md): the worker was chosen to
    #: compute the group's assignment. Not a failure: the heartbeat was processed in full.
    COMPUTE_ASSIGNMENT = 32000


def error_for(code: int, message: str | None = None) -> KafkaApiError:
    """The exception for a non-zero error `code` returned by a broker, carrying its message."""
    error = ErrorCode.of(code)
    return error.exception(error, message)
