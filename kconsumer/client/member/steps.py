"""`SessionStep`: what one part of the member session decided, for the session to carry out.

The session's parts (the classic protocol's routes, the client-side assignment, the
application's queries) are small state machines of their own. Each answers an input with one
`SessionStep`: calls to route (to the coordinator, to a given node, to any broker), events for
the member core, effects for the driver. `MemberSession._apply` carries out every step the same
way, in that order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .calls import AnyBrokerCall, Call
from .effects import Effect, Node
from .events import Event


@dataclass
class SessionStep:
    """Calls to route, events for the core and effects for the driver (see the module docstring)."""

    to_coordinator: list[Call] = field(default_factory=list)
    to_nodes: list[tuple[Node, Call]] = field(default_factory=list)
    to_any: list[AnyBrokerCall] = field(default_factory=list)
    #: For the member core (fed in order, after the calls are routed).
    events: list[Event] = field(default_factory=list)
    #: For the driver: a request's answer to the application, a strategy to run, an error to report.
    effects: list[Effect] = field(default_factory=list)
