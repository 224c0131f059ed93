"""The reference cluster held to Apache Kafka 4.4's answers: every wire-level scenario runs on
both servers (a fresh reference cluster; the shared Apache Kafka, reset) and their normalised
observations must be equal, or listed in `intended.INTENDED` with the reason."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import scenarios_heartbeat  # noqa: F401  (registers scenarios)
import scenarios_offsets  # noqa: F401
import scenarios_protocol  # noqa: F401
import scenarios_transactions  # noqa: F401
from backends import KAFKA, REFERENCE, open_cluster
from intended import INTENDED
from scenario import SCENARIOS, Observations, Scenario, differences
from script import Script

pytestmark = [pytest.mark.timeout(180), pytest.mark.kafka]

#: Kafka computes assignments on its request threads (as the reference coordinator does), so the
#: first answers after a change are comparable.
KAFKA_CONFIG = {"group.consumer.assignor.offload.enable": "false"}


def _observe(backend: str, case: Scenario) -> Observations:
    # Sessions outlive a scenario's slowest step (expiry is a scenario of its own).
    options = {"session_timeout_ms": 10_000, **case.options}
    if backend == KAFKA:
        options["broker_config"] = KAFKA_CONFIG
    with open_cluster(backend, **options) as cluster:
        script = Script(cluster, backend)
        try:
            case.run(script)
        finally:
            script.close()
        return script.observed


@pytest.fixture(scope="module")
def used_intended() -> Iterator[set[tuple[str, str]]]:
    used: set[tuple[str, str]] = set()
    yield used


@pytest.mark.parametrize("case", SCENARIOS, ids=[c.name for c in SCENARIOS])
def test_the_reference_cluster_answers_as_apache_kafka(
    case: Scenario, used_intended: set[tuple[str, str]]
) -> None:
    kafka = _observe(KAFKA, case)
    reference = _observe(REFERENCE, case)
    problems, used = differences(case.name, kafka, reference)
    used_intended.update((case.name, label) for label in used)
    stale = {label for (name, label) in INTENDED if name == case.name} - used
    assert not stale, f"listed as intended but no longer different: {sorted(stale)}"
    assert not problems, f"{case.name}: the reference cluster differs from Apache Kafka:\n" + "\n".join(
        problems
    )


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 40, len(SCENARIOS)


def test_a_mutation_of_the_reference_coordinator_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's teeth: a reference coordinator that answers a stale-epoch commit with
    FENCED_MEMBER_EPOCH (Kafka answers STALE_MEMBER_EPOCH) differs from Apache Kafka."""
    from kconsumer.broker.coordinator import offsets
    from kconsumer.errors import ErrorCode, KafkaApiError

    (case,) = [c for c in SCENARIOS if c.name == "member_epoch_rules_of_commits"]
    kafka = _observe(KAFKA, case)
    original = offsets._validate_commit

    def mutated(*args: object, **kwargs: object) -> None:
        try:
            original(*args, **kwargs)  # type: ignore[arg-type]
        except KafkaApiError as exc:
            if exc.code == ErrorCode.STALE_MEMBER_EPOCH:
                raise KafkaApiError(ErrorCode.FENCED_MEMBER_EPOCH) from None
            raise

    monkeypatch.setattr(offsets, "_validate_commit", mutated)
    problems, _used = differences(case.name, kafka, _observe(REFERENCE, case))
    assert any("an older epoch (stale)" in p and "'error_code': 110" in p for p in problems), problems
