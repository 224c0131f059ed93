"""`Consumer.metrics()` as OpenTelemetry metrics (the ``otel`` extra: ``opentelemetry-api``).

::

    from kconsumer.otel import export_metrics

    exporter = export_metrics(consumer)            # the global MeterProvider
    exporter = export_metrics(consumer, provider)  # or a given one
    ...
    exporter.close()                               # stop reporting (also when the consumer closes)

Each metric becomes one asynchronous instrument named ``kafka.consumer.<name with underscores>``
(``rebalance-latency-avg`` -> ``kafka.consumer.rebalance_latency_avg``), with the unit and meaning
of `kconsumer.client.metrics.METRICS` and the attributes ``client.id`` and ``group.id``. Cumulative
``-total`` metrics are observable counters, the others observable gauges. Values are read once per
collection, when the SDK's reader collects; a metric without a value yet (NaN: no sample in the
window) is left out of that collection, as is everything once the consumer is closed.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable
from typing import Any

from .client.metrics import METRICS

PREFIX = "kafka.consumer."
#: Readings younger than this are reused by the other instruments of one collection.
_FRESH_S = 0.5


class MetricsExporter:
    """The registration made by `export_metrics`; `close` stops the reporting."""

    def __init__(self, consumer: Any, meter_provider: Any = None) -> None:
        try:
            from opentelemetry import metrics as otel_metrics
            from opentelemetry.metrics import CallbackOptions, Observation
        except ImportError:  # pragma: no cover - the test environment has it
            raise ImportError(
                "kconsumer.otel needs opentelemetry-api: pip install 'kconsumer[otel]'"
            ) from None
        self._consumer = consumer
        self._observation = Observation
        self._lock = threading.Lock()
        self._reading: tuple[float, dict[str, float]] | None = None
        self._closed = False
        config = getattr(consumer, "_config", None)
        self.attributes = {
            "client.id": str(getattr(config, "client_id", "")),
            "group.id": str(getattr(config, "group_id", "") or ""),
        }
        from . import __version__

        meter = otel_metrics.get_meter("kconsumer", __version__, meter_provider=meter_provider)
        for name, (unit, description) in METRICS.items():

            def observe(options: CallbackOptions, name: str = name) -> Iterable[Any]:
                return self._observe(name)

            create = (
                meter.create_observable_counter if name.endswith("-total") else meter.create_observable_gauge
            )
            create(PREFIX + name.replace("-", "_"), callbacks=[observe], unit=unit, description=description)

    def close(self) -> None:
        """Report nothing from now on."""
        self._closed = True

    def _observe(self, name: str) -> list[Any]:
        values = self._values()
        value = values.get(name)
        if value is None or math.isnan(value):
            return []
        return [self._observation(value, self.attributes)]

    def _values(self) -> dict[str, float]:
        engine = getattr(self._consumer, "engine", None)
        if self._closed or (engine is not None and engine.closed):
            return {}
        now = time.monotonic()
        with self._lock:
            if self._reading is None or now - self._reading[0] > _FRESH_S:
                self._reading = (now, self._consumer.metrics())
            return self._reading[1]


def export_metrics(consumer: Any, meter_provider: Any = None) -> MetricsExporter:
    """Report `consumer`'s metrics to OpenTelemetry (see the module docstring)."""
    return MetricsExporter(consumer, meter_provider)
