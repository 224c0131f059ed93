"""`ApplicationCore.wait_over`: the one rule by which the sync and the asyncio consumer wait for the
group (close, unsubscribe): done, the group gone for good (fatal), or out of time."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from kconsumer.client.application.core import ApplicationCore
from kconsumer.client.application.ports import ApplicationSettings
from kconsumer.client.runtime.inbox import Inbox
from kconsumer.errors import ErrorCode, FencedInstanceIdError


def _app() -> ApplicationCore:
    unused: Any = None
    return ApplicationCore(unused, unused, Inbox(), ApplicationSettings(), clock=time.monotonic)


def test_a_wait_is_over_when_done_even_past_its_deadline() -> None:
    assert _app().wait_over(lambda: True, deadline=time.monotonic() - 1, raise_errors=True)


def test_a_wait_goes_on_until_the_deadline_then_times_out() -> None:
    app = _app()
    assert not app.wait_over(lambda: False, deadline=time.monotonic() + 60, raise_errors=True)
    with pytest.raises(KafkaException) as raised:
        app.wait_over(lambda: False, deadline=time.monotonic() - 1, raise_errors=False)
    assert raised.value.args[0].code() == KafkaError._TIMED_OUT


def test_a_fatal_error_ends_the_wait_raised_only_when_asked() -> None:
    app = _app()
    app.state.fatal = FencedInstanceIdError(ErrorCode.FENCED_INSTANCE_ID)
    assert app.wait_over(lambda: False, deadline=time.monotonic() + 60, raise_errors=False)
    with pytest.raises(KafkaException) as raised:
        app.wait_over(lambda: False, deadline=time.monotonic() + 60, raise_errors=True)
    assert raised.value.args[0].fatal()
