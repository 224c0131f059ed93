"""A `MemberSession` on a manual clock with a scripted cluster, for tests: every `SendRequest` is
answered at once by an answer function per request type (tests replace them, or hold requests of
some types to answer them by hand); application work, assignor runs and other effects are kept
for the test to look at."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kconsumer.broker.server.error_responses import error_response
from kconsumer.broker.server.metadata import api_versions_response
from kconsumer.client.member import MemberConfig, MemberSession, Node
from kconsumer.client.member.effects import ApplicationWork, Effect, RunAssignor, SendRequest
from kconsumer.client.member.events import Event, RequestFailed, ResponseReceived, Tick
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.api_versions import ApiVersionsRequest
from kconsumer.protocol.messages.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kconsumer.protocol.uuid import Uuid
from kconsumer.testing.cluster_answers import TopicEntry, find_coordinator_answer, metadata_answer

BOOTSTRAP = (Node("boot", 9092, -1),)
COORDINATOR = Node("coord", 9093, 7)
LEADER = Node("leader", 9094, 8)
MEMBER_ID = "AAAAAAAAAAAAAAAAAAAAAA"
TOPICS = {
    "foo": TopicEntry(Uuid.from_int(0xF00), 2, LEADER.node_id),
    "bar": TopicEntry(Uuid.from_int(0xBA4), 1, LEADER.node_id),
}

#: An answer function: (request, version) -> response, or an ErrorCode to fail the request with.
Answer = Callable[[Any, int], Any]


def metadata(request: MetadataRequest, version: int) -> MetadataResponse:
    """Every known topic asked for (by name or id), led by LEADER, with the coordinator and LEADER."""
    return metadata_answer(request, version, (COORDINATOR, LEADER), TOPICS, "scripted")


def find_coordinator(request: FindCoordinatorRequest, version: int) -> FindCoordinatorResponse:
    """COORDINATOR coordinates every group."""
    return find_coordinator_answer(request, version, COORDINATOR)


@dataclass
class Sent:
    """A request the session sent and the test has not answered yet."""

    effect: SendRequest

    @property
    def request(self) -> Any:
        return self.effect.request


@dataclass
class SessionDriver:
    """A session, a clock, a scripted cluster; answers go back at once unless the test holds them."""

    config: MemberConfig
    now: int = 1_000
    answers: dict[type, Answer] = field(default_factory=dict)
    #: Request types the test answers itself (`pending`, `reply`, `fail`).
    held: set[type] = field(default_factory=set)
    log: list[SendRequest] = field(default_factory=list)
    pending: list[Sent] = field(default_factory=list)
    app: list[ApplicationWork] = field(default_factory=list)
    runs: list[RunAssignor] = field(default_factory=list)
    other: list[Effect] = field(default_factory=list)
    bootstrap: tuple[Node, ...] = BOOTSTRAP

    def __post_init__(self) -> None:
        self.session = MemberSession(self.config, self.bootstrap, MEMBER_ID, self.now)
        defaults: dict[type, Answer] = {
            ApiVersionsRequest: lambda request, version: api_versions_response(),
            FindCoordinatorRequest: find_coordinator,
            MetadataRequest: metadata,
        }
        self.answers = {**defaults, **self.answers}

    def send(self, event: Event, at: int | None = None) -> list[Effect]:
        """Handle `event`; answer what the session sends (unless held) until it is quiet."""
        if at is not None:
            self.now = at
        effects = self.session.handle(event, self.now)
        out = list(effects)
        for effect in effects:
            out += self._execute(effect)
        return out

    def advance(self, ms: int) -> list[Effect]:
        return self.send(Tick(), self.now + ms)

    def _execute(self, effect: Effect) -> list[Effect]:
        if isinstance(effect, ApplicationWork):
            self.app.append(effect)
            return []
        if isinstance(effect, RunAssignor):
            self.runs.append(effect)
            return []
        if not isinstance(effect, SendRequest):
            self.other.append(effect)
            return []
        self.log.append(effect)
        kind = type(effect.request)
        if kind in self.held:
            self.pending.append(Sent(effect))
            return []
        return self._answer(effect, self.answers[kind](effect.request, effect.version))

    def _answer(self, effect: SendRequest, answer: Any) -> list[Effect]:
        if isinstance(answer, ErrorCode):
            return self.send(RequestFailed(effect.request_id, answer, f"scripted {answer.name}"))
        return self.send(ResponseReceived(effect.request_id, answer))

    def reply(self, sent: Sent, response: Any) -> list[Effect]:
        """Answer a held request (a response, or an ErrorCode: no response, that failure)."""
        self.pending.remove(sent)
        return self._answer(sent.effect, response)

    def reject(self, sent: Sent, code: ErrorCode) -> list[Effect]:
        """Answer a held request with an error response of `code`."""
        return self.reply(sent, error_response(sent.request, sent.effect.version, int(code)))

    def held_of(self, kind: type) -> list[Sent]:
        return [sent for sent in self.pending if isinstance(sent.request, kind)]

    def sent_to(self, kind: type) -> list[Node]:
        """The nodes requests of `kind` went to, in order."""
        return [e.node for e in self.log if isinstance(e.request, kind)]

    def requests(self, kind: type) -> list[Any]:
        return [e.request for e in self.log if isinstance(e.request, kind)]

    def of(self, kind: type, effects: Iterable[Effect] | None = None) -> list[Any]:
        return [e for e in (self.app if effects is None else effects) if isinstance(e, kind)]
