"""The one place kconsumer imports aiokafka.

kconsumer's wire codec is built on aiokafka's protocol helpers: its primitive types encode and
decode every fixed-width integer, string, byte array and varint we put on the wire, and its record
batch builder writes the v2 record batches the reference cluster and the tests produce. The rest of
the code uses the names re-exported here, so an aiokafka upgrade touches this file only.

aiokafka lacks UUIDs, tagged fields inside nested structs and nullable structs: those live in
`kconsumer.protocol.types`, on top of these primitives.
"""

from __future__ import annotations

from aiokafka.protocol.types import (
    Boolean,
    Bytes,
    CompactBytes,
    CompactString,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    String,
    UInt32,
    UnsignedVarInt32,
    VarInt32,
)
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from aiokafka.record.util import calc_crc32c

__all__ = [
    "Boolean",
    "Bytes",
    "CompactBytes",
    "CompactString",
    "DefaultRecordBatch",
    "DefaultRecordBatchBuilder",
    "Float64",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "String",
    "UInt32",
    "UnsignedVarInt32",
    "VarInt32",
    "calc_crc32c",
]
