"""Parsing the source's options (no Spark needed)."""

from __future__ import annotations

import pytest

from kconsumer.spark.options import SourceOptionError, parse_offset_spec, parse_options

BASE = {"kafka.bootstrap.servers": "h:9092", "group.id": "g", "subscribe": "a, b,a"}


def test_streaming_options() -> None:
    options = parse_options(
        {
            **BASE,
            "maxOffsetsPerTrigger": "500",
            "kafka.fetch.wait.max.ms": "50",
            "kafka.isolation.level": "x",
        },
        streaming=True,
    )
    assert options.topics == ("a", "b")
    assert options.group_id == "g"
    assert options.starting == "latest" and not options.starting_given
    assert options.max_records_per_trigger == 500
    assert options.fail_on_data_loss
    member = options.member_config()
    assert member["group.id"] == "g" and member["enable.auto.commit"] is False
    assert member["fetch.wait.max.ms"] == "50"
    # Executors and the admin client get librdkafka settings only.
    assert "group.id" not in options.client_config()
    assert options.client_config()["fetch.wait.max.ms"] == "50"
    assert "fetch.wait.max.ms" not in options.admin_config()
    assert "isolation.level" not in options.admin_config()


def test_option_names_are_case_insensitive_and_kafka_group_id_works() -> None:
    options = parse_options(
        {"KAFKA.bootstrap.servers": "h:1", "kafka.group.id": "g2", "SubscribePattern": "orders-.*"},
        streaming=True,
    )
    assert options.group_id == "g2" and options.pattern == "orders-.*"
    assert "group.id" not in options.kafka


@pytest.mark.parametrize(
    ("options", "option", "streaming"),
    [
        ({"subscribe": "t", "group.id": "g"}, "kafka.bootstrap.servers", True),
        ({**BASE, "group.id": ""}, "group.id", True),
        ({**BASE, "subscribePattern": "x"}, "subscribe", True),
        ({"kafka.bootstrap.servers": "h:1", "group.id": "g", "assign": '{"t": [0]}'}, "assign", True),
        ({**BASE, "endingOffsets": "latest"}, "endingOffsets", True),
        ({**BASE, "startingOffsets": "committed"}, "startingOffsets", True),
        ({**BASE, "maxRecordsPerTrigger": "0"}, "maxRecordsPerTrigger", True),
        ({**BASE, "failOnDataLoss": "maybe"}, "failOnDataLoss", True),
        ({**BASE, "bootstrap.servers": "h:1"}, "bootstrap.servers", True),
        (
            {"kafka.bootstrap.servers": "h:1", "subscribe": "t", "startingOffsets": "committed"},
            "startingOffsets",
            False,
        ),
        ({**BASE, "endingOffsets": "earliest"}, "endingOffsets", False),
        ({"kafka.bootstrap.servers": "h:1", "assign": "[1]"}, "assign", False),
    ],
)
def test_bad_options_name_the_option(options: dict[str, str], option: str, streaming: bool) -> None:
    with pytest.raises(SourceOptionError) as raised:
        parse_options(options, streaming=streaming)
    assert raised.value.option == option


def test_batch_options() -> None:
    options = parse_options(
        {
            "kafka.bootstrap.servers": "h:1",
            "assign": '{"t": [1, 0, 1]}',
            "startingOffsets": '{"t": {"0": 5, "1": -2}}',
            "endingOffsets": '{"t": {"0": -1}}',
        },
        streaming=False,
    )
    assert options.assign == {"t": (0, 1)}
    assert options.starting == {("t", 0): 5, ("t", 1): -2}
    assert options.ending == {("t", 0): -1}
    assert (
        parse_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t"}, streaming=False).starting
        == "earliest"
    )


def test_offset_specs() -> None:
    assert parse_offset_spec("s", " Earliest ", allow_committed=False) == "earliest"
    assert parse_offset_spec("s", "committed", allow_committed=True) == "committed"
    with pytest.raises(SourceOptionError, match="earliest, latest or JSON"):
        parse_offset_spec("s", "committed", allow_committed=False)
    for bad in ('{"t": 1}', '{"t": {"0": -3}}', '{"t": {"zero": 1}}', '{"t": {"0": true}}', "[1]"):
        with pytest.raises(SourceOptionError):
            parse_offset_spec("s", bad, allow_committed=False)


def test_importing_the_package_does_not_import_pyspark() -> None:
    import subprocess
    import sys

    code = "import kconsumer, kconsumer.spark, sys; print('pyspark' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_task_slots_default_to_the_sessions_and_can_be_set_or_turned_off() -> None:
    base = {"kafka.bootstrap.servers": "b:9092", "subscribe": "t"}
    assert parse_options(base, streaming=False).task_slots is None
    assert parse_options(base, streaming=False, task_slots=4).task_slots == 4
    assert parse_options({**base, "taskSlots": "0"}, streaming=False, task_slots=4).task_slots == 0
    assert parse_options({**base, "taskslots": "16"}, streaming=False, task_slots=4).task_slots == 16
    for bad in ("-1", "two", "1.5"):
        with pytest.raises(SourceOptionError, match="taskSlots"):
            parse_options({**base, "taskSlots": bad}, streaming=False)


def test_the_admin_client_reconnects_after_10_ms_at_first_unless_the_settings_say() -> None:
    base = {"kafka.bootstrap.servers": "b:9092", "subscribe": "t"}
    assert parse_options(base, streaming=False).admin_config()["reconnect.backoff.ms"] == 10
    chosen = parse_options({**base, "kafka.reconnect.backoff.ms": "250"}, streaming=False)
    assert chosen.admin_config()["reconnect.backoff.ms"] == "250"
