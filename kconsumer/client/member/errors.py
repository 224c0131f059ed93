"""What the member does with each heartbeat error, and the errors it reports.

`HEARTBEAT_ERRORS` is the table: error code -> action and the advice given to the user. Codes not
in it are retried when retriable (``ErrorCode.retriable``) and fatal otherwise, as in Kafka's
consumer. The advice is the message of the exception raised to the application: it says what to do.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from ...errors import ErrorCode, KafkaApiError, KConsumerError, error_for


class CommitFailedError(KConsumerError):
    """A commit did not happen (or not for every partition asked). `cause` is the last error."""

    def __init__(self, message: str, cause: KConsumerError | None = None) -> None:
        self.cause = cause
        super().__init__(message if cause is None else f"{message}: {cause}")


class UnsupportedFeatureError(KConsumerError):
    """The broker is too old for what the configuration asks (regex subscription on heartbeat v0,
    client-side assignors on a broker without kconsumer's extension APIs)."""


class PollIntervalExceededError(KConsumerError):
    """The application did not poll within ``max.poll.interval.ms``: the member left its group and
    lost its partitions; it rejoins at the next poll (non-fatal)."""


class HeartbeatAction(enum.Enum):
    """What a heartbeat error makes the member do."""

    FENCE = "fence"
    """Lose every owned partition (on_partitions_lost, no commit) and rejoin with epoch 0, same id."""
    FATAL = "fatal"
    """Go FATAL: lose the partitions and raise the error from every poll."""
    RETRY = "retry"
    """Back off and send the heartbeat again (with every field)."""
    FIND_COORDINATOR = "find_coordinator"
    """Look the coordinator up again, back off and retry."""
    REPORT = "report"
    """Raise a non-fatal error to the application, back off and retry."""


@dataclass(frozen=True)
class ErrorRule:
    """One row of the heartbeat error table. `advice` may use {group}, {instance_id},
    {assignor}, {pattern} and {message} (the coordinator's ErrorMessage)."""

    action: HeartbeatAction
    advice: str = ""


A = HeartbeatAction

#: How a request to the group's coordinator is retried after these answers, by the member (its
#: heartbeats, commits and offset fetches) and by ``kconsumer groups`` alike: look the coordinator
#: up again (it moved, or cannot be reached), or ask it again after a backoff (it is loading).
COORDINATOR_RETRIES: Mapping[ErrorCode, HeartbeatAction] = {
    ErrorCode.NOT_COORDINATOR: A.FIND_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: A.FIND_COORDINATOR,
    ErrorCode.NETWORK_EXCEPTION: A.FIND_COORDINATOR,
    ErrorCode.REQUEST_TIMED_OUT: A.FIND_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: A.RETRY,
}
#: Codes after which the coordinator must be looked up again (also for commits and offset fetches).
COORDINATOR_ERRORS: frozenset[ErrorCode] = frozenset(
    code for code, action in COORDINATOR_RETRIES.items() if action is A.FIND_COORDINATOR
)
#: The answers of a broker saying it is not (or no longer) the coordinator, as opposed to a
#: transport failure: only the coordinator's own answer makes the member forget it.
COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})

HEARTBEAT_ERRORS: Mapping[ErrorCode, ErrorRule] = {
    ErrorCode.FENCED_MEMBER_EPOCH: ErrorRule(A.FENCE),
    ErrorCode.UNKNOWN_MEMBER_ID: ErrorRule(A.FENCE),
    ErrorCode.UNRELEASED_INSTANCE_ID: ErrorRule(
        A.FATAL,
        "another consumer with group.instance.id {instance_id!r} is still a member of group {group!r}: "
        "stop it, or wait until its session times out (group.consumer.session.timeout.ms), "
        "then start this one",
    ),
    ErrorCode.FENCED_INSTANCE_ID: ErrorRule(
        A.FATAL,
        "group.instance.id {instance_id!r} of group {group!r} now belongs to another consumer: "
        "give every consumer its own group.instance.id (or an admin removed this member)",
    ),
    ErrorCode.GROUP_MAX_SIZE_REACHED: ErrorRule(
        A.FATAL,
        "group {group!r} is full: raise the broker's group.consumer.max.size or run fewer consumers",
    ),
    ErrorCode.UNSUPPORTED_ASSIGNOR: ErrorRule(
        A.FATAL,
        "the coordinator has no assignor {assignor!r}: set group.remote.assignor to one of the broker's "
        "group.consumer.assignors (by default uniform or range), or leave it unset",
    ),
    ErrorCode.INVALID_REQUEST: ErrorRule(
        A.FATAL,
        "the coordinator rejected the heartbeat as invalid ({message}); this is a kconsumer bug, "
        "please report it with this message",
    ),
    ErrorCode.INVALID_REGULAR_EXPRESSION: ErrorRule(
        A.FATAL,
        "the subscription pattern {pattern!r} is not a valid RE2J regular expression ({message}): "
        "fix the pattern",
    ),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: ErrorRule(
        A.FATAL,
        "not authorized to use group {group!r}: grant this principal READ on the group",
    ),
    ErrorCode.UNSUPPORTED_VERSION: ErrorRule(
        A.FATAL,
        "the broker does not support the consumer group protocol (KIP-848): it needs Apache Kafka 4.0 "
        "or later with the feature group.version >= 1 (and 'consumer' in "
        "group.coordinator.rebalance.protocols): set group.protocol=classic to use this cluster, or "
        "upgrade the brokers",
    ),
    ErrorCode.ILLEGAL_GENERATION: ErrorRule(A.FENCE),  # classic: the group moved on without it
    # Classic: a SyncGroup the leader's strategy could not fill (reported apart): join again.
    ErrorCode.REBALANCE_IN_PROGRESS: ErrorRule(A.RETRY),
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: ErrorRule(
        A.FATAL,
        "group {group!r} uses another protocol or strategy ({message}): give every member the same "
        "group.protocol and a partition.assignment.strategy in common",
    ),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: ErrorRule(
        A.REPORT,
        "not authorized to describe some subscribed topics ({message}): grant DESCRIBE on them "
        "or change the subscription; the consumer keeps retrying",
    ),
    ErrorCode.SASL_AUTHENTICATION_FAILED: ErrorRule(
        A.REPORT,
        "cannot authenticate to the brokers of group {group!r} ({message}): check sasl.mechanisms, "
        "sasl.username and sasl.password (or the OAUTHBEARER token); the consumer keeps retrying and "
        "picks up new credentials from set_sasl_credentials",
    ),
    **{code: ErrorRule(action) for code, action in COORDINATOR_RETRIES.items()},
}

