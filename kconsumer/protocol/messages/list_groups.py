"""ListGroups (16); facts §3.6."""

from __future__ import annotations

from ..schema import Message, Struct, field
from ..types import INT16, INT32, STRING, Array


class ListGroupsRequest(Message, api_key=16, valid="0-5", flexible="3+"):
    states_filter: list[str] = field(Array(STRING), "4+")
    types_filter: list[str] = field(Array(STRING), "5+")


class ListedGroup(Struct):
    group_id: str = field(STRING, "0+")
    protocol_type: str = field(STRING, "0+")
    group_state: str = field(STRING, "4+", ignorable=True)
    group_type: str = field(STRING, "5+", ignorable=True)


class ListGroupsResponse(Message, api_key=16, valid="0-5", flexible="3+"):
    throttle_time_ms: int = field(INT32, "1+", ignorable=True)
    error_code: int = field(INT16, "0+")
    groups: list[ListedGroup] = field(Array(ListedGroup), "0+")
