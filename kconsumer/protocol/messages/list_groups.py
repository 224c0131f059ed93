"""ListGroups (16) and DeleteGroups (42)."""

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


class DeleteGroupsRequest(Message, api_key=42, valid="0-2", flexible="2+"):
    """Deletes empty groups and their committed offsets."""

    groups_names: list[str] = field(Array(STRING), "0+")


class DeletableGroupResult(Struct):
    group_id: str = field(STRING, "0+")
    error_code: int = field(INT16, "0+")


class DeleteGroupsResponse(Message, api_key=42, valid="0-2", flexible="2+"):
    throttle_time_ms: int = field(INT32, "0+")
    results: list[DeletableGroupResult] = field(Array(DeletableGroupResult), "0+")
