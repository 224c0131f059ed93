"""Kafka clients nobody here wrote, built as runnable peers for the tests and the benchmarks: the
Apache Kafka Java client (`java/`) and franz-go (`go/`), driven over a line protocol on standard
input and output (`build.py` builds them into the kconsumer cache)."""
