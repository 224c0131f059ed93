"""``kconsumer groups``: group administration (list, describe with lag, delete and reset offsets,
a live view) against any Kafka 4.x cluster, over kconsumer's own connections."""
