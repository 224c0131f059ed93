"""librdkafka's configuration properties as the library confluent-kafka ships describes them
(``rd_kafka_conf_properties_show``, the table of its CONFIGURATION.md), read through ctypes."""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import tempfile
from dataclasses import dataclass

import confluent_kafka


@dataclass(frozen=True)
class Property:
    name: str
    scope: str  # "*" global, "C" consumer, "P" producer
    range: str
    default: str
    description: str

    def sample(self) -> str:
        """A value librdkafka takes: the default, else the low end of the range or its first choice."""
        if self.default:
            return self.default
        if ".." in self.range:
            return self.range.split("..")[0].strip()
        if self.range:
            return self.range.split(",")[0].strip()
        return "x"


def properties() -> list[Property]:
    """Every property of the librdkafka build confluent-kafka loads (an empty list if that
    library cannot be found)."""
    libs = os.path.join(os.path.dirname(confluent_kafka.__file__), os.pardir, "confluent_kafka.libs")
    found = glob.glob(os.path.join(libs, "librdkafka*.so*")) or [ctypes.util.find_library("rdkafka") or ""]
    if not found[0]:
        return []
    library = ctypes.CDLL(found[0])
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    library.rd_kafka_conf_properties_show.argtypes = [ctypes.c_void_p]
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "properties.md")
        handle = libc.fopen(path.encode(), b"w")
        library.rd_kafka_conf_properties_show(handle)
        libc.fclose(handle)
        with open(path) as table:
            text = table.read()
    out = []
    for line in text.splitlines():
        if "|" not in line or line.startswith(("Property", "---")):
            continue
        name, scope, valid, default, _importance, description = (c.strip() for c in line.split("|", 5))
        out.append(Property(name, scope, valid, default, description))
    return out