#: GROUP_ID_NOT_FOUND on a join means the group id belongs to a classic, share or streams group.
GROUP_NOT_CONSUMER = ErrorRule(
    A.FATAL,
    "group {group!r} exists but is not a consumer-protocol group (it is a classic, share or streams "
    "group that cannot be converted; the coordinator said: {message}): use another group.id, or "
    "empty and delete that group first",
)

#: Anything else that is not retriable: what Kafka's consumer does too.
UNEXPECTED = ErrorRule(A.FATAL, "unexpected heartbeat error ({message})")


def heartbeat_rule(code: ErrorCode, member_epoch_sent: int) -> ErrorRule:
    """The rule for a heartbeat error `code` answered to a request sent with `member_epoch_sent`.

    GROUP_ID_NOT_FOUND depends on the epoch: on a join (0) the group is of another type (fatal);
    for a member that was in the group, the group is gone (for example after a coordinator lost
    it), so the member rejoins, which recreates it.
    """
    if code is ErrorCode.GROUP_ID_NOT_FOUND:
        return GROUP_NOT_CONSUMER if member_epoch_sent == 0 else ErrorRule(A.FENCE)
    rule = HEARTBEAT_ERRORS.get(code)
    if rule is not None:
        return rule
    return ErrorRule(A.RETRY) if code.retriable else UNEXPECTED


def heartbeat_error(
    code: ErrorCode,
    rule: ErrorRule,
    *,
    coordinator_message: str | None,
    group: str,
    instance_id: str | None,
    assignor: str | None,
    pattern: str | None,
) -> KafkaApiError:
    """The exception raised to the application for a heartbeat error, its message the rule's advice."""
    advice = rule.advice.format(
        group=group,
        instance_id=instance_id,
        assignor=assignor,
        pattern=pattern,
        message=coordinator_message or "no message",
    )
    return error_for(code, advice or coordinator_message)


def pattern_needs_v1(pattern: str) -> UnsupportedFeatureError:
    """A pattern subscription on a broker with ConsumerGroupHeartbeat v0 only."""
    return UnsupportedFeatureError(
        f"subscribing to a pattern ({pattern!r}) needs ConsumerGroupHeartbeat v1, which this broker does not "
        "offer: upgrade the brokers to Apache Kafka 4.0 or later, or subscribe to topic names"
    )


def client_assignors_unsupported(names: list[str]) -> UnsupportedFeatureError:
    """Local assignors, but the coordinator lacks the extension APIs (docs/assignor-protocol.md)."""
    return UnsupportedFeatureError(
        f"client-side assignors (group.local.assignors: {', '.join(names)}) need the kconsumer reference "
        "coordinator (the only one offering the ConsumerGroupPrepareAssignment/InstallAssignment APIs); "
        "this broker does not support them: remove group.local.assignors and set group.remote.assignor "
        "(for example 'uniform' or 'range') to use a server-side assignor"
    )


def poll_interval_exceeded(group: str, max_poll_interval_ms: int) -> PollIntervalExceededError:
    """The non-fatal error reported when the poll timer expires."""
    return PollIntervalExceededError(
        f"the application did not poll for max.poll.interval.ms ({max_poll_interval_ms} ms): the member left "
        f"group {group!r} and its partitions were lost; it rejoins at the next poll. Poll more often, "
        "process fewer records per poll, or raise max.poll.interval.ms"
    )
