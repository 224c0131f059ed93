"""kconsumer's Kafka wire codec (built on aiokafka's protocol helpers; see `_aiokafka`)."""

from __future__ import annotations

from .api import API_SPECS, ApiKey, ApiSpec, decode_request, decode_response, encode_request, encode_response
from .headers import RequestHeader
from .schema import Message, Struct
from .uuid import ZERO_UUID, Uuid
from .versions import Versions

__all__ = [
    "API_SPECS",
    "ZERO_UUID",
    "ApiKey",
    "ApiSpec",
    "Message",
    "RequestHeader",
    "Struct",
    "Uuid",
    "Versions",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
]
